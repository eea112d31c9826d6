//! `MaxUnpool`: the values scattered (ScatterElements on the flattened tensor) to the flat
//! positions MaxPool's Indices name, into zeros of the inferred unpooled shape, then padded
//! at the end up to `output_shape` (known while compiling) as the reference does.

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape};
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::shape::MAX_CONST_ELEMS;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[OpEntry::decomposed("MaxUnpool", 9, FLOAT, max_unpool)
    .note("ScatterElements into zeros; output_shape known at compile time")];

/// MaxUnpool(X, I, output_shape?).
fn max_unpool(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let i = ctx.input(1)?;
    if i.shape != x.shape || x.shape.len() < 3 {
        return Err(ctx.err("X and I must share one shape of rank >= 3"));
    }
    let k = ctx
        .attr_ints("kernel_shape")
        .ok_or_else(|| ctx.err("kernel_shape is required"))?;
    let sp = x.shape.len() - 2;
    let strides = ctx.attr_ints("strides").unwrap_or_else(|| vec![1; sp]);
    let pads = ctx.attr_ints("pads").unwrap_or_else(|| vec![0; 2 * sp]);
    if k.len() != sp || strides.len() != sp || pads.len() != 2 * sp {
        return Err(ctx.err(format!(
            "kernel_shape, strides and pads must have {sp} (pads {}) entries",
            2 * sp
        )));
    }
    let mut shape = x.shape[..2].to_vec();
    for d in 0..sp {
        let v = (x.shape[d + 2] as i64 - 1)
            .checked_mul(strides[d])
            .and_then(|v| v.checked_add(k[d]))
            .and_then(|v| v.checked_sub(pads[d].saturating_add(pads[sp + d])))
            .filter(|&v| v > 0)
            .ok_or_else(|| ctx.err("the unpooled shape is empty or overflows"))?;
        shape.push(v as usize);
    }
    let want = match ctx.const_ints(2, "output_shape")? {
        None => shape.clone(),
        Some(v) => {
            if v.len() != shape.len() || v.iter().zip(&shape).any(|(&o, &s)| o < s as i64) {
                return Err(ctx.err(format!(
                    "output_shape {v:?} is smaller than the unpooled shape {shape:?}"
                )));
            }
            v.iter().map(|&d| d as usize).collect()
        }
    };
    let total = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&t| t <= MAX_CONST_ELEMS)
        .ok_or_else(|| ctx.unsupported(format!("an unpooled shape {shape:?} this large")))?;
    let n: usize = x.shape.iter().product();
    let mut s = Sub::new(ctx);
    let zeros = s.constant(tensor_data(x.dtype, vec![total], &vec![0.0; total]));
    let xf = reshape(&mut s, &in_name(ctx, 0), &[n]);
    let ixf = reshape(&mut s, &in_name(ctx, 1), &[n]);
    let y = s.op(
        "ScatterElements",
        &[&zeros, &ixf, &xf],
        vec![A::I("axis", 0)],
    );
    let mut y = reshape(&mut s, &y, &shape);
    if want != shape {
        let mut p = vec![0i64; shape.len()];
        p.extend(want.iter().zip(&shape).map(|(&w, &h)| (w - h) as i64));
        y = if ctx.opset >= 11 {
            let pc = s.ints(&p);
            s.op("Pad", &[&y, &pc], vec![])
        } else {
            s.op("Pad", &[&y], vec![A::Is("pads", p)])
        };
    }
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}
