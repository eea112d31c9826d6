//! Matrix products, softmax family and reductions.

use ge_runtime::format::{
    Activation, ArgReduceParams, DType, GemmParams, ReduceOp, ReduceParams, SoftmaxKind,
    SoftmaxParams,
};

use super::broadcast_shapes;
use super::registry::OpEntry;
use super::registry::dtypes::{FLOAT, NUM};
use crate::error::Result;
use crate::ir::Op;
use crate::onnx::ctx::{Imported, NodeCtx};

/// `Gemm`: `alpha * A' * B' + beta * C`.
pub fn gemm(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    if a.shape.len() != 2 || b.shape.len() != 2 {
        return Err(ctx.err(format!("A {:?} and B {:?} must be 2-D", a.shape, b.shape)));
    }
    let ta = ctx.attr_i_or("transA", 0) != 0;
    let tb = ctx.attr_i_or("transB", 0) != 0;
    let (m, k) = if ta {
        (a.shape[1], a.shape[0])
    } else {
        (a.shape[0], a.shape[1])
    };
    let (k2, n) = if tb {
        (b.shape[1], b.shape[0])
    } else {
        (b.shape[0], b.shape[1])
    };
    if k != k2 {
        return Err(ctx.err(format!(
            "inner dimensions differ: A {:?} (transA={ta}) and B {:?} (transB={tb})",
            a.shape, b.shape
        )));
    }
    let mut inputs = vec![0, 1];
    if let Some(c) = ctx.input_opt(2) {
        if broadcast_shapes(&[c.shape, &[m, n]]).as_deref() != Some(&[m, n][..]) {
            return Err(ctx.err(format!("C {:?} does not broadcast to [{m}, {n}]", c.shape)));
        }
        inputs.push(2);
    }
    let p = GemmParams {
        trans_a: ta as u32,
        trans_b: tb as u32,
        alpha: ctx.attr_f_or("alpha", 1.0),
        beta: ctx.attr_f_or("beta", 1.0),
        act: Activation::default(),
    };
    Ok(Imported::one(Op::Gemm(p), inputs, a.dtype, vec![m, n]))
}

/// `MatMul` with numpy semantics.
pub fn matmul(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    if a.shape.is_empty() || b.shape.is_empty() {
        return Err(ctx.err("operands must have rank ≥ 1"));
    }
    let a2: Vec<usize> = if a.shape.len() == 1 {
        vec![1, a.shape[0]]
    } else {
        a.shape.to_vec()
    };
    let b2: Vec<usize> = if b.shape.len() == 1 {
        vec![b.shape[0], 1]
    } else {
        b.shape.to_vec()
    };
    let (m, k) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let (k2, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
    if k != k2 {
        return Err(ctx.err(format!(
            "inner dimensions differ: {:?} × {:?}",
            a.shape, b.shape
        )));
    }
    let batch = broadcast_shapes(&[&a2[..a2.len() - 2], &b2[..b2.len() - 2]]).ok_or_else(|| {
        ctx.err(format!(
            "batch dims of {:?} and {:?} do not broadcast",
            a.shape, b.shape
        ))
    })?;
    let mut out = batch;
    if a.shape.len() > 1 {
        out.push(m);
    }
    if b.shape.len() > 1 {
        out.push(n);
    }
    if a.dtype != b.dtype {
        return Err(ctx.err("operand dtypes differ"));
    }
    Ok(Imported::one(Op::MatMul, vec![0, 1], a.dtype, out))
}

/// `Softmax`, `LogSoftmax`, `Hardmax` (opset < 13: 2-D coercion at `axis`, default 1;
/// opset ≥ 13: one axis, default -1).
pub fn softmax(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let kind = match ctx.node.op_type() {
        "Softmax" => SoftmaxKind::Softmax,
        "LogSoftmax" => SoftmaxKind::LogSoftmax,
        _ => SoftmaxKind::Hardmax,
    };
    let legacy = ctx.opset < 13;
    let axis = ctx.axis_or_scalar(
        ctx.attr_i_or("axis", if legacy { 1 } else { -1 }),
        x.shape.len(),
    )?;
    let p = SoftmaxParams {
        kind: kind as u32,
        axis: axis as u32,
        coerce_2d: legacy as u32,
    };
    Ok(Imported::one(
        Op::Softmax(p),
        vec![0],
        x.dtype,
        x.shape.to_vec(),
    ))
}

/// `Reduce*` (axes as attribute before opset 18 — 13 for ReduceSum — and as input after).
pub fn reduce(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let t = ctx.node.op_type();
    let op = match t {
        "ReduceSum" => ReduceOp::Sum,
        "ReduceMean" => ReduceOp::Mean,
        "ReduceMax" => ReduceOp::Max,
        "ReduceMin" => ReduceOp::Min,
        "ReduceProd" => ReduceOp::Prod,
        "ReduceL1" => ReduceOp::L1,
        "ReduceL2" => ReduceOp::L2,
        "ReduceLogSum" => ReduceOp::LogSum,
        "ReduceLogSumExp" => ReduceOp::LogSumExp,
        "ReduceSumSquare" => ReduceOp::SumSquare,
        _ => return Err(ctx.unsupported("unknown reduction")),
    };
    let axes_as_input = if t == "ReduceSum" {
        ctx.opset >= 13
    } else {
        ctx.opset >= 18
    };
    let axes = if axes_as_input {
        ctx.const_ints(1, "axes")?
    } else {
        ctx.attr_ints("axes")
    };
    let rank = x.shape.len();
    let keep = ctx.attr_i_or("keepdims", 1) != 0;
    let noop = ctx.attr_i_or("noop_with_empty_axes", 0) != 0;
    let mut mask = 0u32;
    match axes {
        Some(a) if !a.is_empty() => {
            for v in a {
                mask |= 1 << ctx.axis(v, rank)?;
            }
        }
        _ if noop => {}
        _ => mask = if rank == 0 { 0 } else { (1u32 << rank) - 1 },
    }
    let mut out = Vec::with_capacity(rank);
    for (i, &d) in x.shape.iter().enumerate() {
        if mask & (1 << i) == 0 {
            out.push(d);
        } else if keep {
            out.push(1);
        }
    }
    let p = ReduceParams {
        op: op as u32,
        axes_mask: mask,
    };
    Ok(Imported::one(Op::Reduce(p), vec![0], x.dtype, out))
}

/// `ArgMax`, `ArgMin`.
pub fn arg_reduce(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let axis = ctx.axis(ctx.attr_i_or("axis", 0), x.shape.len())?;
    let keep = ctx.attr_i_or("keepdims", 1) != 0;
    let mut out = x.shape.to_vec();
    if keep {
        out[axis] = 1;
    } else {
        out.remove(axis);
    }
    let p = ArgReduceParams {
        kind: if ctx.node.op_type() == "ArgMax" { 1 } else { 2 },
        axis: axis as u32,
        select_last_index: ctx.attr_i_or("select_last_index", 0) as u32,
    };
    Ok(Imported::one(Op::ArgReduce(p), vec![0], DType::I64, out))
}
/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::kernel("ArgMax", 7, NUM, arg_reduce),
    OpEntry::kernel("ArgMin", 7, NUM, arg_reduce),
    OpEntry::kernel("Gemm", 7, FLOAT, gemm),
    OpEntry::kernel("Hardmax", 7, FLOAT, softmax),
    OpEntry::kernel("LogSoftmax", 7, FLOAT, softmax),
    OpEntry::kernel("MatMul", 7, FLOAT, matmul),
    OpEntry::kernel("ReduceL1", 7, NUM, reduce),
    OpEntry::kernel("ReduceL2", 7, NUM, reduce),
    OpEntry::kernel("ReduceLogSum", 7, NUM, reduce),
    OpEntry::kernel("ReduceLogSumExp", 7, NUM, reduce),
    OpEntry::kernel("ReduceMax", 7, NUM, reduce),
    OpEntry::kernel("ReduceMean", 7, NUM, reduce),
    OpEntry::kernel("ReduceMin", 7, NUM, reduce),
    OpEntry::kernel("ReduceProd", 7, NUM, reduce),
    OpEntry::kernel("ReduceSum", 7, NUM, reduce),
    OpEntry::kernel("ReduceSumSquare", 7, NUM, reduce),
    OpEntry::kernel("Softmax", 7, FLOAT, softmax),
];
