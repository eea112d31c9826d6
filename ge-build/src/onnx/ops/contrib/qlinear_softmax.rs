//! QLinearSoftmax (X, X_scale, X_zp, Y_scale, Y_zp), which onnxruntime's QDQ transformer
//! makes of DequantizeLinear → Softmax → QuantizeLinear: computed as its CPU kernel does,
//! so the result matches it rather than the float softmax. Its exponentials come from a
//! 256-entry f32 table indexed by `max − x` (built here from the constant X_scale, with
//! onnxruntime's headroom shift), summed in f32, and each output is
//! `round(t · ⌊1/Y_scale⌋ / Σt) + Y_zp` (note the floor: for Y_scale = 1/255 that is 254).
//! One difference: ge saturates an int8 result of 128 to 127 where onnxruntime wraps it.

use ge_runtime::format::DType;

use super::qlinear::{int8, requantized};
use crate::error::Result;
use crate::onnx::ctx::{Imported, NodeCtx};
use crate::onnx::ops::decomp::{in_name, reduce};
use crate::onnx::ops::quant::cast;
use crate::onnx::ops::sub::{A, Sub};
use crate::tensor::TensorData;

/// The constant one-element input `i` (a scale) as f32.
fn constant_scale(ctx: &NodeCtx<'_>, i: usize, what: &str) -> Result<f32> {
    let v = ctx
        .input(i)?
        .data
        .map(|d| d.to_f64_vec())
        .transpose()
        .map_err(|e| ctx.err(format!("{what}: {e}")))?;
    match v.as_deref() {
        Some([s]) if s.is_finite() && *s > 0.0 => Ok(*s as f32),
        Some(_) => Err(ctx.err(format!(
            "{what} (input {i}) must be one finite positive value; recalibrate the model"
        ))),
        None => Err(ctx.unsupported(format!(
            "{what} (input {i}) is computed at run time: ge builds the exponential table at \
             compile time and needs a constant scale"
        ))),
    }
}

/// onnxruntime's exponential table: entry `d` is `exp((shift − d) · x_scale)`, the shift
/// leaving room for the sum of `n` entries below f32's maximum.
fn table(x_scale: f32, n: usize) -> Vec<f32> {
    let room = f64::from(f32::MAX / n as f32).ln();
    let shift = (room - 5.0).max(0.0) / f64::from(x_scale);
    (0..256)
        .map(|d| ((shift - f64::from(d)) * f64::from(x_scale)).exp() as f32)
        .collect()
}

/// The decomposition (axis as Softmax at the `opset` attribute: one axis from 13, the
/// flattened trailing axes before).
pub fn qlinear_softmax(ctx: &NodeCtx<'_>) -> Result<Imported> {
    if ctx.int8_rounding == crate::Int8Rounding::Tflite
        && let Some(i) = super::tflite::softmax(ctx)?
    {
        return Ok(i);
    }
    let dt = int8(ctx, 0)?;
    let x = ctx.input(0)?;
    let rank = x.shape.len();
    let opset = ctx.attr_i_or("opset", ctx.opset);
    let a = ctx.axis(ctx.attr_i_or("axis", if opset < 13 { 1 } else { -1 }), rank)?;
    let axes: Vec<i64> = if opset < 13 {
        (a as i64..rank as i64).collect()
    } else {
        vec![a as i64]
    };
    let n: usize = axes.iter().map(|&i| x.shape[i as usize]).product();
    let xs = constant_scale(ctx, 1, "X_scale")?;
    let ys = constant_scale(ctx, 3, "Y_scale")?;
    let mut s = Sub::new(ctx);
    let xf = cast(&mut s, &in_name(ctx, 0), dt, DType::F32);
    let mx = reduce(&mut s, ctx.opset, "ReduceMax", &xf, &axes, true);
    let d = s.op("Sub", &[&mx, &xf], vec![]);
    let di = cast(&mut s, &d, DType::F32, DType::I64);
    let tab = TensorData::from_elements(DType::F32, vec![256], &table(xs, n))
        .map_err(|e| ctx.err(e.to_string()))?;
    let tab = s.constant(tab);
    let t = s.op("Gather", &[&tab, &di], vec![A::I("axis", 0)]);
    let sum = reduce(&mut s, ctx.opset, "ReduceSum", &t, &axes, true);
    let y = s.scalar(DType::F32, f64::from((1.0 / ys).floor()));
    let num = s.op("Mul", &[&t, &y], vec![]);
    let v = s.op("Div", &[&num, &sum], vec![]);
    requantized(ctx, s, &v, 4, dt)
}
