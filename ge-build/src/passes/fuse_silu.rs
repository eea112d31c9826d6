//! SiLU recognition: `x · Sigmoid(x)` (YOLOv5/v8's and EfficientNet's activation, which
//! exporters write as two nodes) becomes one Silu unary. The Mul no longer reads the conv
//! output beside the Sigmoid, so epilogue fusion can apply it in the producing Conv's or
//! Gemm's output tiles instead of a separate pass over memory. The Silu kernel computes
//! `x · σ(x)` with the Sigmoid kernel's `σ`, so results are bitwise those of the two nodes.
//! O(V + E).

use ge_runtime::format::{BinaryOp, UnaryOp};

use super::pattern::{Rewrite, binary_with, is_unary, rewrite_each};
use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op};

/// `Mul(x, Sigmoid(x))` (either operand order) → `Silu(x)`.
pub struct FuseSilu;

impl Pass for FuseSilu {
    pass_info!("fuse_silu", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        Ok(rewrite_each(g, |g, users, n| {
            if !is_unary(g, n, UnaryOp::Sigmoid) {
                return None;
            }
            let x = g.g[n].inputs.first().copied().flatten()?;
            let s = *g.g[n].outputs.first()?;
            let mul = g.single_use(s, users)?;
            (binary_with(g, mul, BinaryOp::Mul, s)? == x).then(|| Rewrite {
                dead: vec![n],
                last: mul,
                op: Op::unary(UnaryOp::Silu, 0.0, 0.0),
                op_type: "Silu",
                inputs: vec![Some(x)],
            })
        }))
    }
}
