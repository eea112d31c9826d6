//! onnxruntime's QOperator ops (what `quantize_static` writes in QOperator format) in f32
//! arithmetic: the 8-bit inputs dequantized exactly, the float op, then requantized with
//! round half to even and saturation, in the order onnxruntime's MLAS kernels use (ratios
//! of scales first, the zero point added after rounding). A future int8 issue gives them
//! native kernels; until then a result can differ from onnxruntime's by one quantum where
//! a value lands on a rounding boundary.

use bytemuck::Zeroable;
use ge_runtime::format::{DType, QBINARY_ADD_F32, QBinaryParams};

use super::super::decomp::{in_name, out0, reshape};
use super::super::qgemm::{QGEMM, Slots};
use super::super::quant::{cast, store_saturated};
use super::super::sub::{A, Sub, copied_attrs};
use crate::error::Result;
use crate::onnx::ctx::{Imported, NodeCtx};

/// Input `i` (a per-tensor scale or zero point) as a scalar; checks it has one element.
fn scalar_in(ctx: &NodeCtx<'_>, s: &mut Sub, i: usize) -> Result<String> {
    let t = ctx.input(i)?;
    if t.shape.iter().product::<usize>() != 1 {
        return Err(ctx.unsupported(format!(
            "input {i} has shape {:?}: this op takes per-tensor scales and zero points",
            t.shape
        )));
    }
    let name = in_name(ctx, i);
    Ok(if t.shape.is_empty() {
        name
    } else {
        reshape(s, &name, &[])
    })
}

/// The 8-bit type of input `i`.
pub(super) fn int8(ctx: &NodeCtx<'_>, i: usize) -> Result<DType> {
    match ctx.input(i)?.dtype {
        d @ (DType::U8 | DType::I8) => Ok(d),
        d => Err(ctx.unsupported(format!(
            "input {i} is {}: only uint8 and int8 are supported",
            d.name()
        ))),
    }
}

/// `Cast(x, f32) - zero point z` (z absent: 0), in f32: exact for 8-bit values.
fn centered(ctx: &NodeCtx<'_>, s: &mut Sub, x: usize, z: Option<usize>) -> Result<String> {
    let d = int8(ctx, x)?;
    let xf = cast(s, &in_name(ctx, x), d, DType::F32);
    let zf = match z {
        Some(z) => zero_point_f32(ctx, s, z)?,
        None => None,
    };
    Ok(match zf {
        Some(zf) => s.op("Sub", &[&xf, &zf], vec![]),
        None => xf,
    })
}

/// `(x - zx) · sx` in f32.
fn dequantized(ctx: &NodeCtx<'_>, s: &mut Sub, x: usize, sx: usize, zx: usize) -> Result<String> {
    let c = centered(ctx, s, x, Some(zx))?;
    let sc = scalar_in(ctx, s, sx)?;
    Ok(s.op("Mul", &[&c, &sc], vec![]))
}

/// Output 0 from f32 `v` already divided by the output scale: `round(v) + zy`, saturated
/// to `out_dt`.
pub(super) fn requantized(
    ctx: &NodeCtx<'_>,
    mut s: Sub,
    v: &str,
    zy: usize,
    out_dt: DType,
) -> Result<Imported> {
    let mut r = s.op("Round", &[v], vec![]);
    if let Some(zf) = zero_point_f32(ctx, &mut s, zy)? {
        r = s.op("Add", &[&r, &zf], vec![]);
    }
    store_saturated(ctx, s, &r, DType::F32, out_dt)
}

/// Input `zy` (a scalar zero point) as f32, `None` when the node omits it.
fn zero_point_f32(ctx: &NodeCtx<'_>, s: &mut Sub, zy: usize) -> Result<Option<String>> {
    if ctx.input_opt(zy).is_none() {
        return Ok(None);
    }
    let z = scalar_in(ctx, s, zy)?;
    Ok(Some(cast(s, &z, ctx.input(zy)?.dtype, DType::F32)))
}

/// `v / (input sy)`.
fn over_scale(ctx: &NodeCtx<'_>, s: &mut Sub, v: &str, sy: usize) -> Result<String> {
    let sc = scalar_in(ctx, s, sy)?;
    Ok(s.op("Div", &[v, &sc], vec![]))
}

/// QLinearAdd / QLinearMul (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp):
/// Add: `(A-za)·(sa/sc) + (B-zb)·(sb/sc)`; Mul: `(A-za)·(B-zb)·(sa·sb/sc)`. An Add of
/// constant quantization is one `QBinary` task in onnxruntime's arithmetic instead
/// ([`onnxruntime_add`]); the decomposition (zero point added after rounding) is kept for
/// run-time scales.
pub fn binary(ctx: &NodeCtx<'_>, op: &str) -> Result<Imported> {
    if ctx.int8_rounding == crate::Int8Rounding::Tflite
        && let Some(i) = super::tflite::binary(ctx, op)?
    {
        return Ok(i);
    }
    if op == "Add"
        && let Some(i) =
            super::tflite::qbinary(ctx, |a, b, y, act| Ok(onnxruntime_add(a, b, y, act)))?
    {
        return Ok(i);
    }
    let dt = int8(ctx, 0)?;
    if int8(ctx, 3)? != dt {
        return Err(ctx.err("A and B must have one element type"));
    }
    let mut s = Sub::new(ctx);
    let a = centered(ctx, &mut s, 0, Some(2))?;
    let b = centered(ctx, &mut s, 3, Some(5))?;
    let (sa, sb, sc) = (
        scalar_in(ctx, &mut s, 1)?,
        scalar_in(ctx, &mut s, 4)?,
        scalar_in(ctx, &mut s, 6)?,
    );
    let v = if op == "Add" {
        let ra = s.op("Div", &[&sa, &sc], vec![]);
        let rb = s.op("Div", &[&sb, &sc], vec![]);
        let ta = s.op("Mul", &[&a, &ra], vec![]);
        let tb = s.op("Mul", &[&b, &rb], vec![]);
        s.op("Add", &[&ta, &tb], vec![])
    } else {
        let m = s.op("Mul", &[&sa, &sb], vec![]);
        let m = s.op("Div", &[&m, &sc], vec![]);
        let ab = s.op("Mul", &[&a, &b], vec![]);
        s.op("Mul", &[&ab, &m], vec![])
    };
    requantized(ctx, s, &v, 7, dt)
}

/// The `QBinary` record of onnxruntime's QLinearAdd ([`QBINARY_ADD_F32`]): MLAS's f32
/// constants in its order, `ra = sa/sy`, `rb = sb/sy`, `fixed = zy − fma(ra, za, rb·zb)`.
fn onnxruntime_add(
    (sa, za): (f32, i32),
    (sb, zb): (f32, i32),
    (sy, zy): (f32, i32),
    (act_min, act_max): (i32, i32),
) -> QBinaryParams {
    let (ra, rb) = (sa / sy, sb / sy);
    // `zy − (ra·za + rb·zb)` as onnxruntime's build computes it: GCC contracts the sum of
    // products into one fused multiply-add (a yolov8n residual Add has 6 of 25,600 values
    // that only this form gives).
    let fixed = zy as f32 - ra.mul_add(za as f32, rb * zb as f32);
    QBinaryParams {
        op: QBINARY_ADD_F32,
        a_mult: ra.to_bits() as i32,
        b_mult: rb.to_bits() as i32,
        out_mult: fixed.to_bits() as i32,
        act_min,
        act_max,
        ..QBinaryParams::zeroed()
    }
}

/// QLinearSigmoid / QLinearLeakyRelu (X, X_scale, X_zp, Y_scale, Y_zp):
/// `quantize(f(dequantize(x)))`, as onnxruntime's lookup table holds it.
pub fn unary(ctx: &NodeCtx<'_>, op: &str) -> Result<Imported> {
    let dt = int8(ctx, 0)?;
    let mut s = Sub::new(ctx);
    let x = dequantized(ctx, &mut s, 0, 1, 2)?;
    let attrs = if op == "LeakyRelu" {
        vec![A::F("alpha", ctx.attr_f_or("alpha", 0.01))]
    } else {
        vec![]
    };
    let f = s.op(op, &[&x], attrs);
    let v = over_scale(ctx, &mut s, &f, 3)?;
    requantized(ctx, s, &v, 4, dt)
}

/// QLinearConcat (Y_scale, Y_zp, then X, X_scale, X_zp per input): inputs already on Y's
/// scale and zero point are copied, the others requantized.
pub fn concat(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let n = ctx.input_count();
    if n < 5 || !(n - 2).is_multiple_of(3) {
        return Err(ctx.err(format!("{n} inputs: expected Y_scale, Y_zp and triples")));
    }
    let dt = int8(ctx, 1)?;
    let axis = ctx
        .attr_i("axis")
        .ok_or_else(|| ctx.err("attribute axis is required"))?;
    let same = |a: usize, b: usize| -> bool {
        match (
            ctx.input_opt(a).and_then(|t| t.data),
            ctx.input_opt(b).and_then(|t| t.data),
        ) {
            (Some(x), Some(y)) => x.to_f64_vec().ok() == y.to_f64_vec().ok(),
            _ => false,
        }
    };
    let mut s = Sub::new(ctx);
    let mut parts = Vec::new();
    for k in 0..(n - 2) / 3 {
        let (x, sx, zx) = (2 + 3 * k, 3 + 3 * k, 4 + 3 * k);
        if int8(ctx, x)? != dt {
            return Err(ctx.err(format!("input {x} differs from Y's element type")));
        }
        if same(sx, 0) && same(zx, 1) {
            parts.push(in_name(ctx, x));
            continue;
        }
        let v = dequantized(ctx, &mut s, x, sx, zx)?;
        let v = over_scale(ctx, &mut s, &v, 0)?;
        let r = s.op("Round", &[&v], vec![]);
        let z = scalar_in(ctx, &mut s, 1)?;
        let zf = cast(&mut s, &z, dt, DType::F32);
        let r = s.op("Add", &[&r, &zf], vec![]);
        let (lo, hi) = super::super::quant::int_range(dt).unwrap_or((0.0, 255.0));
        let c = super::super::quant::clip(&mut s, ctx.opset, &r, DType::F32, lo, hi);
        parts.push(s.op("Cast", &[&c], vec![A::I("to", dt as i64)]));
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    s.to("Concat", &refs, &[&out0(ctx)?], vec![A::I("axis", axis)]);
    Ok(s.done())
}

/// QLinearAveragePool (dequantize, AveragePool in f32, quantize with the zero point added
/// before rounding) and
/// QLinearGlobalAveragePool (`round((Σx - zx·n) · sx / (sy·n)) + zy`, as MLAS computes it).
pub fn pool(ctx: &NodeCtx<'_>, global: bool) -> Result<Imported> {
    if ctx.attr_i_or("channels_last", 0) != 0 {
        return Err(ctx.unsupported(
            "channels_last = 1 (NHWC); ge imports the NCHW form onnxruntime's quantizer writes",
        ));
    }
    let x = ctx.input(0)?;
    let dt = int8(ctx, 0)?;
    if x.shape.len() < 3 {
        return Err(ctx.err(format!("X {:?} needs N, C and spatial axes", x.shape)));
    }
    if ctx.int8_rounding == crate::Int8Rounding::Tflite {
        let tflite = if global {
            super::tflite::global_average(ctx)?
        } else {
            super::tflite::average_pool(ctx)?
        };
        if let Some(i) = tflite {
            return Ok(i);
        }
    }
    let mut s = Sub::new(ctx);
    if global || covers_planes(ctx, x.shape) {
        // onnxruntime's global average: `round(f32(Σx − zx·n) · (sx / (sy·n))) + zy`.
        let n: usize = x.shape[2..].iter().product();
        let sum = match plane_sums(ctx, &mut s, x.shape)? {
            Some(sum) => sum,
            None => {
                let axes: Vec<i64> = (2..x.shape.len() as i64).collect();
                let c = centered(ctx, &mut s, 0, Some(2))?;
                super::super::decomp::reduce(&mut s, ctx.opset, "ReduceSum", &c, &axes, true)
            }
        };
        let (sx, sy) = (scalar_in(ctx, &mut s, 1)?, scalar_in(ctx, &mut s, 3)?);
        let nn = s.scalar(DType::F32, n as f64);
        let den = s.op("Mul", &[&sy, &nn], vec![]);
        let m = s.op("Div", &[&sx, &den], vec![]);
        let v = s.op("Mul", &[&sum, &m], vec![]);
        requantized(ctx, s, &v, 4, dt)
    } else {
        let xf = dequantized(ctx, &mut s, 0, 1, 2)?;
        let p = windowed_average(ctx, &mut s, &xf);
        let v = over_scale(ctx, &mut s, &p, 3)?;
        zero_point_first(ctx, s, &v, 4, dt)
    }
}

/// True when an average pool's window is each whole plane with no padding: onnxruntime's
/// QLinearAveragePool then computes the global average (`fallback_to_global` in
/// `qlinear_pool.cc`: the integer sum, `f32(Σx − zx·n)·(sx / (sy·n))` rounded half to even,
/// then the zero point), whose ties differ from the windowed pool's float form.
fn covers_planes(ctx: &NodeCtx<'_>, x: &[usize]) -> bool {
    let dims: Vec<i64> = x.iter().skip(2).map(|&d| d as i64).collect();
    ctx.attr_ints("kernel_shape").as_deref() == Some(&dims[..])
        && ctx
            .attr_ints("pads")
            .is_none_or(|p| p.iter().all(|&v| v == 0))
        && matches!(
            ctx.attr_s("auto_pad").as_deref(),
            None | Some("NOTSET" | "VALID")
        )
}

/// The AveragePool of the dequantized input, as the model asks for it.
fn windowed_average(ctx: &NodeCtx<'_>, s: &mut Sub, xf: &str) -> String {
    let keep = [
        "auto_pad",
        "ceil_mode",
        "count_include_pad",
        "kernel_shape",
        "pads",
        "strides",
    ];
    let attrs = copied_attrs(ctx, &keep);
    s.op("AveragePool", &[xf], attrs)
}

/// The exact integer sums `Σx − zx·n` of each whole plane as f32 `[N, C, 1, …]`, without a
/// float copy of the feature map (MLPerf Tiny's keyword spotter held 32 KB of its 40 KB
/// arena for one): ge's dequantizing AveragePool ([`crate::onnx::ops::dequantized_pool`])
/// on scale 1 gives each plane's mean of the integers `x − zx`, summed exactly (integers
/// below 2^24), divided once; times `n` and rounded, that is the sum again, exactly while
/// `|Σ| < 2^22`. `None` when the zero point is not a constant or a plane could exceed that
/// (the caller then sums a float copy).
fn plane_sums(ctx: &NodeCtx<'_>, s: &mut Sub, x: &[usize]) -> Result<Option<String>> {
    use crate::onnx::weight_only::DOMAIN;
    let n: usize = x.iter().skip(2).product();
    let zx = match ctx.input_opt(2) {
        None => 0.0,
        Some(t) => match t.data.and_then(|d| d.to_f64_vec().ok()) {
            Some(z) if z.len() == 1 => z[0],
            _ => return Ok(None),
        },
    };
    if n == 0 || n.saturating_mul(255) >= 1 << 22 || !(1..=3).contains(&(x.len() - 2)) {
        return Ok(None);
    }
    let f32_scalar = |v: f64| {
        crate::tensor::TensorData::new(DType::F32, vec![], (v as f32).to_le_bytes().to_vec())
            .map_err(|e| ctx.err(e.to_string()))
    };
    let one = s.constant(f32_scalar(1.0)?);
    let zero = s.constant(f32_scalar(zx)?);
    let (mean, name) = (s.fresh(), s.fresh());
    s.push(crate::onnx::proto::NodeProto {
        input: vec![in_name(ctx, 0), one, zero],
        output: vec![mean.clone()],
        name: Some(name),
        op_type: Some(crate::onnx::ops::dequantized_pool::OP.into()),
        domain: Some(DOMAIN.into()),
        ..Default::default()
    });
    let nn = s.scalar(DType::F32, n as f64);
    let sum = s.op("Mul", &[&mean, &nn], vec![]);
    Ok(Some(s.op("Round", &[&sum], vec![])))
}

/// Output 0 from f32 `v` already divided by the output scale: `round(v + zy)` saturated to
/// `out_dt`, the zero point added before rounding. That is onnxruntime's QLinearAveragePool
/// (`nearbyintf(y / y_scale + y_zero_point)`), and it differs from `round(v) + zy` on the
/// exact .5 ties an average of integers makes whenever `zy` is odd (round half to even
/// picks the other neighbour).
fn zero_point_first(
    ctx: &NodeCtx<'_>,
    mut s: Sub,
    v: &str,
    zy: usize,
    out_dt: DType,
) -> Result<Imported> {
    let w = match zero_point_f32(ctx, &mut s, zy)? {
        Some(zf) => s.op("Add", &[v, &zf], vec![]),
        None => v.to_string(),
    };
    let r = s.op("Round", &[&w], vec![]);
    store_saturated(ctx, s, &r, DType::F32, out_dt)
}

/// QGemm: `alpha · (A - za)(B - zb) + C` in int32 (C int32 on the same scale), then
/// requantized with `alpha·sa·sb/sy` and `y_zp`, or scaled to f32 by `alpha·sa·sb` when
/// `y_scale` is absent.
pub fn qgemm(ctx: &NodeCtx<'_>) -> Result<Imported> {
    if ctx.int8_rounding == crate::Int8Rounding::Tflite
        && let Some(i) = crate::onnx::ops::qgemm::qgemm_contrib(ctx)?
    {
        return Ok(i);
    }
    let (a, b) = (ctx.input(0)?, ctx.input(3)?);
    if a.shape.len() != 2 || b.shape.len() != 2 {
        return Err(ctx.err(format!("A {:?} and B {:?} must be 2-D", a.shape, b.shape)));
    }
    let y = ctx.input_opt(QGEMM.y_scale).map(|_| YRounding::Fused);
    integer_gemm(ctx, &QGEMM, y)
}

/// How an integer GEMM's result reaches the 8-bit output (at the slots' `y_scale`, `y_zp`).
#[derive(Clone, Copy)]
pub(crate) enum YRounding {
    /// One rounding: `round(f32(acc)·(sa·sb/sy)) + zy` (a requantizing QGemm).
    Fused,
    /// A float-output QGemm then a QuantizeLinear: `round(f32(acc)·(sa·sb) / sy) + zy`
    /// (onnxruntime's MatMul + Add fusion when A is not 2-D: Reshapes around the Gemm keep
    /// the QuantizeLinear apart).
    AfterFloat,
}

/// An integer GEMM as onnxruntime's QGemm computes it: `acc = (A − za)·(B − zb) + C`
/// exactly in i32, then `f32(acc)·(sa·sb·alpha)` (float output, `y` absent) or rounded to
/// the 8-bit output as `y` says. `transA`/`transB`/`alpha` are read from the node (absent:
/// 0, 0, 1). A of any rank ≥ 2 when not transposed.
pub(crate) fn integer_gemm(
    ctx: &NodeCtx<'_>,
    at: &Slots,
    y: Option<YRounding>,
) -> Result<Imported> {
    const B: usize = 3;
    let adt = int8(ctx, 0)?;
    int8(ctx, B)?;
    let mut s = Sub::new(ctx);
    let mut an = in_name(ctx, 0);
    let mut bn = in_name(ctx, B);
    if ctx.attr_i_or("transA", 0) != 0 {
        an = s.op("Transpose", &[&an], vec![A::Is("perm", vec![1, 0])]);
    }
    if ctx.attr_i_or("transB", 0) != 0 {
        bn = s.op("Transpose", &[&bn], vec![A::Is("perm", vec![1, 0])]);
    }
    let za = scalar_in(ctx, &mut s, at.a_zp)?;
    let zb_shape = ctx.input(at.b_zp)?.shape;
    let zb = if zb_shape.iter().product::<usize>() == 1 {
        scalar_in(ctx, &mut s, at.b_zp)?
    } else {
        in_name(ctx, at.b_zp)
    };
    let mut acc = s.op("MatMulInteger", &[&an, &bn, &za, &zb], vec![]);
    if let Some(i) = at.bias
        && let Some(c) = ctx.input_opt(i)
    {
        if c.dtype != DType::I32 {
            return Err(ctx.err(format!("C is {}; int32 expected", c.dtype.name())));
        }
        acc = s.op("Add", &[&acc, &in_name(ctx, i)], vec![]);
    }
    let accf = s.op("Cast", &[&acc], vec![A::I("to", DType::F32 as i64)]);
    let sa = scalar_in(ctx, &mut s, at.a_scale)?;
    let mut m = s.op("Mul", &[&sa, &in_name(ctx, at.b_scale)], vec![]);
    let alpha = ctx.attr_f_or("alpha", 1.0);
    if alpha != 1.0 {
        let al = s.scalar(DType::F32, alpha as f64);
        m = s.op("Mul", &[&al, &m], vec![]);
    }
    let v = match y {
        None => {
            s.to("Mul", &[&accf, &m], &[&out0(ctx)?], vec![]);
            return Ok(s.done());
        }
        Some(YRounding::Fused) => {
            let m = over_scale(ctx, &mut s, &m, at.y_scale)?;
            s.op("Mul", &[&accf, &m], vec![])
        }
        Some(YRounding::AfterFloat) => {
            let f = s.op("Mul", &[&accf, &m], vec![]);
            over_scale(ctx, &mut s, &f, at.y_scale)?
        }
    };
    let out_dt = ctx.input_opt(at.y_zp).map_or(adt, |z| z.dtype);
    requantized(ctx, s, &v, at.y_zp, out_dt)
}
