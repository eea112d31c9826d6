//! The f32 logistic function (Sigmoid, and SiLU's `x·sigmoid(x)`) every ge path computes:
//! onnxruntime's (MLAS `MlasComputeLogistic`), bit for bit. A rational approximation on
//! `x` clamped to ±18, `sigmoid(x) = x·P(x²) / Q(x²) + 1/2` with P of degree 4 and Q of
//! degree 5 in `x²`, each evaluated by Horner's rule in fused multiply-adds, then one
//! division; the result floored at 0. [`crate::arch::x86::avx2::sigmoid`] and [`crate::arch::x86::avx512::sigmoid`]
//! run the same operations on registers, so conv and GEMM epilogues, Sigmoid and SiLU tasks
//! and vector programs give the same bits on every ISA path, and the same bits as
//! onnxruntime (whose x86 FMA3 and ARM NEON kernels compute exactly this): a model whose
//! float SiLUs feed a DynamicQuantizeLinear (YOLOv8 through `quantize_dynamic`) rounds the
//! same values the same way.
//!
//! Accuracy against the real function: absolute error ≤ 1.7e-7 over the whole range (1.4
//! ulp of 1; a few values round to the float above 1), relative error growing where the
//! value is tiny (2e-3 at `x = −10`; `x < −18` gives `sigmoid(−18)` ≈ 1.5e-8, not 0).
//! Without `std` (firmware) there is no fused multiply-add in `core`, and the multiply and
//! the add round separately: within 2.4e-7 absolute of the fused form (near 0, where
//! `p/q + 1/2` cancels, one may give 0 and the other 2.4e-7). O(1) per value.

/// Lower and upper clamp of the argument.
pub(crate) const RANGE: (f32, f32) = (-18.0, 18.0);
/// P's coefficients, highest first: α₉, α₇, α₅, α₃, α₁.
pub(crate) const P: [f32; 5] = [
    4.37031e-11,
    1.1562732e-7,
    6.085749e-5,
    0.008513771,
    0.24828795,
];
/// Q's coefficients, highest first: β₁₀, β₈, β₆, β₄, β₂, β₀.
pub(crate) const Q: [f32; 6] = [
    6.1024737e-13,
    5.7610214e-9,
    6.291068e-6,
    0.0017019882,
    0.11681765,
    0.9931519,
];

/// `a·b + c` rounded once (where the build can).
#[inline(always)]
fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(feature = "std")]
    {
        a.mul_add(b, c)
    }
    #[cfg(not(feature = "std"))]
    {
        a * b + c
    }
}

/// `sigmoid(x)` in f32 (NaN in, NaN out).
#[inline(always)]
pub(crate) fn logistic(x: f32) -> f32 {
    // `max(lo, x)` then `min(hi, ·)` as the vector forms order them: a NaN passes through.
    let v = if RANGE.0 > x { RANGE.0 } else { x };
    let v = if RANGE.1 < v { RANGE.1 } else { v };
    let s = v * v;
    let mut p = fma(s, P[0], P[1]);
    for &c in &P[2..] {
        p = fma(p, s, c);
    }
    let mut q = fma(s, Q[0], Q[1]);
    for &c in &Q[2..] {
        q = fma(q, s, c);
    }
    let r = (v * p) / q + 0.5;
    if 0.0 > r { 0.0 } else { r }
}

/// `sigmoid(x)` in f64: one `exp` and a select, accurate on both sides (no f64 logistic
/// kernel to agree with).
#[inline]
pub(crate) fn logistic_f64(x: f64) -> f64 {
    let e = libm::exp(-x.abs());
    let r = 1.0 / (1.0 + e);
    if x >= 0.0 { r } else { e * r }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The f32 constants are MLAS's decimal ones rounded to f32 (the same bits).
    #[test]
    fn constants_are_the_decimal_ones() {
        let p = [
            4.37031012579801e-11f64,
            1.15627324459942e-07,
            6.08574864600143e-05,
            8.51377133304701e-03,
            2.48287947061529e-01,
        ];
        let q = [
            6.10247389755681e-13f64,
            5.76102136993427e-09,
            6.29106785017040e-06,
            1.70198817374094e-03,
            1.16817656904453e-01,
            9.93151921023180e-01,
        ];
        for (a, b) in P.iter().zip(p) {
            assert_eq!(a.to_bits(), (b as f32).to_bits(), "{a:e} vs {b:e}");
        }
        for (a, b) in Q.iter().zip(q) {
            assert_eq!(a.to_bits(), (b as f32).to_bits(), "{a:e} vs {b:e}");
        }
    }

    /// Within 1.7e-7 of the real function everywhere (not monotone in the last ulp near
    /// the clamp, and one ulp above 1 at a few points: as onnxruntime's).
    #[test]
    fn close_to_the_real_function() {
        for i in -400_000..=400_000 {
            let x = i as f32 * 1e-4;
            let y = logistic(x);
            let exact = 1.0 / (1.0 + libm::exp(-(x as f64)));
            assert!(
                (y as f64 - exact).abs() <= 1.7e-7,
                "x = {x}: {y} vs {exact}"
            );
            assert!((0.0..=1.000_000_1).contains(&y), "x = {x}: {y}");
        }
        assert!(logistic(f32::NAN).is_nan());
        assert_eq!(logistic(f32::INFINITY), logistic(18.0));
        assert_eq!(logistic(f32::NEG_INFINITY), logistic(-18.0));
        assert_eq!(logistic(0.0), 0.5);
    }
}
