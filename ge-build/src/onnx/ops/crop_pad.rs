//! CenterCropPad: per axis, a centered Slice where the target is smaller and a centered zero
//! Pad where it is larger (the extra odd element goes to the end, as the reference does).

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0};
use super::sub::Sub;
use crate::error::Result;

/// Op types handled here.
pub const OPS: &[&str] = &["CenterCropPad"];

/// Imports `t` if it is handled here; `None` otherwise.
pub fn import(t: &str, ctx: &NodeCtx<'_>) -> Option<Result<Imported>> {
    match t {
        "CenterCropPad" => Some(center_crop_pad(ctx)),
        _ => None,
    }
}

fn center_crop_pad(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let rank = x.shape.len();
    let target = ctx
        .const_ints(1, "shape")?
        .ok_or_else(|| ctx.err("shape is required"))?;
    let axes: Vec<usize> = match ctx.attr_ints("axes") {
        Some(a) => a
            .iter()
            .map(|&a| ctx.axis(a, rank))
            .collect::<Result<_>>()?,
        None => (0..rank).collect(),
    };
    if axes.len() != target.len() {
        return Err(ctx.err(format!(
            "shape has {} entries for {} axes",
            target.len(),
            axes.len()
        )));
    }
    let (mut starts, mut ends, mut slice_axes) = (Vec::new(), Vec::new(), Vec::new());
    let mut pads = vec![0i64; 2 * rank];
    for (&a, &t) in axes.iter().zip(&target) {
        let dim = x.shape[a] as i64;
        if t < 0 {
            return Err(ctx.err(format!("target size {t} is negative")));
        }
        if t < dim {
            let b = (dim - t) / 2;
            starts.push(b);
            ends.push(b + t);
            slice_axes.push(a as i64);
        } else if t > dim {
            let b = (t - dim) / 2;
            pads[a] = b;
            pads[rank + a] = t - dim - b;
        }
    }
    let mut s = Sub::new(ctx);
    let mut y = in_name(ctx, 0);
    if !slice_axes.is_empty() {
        let (st, en, ax) = (s.ints(&starts), s.ints(&ends), s.ints(&slice_axes));
        y = s.op("Slice", &[&y, &st, &en, &ax], vec![]);
    }
    if pads.iter().any(|&p| p != 0) {
        let p = s.ints(&pads);
        y = s.op("Pad", &[&y, &p], vec![]);
    }
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}
