//! Sigmoid and SiLU on AVX-512 registers: what every f32 sigmoid computes on the AVX-512
//! class (conv and GEMM epilogues, Sigmoid and SiLU tasks, vector programs), bitwise the
//! scalar kernel's ([`crate::ops::logistic`]: clamp, two Horner chains in FMAs, one division),
//! 16 lanes a register, the chains of `N` registers side by side. O(1) per value.

use core::arch::x86_64::*;

use crate::ops::logistic::{P, Q, RANGE};

/// `sigmoid(x)` (`x·sigmoid(x)` when `times_x`) on `N` registers, step by step across them
/// (independent chains side by side).
///
/// # Safety
/// AVX-512F on the caller.
#[inline(always)]
pub(crate) unsafe fn sigmoid<const N: usize>(x: [__m512; N], times_x: bool) -> [__m512; N] {
    // SAFETY: register-only AVX-512F operations (contract).
    unsafe {
        // `max(lo, x)`, `min(hi, ·)`: a NaN second operand passes through.
        let (lo, hi) = (_mm512_set1_ps(RANGE.0), _mm512_set1_ps(RANGE.1));
        let mut v = x;
        let mut s = x;
        for i in 0..N {
            v[i] = _mm512_min_ps(hi, _mm512_max_ps(lo, x[i]));
            s[i] = _mm512_mul_ps(v[i], v[i]);
        }
        let mut p = [_mm512_set1_ps(P[1]); N];
        let mut q = [_mm512_set1_ps(Q[1]); N];
        for i in 0..N {
            p[i] = _mm512_fmadd_ps(s[i], _mm512_set1_ps(P[0]), p[i]);
            q[i] = _mm512_fmadd_ps(s[i], _mm512_set1_ps(Q[0]), q[i]);
        }
        for k in 2..Q.len() {
            for i in 0..N {
                if k < P.len() {
                    p[i] = _mm512_fmadd_ps(p[i], s[i], _mm512_set1_ps(P[k]));
                }
                q[i] = _mm512_fmadd_ps(q[i], s[i], _mm512_set1_ps(Q[k]));
            }
        }
        let mut y = x;
        for i in 0..N {
            let r = _mm512_div_ps(_mm512_mul_ps(v[i], p[i]), q[i]);
            let r = _mm512_add_ps(r, _mm512_set1_ps(0.5));
            y[i] = _mm512_max_ps(_mm512_setzero_ps(), r);
            if times_x {
                y[i] = _mm512_mul_ps(x[i], y[i]);
            }
        }
        y
    }
}

/// `y[i] = sigmoid(x[i])` (`x·sigmoid(x)` when `times_x`) for `n` values, 64 at a time, the
/// tail through masked loads and stores: the unary kernel's and vector programs' form on
/// AVX-512, so a Sigmoid task, a SiLU task and a conv's SiLU epilogue give the same values.
///
/// # Safety
/// `n` f32 readable from `x` and writable from `y` (the same or disjoint); AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn map(x: *const f32, y: *mut f32, n: usize, times_x: bool) {
    const WAYS: usize = 4;
    let mut i = 0;
    // SAFETY: every access is below `n` (contract); AVX-512F enabled.
    unsafe {
        while i + 16 * WAYS <= n {
            let mut v = [_mm512_setzero_ps(); WAYS];
            for (w, r) in v.iter_mut().enumerate() {
                *r = _mm512_loadu_ps(x.add(i + 16 * w));
            }
            for (w, s) in sigmoid(v, times_x).into_iter().enumerate() {
                _mm512_storeu_ps(y.add(i + 16 * w), s);
            }
            i += 16 * WAYS;
        }
        while i < n {
            let k = (n - i).min(16);
            let m: __mmask16 = if k == 16 { !0 } else { (1u16 << k) - 1 };
            let v = _mm512_maskz_loadu_ps(m, x.add(i));
            let [s] = sigmoid([v], times_x);
            _mm512_mask_storeu_ps(y.add(i), m, s);
            i += k;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::isa::Isa;
    use crate::ops::unary::sigmoid as scalar;

    use std::{eprintln, vec};

    /// Every value equals the scalar kernel's, bit for bit (NaN stays NaN).
    #[test]
    fn equals_the_scalar_kernel_bitwise() {
        if !Isa::Avx512.supported() {
            eprintln!("sigmoid_avx512: skipped, the CPU has no AVX-512");
            return;
        }
        let xs = crate::ops::test_util::sigmoid_sweep();
        for times_x in [false, true] {
            let mut got = vec![0.0f32; xs.len()];
            // SAFETY: AVX-512 checked above; `xs` and `got` hold the same length.
            unsafe { map(xs.as_ptr(), got.as_mut_ptr(), xs.len(), times_x) };
            for (&x, &g) in xs.iter().zip(&got) {
                let want = if times_x { x * scalar(x) } else { scalar(x) };
                if want.is_nan() {
                    assert!(g.is_nan(), "x = {x}: {g}, want NaN");
                    continue;
                }
                assert_eq!(
                    g.to_bits(),
                    want.to_bits(),
                    "x = {x} (times_x {times_x}): {g} against {want}"
                );
            }
        }
    }
}
