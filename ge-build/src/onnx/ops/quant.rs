//! Linear (de)quantization decomposed into float arithmetic: `QuantizeLinear`,
//! `DequantizeLinear` and `DynamicQuantizeLinear` (per tensor, per axis, blocked; 8- and
//! 16-bit integer types). ge has no float8/int4/int2 element types, so those stay unsupported.
//!
//! Exactness: quantizing rounds `x / scale` (half to even) in f32 (f64 for f64 inputs), then
//! adds the zero point and saturates in the same type; the sum is exact whenever it can land
//! inside a 16-bit range (|q| < 2^24), and saturates to the same bound otherwise.
//! Dequantizing subtracts the zero point in f32 (exact for 8/16-bit values) or f64 (int32).

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out, out0, reduce, reshape};
use super::is_float;
use super::qparams::{Per, same_axis, scale as checked_scale, zero_point as checked_zero_point};
use super::registry::OpEntry;
use super::registry::dtypes::{DEQUANT, DYN_QUANT, QUANT_OUT};
use super::sub::{A, Sub};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::decomposed("DequantizeLinear", 10, DEQUANT, dequantize)
        .note("per tensor, per axis, blocked; no float8/int4/int2/float4 element types"),
    OpEntry::decomposed("DynamicQuantizeLinear", 11, DYN_QUANT, dynamic_quantize),
    OpEntry::decomposed("QuantizeLinear", 10, QUANT_OUT, quantize)
        .note("per tensor, per axis, blocked; no float8/int4/int2/float4 element types"),
];

/// The inclusive range of the integer types quantization targets.
pub fn int_range(d: DType) -> Option<(f64, f64)> {
    Some(match d {
        DType::U8 => (0.0, 255.0),
        DType::I8 => (-128.0, 127.0),
        DType::U16 => (0.0, 65535.0),
        DType::I16 => (-32768.0, 32767.0),
        _ => return None,
    })
}

/// Finishes a decomposition: `r` (integral, in `cdt`) saturated to `out_dt`'s range and
/// converted to it as output 0.
pub fn store_saturated(
    ctx: &NodeCtx<'_>,
    mut s: Sub,
    r: &str,
    cdt: DType,
    out_dt: DType,
) -> Result<Imported> {
    let (lo, hi) = int_range(out_dt)
        .ok_or_else(|| ctx.err(format!("{} is not an 8/16-bit integer", out_dt.name())))?;
    let c = clip(&mut s, ctx.opset, r, cdt, lo, hi);
    s.to(
        "Cast",
        &[&c],
        &[&out0(ctx)?],
        vec![A::I("to", out_dt as i64)],
    );
    Ok(s.done())
}

/// `Clip(x, lo, hi)` with constant bounds, in the form the opset wants.
pub fn clip(s: &mut Sub, opset: i64, x: &str, dtype: DType, lo: f64, hi: f64) -> String {
    if opset < 11 {
        s.op(
            "Clip",
            &[x],
            vec![A::F("min", lo as f32), A::F("max", hi as f32)],
        )
    } else {
        let l = s.scalar(dtype, lo);
        let h = s.scalar(dtype, hi);
        s.op("Clip", &[x, &l, &h], vec![])
    }
}

/// `x` converted from `from` to `to` (no node when they are equal).
pub fn cast(s: &mut Sub, x: &str, from: DType, to: DType) -> String {
    if from == to {
        x.to_string()
    } else {
        s.op("Cast", &[x], vec![A::I("to", to as i64)])
    }
}

/// An element type given by an attribute code.
fn dtype_attr(ctx: &NodeCtx<'_>, name: &str) -> Result<Option<DType>> {
    match ctx.attr_i(name).filter(|&d| d != 0) {
        None => Ok(None),
        Some(d) => u8::try_from(d)
            .ok()
            .and_then(DType::from_u8)
            .map(Some)
            .ok_or_else(|| {
                ctx.unsupported(format!(
                    "{name} = {d}: ge has no such element type (float8, int4, int2 and float4 \
                     are not supported); use an 8- or 16-bit integer type"
                ))
            }),
    }
}

/// Input `i` (a scale or zero point of shape `p`) made broadcastable to `xs`: one element
/// (per tensor), 1-D along `axis` (per axis) or, with `block` > 0, one value per `block`
/// consecutive elements along `axis` (repeated with a constant Gather).
fn per_axis(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    i: usize,
    xs: &[usize],
    axis: i64,
    block: i64,
) -> Result<String> {
    let name = in_name(ctx, i);
    let p = ctx.input(i)?.shape;
    if p.iter().product::<usize>() == 1 {
        return Ok(if p.is_empty() {
            name
        } else {
            reshape(s, &name, &[])
        });
    }
    let a = ctx.axis(axis, xs.len())?;
    if block <= 0 {
        if p.len() != 1 || p[0] != xs[a] {
            return Err(ctx.err(format!(
                "input {i} of shape {p:?} is neither per tensor nor per axis {a} of {xs:?}"
            )));
        }
        let mut shape = vec![1usize; xs.len()];
        shape[a] = p[0];
        return Ok(reshape(s, &name, &shape));
    }
    let b = block as usize;
    let ok = p.len() == xs.len()
        && p[a] == xs[a].div_ceil(b)
        && p.iter()
            .zip(xs)
            .enumerate()
            .all(|(d, (&u, &v))| d == a || u == v);
    if !ok {
        return Err(ctx.err(format!(
            "input {i} of shape {p:?} does not block {xs:?} by {b} along axis {a}"
        )));
    }
    let idx: Vec<i64> = (0..xs[a]).map(|j| (j / b) as i64).collect();
    let ix = s.ints(&idx);
    Ok(s.op("Gather", &[&name, &ix], vec![A::I("axis", a as i64)]))
}

/// Checks constant quantization parameters (scale input 1, zero point input 2 of value
/// input `of`) before they are used: scales finite and positive, zero points of the value's
/// type and range, per tensor or one per element of `axis` (blocked layouts are checked
/// by [`per_axis`]).
fn check_params(ctx: &NodeCtx<'_>, xs: &[usize], axis: i64, block: i64, of: usize) -> Result<()> {
    if block > 0 {
        return Ok(());
    }
    // The axis only matters (and must be valid) for a per-axis scale.
    let per_tensor = ctx.input(1)?.shape.iter().product::<usize>() == 1;
    let n = if xs.is_empty() || per_tensor {
        1
    } else {
        xs[ctx.axis(axis, xs.len())?]
    };
    let (s_what, z_what) = if of == 0 {
        ("x_scale", "x_zero_point")
    } else {
        ("y_scale", "y_zero_point")
    };
    let s = checked_scale(ctx, 1, s_what, Per::TensorOr(n))?;
    if ctx.input_opt(2).is_none() {
        return Ok(());
    }
    let z = checked_zero_point(ctx, 2, of, z_what, Per::TensorOr(n))?;
    if let (Some(s), Some(z)) = (s, z) {
        same_axis(ctx, (1, s.len()), (2, z.len()))?;
    }
    Ok(())
}

/// The wider of two float types for mixed-type arithmetic (f32 unless one is f64).
fn wider(a: DType, b: DType) -> DType {
    if a == b {
        a
    } else if a == DType::F64 || b == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// QuantizeLinear: `saturate(round(x / scale) + zero_point)`.
fn quantize(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let sc = ctx.input(1)?;
    let zp = ctx.input_opt(2);
    if !is_float(x.dtype) || !is_float(sc.dtype) {
        return Err(ctx.err("x and y_scale must be floats"));
    }
    let out_dt = match zp {
        Some(z) => z.dtype,
        None => dtype_attr(ctx, "output_dtype")?.unwrap_or(DType::U8),
    };
    if int_range(out_dt).is_none() {
        return Err(ctx.unsupported(format!(
            "quantizing to {}: only uint8, int8, uint16 and int16 are supported",
            out_dt.name()
        )));
    }
    let axis = ctx.attr_i_or("axis", 1);
    let block = ctx.attr_i_or("block_size", 0);
    check_params(ctx, x.shape, axis, block, 2)?;
    let mut s = Sub::new(ctx);
    let xs = x.shape;
    let scale = per_axis(ctx, &mut s, 1, xs, axis, block)?;
    let pdt = match dtype_attr(ctx, "precision")? {
        Some(p) if is_float(p) => p,
        Some(p) => return Err(ctx.err(format!("precision {} is not a float", p.name()))),
        None => wider(x.dtype, sc.dtype),
    };
    let xc = cast(&mut s, &in_name(ctx, 0), x.dtype, pdt);
    let scc = cast(&mut s, &scale, sc.dtype, pdt);
    let q = s.op("Div", &[&xc, &scc], vec![]);
    let cdt = if pdt == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let q = cast(&mut s, &q, pdt, cdt);
    let mut r = s.op("Round", &[&q], vec![]);
    if let Some(z) = zp {
        let zb = per_axis(ctx, &mut s, 2, xs, axis, block)?;
        let zc = cast(&mut s, &zb, z.dtype, cdt);
        r = s.op("Add", &[&r, &zc], vec![]);
    }
    store_saturated(ctx, s, &r, cdt, out_dt)
}

/// DequantizeLinear: `(x - zero_point) * scale`.
fn dequantize(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let sc = ctx.input(1)?;
    let zp = ctx.input_opt(2);
    if int_range(x.dtype).is_none() && x.dtype != DType::I32 {
        return Err(ctx.unsupported(format!(
            "dequantizing {}: only uint8, int8, uint16, int16 and int32 are supported",
            x.dtype.name()
        )));
    }
    if !is_float(sc.dtype) {
        return Err(ctx.err("x_scale must be a float"));
    }
    if let Some(z) = zp
        && z.dtype != x.dtype
    {
        return Err(ctx.err(format!(
            "x_zero_point (input 2) is {} but input 0 is {}: a zero point has the type of the \
             value it shifts; re-export with matching types",
            z.dtype.name(),
            x.dtype.name()
        )));
    }
    let out_dt = dtype_attr(ctx, "output_dtype")?.unwrap_or(sc.dtype);
    if !is_float(out_dt) {
        return Err(ctx.err(format!("output_dtype {} is not a float", out_dt.name())));
    }
    let cdt = if x.dtype == DType::I32 || sc.dtype == DType::F64 || out_dt == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let axis = ctx.attr_i_or("axis", 1);
    let block = ctx.attr_i_or("block_size", 0);
    check_params(ctx, x.shape, axis, block, 0)?;
    let mut s = Sub::new(ctx);
    let xs = x.shape;
    let mut d = cast(&mut s, &in_name(ctx, 0), x.dtype, cdt);
    if zp.is_some() {
        let zb = per_axis(ctx, &mut s, 2, xs, axis, block)?;
        let zc = cast(&mut s, &zb, x.dtype, cdt);
        d = s.op("Sub", &[&d, &zc], vec![]);
    }
    let scale = per_axis(ctx, &mut s, 1, xs, axis, block)?;
    let scc = cast(&mut s, &scale, sc.dtype, cdt);
    let y = s.op("Mul", &[&d, &scc], vec![]);
    let y = cast(&mut s, &y, cdt, out_dt);
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// DynamicQuantizeLinear: uint8 quantization with the scale and zero point taken from the
/// input's range (widened to include 0), as the op's function body computes them (scale 1
/// for an all-zero input, as onnxruntime).
fn dynamic_quantize(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if x.dtype != DType::F32 {
        return Err(ctx.err(format!("x is {}, not float32", x.dtype.name())));
    }
    let f = DType::F32;
    let mut s = Sub::new(ctx);
    let op = ctx.opset;
    let xi = in_name(ctx, 0);
    let all: Vec<i64> = (0..x.shape.len() as i64).collect();
    let (mx, mn) = if all.is_empty() {
        (xi.clone(), xi.clone())
    } else {
        (
            reduce(&mut s, op, "ReduceMax", &xi, &all, false),
            reduce(&mut s, op, "ReduceMin", &xi, &all, false),
        )
    };
    let zero = s.scalar(f, 0.0);
    let mx = s.op("Max", &[&mx, &zero], vec![]);
    let mn = s.op("Min", &[&mn, &zero], vec![]);
    let range = s.op("Sub", &[&mx, &mn], vec![]);
    // An all-zero x has a zero range, where the spec's formula divides by zero. onnxruntime
    // (which writes the models that use this op) returns scale 1 there, onnx.reference 1/255;
    // ge follows onnxruntime (y and the zero point are 0 either way; found by difftest seed
    // 19 graph 1057, regression case tests/data/difftest/s19_001057_O0_edge).
    let same = s.op("Equal", &[&mx, &mn], vec![]);
    let one = s.scalar(f, 1.0);
    let qmax = s.scalar(f, 255.0);
    let scale = s.op("Div", &[&range, &qmax], vec![]);
    let scale = s.op("Where", &[&same, &one, &scale], vec![]);
    let mns = s.op("Div", &[&mn, &scale], vec![]);
    let izp = s.op("Sub", &[&zero, &mns], vec![]);
    let izp = clip(&mut s, op, &izp, f, 0.0, 255.0);
    let zpf = s.op("Round", &[&izp], vec![]);
    let q = s.op("Div", &[&xi, &scale], vec![]);
    let q = s.op("Round", &[&q], vec![]);
    let q = s.op("Add", &[&q, &zpf], vec![]);
    let q = clip(&mut s, op, &q, f, 0.0, 255.0);
    let u8c = A::I("to", DType::U8 as i64);
    s.to("Cast", &[&q], &[&out0(ctx)?], vec![u8c]);
    if let Some(o) = out(ctx, 1) {
        s.to("Identity", &[&scale], &[&o], vec![]);
    }
    if let Some(o) = out(ctx, 2) {
        s.to("Cast", &[&zpf], &[&o], vec![A::I("to", DType::U8 as i64)]);
    }
    Ok(s.done())
}
