//! `MaxPool` with its `Indices` output, decomposed: one constant Gather collects every
//! window's elements (positions in the padding masked to -inf), then ReduceMax gives the
//! values and ArgMax (first maximum, the reference's scan order) the window slot, which a
//! constant table turns into the flat input index (row- or column-major spatially).

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{attr_ints_n, in_name, out, out0, reduce, reshape};
use super::is_float;
use super::shape::MAX_CONST_ELEMS;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// True when the node asks for MaxPool's Indices output.
pub fn wants_indices(ctx: &NodeCtx<'_>) -> bool {
    ctx.node.op_type() == "MaxPool" && out(ctx, 1).is_some()
}

/// One spatial dim's window geometry: (output size, begin pad).
fn geometry(
    ctx: &NodeCtx<'_>,
    d: usize,
    input: usize,
    (k, s, dil): (usize, usize, usize),
    pads: &[i64],
) -> Result<(usize, i64)> {
    let sp = pads.len() / 2;
    let span = (k - 1).saturating_mul(dil).saturating_add(1);
    let ceil = ctx.attr_i_or("ceil_mode", 0) != 0;
    let auto = ctx.attr_s_or("auto_pad", "NOTSET");
    let (inp, s) = (input as i64, s as i64);
    Ok(match auto.as_str() {
        "SAME_UPPER" | "SAME_LOWER" => {
            let o = (inp + s - 1) / s;
            let total = ((o - 1) * s + span as i64 - inp).max(0);
            let begin = if auto == "SAME_UPPER" {
                total / 2
            } else {
                total - total / 2
            };
            (o as usize, begin)
        }
        "VALID" | "NOTSET" => {
            let (pb, pe) = if auto == "VALID" {
                (0, 0)
            } else {
                (pads[d], pads[sp + d])
            };
            let room = inp + pb + pe - span as i64;
            if room < 0 {
                return Err(ctx.err("the kernel is larger than the padded input"));
            }
            let mut o = if ceil { (room + s - 1) / s } else { room / s } + 1;
            if ceil && (o - 1) * s >= inp + pb {
                o -= 1;
            }
            (o as usize, pb)
        }
        a => return Err(ctx.err(format!("auto_pad '{a}' is not supported"))),
    })
}

/// MaxPool(X) -> (Y, Indices).
pub fn max_pool_with_indices(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if !is_float(x.dtype) || x.shape.len() < 3 {
        return Err(ctx.err("X must be a float tensor of rank >= 3"));
    }
    let sp = x.shape.len() - 2;
    let ints = |name: &str, default: i64, n: usize| attr_ints_n(ctx, name, default, n);
    let k = ints("kernel_shape", 1, sp)?;
    let strides = ints("strides", 1, sp)?;
    let dil = ints("dilations", 1, sp)?;
    let pads = ints("pads", 0, 2 * sp)?;
    if [&k, &strides, &dil]
        .iter()
        .any(|v| v.iter().any(|&a| a < 1))
    {
        return Err(ctx.err("kernel_shape, strides and dilations must be positive"));
    }
    let column_major = ctx.attr_i_or("storage_order", 0) != 0;
    let inp = &x.shape[2..];
    let mut outs = Vec::with_capacity(sp);
    for d in 0..sp {
        let g = (k[d] as usize, strides[d] as usize, dil[d] as usize);
        outs.push(geometry(ctx, d, inp[d], g, &pads)?);
    }
    let npos = outs.iter().fold(1usize, |a, o| a.saturating_mul(o.0));
    let nk = k.iter().fold(1usize, |a, &v| a.saturating_mul(v as usize));
    if npos.saturating_mul(nk) > MAX_CONST_ELEMS {
        return Err(ctx.unsupported("a MaxPool with Indices this large"));
    }
    // Per (output position, window slot): the gathered flat input position (0 when in the
    // padding), whether it is inside the input, and the index the Indices output reports.
    let (mut gather, mut valid, mut report) = (Vec::new(), Vec::new(), Vec::new());
    let plane: usize = inp.iter().product();
    for p in 0..npos {
        let mut pos = vec![0usize; sp];
        let mut rest = p;
        for d in (0..sp).rev() {
            pos[d] = rest % outs[d].0;
            rest /= outs[d].0;
        }
        for slot in 0..nk {
            let mut kk = vec![0usize; sp];
            let mut r = slot;
            for d in (0..sp).rev() {
                kk[d] = r % k[d] as usize;
                r /= k[d] as usize;
            }
            let at: Vec<i64> = (0..sp)
                .map(|d| {
                    (pos[d] * strides[d] as usize + kk[d] * dil[d] as usize) as i64 - outs[d].1
                })
                .collect();
            let inside = at
                .iter()
                .zip(inp)
                .all(|(&a, &n)| a >= 0 && (a as usize) < n);
            let (mut row, mut col, mut stride_c) = (0usize, 0usize, 1usize);
            if inside {
                for d in 0..sp {
                    row = row * inp[d] + at[d] as usize;
                }
                for d in 0..sp {
                    col += at[d] as usize * stride_c;
                    stride_c *= inp[d];
                }
            }
            gather.push(row as f64);
            valid.push(inside as u8 as f64);
            report.push(if column_major { col } else { row } as f64);
        }
    }
    let (n, c) = (x.shape[0], x.shape[1]);
    let mut s = Sub::new(ctx);
    let xf = reshape(&mut s, &in_name(ctx, 0), &[n, c, plane]);
    let gi = s.constant(tensor_data(DType::I64, vec![npos, nk], &gather));
    let patches = s.op("Gather", &[&xf, &gi], vec![A::I("axis", 2)]);
    let ok = s.constant(tensor_data(DType::Bool, vec![npos, nk], &valid));
    let ninf = s.scalar(x.dtype, f64::NEG_INFINITY);
    let patches = s.op("Where", &[&ok, &patches, &ninf], vec![]);
    let mut yshape = vec![n, c];
    yshape.extend(outs.iter().map(|o| o.0));
    let y = reduce(&mut s, ctx.opset, "ReduceMax", &patches, &[3], false);
    let y = reshape(&mut s, &y, &yshape);
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    if let Some(io) = out(ctx, 1) {
        let am = s.op(
            "ArgMax",
            &[&patches],
            vec![A::I("axis", 3), A::I("keepdims", 0)],
        );
        // slot -> flat index: Gather from the table at position * nk + slot.
        let rows: Vec<f64> = (0..npos).map(|p| (p * nk) as f64).collect();
        let base = s.constant(tensor_data(DType::I64, vec![npos], &rows));
        let at = s.op("Add", &[&am, &base], vec![]);
        let table = s.constant(tensor_data(DType::I64, vec![npos * nk], &report));
        let idx = s.op("Gather", &[&table, &at], vec![A::I("axis", 0)]);
        let chan: Vec<f64> = (0..n * c).map(|i| (i * plane) as f64).collect();
        let off = s.constant(tensor_data(DType::I64, vec![n, c, 1], &chan));
        let idx = s.op("Add", &[&idx, &off], vec![]);
        let idx = reshape(&mut s, &idx, &yshape);
        s.to("Identity", &[&idx], &[&io], vec![]);
    }
    Ok(s.done())
}
