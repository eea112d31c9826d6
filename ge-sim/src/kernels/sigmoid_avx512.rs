//! Sigmoid and SiLU on AVX-512 registers: what every f32 sigmoid computes on the AVX-512
//! class (conv and GEMM epilogues, Sigmoid and SiLU tasks, vector programs), so fused and
//! unfused forms agree bitwise there. The same algorithm as [`super::unary`]'s sigmoid (`e = exp(−|x|)` by
//! [`super::vmath::exp`]'s reduction and polynomial, `r = 1 / (1 + e)`, `x ≥ 0 ? r : e·r`),
//! but in AVX-512's own instructions: FMAs in the reduction and the polynomial, `vscalefps`
//! for `2^n`, and the reciprocal as `vrcp14ps` refined by one Newton step instead of a
//! division. The AVX2 form ([`super::sigmoid_avx2`], bitwise the scalar kernel's) ran on two
//! halves per register with a division each: YOLOv8n's SiLU epilogues cost 1.3 ns a value,
//! 18% of its run (onnxruntime: 0.4 ns).
//!
//! Values: within 4 ulp of the scalar kernel's (tested over the whole range, the underflow
//! border, ±0, ±∞ and NaN); below [`super::vmath::EXP_LO`] the small side is 0 as there.
//! O(1) per value.

use core::arch::x86_64::*;

use super::vmath::{EXP_LN2, EXP_LO, EXP_POLY, MAGIC};

/// `sigmoid(x)` (`x·sigmoid(x)` when `times_x`) on `N` registers, step by step across them
/// (independent chains side by side).
///
/// # Safety
/// AVX-512F on the caller.
#[inline(always)]
pub(crate) unsafe fn sigmoid<const N: usize>(x: [__m512; N], times_x: bool) -> [__m512; N] {
    // SAFETY: register-only AVX-512F operations (contract).
    unsafe {
        let one = _mm512_set1_ps(1.0);
        let lo = _mm512_set1_ps(EXP_LO);
        let magic = _mm512_set1_ps(MAGIC);
        // a = −|x| (a NaN stays NaN).
        // The sign bit set by an integer OR: `_mm512_or_ps` is AVX-512DQ, which the callers
        // do not enable, so it was called out of line (9 calls per activation pass).
        let mut a = x;
        let sign = _mm512_set1_epi32(i32::MIN);
        for v in &mut a {
            *v = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(*v), sign));
        }
        // n = round(max(a, LO) / ln 2), r = the reduced argument.
        let mut n = a;
        let mut r = a;
        for i in 0..N {
            // `max(lo, a)` returns `a` when it is NaN.
            let xc = _mm512_max_ps(lo, a[i]);
            let t = _mm512_fmadd_ps(xc, _mm512_set1_ps(core::f32::consts::LOG2_E), magic);
            n[i] = _mm512_sub_ps(t, magic);
            let r1 = _mm512_fnmadd_ps(n[i], _mm512_set1_ps(EXP_LN2.0), xc);
            r[i] = _mm512_fnmadd_ps(n[i], _mm512_set1_ps(EXP_LN2.1), r1);
        }
        let mut p = [_mm512_set1_ps(EXP_POLY[0]); N];
        for &c in &EXP_POLY[1..] {
            for i in 0..N {
                p[i] = _mm512_fmadd_ps(p[i], r[i], _mm512_set1_ps(c));
            }
        }
        let mut s = x;
        for i in 0..N {
            // e = (1 + r + r²·p)·2^n, 0 below the range.
            let z = _mm512_mul_ps(r[i], r[i]);
            let y = _mm512_add_ps(_mm512_fmadd_ps(p[i], z, r[i]), one);
            let below = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a[i], lo);
            let e = _mm512_maskz_mov_ps(!below, _mm512_scalef_ps(y, n[i]));
            // q = 1 / (1 + e): 14-bit estimate, one Newton step.
            let d = _mm512_add_ps(one, e);
            let q0 = _mm512_rcp14_ps(d);
            let q = _mm512_fmadd_ps(q0, _mm512_fnmadd_ps(d, q0, one), q0);
            let pos = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x[i], _mm512_setzero_ps());
            // x ≥ 0: q; else e·q (a NaN x takes e·q, NaN).
            s[i] = _mm512_mask_blend_ps(pos, _mm512_mul_ps(e, q), q);
            if times_x {
                s[i] = _mm512_mul_ps(x[i], s[i]);
            }
        }
        s
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
    use crate::kernels::isa::Isa;
    use crate::kernels::unary::sigmoid as scalar;

    use std::{eprintln, vec};

    /// Units in the last place between `a` and `b` (same sign; 0 for equal values).
    fn ulps(a: f32, b: f32) -> u32 {
        if a == b {
            return 0;
        }
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn within_four_ulp_of_the_scalar_kernel() {
        if !Isa::Avx512.supported() {
            eprintln!("sigmoid_avx512: skipped, the CPU has no AVX-512");
            return;
        }
        let xs = crate::kernels::test_util::sigmoid_sweep();
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
                assert!(
                    ulps(g, want) <= 4 || (g - want).abs() <= f32::MIN_POSITIVE,
                    "x = {x} (times_x {times_x}): {g} against {want}"
                );
            }
        }
    }
}
