//! Sigmoid and SiLU on AVX2 registers, with the scalar kernel's values bitwise:
//! [`crate::ops::logistic`]'s clamp, two Horner chains in FMAs, one division (onnxruntime's
//! FMA3 logistic kernel, instruction for instruction). The chains run on four registers at
//! once, step by step (held in lockstep by [`lockstep`]: LLVM's scheduler otherwise puts
//! them one after the other, and Zen 1's FP scheduler does not overlap a dependent chain
//! with the next iteration's). O(1) per element.

use core::arch::x86_64::*;

use crate::arch::isa::{Isa, isa};
use crate::ops::logistic::{P, Q, RANGE};

/// Registers in flight per step of [`sigmoid`] in the slice loops.
const WAYS: usize = 4;

/// `sigmoid(x)` (`x·sigmoid(x)` when `times_x`) on `N` registers, step by step across them.
///
/// # Safety
/// AVX2 and FMA on the caller.
#[inline(always)]
pub(crate) unsafe fn sigmoid<const N: usize>(x: [__m256; N], times_x: bool) -> [__m256; N] {
    // SAFETY: register-only AVX/AVX2/FMA operations (contract).
    unsafe {
        // `max(lo, x)`, `min(hi, ·)`: a NaN second operand passes through.
        let (lo, hi) = (_mm256_set1_ps(RANGE.0), _mm256_set1_ps(RANGE.1));
        let mut v = x;
        let mut s = x;
        for i in 0..N {
            v[i] = _mm256_min_ps(hi, _mm256_max_ps(lo, x[i]));
            s[i] = _mm256_mul_ps(v[i], v[i]);
        }
        let mut p = [_mm256_set1_ps(P[1]); N];
        let mut q = [_mm256_set1_ps(Q[1]); N];
        for i in 0..N {
            p[i] = _mm256_fmadd_ps(s[i], _mm256_set1_ps(P[0]), p[i]);
            q[i] = _mm256_fmadd_ps(s[i], _mm256_set1_ps(Q[0]), q[i]);
        }
        for k in 2..Q.len() {
            for i in 0..N {
                if k < P.len() {
                    p[i] = _mm256_fmadd_ps(p[i], s[i], _mm256_set1_ps(P[k]));
                }
                q[i] = _mm256_fmadd_ps(q[i], s[i], _mm256_set1_ps(Q[k]));
            }
            lockstep(&mut q);
        }
        let mut y = x;
        for i in 0..N {
            let r = _mm256_div_ps(_mm256_mul_ps(v[i], p[i]), q[i]);
            let r = _mm256_add_ps(r, _mm256_set1_ps(0.5));
            y[i] = _mm256_max_ps(_mm256_setzero_ps(), r);
            if times_x {
                y[i] = _mm256_mul_ps(x[i], y[i]);
            }
        }
        y
    }
}

/// Holds every register of `v` at this point of the instruction stream (an empty `asm!`
/// that reads and writes them): LLVM's scheduler otherwise runs the chains one after the
/// other, which the CPU's window cannot overlap.
#[target_feature(enable = "avx")]
#[inline]
unsafe fn lockstep<const N: usize>(v: &mut [__m256; N]) {
    for four in v.chunks_exact_mut(4) {
        let [a, b, c, d] = four else {
            continue;
        };
        // SAFETY: an empty template: no instruction, no memory, no flags.
        unsafe {
            core::arch::asm!(
                "/* {0} {1} {2} {3} */",
                inout(ymm_reg) * a,
                inout(ymm_reg) * b,
                inout(ymm_reg) * c,
                inout(ymm_reg) * d,
                options(pure, nomem, nostack, preserves_flags)
            )
        };
    }
}

/// `data[i] = sigmoid(data[i])` (`x·sigmoid(x)` when `times_x`) on AVX2 where the chosen ISA
/// has it; `false` (nothing done) on the portable path.
pub(crate) fn map_in_place(data: &mut [f32], times_x: bool) -> bool {
    let n = data.len();
    let p = data.as_mut_ptr();
    // SAFETY: `n` values from `p` are readable and writable; AVX2 checked.
    isa() != Isa::Portable && unsafe { map_avx2(p, p, n, times_x) }
}

/// [`map_in_place`] from `x` into `y` (equal lengths, else `false`).
pub(crate) fn map(x: &[f32], y: &mut [f32], times_x: bool) -> bool {
    // SAFETY: `x` readable and `y` writable for their common length; AVX2 checked.
    x.len() == y.len()
        && isa() != Isa::Portable
        && unsafe { map_avx2(x.as_ptr(), y.as_mut_ptr(), x.len(), times_x) }
}

/// # Safety
/// `n` f32 readable from `x` and writable from `y` (the same or disjoint); AVX2.
#[target_feature(enable = "avx2,fma")]
unsafe fn map_avx2(x: *const f32, y: *mut f32, n: usize, times_x: bool) -> bool {
    const STEP: usize = 8 * WAYS;
    let mut i = 0;
    // SAFETY: every access is below `n` (contract); the tail goes through a stack block.
    unsafe {
        while i + STEP <= n {
            block(x.add(i), y.add(i), times_x);
            i += STEP;
        }
        if i < n {
            let mut buf = [0.0f32; STEP];
            core::ptr::copy_nonoverlapping(x.add(i), buf.as_mut_ptr(), n - i);
            block(buf.as_ptr(), buf.as_mut_ptr(), times_x);
            core::ptr::copy_nonoverlapping(buf.as_ptr(), y.add(i), n - i);
        }
    }
    true
}

/// One step of [`map_avx2`]: `8·WAYS` values.
///
/// # Safety
/// As [`map_avx2`] with `n = 8·WAYS`.
#[inline(always)]
unsafe fn block(x: *const f32, y: *mut f32, times_x: bool) {
    // SAFETY: per the contract (loops, not closures: a closure would compile without AVX2).
    unsafe {
        let mut v = [_mm256_setzero_ps(); WAYS];
        for (w, r) in v.iter_mut().enumerate() {
            *r = _mm256_loadu_ps(x.add(8 * w));
        }
        for (w, s) in sigmoid(v, times_x).into_iter().enumerate() {
            _mm256_storeu_ps(y.add(8 * w), s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::unary::unary_f32;
    use ge_runtime::format::UnaryOp;
    use std::{eprintln, vec};

    /// Every value of the vector path equals the scalar kernel's, bit for bit: a dense sweep
    /// over the whole range, the clamp borders, ±0, ±∞, subnormals (and NaN stays NaN).
    #[test]
    fn equals_the_scalar_kernel_bitwise() {
        if isa() == Isa::Portable {
            eprintln!("sigmoid_avx2: skipped, the CPU has no AVX2");
            return;
        }
        let xs = crate::ops::test_util::sigmoid_sweep();
        for (op, times_x) in [(UnaryOp::Sigmoid, false), (UnaryOp::Silu, true)] {
            let mut ys = vec![0.0f32; xs.len()];
            assert!(map(&xs, &mut ys, times_x));
            let mut inplace = xs.clone();
            assert!(map_in_place(&mut inplace, times_x));
            for ((&x, &y), &z) in xs.iter().zip(&ys).zip(&inplace) {
                let want = unary_f32(op, 0.0, 0.0, x);
                if want.is_nan() {
                    // A NaN's sign and payload are not preserved by LLVM (it may commute
                    // `x·s`): NaN in, NaN out is the contract.
                    assert!(y.is_nan() && z.is_nan(), "{op:?}({x:e}): {y:e}, {z:e}");
                    continue;
                }
                assert_eq!(
                    y.to_bits(),
                    want.to_bits(),
                    "{op:?}({x:e}): {y:e} vs {want:e}"
                );
                assert_eq!(z.to_bits(), want.to_bits(), "{op:?}({x:e}) in place");
            }
        }
    }
}
