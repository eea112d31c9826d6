//! Integer matrix products and convolutions: `MatMulInteger`, `ConvInteger`,
//! `QLinearMatMul`, `QLinearConv`, decomposed with the zero points subtracted up front.
//!
//! Exactness: MatMul runs on int32 (wrapping, i.e. the ops' int32 accumulation). Conv has
//! only an f32 kernel, which is exact while every partial sum stays below 2^24 in magnitude;
//! the importer bounds `max|x - x_zp| * max over output channels of sum|w - w_zp|` (from the
//! constant weights when they are, else from the types' ranges) and rejects nodes whose bound
//! exceeds 2^24. Requantization (`* x_scale * w_scale / y_scale + y_zp`, round half to even,
//! saturate) runs in f64, as the reference does.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape};
use super::quant::{cast, int_range, store_saturated};
use super::registry::OpEntry;
use super::registry::dtypes::QUANT8;
use super::sub::{A, Sub, copied_attrs};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::kernel("ConvInteger", 10, QUANT8, conv_integer)
        .note("int8 kernel (2-D, constant w); otherwise f32 conv, exact while sums stay below 2^24 (checked at compile time)"),
    OpEntry::kernel("MatMulInteger", 10, QUANT8, matmul_integer)
        .note("int8 kernel with a constant 2-D B; otherwise decomposed into int32 MatMul"),
    OpEntry::kernel("QLinearConv", 10, QUANT8, qlinear_conv)
        .note("int8 kernel (2-D, constant w, scales, zero points); otherwise f32 conv, exact while sums stay below 2^24"),
    OpEntry::kernel("QLinearMatMul", 10, QUANT8, qlinear_matmul).note(
        "int8 kernel with a constant 2-D b and constant scales/zero points; otherwise decomposed",
    ),
];

/// The largest f32 magnitude up to which every integer is exact.
const F32_EXACT: f64 = 16_777_216.0;

/// The range of 8-bit input `i`.
fn int8_range(ctx: &NodeCtx<'_>, i: usize) -> Result<(DType, f64, f64)> {
    let d = ctx.input(i)?.dtype;
    match d {
        DType::U8 | DType::I8 => {
            let (lo, hi) = int_range(d).unwrap_or((0.0, 0.0));
            Ok((d, lo, hi))
        }
        _ => Err(ctx.unsupported(format!(
            "input {i} is {}: only uint8 and int8 are supported",
            d.name()
        ))),
    }
}

/// Input `i` (a zero point or scale) made broadcastable against a value of shape `target`:
/// one element (per tensor), the value's rank (as is), or 1-D along `axis` of `target`.
fn operand(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    i: usize,
    target: &[usize],
    axis: usize,
) -> Result<String> {
    let name = in_name(ctx, i);
    let p = ctx.input(i)?.shape;
    let n: usize = p.iter().product();
    if n == 1 {
        return Ok(if p.is_empty() {
            name
        } else {
            reshape(s, &name, &[])
        });
    }
    if p.len() == target.len() && p.len() != 1 {
        return Ok(name);
    }
    if p.len() == 1 && axis < target.len() && p[0] == target[axis] {
        let mut shape = vec![p[0]];
        shape.extend(std::iter::repeat_n(1, target.len() - 1 - axis));
        return Ok(reshape(s, &name, &shape));
    }
    Err(ctx.err(format!(
        "input {i} of shape {p:?} is neither per tensor nor per axis {axis} of {target:?}"
    )))
}

/// `Cast(input v, to) - Cast(zero point z, to)` (z broadcast along `axis` of v).
fn shifted(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    v: usize,
    z: usize,
    axis: usize,
    to: DType,
) -> Result<String> {
    let vi = ctx.input(v)?;
    let x = cast(s, &in_name(ctx, v), vi.dtype, to);
    let Some(zi) = ctx.input_opt(z) else {
        return Ok(x);
    };
    if zi.dtype != vi.dtype {
        return Err(ctx.err(format!(
            "input {v} is {} but its zero point is {}",
            vi.dtype.name(),
            zi.dtype.name()
        )));
    }
    let zb = operand(ctx, s, z, vi.shape, axis)?;
    let zc = cast(s, &zb, zi.dtype, to);
    Ok(s.op("Sub", &[&x, &zc], vec![]))
}

/// `(A - a_zp) @ (B - b_zp)` in int32; a_zp per row, b_zp per column.
fn int_matmul(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    a: (usize, usize),
    b: (usize, usize),
) -> Result<String> {
    int8_range(ctx, a.0)?;
    int8_range(ctx, b.0)?;
    let (ra, rb) = (ctx.input(a.0)?.shape.len(), ctx.input(b.0)?.shape.len());
    let a32 = shifted(ctx, s, a.0, a.1, ra.saturating_sub(2), DType::I32)?;
    let b32 = shifted(ctx, s, b.0, b.1, rb.saturating_sub(1), DType::I32)?;
    Ok(s.op("MatMul", &[&a32, &b32], vec![]))
}

/// Largest `|v - zp|` over the values of input `v` with zero point input `z`.
fn max_shift(ctx: &NodeCtx<'_>, v: usize, z: usize) -> Result<f64> {
    let (_, lo, hi) = int8_range(ctx, v)?;
    Ok(match ctx.input_opt(z) {
        None => lo.abs().max(hi),
        Some(zi) => match zi.data {
            None => hi - lo,
            Some(d) => d
                .to_f64_vec()
                .map_err(|e| ctx.err(e))?
                .iter()
                .fold(0.0f64, |m, &zp| m.max(zp - lo).max(hi - zp)),
        },
    })
}

/// Bound on `|sum (x - x_zp)(w - w_zp)|` over one output element of the convolution.
fn conv_bound(ctx: &NodeCtx<'_>, (x, xz): (usize, usize), (w, wz): (usize, usize)) -> Result<f64> {
    let xmax = max_shift(ctx, x, xz)?;
    let wi = ctx.input(w)?;
    let m = wi.shape.first().copied().unwrap_or(0);
    let k: usize = wi.shape.iter().skip(1).product();
    let zps = match ctx.input_opt(wz) {
        None => Some(vec![0.0]),
        Some(zi) => zi
            .data
            .map(|d| d.to_f64_vec())
            .transpose()
            .map_err(|e| ctx.err(e))?,
    };
    let wsum = match (wi.data, zps) {
        (Some(wd), Some(zps)) if !zps.is_empty() && m > 0 => {
            let wv = wd.to_f64_vec().map_err(|e| ctx.err(e))?;
            wv.chunks(k.max(1))
                .enumerate()
                .map(|(o, ch)| {
                    let zp = zps[if zps.len() == m { o } else { 0 }];
                    ch.iter().map(|&v| (v - zp).abs()).sum::<f64>()
                })
                .fold(0.0, f64::max)
        }
        _ => max_shift(ctx, w, wz)? * k as f64,
    };
    Ok(xmax * wsum)
}

/// `conv(x - x_zp, w - w_zp)` computed in f32 (exact integers within the checked bound).
fn int_conv(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    x: (usize, usize),
    w: (usize, usize),
) -> Result<String> {
    let wi = ctx.input(w.0)?;
    if wi.shape.len() < 3 || ctx.input(x.0)?.shape.len() != wi.shape.len() {
        return Err(ctx.err("x and w must have the same rank (at least 3)"));
    }
    let bound = conv_bound(ctx, x, w)?;
    if bound > F32_EXACT {
        return Err(ctx.unsupported(format!(
            "ge computes integer convolutions on its f32 conv kernel, exact while sums stay \
             below 2^24; this node's worst case is {bound} (use constant weights or smaller \
             kernels/channels)"
        )));
    }
    let xf = shifted(ctx, s, x.0, x.1, 1, DType::F32)?;
    let wf = shifted(ctx, s, w.0, w.1, 0, DType::F32)?;
    let attrs = copied_attrs(ctx, super::sub::CONV_GEOMETRY);
    Ok(s.op("Conv", &[&xf, &wf], attrs))
}

/// MatMulInteger: int32 `(A - a_zp) @ (B - b_zp)`, on the int8 kernel when B is a constant
/// matrix ([`super::qgemm`]).
fn matmul_integer(ctx: &NodeCtx<'_>) -> Result<Imported> {
    if let Some(task) = super::qgemm::matmul_integer(ctx)? {
        return Ok(task);
    }
    let mut s = Sub::new(ctx);
    let y = int_matmul(ctx, &mut s, (0, 2), (1, 3))?;
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// ConvInteger: int32 `conv(x - x_zp, w - w_zp)`, on the int8 kernel when w is a constant
/// ([`super::qconv`]).
fn conv_integer(ctx: &NodeCtx<'_>) -> Result<Imported> {
    if let Some(task) = super::qconv::conv_integer(ctx)? {
        return Ok(task);
    }
    let mut s = Sub::new(ctx);
    let y = int_conv(ctx, &mut s, (0, 2), (1, 3))?;
    s.to(
        "Cast",
        &[&y],
        &[&out0(ctx)?],
        vec![A::I("to", DType::I32 as i64)],
    );
    Ok(s.done())
}

/// `round(acc * (sa * sb / sy) + y_zp)` saturated to the output type, in f64.
/// `acc` is f64; `scales` are the (broadcastable) a/x, b/w and y scales.
fn requantize(
    ctx: &NodeCtx<'_>,
    mut s: Sub,
    acc: &str,
    scales: [String; 3],
    (yz, fallback): (usize, DType),
) -> Result<Imported> {
    let sdt = ctx.input(1)?.dtype;
    let [sa, sb, sy] = scales;
    let m = s.op("Mul", &[&sa, &sb], vec![]);
    let m = s.op("Div", &[&m, &sy], vec![]);
    let m = cast(&mut s, &m, sdt, DType::F64);
    let mut r = s.op("Mul", &[acc, &m], vec![]);
    let out_dt = match ctx.input_opt(yz) {
        Some(z) => {
            let zc = cast(&mut s, &in_name(ctx, yz), z.dtype, DType::F64);
            let zc = if z.shape.iter().product::<usize>() == 1 && !z.shape.is_empty() {
                reshape(&mut s, &zc, &[])
            } else {
                zc
            };
            r = s.op("Add", &[&r, &zc], vec![]);
            z.dtype
        }
        None => fallback,
    };
    if !matches!(out_dt, DType::U8 | DType::I8) {
        return Err(ctx.err(format!(
            "output type {} is not uint8 or int8",
            out_dt.name()
        )));
    }
    let r = s.op("Round", &[&r], vec![]);
    store_saturated(ctx, s, &r, DType::F64, out_dt)
}

/// Checks that the scale inputs share one float type.
fn check_scales(ctx: &NodeCtx<'_>, idx: [usize; 3]) -> Result<()> {
    let d = ctx.input(idx[0])?.dtype;
    for i in idx {
        let di = ctx.input(i)?.dtype;
        if !super::is_float(di) || di != d {
            return Err(ctx.err("the scales must be floats of one type"));
        }
    }
    Ok(())
}

/// QLinearMatMul: integer matmul, then requantized with a (per row), b (per column) and y
/// scales; on the int8 kernel when B and the quantization parameters are constants
/// ([`super::qgemm`]).
fn qlinear_matmul(ctx: &NodeCtx<'_>) -> Result<Imported> {
    if let Some(task) = super::qgemm::qlinear_matmul(ctx)? {
        return Ok(task);
    }
    check_scales(ctx, [1, 4, 6])?;
    let mut s = Sub::new(ctx);
    let c = int_matmul(ctx, &mut s, (0, 2), (3, 5))?;
    let acc = s.op("Cast", &[&c], vec![A::I("to", DType::F64 as i64)]);
    let (ra, rb) = (ctx.input(0)?.shape, ctx.input(3)?.shape);
    let sa = operand(ctx, &mut s, 1, ra, ra.len().saturating_sub(2))?;
    let sb = operand(ctx, &mut s, 4, rb, rb.len().saturating_sub(1))?;
    let sy = operand(ctx, &mut s, 6, &[], 0)?;
    let a_dt = ctx.input(0)?.dtype;
    requantize(ctx, s, &acc, [sa, sb, sy], (7, a_dt))
}

/// QLinearConv: integer convolution plus int32 bias, requantized with x (per tensor), w (per
/// output channel) and y scales; on the int8 kernel when w, the bias and the quantization
/// parameters are constants ([`super::qconv`]).
fn qlinear_conv(ctx: &NodeCtx<'_>) -> Result<Imported> {
    if let Some(task) = super::qconv::qlinear_conv(ctx)? {
        return Ok(task);
    }
    check_scales(ctx, [1, 4, 6])?;
    let mut s = Sub::new(ctx);
    let c = int_conv(ctx, &mut s, (0, 2), (3, 5))?;
    let mut acc = s.op("Cast", &[&c], vec![A::I("to", DType::F64 as i64)]);
    let w = ctx.input(3)?.shape;
    let rank = ctx.input(0)?.shape.len();
    let mut chan = vec![1usize; rank];
    chan[1] = w[0];
    if let Some(b) = ctx.input_opt(8) {
        if b.dtype != DType::I32 || b.shape != [w[0]] {
            return Err(ctx.err(format!("B must be int32 of shape [{}]", w[0])));
        }
        let bc = cast(&mut s, &in_name(ctx, 8), DType::I32, DType::F64);
        let br = reshape(&mut s, &bc, &chan[1..]);
        acc = s.op("Add", &[&acc, &br], vec![]);
    }
    let sx = operand(ctx, &mut s, 1, &[], 0)?;
    let sw = operand(ctx, &mut s, 4, &chan, 1)?;
    let sy = operand(ctx, &mut s, 6, &[], 0)?;
    let x_dt = ctx.input(0)?.dtype;
    requantize(ctx, s, &acc, [sx, sw, sy], (7, x_dt))
}

#[cfg(test)]
mod tests {
    use crate::{CompileError, CompileOptions, compile_bytes};

    /// Compiles `tests/fixtures/<name>` and returns the unsupported reason.
    fn unsupported_reason(name: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        let bytes = std::fs::read(&p).expect("fixture");
        match compile_bytes(&bytes, None, &CompileOptions::default()) {
            Err(CompileError::Unsupported { reason, .. }) => reason,
            Err(e) => panic!("expected an unsupported error, got {e}"),
            Ok(_) => panic!("{name} compiled"),
        }
    }

    /// `convinteger_wide.onnx`: ConvInteger on run-time uint8 x and w of shape
    /// [1, 300, 3, 3] (onnx 1.23 `helper.make_node("ConvInteger", ["x", "w"], ["y"])`, opset 10):
    /// 255 * 255 * 2700 exceeds 2^24, so f32 accumulation could round.
    #[test]
    fn conv_integer_beyond_the_f32_bound_is_rejected() {
        let r = unsupported_reason("convinteger_wide.onnx");
        assert!(r.contains("2^24") && r.contains("175567500"), "{r}");
    }

    /// `quantize_float8.onnx`: QuantizeLinear(x f32 [4], s) with `output_dtype = 17`
    /// (FLOAT8E4M3FN), opset 21.
    #[test]
    fn quantizing_to_float8_names_the_type() {
        let r = unsupported_reason("quantize_float8.onnx");
        assert!(
            r.contains("output_dtype = 17") && r.contains("float8"),
            "{r}"
        );
    }
}
