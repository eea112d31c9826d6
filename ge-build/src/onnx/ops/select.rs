//! Ops whose output shape depends on input values — `NonZero` and `Compress` — for values
//! known while compiling: NonZero folds to a constant, Compress becomes a Gather of the
//! selected (constant) indices.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape};
use super::registry::OpEntry;
use super::registry::dtypes::ANY;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::decomposed("Compress", 9, ANY, compress)
        .note("condition known at compile time (a Gather)"),
    OpEntry::constant("NonZero", 9, ANY, non_zero).note("input known at compile time"),
];

/// The truth of every element of constant input `i`.
fn truth(ctx: &NodeCtx<'_>, i: usize, what: &str) -> Result<Vec<bool>> {
    let d = ctx
        .const_input(i, what)?
        .ok_or_else(|| ctx.err(format!("{what} is required")))?;
    let v = d.to_f64_vec().map_err(|e| ctx.err(e))?;
    Ok(v.iter().map(|&x| x != 0.0).collect())
}

/// NonZero(X): the coordinates of X's non-zero elements, `[rank, count]` in row-major order.
fn non_zero(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let t = truth(ctx, 0, "X")?;
    let r = x.shape.len();
    let hits: Vec<usize> = (0..t.len()).filter(|&i| t[i]).collect();
    let mut v = vec![0.0; r * hits.len()];
    for (k, &flat) in hits.iter().enumerate() {
        let mut rest = flat;
        for d in (0..r).rev() {
            v[d * hits.len() + k] = (rest % x.shape[d]) as f64;
            rest /= x.shape[d];
        }
    }
    Ok(Imported::Constants(vec![tensor_data(
        DType::I64,
        vec![r, hits.len()],
        &v,
    )]))
}

/// Compress(input, condition): the slices along `axis` (or elements of the flattened input)
/// whose condition is true.
fn compress(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let cond = truth(ctx, 1, "condition")?;
    let mut s = Sub::new(ctx);
    let (data, axis, len) = match ctx.attr_i("axis") {
        Some(a) => {
            let a = ctx.axis(a, x.shape.len())?;
            (in_name(ctx, 0), a, x.shape[a])
        }
        None => {
            let n: usize = x.shape.iter().product();
            (reshape(&mut s, &in_name(ctx, 0), &[n]), 0, n)
        }
    };
    let picked: Vec<f64> = (0..cond.len())
        .filter(|&i| cond[i])
        .map(|i| i as f64)
        .collect();
    if picked.iter().any(|&i| i as usize >= len) {
        return Err(ctx.err(format!(
            "condition selects beyond the {len} slices along the axis"
        )));
    }
    let idx = s.constant(tensor_data(DType::I64, vec![picked.len()], &picked));
    s.to(
        "Gather",
        &[&data, &idx],
        &[&out0(ctx)?],
        vec![A::I("axis", axis as i64)],
    );
    Ok(s.done())
}
