//! Requantization: an i32 accumulator to int8 through a multiplier fixed at compile time.
//!
//! The real multiplier `M = s_a·s_b / s_y` becomes `mult·2^−shift` with `mult` in
//! `[2^30, 2^31)` (31 significant bits) and `1 ≤ shift ≤ 62`. At run time
//! `y = clamp(round(acc·mult / 2^shift) + z_y)` is exact integer arithmetic on i64, rounding
//! half to even as ONNX's QuantizeLinear does. So it equals QuantizeLinear of the f64 product
//! `acc·M'` where `M'` is `M` to 31 bits; onnxruntime instead multiplies `f32(acc)·f32(M)` and
//! rounds that, so the two can differ by 1 LSB when `acc·M` lies within ~2^−24 relative of a
//! rounding boundary (and when `|acc| > 2^24`, which f32 cannot hold).
//!
//! The second form, [`Requant::from_f32_scale`] (`shift = 0`, the scale's f32 bits in
//! `mult`), computes exactly what onnxruntime's MLAS does (`MlasRequantizeOutput`):
//! `round_half_even(f32(acc)·scale) + z_y`, saturated. QLinearConv / QLinearMatMul / QGemm
//! and the QDQ groups use it: a 1-LSB difference in one layer moves the next layers'
//! inputs, so matching onnxruntime through a deep network needs its rounding, not a more
//! exact one.
//!
//! The third form, [`Requant::from_tflite`] (`shift < 0`), is TFLite Micro's and
//! CMSIS-NN's (`--int8-rounding tflite`): a Q31 multiplier and TFLite's shift, applied with
//! two roundings ([`crate::ops::tflite::fixed::mbqm`]).

use super::KernelError;
use crate::ops::real::Real;

/// Added to TFLite's shift (`[−31, 30]`) in a [`Requant::from_tflite`] record, so that its
/// `shift` field is negative, which the other two forms never are.
pub const TFLITE_BIAS: i32 = -100;

/// A multiplier `mult·2^−shift` (`mult = 0` for a multiplier below `2^−32`: its product with
/// any i32 is below one half, so it rounds to 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Requant {
    pub mult: i32,
    pub shift: i32,
}

impl Requant {
    /// The fixed-point form of `m` (compile time). Errors for a negative, non-finite or too
    /// large (`≥ 2^30`) multiplier: the scales that give it are malformed.
    pub fn from_real(m: f64) -> Result<Requant, KernelError> {
        if !m.is_finite() || m < 0.0 || m >= (1u64 << 30) as f64 {
            return Err(KernelError::BadParams(
                "requantization multiplier must be finite, ≥ 0 and < 2^30",
            ));
        }
        if m < libm::ldexp(1.0, -32) {
            return Ok(Requant { mult: 0, shift: 1 });
        }
        // m = f·2^e with f in [0.5, 1) (exact): mult = round(f·2^31), shift = 31 − e.
        let (f, mut e) = libm::frexp(m);
        let mut mult = libm::round(libm::ldexp(f, 31)) as i64;
        if mult == 1 << 31 {
            mult >>= 1;
            e += 1;
        }
        let shift = 31 - e;
        if !(1..=62).contains(&shift) {
            return Ok(Requant { mult: 0, shift: 1 });
        }
        Ok(Requant {
            mult: mult as i32,
            shift,
        })
    }

    /// onnxruntime's form: the f32 scale `m` itself (compile time). Errors for a negative
    /// or non-finite scale.
    pub fn from_f32_scale(m: f32) -> Result<Requant, KernelError> {
        if !m.is_finite() || m < 0.0 {
            return Err(KernelError::BadParams(
                "requantization scale must be finite and ≥ 0",
            ));
        }
        Ok(Requant {
            mult: m.to_bits() as i32,
            shift: 0,
        })
    }

    /// TFLite's form: `QuantizeMultiplier(m)` (a Q31 multiplier and a shift in `[−31, 30]`),
    /// stored with the shift moved by [`TFLITE_BIAS`] (compile time). `m` is the real
    /// multiplier computed as TFLite Micro computes it for the op (f64 products of the f32
    /// scales, in its order). Errors for a negative, non-finite or too large (`≥ 2^30`) one.
    pub fn from_tflite(m: f64) -> Result<Requant, KernelError> {
        if !m.is_finite() || m < 0.0 || m >= (1u64 << 30) as f64 {
            return Err(KernelError::BadParams(
                "requantization multiplier must be finite, ≥ 0 and < 2^30",
            ));
        }
        let (mult, shift) = crate::ops::tflite::fixed::quantize_multiplier(m);
        Ok(Requant {
            mult,
            shift: shift + TFLITE_BIAS,
        })
    }

    /// The TFLite shift of a [`Requant::from_tflite`] record, `None` for the other forms.
    #[inline(always)]
    pub const fn tflite_shift(self) -> Option<i32> {
        if self.shift < 0 {
            Some(self.shift - TFLITE_BIAS)
        } else {
            None
        }
    }

    /// `round_half_even(acc·mult / 2^shift) + zp`, or for `shift = 0`
    /// `round_half_even(f32(acc)·scale) + zp`, or for the TFLite form (`shift < 0`)
    /// `mbqm(acc, mult, shift) + zp`, clamped to `[lo, hi]`. A `shift` above 62 (a
    /// malformed blob) is clamped rather than trusted.
    #[inline(always)]
    pub fn apply(self, acc: i32, zp: i32, lo: i32, hi: i32) -> i32 {
        if let Some(t) = self.tflite_shift() {
            let q = crate::ops::tflite::fixed::mbqm(acc, self.mult, t);
            return (i64::from(q) + i64::from(zp)).clamp(i64::from(lo), i64::from(hi)) as i32;
        }
        if self.shift == 0 {
            let f = acc as f32 * f32::from_bits(self.mult as u32);
            // `as i64` saturates (NaN gives 0): no overflow for any blob.
            let q = f.round_even() as i64 + i64::from(zp);
            return q.clamp(i64::from(lo), i64::from(hi)) as i32;
        }
        let s = self.shift.clamp(1, 62) as u32;
        let x = i64::from(acc) * i64::from(self.mult);
        let q = x >> s;
        let rem = x - (q << s);
        let half = 1i64 << (s - 1);
        let up = rem > half || (rem == half && q & 1 == 1);
        (q + i64::from(up) + i64::from(zp)).clamp(i64::from(lo), i64::from(hi)) as i32
    }
}
