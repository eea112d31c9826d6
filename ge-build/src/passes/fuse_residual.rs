//! Residual fusion: `Add(Conv(x), r)` or a two-input `Sum` (and its fused activation,
//! `Add+Relu`) becomes one Conv task that adds the skip connection `r` while each output tile
//! is still in registers — the ResNet block tail; `Add(Gemm(x), r)` likewise (the
//! transformer's `dense + bias + residual`: Gemm starts its accumulator from `bias + r`).
//! The Add task, and a read and a write of the whole tensor, vanish.
//! Runs after `fuse_epilogue`, so an `Add → Relu` pair arrives as one Add carrying the
//! activation. O(V + E).

use ge_runtime::format::{BinaryOp, DType};
use petgraph::stable_graph::NodeIndex;

use super::pattern::Users;
use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op, ValueId};

/// Conv/Gemm + residual Add (+ activation).
pub struct FuseResidual;

impl Pass for FuseResidual {
    pass_info!("fuse_residual", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let users = g.users();
        let order = g.topo_order();
        let position: std::collections::HashMap<NodeIndex, usize> =
            order.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let mut changed = false;
        for &add in &order {
            if !g.g.contains_node(add) {
                continue;
            }
            let Some((conv, residual)) = find(g, &users, &position, add) else {
                continue;
            };
            let (Op::Binary(bp) | Op::Variadic(bp)) = g.g[add].op else {
                continue;
            };
            let fused = match g.g[conv].op {
                Op::Conv(mut cp) => {
                    cp.act = bp.act;
                    Op::Conv(cp)
                }
                Op::Gemm(mut gp) => {
                    gp.act = bp.act;
                    Op::Gemm(gp)
                }
                Op::GemmW8(mut gp) => {
                    gp.act = bp.act;
                    Op::GemmW8(gp)
                }
                _ => continue,
            };
            let mut inputs = g.g[conv].inputs.clone();
            inputs.resize(residual_slot(&fused), None);
            inputs.push(Some(residual));
            let label = format!("{}+{}", g.g[conv].op_type, g.g[add].op_type);
            g.merge_into(conv, Some(add));
            g.g[add].op = fused;
            g.g[add].op_type = label;
            g.set_inputs(add, inputs);
            changed = true;
        }
        Ok(changed)
    }
}

/// If `add` is an f32 `Add` of two same-shaped tensors, one of them the only use of a plain
/// Conv's or Gemm's output: that node and the other operand (the residual). When both
/// operands qualify, the one that runs later is chosen, so the residual is already computed.
fn find(
    g: &Graph,
    users: &Users,
    position: &std::collections::HashMap<NodeIndex, usize>,
    add: NodeIndex,
) -> Option<(NodeIndex, ValueId)> {
    // A two-input Sum is an Add (older exporters write residuals that way).
    let (Op::Binary(bp) | Op::Variadic(bp)) = g.g[add].op else {
        return None;
    };
    if bp.binary_op() != Some(BinaryOp::Add) {
        return None;
    }
    let [Some(a), Some(b)] = g.g[add].inputs[..] else {
        return None;
    };
    let y = g.g[add].outputs[0];
    let same = |v: ValueId| g.value(v).shape == g.value(y).shape && g.value(v).dtype == DType::F32;
    if a == b || !same(a) || !same(b) {
        return None;
    }
    let conv_of = |v: ValueId| {
        let p = g.value(v).producer?;
        let act = match g.g[p].op {
            Op::Conv(cp) => cp.act,
            Op::Gemm(gp) | Op::GemmW8(gp) => gp.act,
            _ => return None,
        };
        let slot = residual_slot(&g.g[p].op);
        let plain = act.is_none() && g.g[p].outputs.len() == 1 && g.g[p].inputs.len() <= slot;
        (plain && g.single_use(v, users) == Some(add)).then_some(p)
    };
    let later = |n: NodeIndex| position.get(&n).copied().unwrap_or(0);
    match (conv_of(a), conv_of(b)) {
        (Some(ca), Some(cb)) if later(cb) > later(ca) => Some((cb, a)),
        (Some(ca), _) => Some((ca, b)),
        (None, Some(cb)) => Some((cb, a)),
        (None, None) => None,
    }
}

/// The input slot of the residual: after A/X, B/W, C/bias (GemmW8: and B's scales).
fn residual_slot(op: &Op) -> usize {
    if matches!(op, Op::GemmW8(_)) { 4 } else { 3 }
}
