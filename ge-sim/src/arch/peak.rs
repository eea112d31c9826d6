//! The host's measured multiply-add peak for one thread on an ISA path: the yardstick the
//! bench sets convolution GFLOP/s against (`ge bench --peak`). Twelve independent
//! accumulator chains (two FMA pipes × latency 4–6 on current x86 cores) keep every pipe
//! busy; nothing is loaded or stored inside the loop.

use std::time::Instant;

use super::isa::Isa;

/// Multiply-adds per accumulator per timed call.
const STEPS: usize = 1 << 20;

/// Best GFLOP/s (2 flops per multiply-add per lane) over `reps` timed calls of the probe
/// for `isa` on the calling thread. O(reps · STEPS).
pub fn fma_peak_gflops(isa: Isa, reps: usize) -> f64 {
    let mut best = f64::MAX;
    let mut flops = 0.0;
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        let (sink, f) = probe(isa);
        best = best.min(t.elapsed().as_secs_f64());
        flops = f;
        core::hint::black_box(sink);
    }
    flops / best / 1e9
}

/// One probe run: a value that depends on every chain, and the flops it did.
fn probe(isa: Isa) -> (f32, f64) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `isa` is only an x86 class when the CPU has it (see `isa::detected`).
        Isa::Avx2Fma => (unsafe { avx2() }, (STEPS * 12 * 8 * 2) as f64),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx512 => (unsafe { avx512() }, (STEPS * 12 * 16 * 2) as f64),
        #[cfg(not(target_arch = "x86_64"))]
        Isa::Avx2Fma | Isa::Avx512 => (portable(), (STEPS * 12 * 2) as f64),
        Isa::Portable => (portable(), (STEPS * 12 * 2) as f64),
    }
}

/// Twelve 8-lane FMA chains.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2() -> f32 {
    use core::arch::x86_64::*;
    let (a, b) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(1e-7));
    let mut acc = [_mm256_set1_ps(1.0); 12];
    for _ in 0..STEPS {
        for v in &mut acc {
            *v = _mm256_fmadd_ps(*v, a, b);
        }
    }
    let mut s = _mm256_setzero_ps();
    for v in acc {
        s = _mm256_add_ps(s, v);
    }
    let mut out = [0.0f32; 8];
    // SAFETY: `out` holds 8 floats.
    unsafe { _mm256_storeu_ps(out.as_mut_ptr(), s) };
    out.iter().sum()
}

/// Twelve 16-lane FMA chains.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn avx512() -> f32 {
    use core::arch::x86_64::*;
    let (a, b) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(1e-7));
    let mut acc = [_mm512_set1_ps(1.0); 12];
    for _ in 0..STEPS {
        for v in &mut acc {
            *v = _mm512_fmadd_ps(*v, a, b);
        }
    }
    let mut s = _mm512_setzero_ps();
    for v in acc {
        s = _mm512_add_ps(s, v);
    }
    _mm512_reduce_add_ps(s)
}

/// Twelve scalar multiply-add chains as the portable tile computes them (`a·b + c`).
fn portable() -> f32 {
    let (a, b) = (
        core::hint::black_box(0.999_999f32),
        core::hint::black_box(1e-7f32),
    );
    let mut acc = [1.0f32; 12];
    for _ in 0..STEPS {
        for v in &mut acc {
            *v = *v * a + b;
        }
    }
    acc.iter().sum()
}
