//! Normalizations: BatchNormalization (inference, including the legacy `spatial` and
//! `consumed_inputs` forms), InstanceNormalization, LRN, and LayerNormalization where the
//! LayerNorm kernel computes it as the spec does (the other cases are decomposed).

use ge_runtime::format::{Activation, DType, LayerNormParams, LrnParams, NormParams};

use super::registry::dtypes::FLOAT;
use super::registry::{MIN_OPSET, OpEntry};
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

/// `LayerNormalization` straight to the LayerNorm kernel when that is exactly the op: an f32
/// input (whose statistics are f32 under either `stash_type`; the kernel accumulates them in
/// f64), only `Y` requested, and an f32 `Scale` (and `B`) that broadcasts within the
/// normalized shape `X.shape[axis..]`, so `Y` keeps `X`'s shape. `None` otherwise: f64,
/// f16/bf16 (statistics in f32, the normalized value rounded before the scale), the
/// `Mean`/`InvStdDev` outputs and wider scales are decomposed by the caller, whose form
/// `fuse_layer_norm` still fuses where it can. The node is the one that pass builds: inputs
/// `[x, scale, bias]`, no activation.
pub fn layer_norm(ctx: &NodeCtx<'_>) -> Option<Result<Imported>> {
    let x = ctx.input_opt(0)?;
    let stats_requested = ctx.node.output.iter().skip(1).any(|o| !o.is_empty());
    let y_requested = ctx.node.output.first().is_some_and(|o| !o.is_empty());
    if x.dtype != DType::F32 || x.shape.is_empty() || stats_requested || !y_requested {
        return None;
    }
    let axis = match ctx.axis(ctx.attr_i_or("axis", -1), x.shape.len()) {
        Ok(a) => a,
        Err(e) => return Some(Err(e)),
    };
    let norm = &x.shape[axis..];
    let fits = |i: usize| {
        ctx.input_opt(i).is_none_or(|t| {
            t.dtype == DType::F32
                && t.shape.len() <= norm.len()
                && t.shape
                    .iter()
                    .rev()
                    .zip(norm.iter().rev())
                    .all(|(&a, &b)| a == b || a == 1)
        })
    };
    if ctx.input_opt(1).is_none() || !fits(1) || !fits(2) {
        return None;
    }
    let p = LayerNormParams {
        axis: axis as u32,
        epsilon: ctx.attr_f_or("epsilon", 1e-5),
        act: Activation::default(),
    };
    Some(Ok(Imported::one(
        Op::LayerNorm(p),
        vec![0, 1, 2],
        x.dtype,
        x.shape.to_vec(),
    )))
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
    // Opset 17 in ONNX; onnxruntime defines the same op at opset 1 and its optimizer writes
    // it into models of any opset, so no lower bound.
    OpEntry::kernel("LayerNormalization", MIN_OPSET, FLOAT, |c| {
        layer_norm(c).unwrap_or_else(|| super::decomp::layer_norm(c, false))
    })
    .note("opset 17, and onnxruntime's contrib form before it; f64, f16/bf16, the Mean/InvStdDev outputs or a scale wider than the normalized shape: decomposed"),
];
