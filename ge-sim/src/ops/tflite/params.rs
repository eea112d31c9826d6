//! The parameters TFLite Micro's `Prepare` functions derive from a model's f32 scales
//! (compile time): the same f64 arithmetic in the same order, since a different order
//! changes the multipliers' low bits and, near rounding boundaries, the outputs.

use ge_runtime::format::{QBINARY_ADD, QBINARY_MUL, QBinaryParams, QMeanParams, QSoftmaxParams};

use super::fixed::quantize_multiplier;
use crate::ops::KernelError;

/// The real multiplier of a Conv, DepthwiseConv or per-channel FullyConnected output
/// channel: `f64(s_in)·f64(s_w)/f64(s_out)` (`PopulateConvolutionQuantizationParams`).
pub fn conv_multiplier(s_in: f32, s_w: f32, s_out: f32) -> f64 {
    f64::from(s_in) * f64::from(s_w) / f64::from(s_out)
}

/// The real multiplier of a per-tensor FullyConnected: the scales' product taken in f32,
/// then `/ f64(s_out)` (`GetQuantizedConvolutionMultipler`).
pub fn fc_multiplier(s_in: f32, s_w: f32, s_out: f32) -> f64 {
    f64::from(s_in * s_w) / f64::from(s_out)
}

fn scales_ok(s: &[f32]) -> Result<(), KernelError> {
    if s.iter().all(|v| v.is_finite() && *v > 0.0) {
        Ok(())
    } else {
        Err(KernelError::BadParams("scales must be finite and positive"))
    }
}

/// `(multiplier, shift)` of `d`, refusing a shift TFLite's `MultiplyByQuantizedMultiplier`
/// cannot apply (`d ≥ 2^30`).
fn multiplier(d: f64) -> Result<(i32, i32), KernelError> {
    let (m, s) = quantize_multiplier(d);
    if s > 30 {
        return Err(KernelError::BadParams(
            "a scale ratio of 2^30 or more: the scales are malformed",
        ));
    }
    Ok((m, s))
}

/// TFLite's int8 Add (`CalculateOpDataAdd`, left shift 20): scales and zero points of A, B
/// and the output, and the activation range.
pub fn add_params(
    a: (f32, i32),
    b: (f32, i32),
    out: (f32, i32),
    act: (i32, i32),
) -> Result<QBinaryParams, KernelError> {
    scales_ok(&[a.0, b.0, out.0])?;
    const LEFT_SHIFT: i32 = 20;
    let twice_max = 2.0 * f64::from(a.0.max(b.0));
    let (a_mult, a_shift) = multiplier(f64::from(a.0) / twice_max)?;
    let (b_mult, b_shift) = multiplier(f64::from(b.0) / twice_max)?;
    let (out_mult, out_shift) =
        multiplier(twice_max / (f64::from(1 << LEFT_SHIFT) * f64::from(out.0)))?;
    Ok(QBinaryParams {
        op: QBINARY_ADD,
        a_zp: a.1,
        b_zp: b.1,
        out_zp: out.1,
        left_shift: LEFT_SHIFT,
        a_mult,
        a_shift,
        b_mult,
        b_shift,
        out_mult,
        out_shift,
        act_min: act.0,
        act_max: act.1,
    })
}

/// TFLite's int8 Mul (`CalculateOpDataMul`): `f64(s_a)·f64(s_b)/f64(s_out)`.
pub fn mul_params(
    a: (f32, i32),
    b: (f32, i32),
    out: (f32, i32),
    act: (i32, i32),
) -> Result<QBinaryParams, KernelError> {
    scales_ok(&[a.0, b.0, out.0])?;
    let (out_mult, out_shift) = multiplier(f64::from(a.0) * f64::from(b.0) / f64::from(out.0))?;
    Ok(QBinaryParams {
        op: QBINARY_MUL,
        a_zp: a.1,
        b_zp: b.1,
        out_zp: out.1,
        left_shift: 0,
        a_mult: 0,
        a_shift: 0,
        b_mult: 0,
        b_shift: 0,
        out_mult,
        out_shift,
        act_min: act.0,
        act_max: act.1,
    })
}

/// TFLite's int8 Mean of rows of `n` (`PrepareMeanOrSumHelper`, then `QuantizedMeanOrSum`'s
/// folding of `1/n`: the multiplier shifted up by `⌊log2 n⌋` (at most 32 and `31 + shift`),
/// divided by `n` with truncation).
pub fn mean_params(
    s_in: f32,
    in_zp: i32,
    s_out: f32,
    out_zp: i32,
    n: u32,
) -> Result<QMeanParams, KernelError> {
    scales_ok(&[s_in, s_out])?;
    if n == 0 {
        return Err(KernelError::BadParams("a mean over no elements"));
    }
    let (m, s) = multiplier(f64::from(s_in) / f64::from(s_out))?;
    let sh = (31 - n.leading_zeros() as i32).min(32).min(31 + s);
    let mult = ((i64::from(m) << sh) / i64::from(n)) as i32;
    Ok(QMeanParams {
        n,
        mult,
        shift: s - sh,
        in_zp,
        out_zp,
    })
}

/// TFLite's int8 Softmax of rows of `n` on input scale `s_in` (`CalculateSoftmaxParams`,
/// `PreprocessSoftmaxScaling` with 5 integer bits, `CalculateInputRadius`). Errors where
/// TFLite's checks fail (`beta·s_in·2^26 ≤ 1`).
pub fn softmax_params(s_in: f32, beta: f64, n: u32) -> Result<QSoftmaxParams, KernelError> {
    scales_ok(&[s_in])?;
    let real = (beta * f64::from(s_in) * f64::from(1u32 << 26)).min(f64::from(i32::MAX));
    if real.is_nan() || real <= 1.0 {
        return Err(KernelError::BadParams(
            "softmax input scale below 2^-26: TFLite's int8 softmax cannot take it",
        ));
    }
    let (in_mult, in_lshift) = quantize_multiplier(real);
    let radius = 31.0 * f64::from(1u32 << 26) / libm::ldexp(1.0, in_lshift);
    Ok(QSoftmaxParams {
        n,
        in_mult,
        in_lshift,
        diff_min: -(libm::floor(radius) as i32),
    })
}

/// The activation range of a fused Relu / Relu6 / ReluN1To1 or clip to `[lo, hi]` on an
/// output of scale `s` and zero point `zp` (`CalculateActivationRangeQuantized`: f32
/// division, rounded half away from zero), within the type's `[q_min, q_max]`.
pub fn activation_range(
    s: f32,
    zp: i32,
    lo: Option<f32>,
    hi: Option<f32>,
    q: (i32, i32),
) -> (i32, i32) {
    let at = |f: f32| zp.saturating_add(libm::roundf(f / s) as i32);
    (
        lo.map_or(q.0, |f| q.0.max(at(f))),
        hi.map_or(q.1, |f| q.1.min(at(f))),
    )
}
