//! `ReverseSequence`: a GatherElements along the time axis whose indices are computed at run
//! time from `sequence_lens` (`t < len ? len - 1 - t : t`), so the lengths may vary per run.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape};
use super::registry::OpEntry;
use super::registry::dtypes::ANY;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[OpEntry::decomposed(
    "ReverseSequence",
    10,
    ANY,
    reverse_sequence,
)];

/// ReverseSequence(input, sequence_lens) with `batch_axis` and `time_axis` (0 and 1).
fn reverse_sequence(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let lens = ctx.input(1)?;
    let r = x.shape.len();
    if r < 2 {
        return Err(ctx.err("input rank must be at least 2"));
    }
    let b = ctx.attr_i_or("batch_axis", 1);
    let t = ctx.attr_i_or("time_axis", 0);
    let (b, t) = match (b, t) {
        (0, 1) | (1, 0) => (b as usize, t as usize),
        _ => return Err(ctx.err("batch_axis and time_axis must be 0 and 1")),
    };
    if lens.shape != [x.shape[b]] || !matches!(lens.dtype, DType::I64 | DType::I32) {
        return Err(ctx.err(format!(
            "sequence_lens must be an int tensor of shape [{}]",
            x.shape[b]
        )));
    }
    let mut s = Sub::new(ctx);
    // time positions along `t`, lengths along `b`, both broadcast to the input's shape.
    let steps = x.shape[t];
    let mut tshape = vec![1usize; r];
    tshape[t] = steps;
    let pos: Vec<f64> = (0..steps).map(|i| i as f64).collect();
    let tt = s.constant(tensor_data(DType::I64, tshape, &pos));
    let mut lshape = vec![1usize; r];
    lshape[b] = x.shape[b];
    let mut len = in_name(ctx, 1);
    if lens.dtype != DType::I64 {
        len = s.op("Cast", &[&len], vec![A::I("to", DType::I64 as i64)]);
    }
    let len = reshape(&mut s, &len, &lshape);
    let one = s.scalar(DType::I64, 1.0);
    let last = s.op("Sub", &[&len, &one], vec![]);
    let rev = s.op("Sub", &[&last, &tt], vec![]);
    let inside = s.op("Less", &[&tt, &len], vec![]);
    let idx = s.op("Where", &[&inside, &rev, &tt], vec![]);
    let full = s.ints(&x.shape.iter().map(|&d| d as i64).collect::<Vec<_>>());
    let idx = s.op("Expand", &[&idx, &full], vec![]);
    s.to(
        "GatherElements",
        &[&in_name(ctx, 0), &idx],
        &[&out0(ctx)?],
        vec![A::I("axis", t as i64)],
    );
    Ok(s.done())
}
