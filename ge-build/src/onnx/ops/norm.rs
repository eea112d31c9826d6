//! Normalizations: BatchNormalization (inference, including the legacy `spatial` and
//! `consumed_inputs` forms), InstanceNormalization, LRN.

use ge_runtime::format::{Activation, LrnParams, NormParams};

use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use crate::error::Result;
use crate::ir::Op;
use crate::onnx::ctx::{Imported, NodeCtx};

fn per_channel(ctx: &NodeCtx<'_>, range: std::ops::Range<usize>, c: usize) -> Result<()> {
    for i in range {
        let t = ctx.input(i)?;
        if t.shape.iter().product::<usize>() != c || t.shape.len() > 1 && t.shape != [c] {
            return Err(ctx.err(format!("input {i} has shape {:?}; expected [{c}]", t.shape)));
        }
    }
    Ok(())
}

/// `BatchNormalization`.
pub fn batch_norm(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if x.shape.len() < 2 {
        return Err(ctx.err("input rank must be at least 2"));
    }
    if ctx.attr_i_or("training_mode", 0) != 0 {
        return Err(ctx.unsupported("training_mode=1 (ge compiles inference graphs)"));
    }
    if ctx.opset < 9 && ctx.attr_i_or("spatial", 1) == 0 {
        return Err(ctx.unsupported("spatial=0 (per-activation statistics)"));
    }
    if ctx.attr_i_or("is_test", 1) == 0
        && ctx.opset < 7
        && ctx.node.output.iter().skip(1).any(|o| !o.is_empty())
    {
        return Err(ctx.unsupported("training outputs (is_test=0)"));
    }
    if ctx.node.output.iter().skip(1).any(|o| !o.is_empty()) && ctx.opset >= 7 {
        return Err(ctx.unsupported("running mean/var outputs (training)"));
    }
    per_channel(ctx, 1..5, x.shape[1])?;
    let p = NormParams {
        epsilon: ctx.attr_f_or("epsilon", 1e-5),
        act: Activation::default(),
    };
    Ok(Imported::one(
        Op::BatchNorm(p),
        vec![0, 1, 2, 3, 4],
        x.dtype,
        x.shape.to_vec(),
    ))
}

/// `InstanceNormalization`.
pub fn instance_norm(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if x.shape.len() < 3 {
        return Err(ctx.err("input rank must be at least 3"));
    }
    per_channel(ctx, 1..3, x.shape[1])?;
    let p = NormParams {
        epsilon: ctx.attr_f_or("epsilon", 1e-5),
        act: Activation::default(),
    };
    Ok(Imported::one(
        Op::InstanceNorm(p),
        vec![0, 1, 2],
        x.dtype,
        x.shape.to_vec(),
    ))
}

/// `LRN`.
pub fn lrn(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let size = ctx
        .attr_i("size")
        .filter(|&s| s >= 1)
        .ok_or_else(|| ctx.err("size is required and must be positive"))?;
    if x.shape.len() < 2 {
        return Err(ctx.err("input rank must be at least 2"));
    }
    let p = LrnParams {
        size: size as u32,
        alpha: ctx.attr_f_or("alpha", 1e-4),
        beta: ctx.attr_f_or("beta", 0.75),
        bias: ctx.attr_f_or("bias", 1.0),
    };
    Ok(Imported::one(
        Op::Lrn(p),
        vec![0],
        x.dtype,
        x.shape.to_vec(),
    ))
}
/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::kernel("BatchNormalization", 7, FLOAT, |c| {
        if super::batch_norm_train::is_training(c) {
            super::batch_norm_train::batch_norm_train(c)
        } else {
            batch_norm(c)
        }
    })
    .note("training_mode = 1 (opset 14+): decomposed, batch statistics"),
    OpEntry::kernel("InstanceNormalization", 7, FLOAT, instance_norm),
    OpEntry::kernel("LRN", 7, FLOAT, lrn),
];
