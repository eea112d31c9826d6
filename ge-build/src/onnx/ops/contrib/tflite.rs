//! The QOperator ops in TFLite Micro's arithmetic (`--int8-rounding tflite`): QLinearAdd /
//! QLinearMul as `QBinary` tasks, QLinearSoftmax as a `QSoftmax` task, QLinearAveragePool
//! as the Pool task on the 8-bit values (TFLite's raw-sum average), QLinearGlobalAveragePool
//! and `ge.internal:Mean` as `QMean` tasks (TFLite's Mean), with the parameters
//! TFLite's `Prepare` derives from the same f32 scales (`ge_sim::target::tflite`).
//!
//! Each returns `None` where TFLite has no such kernel (run-time scales, a softmax output
//! not on 1/256, an average pool that rescales or counts padding): the node then keeps
//! onnxruntime's arithmetic, the closest defined result. O(1) per node (the pool: O(rank)).

use ge_runtime::format::{DType, PoolKind, QBinaryParams, QSoftmaxParams};

use crate::onnx::ops::decomp::{in_name, out0, reduce};
use crate::onnx::ops::sub::Sub;
use ge_sim::target::tflite;

use crate::error::Result;
use crate::ir::Op;
use crate::onnx::ctx::{Imported, NodeCtx};
use crate::onnx::ops::qparams::{Per, is_q8, scale, zero_point};

/// The constant per-tensor scale and zero point of value input `v` (scale at `s`, zero point
/// at `z`), or `None` when either is computed at run time.
fn qparams(ctx: &NodeCtx<'_>, v: usize, s: usize, z: usize) -> Result<Option<(f32, i32)>> {
    let sc = scale(ctx, s, "a scale", Per::Tensor)?;
    let zp = zero_point(ctx, z, v, "a zero point", Per::Tensor)?;
    Ok(match (sc, zp) {
        (Some(s), Some(z)) => Some((s[0], z[0])),
        _ => None,
    })
}

/// The 8-bit type's range.
fn range(d: DType) -> (i32, i32) {
    if d == DType::U8 {
        (0, 255)
    } else {
        (-128, 127)
    }
}

fn kerr<'c>(ctx: &'c NodeCtx<'_>) -> impl Fn(ge_runtime::KernelError) -> crate::CompileError + 'c {
    |e| ctx.err(format!("{e}; check the model's scales"))
}

/// QLinearAdd / QLinearMul (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp) → `QBinary`.
pub fn binary(ctx: &NodeCtx<'_>, op: &str) -> Result<Option<Imported>> {
    qbinary(ctx, |qa, qb, qy, act| {
        match op {
            "Add" => tflite::add_params(qa, qb, qy, act),
            _ => tflite::mul_params(qa, qb, qy, act),
        }
        .map_err(kerr(ctx))
    })
}

/// The (scale, zero point) of an 8-bit tensor.
pub(super) type QParams = (f32, i32);

/// A QLinearAdd / QLinearMul node as one `QBinary` task with the record `make` derives from
/// A's, B's and the output's constant quantization and the output type's range, or `None`
/// when one is computed at run time or the operands are not one 8-bit type.
pub(super) fn qbinary(
    ctx: &NodeCtx<'_>,
    make: impl Fn(QParams, QParams, QParams, (i32, i32)) -> Result<QBinaryParams>,
) -> Result<Option<Imported>> {
    let (a, b) = (ctx.input(0)?, ctx.input(3)?);
    if !is_q8(a.dtype) || a.dtype != b.dtype {
        return Ok(None);
    }
    let (Some(qa), Some(qb)) = (qparams(ctx, 0, 1, 2)?, qparams(ctx, 3, 4, 5)?) else {
        return Ok(None);
    };
    let Some(qy) = out_qparams(ctx, 6, 7, a.dtype)? else {
        return Ok(None);
    };
    let p = make(qa, qb, qy, range(a.dtype))?;
    let shape = crate::onnx::ops::broadcast_shapes(&[a.shape, b.shape]).ok_or_else(|| {
        ctx.err(format!(
            "A {:?} and B {:?} do not broadcast",
            a.shape, b.shape
        ))
    })?;
    Ok(Some(Imported::one(
        Op::QBinary(p),
        vec![0, 3],
        a.dtype,
        shape,
    )))
}

/// The output's constant scale (input `s`) and zero point (input `z`, absent: 0), the zero
/// point of type `dt`.
fn out_qparams(ctx: &NodeCtx<'_>, s: usize, z: usize, dt: DType) -> Result<Option<(f32, i32)>> {
    let Some(sy) = scale(ctx, s, "the output scale", Per::Tensor)? else {
        return Ok(None);
    };
    let zy = match ctx.input_opt(z) {
        None => 0,
        Some(t) if t.dtype != dt => return Ok(None),
        Some(_) => match zero_point(ctx, z, z, "the output zero point", Per::Tensor)? {
            Some(v) => v[0],
            None => return Ok(None),
        },
    };
    Ok(Some((sy[0], zy)))
}

/// QLinearSoftmax (X, X_scale, X_zp, Y_scale, Y_zp) → `QSoftmax`, when its rows are the
/// innermost axes and Y is on TFLite's fixed output quantization (scale 1/256, zero point
/// −128 for int8, 0 for uint8).
pub fn softmax(ctx: &NodeCtx<'_>) -> Result<Option<Imported>> {
    let x = ctx.input(0)?;
    if !is_q8(x.dtype) {
        return Ok(None);
    }
    let rank = x.shape.len();
    let opset = ctx.attr_i_or("opset", ctx.opset);
    let a = ctx.axis(ctx.attr_i_or("axis", if opset < 13 { 1 } else { -1 }), rank)?;
    if opset >= 13 && a + 1 != rank {
        return Ok(None);
    }
    let Some((sx, _)) = qparams(ctx, 0, 1, 2)? else {
        return Ok(None);
    };
    let Some((sy, zy)) = out_qparams(ctx, 3, 4, x.dtype)? else {
        return Ok(None);
    };
    if sy != 1.0 / 256.0 || zy != range(x.dtype).0 {
        return Ok(None);
    }
    let n: usize = x.shape[a..].iter().product();
    let n = u32::try_from(n).map_err(|_| ctx.err("a softmax row above 2^32 elements"))?;
    let p: QSoftmaxParams = tflite::softmax_params(sx, 1.0, n).map_err(kerr(ctx))?;
    Ok(Some(Imported::one(
        Op::QSoftmax(p),
        vec![0],
        x.dtype,
        x.shape.to_vec(),
    )))
}

/// QLinearAveragePool (X, X_scale, X_zp, Y_scale, Y_zp) → the Pool task on the 8-bit
/// values, when Y keeps X's quantization (TFLite requires it; the scales within 1e-6) and
/// padding is not counted.
pub fn average_pool(ctx: &NodeCtx<'_>) -> Result<Option<Imported>> {
    let x = ctx.input(0)?;
    if !is_q8(x.dtype) || ctx.attr_i_or("count_include_pad", 0) != 0 {
        return Ok(None);
    }
    let (Some((sx, zx)), Some((sy, zy))) =
        (qparams(ctx, 0, 1, 2)?, out_qparams(ctx, 3, 4, x.dtype)?)
    else {
        return Ok(None);
    };
    if (sx - sy).abs() > 1e-6 || zx != zy {
        return Ok(None);
    }
    crate::onnx::ops::conv::pool_of(ctx, PoolKind::Average).map(Some)
}

/// QLinearGlobalAveragePool (X, X_scale, X_zp, Y_scale, Y_zp) → `QMean` over each plane:
/// TFLite has no global pool, a Keras `GlobalAveragePooling2D` is its Mean.
pub fn global_average(ctx: &NodeCtx<'_>) -> Result<Option<Imported>> {
    let x = ctx.input(0)?;
    if !is_q8(x.dtype) || x.shape.len() < 3 || ctx.attr_i_or("channels_last", 0) != 0 {
        return Ok(None);
    }
    let (Some(qx), Some(qy)) = (qparams(ctx, 0, 1, 2)?, out_qparams(ctx, 3, 4, x.dtype)?) else {
        return Ok(None);
    };
    let mut out = x.shape[..2].to_vec();
    out.resize(x.shape.len(), 1);
    mean_over(ctx, x.dtype, &x.shape[2..], qx, qy, out).map(Some)
}

/// A `QMean` over the innermost `rows` dims into `out`.
fn mean_over(
    ctx: &NodeCtx<'_>,
    dt: DType,
    rows: &[usize],
    (sx, zx): (f32, i32),
    (sy, zy): (f32, i32),
    out: Vec<usize>,
) -> Result<Imported> {
    let n = u32::try_from(rows.iter().product::<usize>())
        .map_err(|_| ctx.err("a mean over 2^32 elements or more"))?;
    let p = tflite::mean_params(sx, zx, sy, zy, n).map_err(kerr(ctx))?;
    Ok(Imported::one(Op::QMean(p), vec![0], dt, out))
}

/// `ge.internal:Mean` (X, X_scale, X_zp, Y_scale, Y_zp; ReduceMean's `axes` and `keepdims`:
/// [`crate::passes::qdq::mean`]) → `QMean` when the axes are the innermost ones; otherwise
/// the float ops the model wrote (DequantizeLinear, ReduceMean, QuantizeLinear).
pub fn mean(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let r = x.shape.len();
    let axes = ctx.attr_ints("axes").unwrap_or_default();
    let keep = ctx.attr_i_or("keepdims", 1) != 0;
    let mut ax = axes
        .iter()
        .map(|&a| ctx.axis(a, r))
        .collect::<std::result::Result<Vec<usize>, _>>()?;
    ax.sort_unstable();
    ax.dedup();
    let k = ax.len();
    let innermost = k > 0 && ax.iter().enumerate().all(|(i, &a)| a == r - k + i);
    if innermost
        && is_q8(x.dtype)
        && let (Some(qx), Some(qy)) = (qparams(ctx, 0, 1, 2)?, out_qparams(ctx, 3, 4, x.dtype)?)
    {
        let mut out = x.shape[..r - k].to_vec();
        if keep {
            out.resize(r, 1);
        }
        return mean_over(ctx, x.dtype, &x.shape[r - k..], qx, qy, out);
    }
    let mut s = Sub::new(ctx);
    let (xs, zs, ys, yz) = (
        in_name(ctx, 1),
        in_name(ctx, 2),
        in_name(ctx, 3),
        in_name(ctx, 4),
    );
    let d = s.op("DequantizeLinear", &[&in_name(ctx, 0), &xs, &zs], vec![]);
    let m = reduce(&mut s, ctx.opset, "ReduceMean", &d, &axes, keep);
    s.to("QuantizeLinear", &[&m, &ys, &yz], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}
