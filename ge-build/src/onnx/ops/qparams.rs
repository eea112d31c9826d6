//! Constant quantization parameters (scales and zero points) read and checked once, for the
//! int8 lowerings: a malformed one is a compile error naming the node, its op type and
//! opset, the input and what to change, instead of a silently wrong int8 result.

use ge_runtime::format::DType;

use super::super::ctx::NodeCtx;
use super::quant::int_range;
use crate::error::Result;

/// What a quantization parameter may hold: one value (per tensor) or one per `n` (per
/// column / channel).
#[derive(Clone, Copy, Debug)]
pub enum Per {
    Tensor,
    TensorOr(usize),
}

/// The values of constant input `i` (a scale or zero point) as f64, checked against `per`;
/// `None` when the input is absent or not a constant.
fn values(ctx: &NodeCtx<'_>, i: usize, what: &str, per: Per) -> Result<Option<Vec<f64>>> {
    let Some(info) = ctx.input_opt(i) else {
        return Ok(None);
    };
    let Some(data) = info.data else {
        return Ok(None);
    };
    let v = data
        .to_f64_vec()
        .map_err(|e| ctx.err(format!("{what} (input {i}): {e}")))?;
    let ok = match per {
        Per::Tensor => v.len() == 1,
        Per::TensorOr(n) => v.len() == 1 || (v.len() == n && info.shape.len() <= 1),
    };
    if !ok {
        let want = match per {
            Per::Tensor => "one value (per tensor)".to_string(),
            Per::TensorOr(n) => {
                format!("one value (per tensor) or a 1-D list of {n} (one per column)")
            }
        };
        return Err(ctx.err(format!(
            "{what} (input {i}) has shape {:?}: it must hold {want}; re-export the model with \
             matching quantization axes",
            info.shape
        )));
    }
    Ok(Some(v))
}

/// A constant scale: every value finite and positive (`None` when not constant).
pub fn scale(ctx: &NodeCtx<'_>, i: usize, what: &str, per: Per) -> Result<Option<Vec<f32>>> {
    let Some(v) = values(ctx, i, what, per)? else {
        return Ok(None);
    };
    if let Some((j, bad)) = v
        .iter()
        .enumerate()
        .find(|(_, s)| !(s.is_finite() && **s > 0.0))
    {
        return Err(ctx.err(format!(
            "{what} (input {i}) is {bad} at index {j}: quantization scales must be finite and \
             positive; recalibrate the model (a zero scale comes from a constant or dead tensor)"
        )));
    }
    Ok(Some(v.iter().map(|&s| s as f32).collect()))
}

/// A constant zero point for the 8-bit value input `of`: absent is 0; its element type must
/// be the value's and every value inside that type's range (`None` when not constant).
pub fn zero_point(
    ctx: &NodeCtx<'_>,
    i: usize,
    of: usize,
    what: &str,
    per: Per,
) -> Result<Option<Vec<i32>>> {
    let vd = ctx.input(of)?.dtype;
    let Some(zi) = ctx.input_opt(i) else {
        return Ok(Some(vec![0]));
    };
    if zi.dtype != vd {
        return Err(ctx.err(format!(
            "{what} (input {i}) is {} but input {of} is {}: a zero point has the type of the \
             value it shifts; re-export with matching types",
            zi.dtype.name(),
            vd.name()
        )));
    }
    let Some(v) = values(ctx, i, what, per)? else {
        return Ok(None);
    };
    let (lo, hi) = int_range(vd).unwrap_or((f64::MIN, f64::MAX));
    if let Some((j, bad)) = v.iter().enumerate().find(|(_, z)| !(lo..=hi).contains(*z)) {
        return Err(ctx.err(format!(
            "{what} (input {i}) is {bad} at index {j}, outside {}'s range [{lo}, {hi}]; \
             give the zero point a value of the quantized type",
            vd.name()
        )));
    }
    Ok(Some(v.iter().map(|&z| z as i32).collect()))
}

/// Checks that a per-column scale and its zero point agree in length (both per tensor, or
/// both per column).
pub fn same_axis(ctx: &NodeCtx<'_>, s: (usize, usize), z: (usize, usize)) -> Result<()> {
    if s.1 != z.1 && s.1 != 1 && z.1 != 1 {
        return Err(ctx.err(format!(
            "input {} has {} scales but input {} has {} zero points: a scale and its zero \
             point must have the same length",
            s.0, s.1, z.0, z.1
        )));
    }
    Ok(())
}

/// True for the 8-bit types the int8 kernels take.
pub fn is_q8(d: DType) -> bool {
    matches!(d, DType::U8 | DType::I8)
}
