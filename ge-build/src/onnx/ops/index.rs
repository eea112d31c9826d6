//! Index-driven ops (GatherElements, GatherND, ScatterElements / Scatter, ScatterND) and
//! order-dependent ones (TopK, CumSum, CumProd).

use ge_runtime::format::{
    AxisParams, CumulativeParams, DType, ScatterParams, ScatterReduction, TopKParams,
};

use super::super::ctx::{Imported, NodeCtx};
use super::registry::OpEntry;
use super::registry::dtypes::{ANY, NUM};
use crate::error::Result;
use crate::ir::Op;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::kernel("CumProd", 26, NUM, |c| cumulative(c, true)),
    OpEntry::kernel("CumSum", 11, NUM, |c| cumulative(c, false)),
    OpEntry::kernel("GatherElements", 11, ANY, gather_elements),
    OpEntry::kernel("GatherND", 11, ANY, gather_nd),
    OpEntry::kernel("Scatter", 9, ANY, scatter_elements).until(10),
    OpEntry::kernel("ScatterElements", 11, ANY, scatter_elements),
    OpEntry::kernel("ScatterND", 11, ANY, scatter_nd),
    OpEntry::kernel("TopK", 7, NUM, top_k),
];

fn int_indices(ctx: &NodeCtx<'_>, i: usize) -> Result<()> {
    let d = ctx.input(i)?.dtype;
    if !matches!(d, DType::I64 | DType::I32) {
        return Err(ctx.err(format!("indices must be int64 or int32, not {}", d.name())));
    }
    Ok(())
}

fn gather_elements(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let i = ctx.input(1)?;
    int_indices(ctx, 1)?;
    if x.shape.len() != i.shape.len() {
        return Err(ctx.err("data and indices must have the same rank"));
    }
    let axis = ctx.axis(ctx.attr_i_or("axis", 0), x.shape.len())?;
    Ok(Imported::one(
        Op::GatherElements(AxisParams { axis: axis as u32 }),
        vec![0, 1],
        x.dtype,
        i.shape.to_vec(),
    ))
}

fn gather_nd(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let i = ctx.input(1)?;
    int_indices(ctx, 1)?;
    let b = ctx.attr_i_or("batch_dims", 0);
    let q = i.shape.len();
    if q == 0 || b < 0 || b as usize >= q || b as usize > x.shape.len() {
        return Err(ctx.err(format!("batch_dims {b} with indices of rank {q}")));
    }
    let b = b as usize;
    let k = i.shape[q - 1];
    if b + k > x.shape.len() || x.shape[..b] != i.shape[..b] {
        return Err(ctx.err(format!(
            "indices {:?} do not fit data {:?} with batch_dims {b}",
            i.shape, x.shape
        )));
    }
    let mut shape = i.shape[..q - 1].to_vec();
    shape.extend_from_slice(&x.shape[b + k..]);
    Ok(Imported::one(
        Op::GatherNd(AxisParams { axis: b as u32 }),
        vec![0, 1],
        x.dtype,
        shape,
    ))
}

fn reduction(ctx: &NodeCtx<'_>) -> Result<ScatterReduction> {
    Ok(match ctx.attr_s_or("reduction", "none").as_str() {
        "none" => ScatterReduction::None,
        "add" => ScatterReduction::Add,
        "mul" => ScatterReduction::Mul,
        "max" => ScatterReduction::Max,
        "min" => ScatterReduction::Min,
        r => return Err(ctx.err(format!("unknown reduction '{r}'"))),
    })
}

fn scatter_elements(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let i = ctx.input(1)?;
    let u = ctx.input(2)?;
    int_indices(ctx, 1)?;
    if i.shape != u.shape || i.shape.len() != x.shape.len() || u.dtype != x.dtype {
        return Err(ctx.err("indices and updates must share a shape of the data's rank and type"));
    }
    let axis = ctx.axis(ctx.attr_i_or("axis", 0), x.shape.len())?;
    Ok(Imported::one(
        Op::ScatterElements(ScatterParams {
            axis: axis as u32,
            reduction: reduction(ctx)? as u32,
        }),
        vec![0, 1, 2],
        x.dtype,
        x.shape.to_vec(),
    ))
}

fn scatter_nd(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let i = ctx.input(1)?;
    let u = ctx.input(2)?;
    int_indices(ctx, 1)?;
    let q = i.shape.len();
    let k = i.shape.last().copied().unwrap_or(0);
    let mut want = i.shape[..q.saturating_sub(1)].to_vec();
    if k <= x.shape.len() {
        want.extend_from_slice(&x.shape[k..]);
    }
    if q == 0 || k > x.shape.len() || u.shape != want.as_slice() || u.dtype != x.dtype {
        return Err(ctx.err(format!(
            "updates {:?} do not match indices {:?} and data {:?}",
            u.shape, i.shape, x.shape
        )));
    }
    Ok(Imported::one(
        Op::ScatterNd(ScatterParams {
            axis: 0,
            reduction: reduction(ctx)? as u32,
        }),
        vec![0, 1, 2],
        x.dtype,
        x.shape.to_vec(),
    ))
}

fn top_k(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if x.shape.is_empty() {
        return Err(ctx.err("input must have rank >= 1"));
    }
    let axis = ctx.axis(ctx.attr_i_or("axis", -1), x.shape.len())?;
    let k = if ctx.opset < 10 {
        ctx.attr_i("k").ok_or_else(|| ctx.err("k is required"))?
    } else {
        match ctx.const_ints(1, "K")?.as_deref() {
            Some([k]) => *k,
            _ => return Err(ctx.err("K must be a 1-element tensor")),
        }
    };
    if k < 0 || k as usize > x.shape[axis] {
        return Err(ctx.err(format!("k = {k} for an axis of {}", x.shape[axis])));
    }
    let mut shape = x.shape.to_vec();
    shape[axis] = k as usize;
    Ok(Imported::Op {
        op: Op::TopK(TopKParams {
            axis: axis as u32,
            k: k as u32,
            largest: (ctx.attr_i_or("largest", 1) != 0) as u32,
            reserved: 0,
        }),
        inputs: vec![0],
        outputs: vec![(x.dtype, shape.clone()), (DType::I64, shape)],
        overrides: Vec::new(),
    })
}

/// CumSum / CumProd along a constant axis. On a 1-D input every valid axis (0 or -1) is axis
/// 0, so a run-time axis needs no value there (an out-of-range one is not diagnosed).
fn cumulative(ctx: &NodeCtx<'_>, product: bool) -> Result<Imported> {
    let x = ctx.input(0)?;
    let runtime_axis = ctx.input(1)?.data.is_none();
    let axis = match ctx.const_ints(1, "axis") {
        _ if runtime_axis && x.shape.len() == 1 => 0,
        r => match r?.as_deref() {
            Some([a]) => ctx.axis(*a, x.shape.len())?,
            _ => return Err(ctx.err("axis must be a scalar")),
        },
    };
    Ok(Imported::one(
        Op::Cumulative(CumulativeParams {
            axis: axis as u32,
            exclusive: (ctx.attr_i_or("exclusive", 0) != 0) as u32,
            reverse: (ctx.attr_i_or("reverse", 0) != 0) as u32,
            product: product as u32,
        }),
        vec![0],
        x.dtype,
        x.shape.to_vec(),
    ))
}
