//! Ops whose data movement is fixed once an index input is known while compiling, imported
//! as a Gather or GatherElements with constant indices: Compress (constant condition) and
//! ReverseSequence (constant sequence lengths).

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape};
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// Op types handled here.
pub const OPS: &[&str] = &["Compress", "ReverseSequence"];

/// Imports `t` if it is handled here; `None` otherwise.
pub fn import(t: &str, ctx: &NodeCtx<'_>) -> Option<Result<Imported>> {
    match t {
        "Compress" => Some(compress(ctx)),
        "ReverseSequence" => Some(reverse_sequence(ctx)),
        _ => None,
    }
}

/// Compress: a Gather of the positions where the condition holds (along `axis`, or over
/// the flattened input without one).
fn compress(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let cond = ctx
        .const_input(1, "condition")?
        .ok_or_else(|| ctx.err("condition is required"))?
        .to_f64_vec()
        .map_err(|e| ctx.err(format!("condition: {e}")))?;
    let mut s = Sub::new(ctx);
    let (src, axis) = match ctx.attr_i("axis") {
        Some(a) => (in_name(ctx, 0), ctx.axis(a, x.shape.len())?),
        None => {
            let n = x.shape.iter().product();
            (reshape(&mut s, &in_name(ctx, 0), &[n]), 0)
        }
    };
    let dim = if ctx.has_attr("axis") {
        x.shape[axis]
    } else {
        x.shape.iter().product()
    };
    if cond.len() > dim {
        return Err(ctx.err(format!(
            "condition has {} entries for an axis of {dim}",
            cond.len()
        )));
    }
    let picked: Vec<f64> = cond
        .iter()
        .enumerate()
        .filter(|(_, c)| **c != 0.0)
        .map(|(i, _)| i as f64)
        .collect();
    if picked.is_empty() {
        return Err(ctx.unsupported("a condition selecting nothing (an empty output)"));
    }
    let idx = s.constant(tensor_data(DType::I64, vec![picked.len()], &picked));
    s.to(
        "Gather",
        &[&src, &idx],
        &[&out0(ctx)?],
        vec![A::I("axis", axis as i64)],
    );
    Ok(s.done())
}

/// ReverseSequence: a GatherElements along the time axis whose index reverses the first
/// `sequence_lens[b]` steps of each batch entry and keeps the rest.
fn reverse_sequence(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if x.shape.len() < 2 {
        return Err(ctx.err("input rank must be at least 2"));
    }
    let lens = ctx
        .const_ints(1, "sequence_lens")?
        .ok_or_else(|| ctx.err("sequence_lens is required"))?;
    let (ba, ta) = (
        ctx.attr_i_or("batch_axis", 1),
        ctx.attr_i_or("time_axis", 0),
    );
    let (ba, ta) = match (ba, ta) {
        (0, 1) => (0, 1),
        (1, 0) => (1, 0),
        _ => {
            return Err(ctx.err(format!(
                "batch_axis {ba} and time_axis {ta} must be 0 and 1 in some order"
            )));
        }
    };
    let (b, t) = (x.shape[ba], x.shape[ta]);
    if lens.len() != b || lens.iter().any(|&l| l < 0 || l as usize > t) {
        return Err(ctx.err(format!("sequence_lens {lens:?} for batch {b} and time {t}")));
    }
    let inner: usize = x.shape[2..].iter().product();
    let mut idx = Vec::with_capacity(b * t * inner);
    for i0 in 0..x.shape[0] {
        for i1 in 0..x.shape[1] {
            let (bi, ti) = if ba == 0 { (i0, i1) } else { (i1, i0) };
            let l = lens[bi] as usize;
            let src = if ti < l { l - 1 - ti } else { ti };
            idx.extend(std::iter::repeat_n(src as f64, inner));
        }
    }
    let mut s = Sub::new(ctx);
    let ic = s.constant(tensor_data(DType::I64, x.shape.to_vec(), &idx));
    s.to(
        "GatherElements",
        &[&in_name(ctx, 0), &ic],
        &[&out0(ctx)?],
        vec![A::I("axis", ta as i64)],
    );
    Ok(s.done())
}
