//! MatMulInteger and QLinearMatMul with a constant 2-D int8/uint8 weight lowered to one int8
//! `QGemm` task: the weight stays int8 in the blob (packed once here), the zero points are
//! folded into a per-column i32 correction and the requantization multiplier
//! `a_scale·b_scale/y_scale` is fixed here as a 31-bit multiplier and shift.
//!
//! Rounding: the kernel requantizes as onnxruntime's MLAS does, `round_half_even(f32(acc)·M)`
//! with `M` the f32 multiplier onnxruntime computes (`QGEMM_OUT_Q8_F32`, format version 5),
//! so the int8 outputs are onnxruntime's. The i32 result of MatMulInteger is exact.
//!
//! Nodes these do not cover (a run-time or batched weight, per-row activation zero points)
//! return `None` and keep their decomposition ([`super::qlinear`]). O(k·n) per node.

use ge_runtime::format::{
    DType, QGEMM_OUT_I32, QGEMM_OUT_Q8_F32, QGEMM_OUT_Q8_TFLITE, QGemmParams,
};
use ge_sim::target::{Requant, fold_zero_points, pack_b, packed_len};

use super::super::ctx::{Imported, NodeCtx};
use super::contrib::{YRounding, integer_gemm};
use super::qparams::{Per, is_q8, same_axis, scale, zero_point};
use crate::error::Result;
use crate::ir::Op;
use crate::tensor::TensorData;

/// A placeholder input index: the slot is filled by a compile-time constant (an override)
/// or stays absent.
pub(super) const NONE: usize = usize::MAX;

/// The constant weight `[k, n]` as int8 (uint8 shifted by −128, its zero points with it),
/// or `None` when it is not a constant matrix.
struct Weight {
    k: usize,
    n: usize,
    b: Vec<i8>,
    /// 128 for a uint8 weight: subtracted from the values and the zero points.
    shift: i32,
}

/// Constant input `i` as a 2-D int8 weight `[k, n]`, the order the kernel packs (stored
/// `[n, k]` when `transposed`, and rewritten here).
fn weight(ctx: &NodeCtx<'_>, i: usize, transposed: bool) -> Result<Option<Weight>> {
    let w = ctx.input(i)?;
    let ([r, c], Some((b, shift))) = (w.shape, int8_constant(ctx, i)) else {
        return Ok(None);
    };
    if !transposed {
        return Ok(Some(Weight {
            k: *r,
            n: *c,
            b,
            shift,
        }));
    }
    let (k, n) = (*c, *r);
    let mut t = vec![0i8; k * n];
    for (j, row) in b.chunks_exact(k.max(1)).enumerate() {
        for (kk, &v) in row.iter().enumerate() {
            t[kk * n + j] = v;
        }
    }
    Ok(Some(Weight { k, n, b: t, shift }))
}

/// Constant input `i` as int8 values and the shift applied (128 for uint8), or `None`.
pub(super) fn int8_constant(ctx: &NodeCtx<'_>, i: usize) -> Option<(Vec<i8>, i32)> {
    let w = ctx.input_opt(i)?;
    let data = w.data?;
    match w.dtype {
        DType::I8 => Some((data.bytes.iter().map(|&v| v as i8).collect(), 0)),
        DType::U8 => Some((data.bytes.iter().map(|&v| (v ^ 0x80) as i8).collect(), 128)),
        _ => None,
    }
}

/// How the activation zero point enters: folded (a constant) or read at run time.
pub(super) enum Za {
    Const(i32),
    /// ONNX input index of a one-element run-time zero point.
    Input(usize),
}

/// The activation zero point (input `i` for value input 0): constant, a one-element run-time
/// tensor, or `None` (per-row: not lowered).
pub(super) fn activation_zp(ctx: &NodeCtx<'_>, i: usize) -> Result<Option<Za>> {
    match zero_point(ctx, i, 0, "the activation zero point", Per::Tensor) {
        Ok(Some(z)) => Ok(Some(Za::Const(z[0]))),
        Ok(None) => {
            let numel: usize = ctx.input(i)?.shape.iter().product();
            Ok((numel == 1).then_some(Za::Input(i)))
        }
        // A per-row (1-D of M) constant zero point is valid ONNX: leave it decomposed.
        Err(_) if ctx.input(i)?.shape.iter().product::<usize>() != 1 => Ok(None),
        Err(e) => Err(e),
    }
}

/// The task for `A · B` with the given zero points and output.
struct Plan {
    w: Weight,
    za: Za,
    zb: Vec<i32>,
    out: (DType, u32, i32),
    rq: Option<Vec<Requant>>,
    /// An int32 bias per column, added to the accumulator before requantization.
    bias: Option<Vec<i32>>,
}

fn lower(ctx: &NodeCtx<'_>, b_input: usize, p: Plan) -> Result<Imported> {
    let Plan {
        w,
        za,
        zb,
        out,
        rq,
        bias,
    } = p;
    let (k, n) = (w.k, w.n);
    let a = ctx.input(0)?;
    if a.shape.last() != Some(&k) {
        return Err(ctx.err(format!(
            "A has shape {:?} but B has {k} rows: A's last dim must be B's first",
            a.shape
        )));
    }
    let kerr = |e: ge_runtime::KernelError| ctx.err(e.to_string());
    let zb: Vec<i32> = zb.iter().map(|z| z - w.shift).collect();
    let len = packed_len(k, n).ok_or_else(|| ctx.err("the weight is too large"))?;
    let mut packed = vec![0i8; len];
    pack_b(&w.b, k, n, n, 1, &mut packed).map_err(kerr)?;
    let za_const = match za {
        Za::Const(z) => z,
        Za::Input(_) => 0,
    };
    let mut corr = vec![0i32; n];
    fold_zero_points(&w.b, k, n, n, 1, za_const, &zb, bias.as_deref(), &mut corr).map_err(kerr)?;
    let mut inputs = vec![0, b_input, NONE, NONE, NONE];
    let adj = match za {
        Za::Input(i) => {
            // adj_j = Σ_k B[k][j] − k·zb_j: the run-time zero point's share of the correction.
            let mut adj = vec![0i32; n];
            fold_zero_points(&w.b, k, n, n, 1, -1, &zb, None, &mut adj).map_err(kerr)?;
            inputs.extend([i, NONE]);
            Some(adj)
        }
        Za::Const(_) => None,
    };
    let overrides = constants(ctx, &packed, &corr, &zb, rq.as_deref(), adj.as_deref())?;
    let mut shape = a.shape[..a.shape.len() - 1].to_vec();
    shape.push(n);
    let params = QGemmParams {
        out: out.1,
        out_zp: out.2,
        k: u32::try_from(k).map_err(|_| ctx.err("k is too large"))?,
        n: u32::try_from(n).map_err(|_| ctx.err("n is too large"))?,
    };
    Ok(Imported::Op {
        op: Op::QGemm(params),
        inputs,
        outputs: vec![(out.0, shape)],
        overrides,
    })
}

/// MatMulInteger (A, B, a_zero_point, b_zero_point) → an i32 `QGemm`, or `None`.
pub fn matmul_integer(ctx: &NodeCtx<'_>) -> Result<Option<Imported>> {
    if !is_q8(ctx.input(0)?.dtype) {
        return Ok(None);
    }
    let Some(w) = weight(ctx, 1, false)? else {
        return Ok(None);
    };
    let Some(za) = activation_zp(ctx, 2)? else {
        return Ok(None);
    };
    let Some(zb) = zero_point(ctx, 3, 1, "b_zero_point", Per::TensorOr(w.n))? else {
        return Ok(None);
    };
    let plan = Plan {
        w,
        za,
        zb,
        out: (DType::I32, QGEMM_OUT_I32, 0),
        rq: None,
        bias: None,
    };
    lower(ctx, 1, plan).map(Some)
}

/// Where a product's parameters are among the node's inputs (A is input 0 and B input 3
/// in every form).
#[derive(Clone, Copy)]
pub(crate) struct Slots {
    pub(crate) a_scale: usize,
    pub(crate) a_zp: usize,
    pub(crate) b_scale: usize,
    pub(crate) b_zp: usize,
    pub(crate) y_scale: usize,
    pub(crate) y_zp: usize,
    /// An int32 bias of one value per column.
    pub(crate) bias: Option<usize>,
}

/// `com.microsoft:QGemm`'s (A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp).
pub(crate) const QGEMM: Slots = Slots {
    a_scale: 1,
    a_zp: 2,
    b_scale: 4,
    b_zp: 5,
    y_scale: 7,
    y_zp: 8,
    bias: Some(6),
};

/// QLinearMatMul's (and FullyConnected's first eight).
const QLINEAR_MATMUL: Slots = Slots {
    a_scale: 1,
    a_zp: 2,
    b_scale: 4,
    b_zp: 5,
    y_scale: 6,
    y_zp: 7,
    bias: None,
};

/// A requantizing `QGemm` of the constant B (input 3; `[n, k]` when `b_transposed`) with
/// the parameters at `at`, or `None` when one is computed at run time (or the activation
/// zero point is per row). The scales are checked whether or not the node is lowered.
fn requantizing(ctx: &NodeCtx<'_>, at: Slots, b_transposed: bool) -> Result<Option<Imported>> {
    let bs = ctx.input(3)?.shape;
    let n = if b_transposed { bs.first() } else { bs.last() };
    let n = n.copied().unwrap_or(1);
    let sa = scale(ctx, at.a_scale, "a_scale", Per::Tensor)?;
    let sb = scale(ctx, at.b_scale, "b_scale", Per::TensorOr(n))?;
    let sy = scale(ctx, at.y_scale, "y_scale", Per::Tensor)?;
    let zb = zero_point(ctx, at.b_zp, 3, "b_zero_point", Per::TensorOr(n))?;
    let zy = zero_point_out(ctx, at.y_zp)?;
    if let (Some(sb), Some(zb)) = (&sb, &zb) {
        same_axis(ctx, (at.b_scale, sb.len()), (at.b_zp, zb.len()))?;
    }
    let (Some(sa), Some(sb), Some(sy), Some(zb), Some((y_dt, zy))) = (sa, sb, sy, zb, zy) else {
        return Ok(None);
    };
    let Some(w) = weight(ctx, 3, b_transposed)? else {
        return Ok(None);
    };
    let Some(Za::Const(za)) = activation_zp(ctx, at.a_zp)? else {
        return Ok(None);
    };
    let bias = match at.bias.map(|i| int32_bias(ctx, i, n)) {
        None => None,
        Some(Ok(Some(b))) => Some(b),
        Some(Ok(None)) => return Ok(None),
        Some(Err(e)) => return Err(e),
    };
    let (kind, rq) = multipliers(ctx, sa[0], &sb, sy[0], Layer::Dense)?;
    let plan = Plan {
        w,
        za: Za::Const(za),
        zb,
        out: (y_dt, kind, zy),
        rq: Some(rq),
        bias,
    };
    lower(ctx, 3, plan).map(Some)
}

/// Constant input `i` as an int32 bias of `n` values, or `None` (absent, run time or
/// another shape or type).
fn int32_bias(ctx: &NodeCtx<'_>, i: usize, n: usize) -> Result<Option<Vec<i32>>> {
    let Some(c) = ctx.input_opt(i) else {
        return Ok(None);
    };
    match c.data {
        Some(d) if c.dtype == DType::I32 && c.shape.iter().product::<usize>() == n => Ok(Some(
            d.to_i64_vec()
                .map_err(|e| ctx.err(format!("the bias (input {i}): {e}")))?
                .iter()
                .map(|&v| v as i32)
                .collect(),
        )),
        _ => Ok(None),
    }
}

/// QLinearMatMul (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) → a requantizing
/// `QGemm`, or `None`.
pub fn qlinear_matmul(ctx: &NodeCtx<'_>) -> Result<Option<Imported>> {
    requantizing(ctx, QLINEAR_MATMUL, false)
}

/// `ge.internal:FullyConnected` (QLinearMatMul's inputs, then an int32 bias; see
/// [`crate::passes::qdq::dense`]): `MatMul` + int32-bias `Add` (+ a redundant Relu) +
/// QuantizeLinear.
/// - `--int8-rounding tflite`: TFLite's FullyConnected, a requantizing `QGemm` with the
///   bias folded into the correction; errors where the layer cannot be lowered (ge wrote
///   the node for this).
/// - `onnx`: what onnxruntime makes of it (MatMul + Add → Gemm, then its QDQ Gemm
///   selector: QGemm). A 2-D A gives the requantizing `QGemm` (one rounding, the
///   decomposition when a scale is computed at run time); any other rank is reshaped to 2-D
///   around a float-output QGemm, so the QuantizeLinear rounds a second time.
pub fn fully_connected(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let at = Slots {
        bias: Some(8),
        ..QLINEAR_MATMUL
    };
    if ctx.int8_rounding == crate::Int8Rounding::Onnx {
        if ctx.input(0)?.shape.len() != 2 {
            return integer_gemm(ctx, &at, Some(YRounding::AfterFloat));
        }
        if let Some(i) = requantizing(ctx, at, false)? {
            return Ok(i);
        }
        return integer_gemm(ctx, &at, Some(YRounding::Fused));
    }
    requantizing(ctx, at, false)?.ok_or_else(|| {
        ctx.unsupported(
            "a dense layer with run-time weights, scales, zero points or bias: compile with \
             --int8-rounding onnx",
        )
    })
}

/// `com.microsoft:QGemm` (A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp) with a
/// constant B, int32 bias C, alpha 1 and an 8-bit output → a requantizing `QGemm` (the bias
/// folded into the correction), or `None`: a FullyConnected layer as TFLite computes it.
pub fn qgemm_contrib(ctx: &NodeCtx<'_>) -> Result<Option<Imported>> {
    if ctx.attr_i_or("transA", 0) != 0
        || ctx.attr_f_or("alpha", 1.0) != 1.0
        || ctx.input_opt(7).is_none()
        || ctx.input(0)?.shape.len() != 2
    {
        return Ok(None);
    }
    let at = Slots {
        bias: ctx.input_opt(6).map(|_| 6),
        ..QGEMM
    };
    requantizing(ctx, at, ctx.attr_i_or("transB", 0) != 0)
}

/// Which TFLite layer a requantization belongs to: its real multiplier is computed
/// differently ([`ge_sim::target::tflite`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Layer {
    Conv,
    Dense,
}

/// The output kind and requantization records of a product on scales `sa`, `sb` (one per
/// column or one) into `sy`. onnxruntime's (`--int8-rounding onnx`): its f32 scales in its
/// order (`sa · sb / sy`), applied as it applies them (`f32(acc)·scale`,
/// [`Requant::from_f32_scale`]). TFLite's: `QuantizeMultiplier` of the real multiplier
/// TFLite Micro computes for the layer ([`Requant::from_tflite`]).
pub(super) fn multipliers(
    ctx: &NodeCtx<'_>,
    sa: f32,
    sb: &[f32],
    sy: f32,
    layer: Layer,
) -> Result<(u32, Vec<Requant>)> {
    use ge_sim::target::tflite::{conv_multiplier, fc_multiplier};
    let per_tensor_dense = layer == Layer::Dense && sb.len() == 1;
    let (out, rq) = match ctx.int8_rounding {
        crate::Int8Rounding::Onnx => (
            QGEMM_OUT_Q8_F32,
            sb.iter()
                .map(|&s| Requant::from_f32_scale(sa * s / sy))
                .collect::<std::result::Result<Vec<_>, _>>(),
        ),
        crate::Int8Rounding::Tflite => (
            QGEMM_OUT_Q8_TFLITE,
            sb.iter()
                .map(|&s| {
                    Requant::from_tflite(if per_tensor_dense {
                        fc_multiplier(sa, s, sy)
                    } else {
                        conv_multiplier(sa, s, sy)
                    })
                })
                .collect::<std::result::Result<Vec<_>, _>>(),
        ),
    };
    let rq = rq.map_err(|e| ctx.err(format!("{e}: check the input, weight and output scales")))?;
    Ok((out, rq))
}

/// The constant inputs of a `QGemm`/`QConv` task as overrides at their kernel-input slots
/// (packed weight 1, correction 2, weight zero points 3 when any is non-zero,
/// requantization 4, run-time zero-point adjustment 6).
pub(super) fn constants(
    ctx: &NodeCtx<'_>,
    packed: &[i8],
    corr: &[i32],
    zb: &[i32],
    rq: Option<&[Requant]>,
    adj: Option<&[i32]>,
) -> Result<Vec<(usize, TensorData)>> {
    let t = |d: DType, dims: Vec<usize>, bytes: &[u8]| {
        TensorData::new(d, dims, bytes.to_vec()).map_err(|e| ctx.err(e.to_string()))
    };
    let mut o = vec![
        (
            1,
            t(DType::I8, vec![packed.len()], bytemuck::cast_slice(packed))?,
        ),
        (
            2,
            t(DType::I32, vec![corr.len()], bytemuck::cast_slice(corr))?,
        ),
    ];
    if zb.iter().any(|&z| z != 0) {
        o.push((3, t(DType::I32, vec![zb.len()], bytemuck::cast_slice(zb))?));
    }
    if let Some(rq) = rq {
        o.push((
            4,
            t(DType::I32, vec![rq.len(), 2], bytemuck::cast_slice(rq))?,
        ));
    }
    if let Some(adj) = adj {
        o.push((
            6,
            t(DType::I32, vec![adj.len()], bytemuck::cast_slice(adj))?,
        ));
    }
    Ok(o)
}

/// The output type and zero point (y_zero_point, input `i`: 7 in QLinearMatMul and
/// QLinearConv; absent: the activation's type with zero point 0), `None` when not a
/// constant.
pub(super) fn zero_point_out(ctx: &NodeCtx<'_>, i: usize) -> Result<Option<(DType, i32)>> {
    match ctx.input_opt(i) {
        None => Ok(Some((ctx.input(0)?.dtype, 0))),
        Some(z) if !is_q8(z.dtype) => Err(ctx.err(format!(
            "y_zero_point is {}: the output must be uint8 or int8",
            z.dtype.name()
        ))),
        Some(z) => Ok(zero_point(ctx, i, i, "y_zero_point", Per::Tensor)?.map(|v| (z.dtype, v[0]))),
    }
}
