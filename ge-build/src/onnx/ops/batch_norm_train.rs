//! `BatchNormalization` with `training_mode = 1`: normalized with the batch's own statistics
//! (mean and population variance over all axes but the channel's), and the running
//! mean/variance outputs updated with `momentum`. Deterministic, so it decomposes.

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out, out0, reduce, reshape};
use super::is_float;
use super::sub::Sub;
use crate::error::Result;

/// True when the node is a training-mode BatchNormalization (opset 14+).
pub fn is_training(ctx: &NodeCtx<'_>) -> bool {
    ctx.node.op_type() == "BatchNormalization"
        && ctx.opset >= 14
        && ctx.attr_i_or("training_mode", 0) != 0
}

/// BatchNormalization(X, scale, B, input_mean, input_var) -> (Y, running_mean, running_var).
pub fn batch_norm_train(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let r = x.shape.len();
    if r < 2 || !is_float(x.dtype) {
        return Err(ctx.err("input must be float of rank at least 2"));
    }
    let c = x.shape[1];
    for i in 1..5 {
        if ctx.input(i)?.shape != [c] {
            return Err(ctx.err(format!("input {i} must have shape [{c}]")));
        }
    }
    let eps = ctx.attr_f_or("epsilon", 1e-5);
    let momentum = ctx.attr_f_or("momentum", 0.9);
    let axes: Vec<i64> = (0..r as i64).filter(|&a| a != 1).collect();
    let mut cshape = vec![1usize; r];
    cshape[1] = c;
    let mut s = Sub::new(ctx);
    let op = ctx.opset;
    let xi = in_name(ctx, 0);
    let mean = reduce(&mut s, op, "ReduceMean", &xi, &axes, true);
    let d = s.op("Sub", &[&xi, &mean], vec![]);
    let dd = s.op("Mul", &[&d, &d], vec![]);
    let var = reduce(&mut s, op, "ReduceMean", &dd, &axes, true);
    let e = s.scalar(x.dtype, eps as f64);
    let ve = s.op("Add", &[&var, &e], vec![]);
    let sd = s.op("Sqrt", &[&ve], vec![]);
    let n = s.op("Div", &[&d, &sd], vec![]);
    let sc = reshape(&mut s, &in_name(ctx, 1), &cshape);
    let b = reshape(&mut s, &in_name(ctx, 2), &cshape);
    let y = s.op("Mul", &[&n, &sc], vec![]);
    s.to("Add", &[&y, &b], &[&out0(ctx)?], vec![]);
    let m = s.scalar(x.dtype, momentum as f64);
    let m1 = s.scalar(x.dtype, 1.0 - momentum as f64);
    for (o, batch, running) in [(1, &mean, 3), (2, &var, 4)] {
        if let Some(name) = out(ctx, o) {
            let flat = reshape(&mut s, batch, &[c]);
            let old = s.op("Mul", &[&in_name(ctx, running), &m], vec![]);
            let new = s.op("Mul", &[&flat, &m1], vec![]);
            s.to("Add", &[&old, &new], &[&name], vec![]);
        }
    }
    Ok(s.done())
}
