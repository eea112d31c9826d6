//! `OneHot` as `Where(indices == arange(depth), on, off)`; `depth` decides the output shape,
//! so it must be known while compiling. Negative indices count from `depth`; out-of-range
//! ones give an all-`off` row.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape, unsqueeze};
use super::registry::OpEntry;
use super::registry::dtypes::ANY;
use super::shape::MAX_CONST_ELEMS;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] =
    &[OpEntry::decomposed("OneHot", 9, ANY, one_hot).note("depth known at compile time")];

/// OneHot(indices, depth, values = [off, on]) along `axis` (default -1, a new axis).
fn one_hot(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let idx = ctx.input(0)?;
    let vals = ctx.input(2)?;
    let depth = match ctx.const_floats(1, "depth")?.as_deref() {
        Some([d]) => *d,
        _ => return Err(ctx.err("depth must be a scalar")),
    };
    if !(depth >= 1.0 && depth <= MAX_CONST_ELEMS as f64) {
        return Err(ctx.err(format!("depth {depth} is not a positive size")));
    }
    let depth = depth as usize;
    if vals.shape.iter().product::<usize>() != 2 {
        return Err(ctx.err("values must hold two elements [off, on]"));
    }
    let r = idx.shape.len();
    let axis = ctx.axis(ctx.attr_i_or("axis", -1), r + 1)?;
    let mut s = Sub::new(ctx);
    let mut ix = in_name(ctx, 0);
    if idx.dtype != DType::I64 {
        // Non-integer indices select by their integral part, as the reference's cast does.
        ix = s.op("Cast", &[&ix], vec![A::I("to", DType::I64 as i64)]);
    }
    let zero = s.scalar(DType::I64, 0.0);
    let dc = s.scalar(DType::I64, depth as f64);
    let neg = s.op("Less", &[&ix, &zero], vec![]);
    let wrapped = s.op("Add", &[&ix, &dc], vec![]);
    let ix = s.op("Where", &[&neg, &wrapped, &ix], vec![]);
    let ix = unsqueeze(&mut s, ctx.opset, &ix, &[axis as i64]);
    let mut cls_shape = vec![1usize; r + 1];
    cls_shape[axis] = depth;
    let classes: Vec<f64> = (0..depth).map(|i| i as f64).collect();
    let cls = s.constant(tensor_data(DType::I64, cls_shape, &classes));
    let hot = s.op("Equal", &[&ix, &cls], vec![]);
    let v = reshape(&mut s, &in_name(ctx, 2), &[2]);
    let pick = |s: &mut Sub, i: i64| {
        let k = s.scalar(DType::I64, i as f64);
        s.op("Gather", &[&v, &k], vec![A::I("axis", 0)])
    };
    let off = pick(&mut s, 0);
    let on = pick(&mut s, 1);
    s.to("Where", &[&hot, &on, &off], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}
