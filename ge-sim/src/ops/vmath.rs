//! Fast f32 `exp`, `tanh` and `erf` for the elementwise kernels.
//!
//! `libm`'s versions are branchy scalar code (tanh-GELU spent most of its time in them);
//! these are branch-free range reduction plus polynomials (Cephes / Eigen coefficients),
//! within a few ulp of the correctly rounded result, so element loops over them vectorize.
//! Results below f32's normal range flush to zero. Loops over them run inside
//! [`crate::arch::isa::with_simd`], so the same code gets the CPU's widest vectors.

// The coefficients are kept as published.
#![allow(clippy::excessive_precision)]

/// 1.5 · 2^23: adding it rounds a float of magnitude below 2^22 to an integer (ties to even)
/// that then sits in the low mantissa bits.
pub(crate) const MAGIC: f32 = 12_582_912.0;

/// `2^i` for an integer `i` in `[-126, 127]`.
#[inline(always)]
fn pow2i(i: i32) -> f32 {
    f32::from_bits((i.wrapping_add(127) as u32) << 23)
}

/// [`exp`]'s range: below `EXP_LO` the result is 0, above `EXP_HI` +∞. `EXP_LO` sits a
/// little above `ln(f32::MIN_POSITIVE)` (−87.34): an argument clamped to it then reduces to
/// `1.4·2^−126`, a normal float. At −87.34 the last multiply gave a subnormal for every
/// argument below the range (selected away after), and each took a microcode assist on
/// Intel: a conv's SiLU epilogue over strongly negative sums ran 3× slower.
pub(crate) const EXP_LO: f32 = -87.0;
pub(crate) const EXP_HI: f32 = 88.722_83;
/// Cody–Waite: ln 2 = `EXP_LN2.0 + EXP_LN2.1`, the first exact in few bits.
pub(crate) const EXP_LN2: (f32, f32) = (0.693_359_4, -2.121_944_4e-4);
/// `e^r ≈ 1 + r + r²·p(r)` on |r| ≤ ln 2 / 2: `p`'s coefficients, highest degree first.
pub(crate) const EXP_POLY: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    1.666_666_5e-1,
    5.000_000_1e-1,
];

/// `e^x`: 1 ulp on the normal range; 0 below it (no subnormals), +∞ above, NaN kept.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const HI: f32 = EXP_HI;
    const LO: f32 = EXP_LO;
    const P: [f32; 6] = EXP_POLY;
    let xc = x.clamp(LO, HI);
    // n = round(x / ln 2), as a float and (from the same bits, no saturating cast) an integer.
    let t = xc * core::f32::consts::LOG2_E + MAGIC;
    let n = t - MAGIC;
    let ni = (t.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    let r = xc - n * EXP_LN2.0 - n * EXP_LN2.1;
    let z = r * r;
    let p = ((((P[0] * r + P[1]) * r + P[2]) * r + P[3]) * r + P[4]) * r + P[5];
    let y = p * z + r + 1.0;
    // 2^n as two factors: n reaches 128 at the top of the range.
    let h = ni >> 1;
    let v = y * pow2i(h) * pow2i(ni.wrapping_sub(h));
    if x > HI {
        f32::INFINITY
    } else if x < LO {
        0.0
    } else {
        v
    }
}

/// `√x`, correctly rounded either way; with `std` it is LLVM's intrinsic, which vectorizes
/// (libm's is inline assembly on x86, one `sqrtss` at a time).
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    #[cfg(feature = "std")]
    {
        x.sqrt()
    }
    #[cfg(not(feature = "std"))]
    {
        libm::sqrtf(x)
    }
}

/// `tanh x`: an odd polynomial below |x| = 0.625, `1 − 2 / (e^{2|x|} + 1)` above.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let a = x.abs();
    let s = x * x;
    let small =
        ((((-5.704_988_7e-3 * s + 2.063_908_9e-2) * s - 5.373_971_6e-2) * s + 1.333_144_2e-1) * s
            - 3.333_328_2e-1)
            * s
            * x
            + x;
    let big = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    if a < 0.625 { small } else { big.copysign(x) }
}

/// `erf x`: Eigen's rational approximation on [−4, 4] (±1 outside, to f32 precision).
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_600_2e-3;
    p = x2 * p + -1.609_603_3e-2;
    p *= x;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329_3e-3;
    q = x2 * q + -1.426_473_9e-2;
    p / q
}

/// `Σ f(v)` in 8 interleaved partial sums, so the loop vectorizes (a fixed order: the result
/// does not depend on the thread count).
#[inline(always)]
pub fn sum_by<T: Copy + Default + core::ops::Add<Output = T>>(
    v: &[f32],
    f: impl Fn(f32) -> T,
) -> T {
    let mut acc = [T::default(); 8];
    let (c, r) = v.as_chunks::<8>();
    for ch in c {
        for l in 0..8 {
            acc[l] = acc[l] + f(ch[l]);
        }
    }
    let add = |a: T, b: T| a + b;
    acc.into_iter().fold(T::default(), add) + r.iter().map(|&x| f(x)).fold(T::default(), add)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relative error (absolute near zero) against libm over a dense grid.
    fn worst(f: fn(f32) -> f32, g: fn(f32) -> f32, lo: f32, hi: f32, floor: f32) -> f32 {
        let n = 400_000;
        let mut worst = 0.0f32;
        for i in 0..=n {
            let x = lo + (hi - lo) * i as f32 / n as f32;
            let (a, b) = (f(x), g(x));
            let e = (a - b).abs() / b.abs().max(floor);
            worst = worst.max(e);
        }
        worst
    }

    #[test]
    fn exp_is_close() {
        assert!(worst(exp, libm::expf, -87.0, 88.0, 1e-30) < 4e-7);
        assert_eq!(exp(100.0), f32::INFINITY);
        assert_eq!(exp(-200.0), 0.0);
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn tanh_is_close() {
        assert!(worst(tanh, libm::tanhf, -12.0, 12.0, 1e-30) < 4e-7);
        assert!(worst(tanh, libm::tanhf, -1e-3, 1e-3, 1e-30) < 4e-7);
        assert_eq!(tanh(50.0), 1.0);
        assert_eq!(tanh(-50.0), -1.0);
        assert!(tanh(f32::NAN).is_nan());
    }

    #[test]
    fn erf_is_close() {
        assert!(worst(erf, libm::erff, -6.0, 6.0, 1e-30) < 1e-6);
        assert!(worst(erf, libm::erff, -1e-3, 1e-3, 1e-30) < 1e-6);
        assert!(erf(f32::NAN).is_nan());
    }
}
