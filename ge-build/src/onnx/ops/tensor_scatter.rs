//! `TensorScatter` (KV-cache update): a ScatterElements along `axis` whose indices,
//! `write_indices[batch] + position` (modulo the cache length in circular mode), are
//! computed at run time, so write positions may change between runs.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape};
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[OpEntry::decomposed(
    "TensorScatter",
    24,
    FLOAT,
    tensor_scatter,
)];

/// TensorScatter(past_cache, update, write_indices?) with `axis` and `mode`.
fn tensor_scatter(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let past = ctx.input(0)?;
    let upd = ctx.input(1)?;
    let r = past.shape.len();
    let axis = ctx.axis(ctx.attr_i_or("axis", -2), r)?;
    if axis == 0 {
        return Err(ctx.err("axis must not be the batch axis 0"));
    }
    let same_but_axis = upd.shape.len() == r
        && (0..r).all(|d| d == axis || upd.shape[d] == past.shape[d])
        && upd.shape[axis] <= past.shape[axis];
    if !same_but_axis || upd.dtype != past.dtype {
        return Err(ctx.err(format!(
            "update {:?} must match past_cache {:?} except along axis {axis}",
            upd.shape, past.shape
        )));
    }
    let circular = match ctx.attr_s_or("mode", "linear").as_str() {
        "linear" => false,
        "circular" => true,
        m => return Err(ctx.err(format!("mode '{m}' is not linear or circular"))),
    };
    let mut s = Sub::new(ctx);
    let steps = upd.shape[axis];
    let mut pshape = vec![1usize; r];
    pshape[axis] = steps;
    let pos: Vec<f64> = (0..steps).map(|i| i as f64).collect();
    let mut idx = s.constant(tensor_data(DType::I64, pshape, &pos));
    if let Some(w) = ctx.input_opt(2) {
        let b = past.shape[0];
        if w.shape != [b] {
            return Err(ctx.err(format!("write_indices must have shape [{b}]")));
        }
        let mut wi = in_name(ctx, 2);
        if w.dtype != DType::I64 {
            wi = s.op("Cast", &[&wi], vec![A::I("to", DType::I64 as i64)]);
        }
        let mut wshape = vec![1usize; r];
        wshape[0] = b;
        let wr = reshape(&mut s, &wi, &wshape);
        idx = s.op("Add", &[&idx, &wr], vec![]);
    }
    if circular {
        let m = s.scalar(DType::I64, past.shape[axis] as f64);
        idx = s.op("Mod", &[&idx, &m], vec![]);
    }
    let full = s.ints(&upd.shape.iter().map(|&d| d as i64).collect::<Vec<_>>());
    let idx = s.op("Expand", &[&idx, &full], vec![]);
    s.to(
        "ScatterElements",
        &[&in_name(ctx, 0), &idx, &in_name(ctx, 1)],
        &[&out0(ctx)?],
        vec![A::I("axis", axis as i64)],
    );
    Ok(s.done())
}
