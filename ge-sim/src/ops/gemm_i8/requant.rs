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

use super::KernelError;
use crate::ops::real::Real;

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

    /// `round_half_even(acc·mult / 2^shift) + zp`, or for `shift = 0`
    /// `round_half_even(f32(acc)·scale) + zp`, clamped to `[lo, hi]`. A `shift` outside
    /// `0..=62` (a malformed blob) is clamped into it rather than trusted.
    #[inline(always)]
    pub fn apply(self, acc: i32, zp: i32, lo: i32, hi: i32) -> i32 {
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
