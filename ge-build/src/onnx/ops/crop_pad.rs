//! `CenterCropPad`: a centred Slice where the input is larger than the target and a centred
//! Pad (extra element at the end) where it is smaller; the target `shape` decides the output
//! shape, so it must be known while compiling.

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0};
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::sub::Sub;
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::decomposed("CenterCropPad", 18, FLOAT, center_crop_pad)
        .note("shape known at compile time"),
];

/// CenterCropPad(input, shape) over `axes` (default: all).
fn center_crop_pad(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let r = x.shape.len();
    let target = ctx
        .const_ints(1, "shape")?
        .ok_or_else(|| ctx.err("shape is required"))?;
    let axes: Vec<usize> = match ctx.attr_ints("axes") {
        Some(a) => a.iter().map(|&a| ctx.axis(a, r)).collect::<Result<_>>()?,
        None => (0..r).collect(),
    };
    if target.len() != axes.len() || target.iter().any(|&t| t < 0) {
        return Err(ctx.err(format!(
            "shape {target:?} must give a size per axis {axes:?}"
        )));
    }
    let (mut st, mut en, mut sl_axes) = (Vec::new(), Vec::new(), Vec::new());
    let mut pads = vec![0i64; 2 * r];
    for (&a, &t) in axes.iter().zip(&target) {
        let n = x.shape[a] as i64;
        if t < n {
            let start = (n - t) / 2;
            st.push(start);
            en.push(start + t);
            sl_axes.push(a as i64);
        } else if t > n {
            let total = t - n;
            pads[a] = total / 2;
            pads[r + a] = total - total / 2;
        }
    }
    let mut s = Sub::new(ctx);
    let mut y = in_name(ctx, 0);
    if !sl_axes.is_empty() {
        let (a, b, c) = (s.ints(&st), s.ints(&en), s.ints(&sl_axes));
        y = s.op("Slice", &[&y, &a, &b, &c], vec![]);
    }
    if pads.iter().any(|&p| p != 0) {
        let p = s.ints(&pads);
        y = s.op("Pad", &[&y, &p], vec![]);
    }
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}
