//! Epilogue fusion: an activation whose input comes only from a task whose kernel applies
//! that activation to that element type in its epilogue (the device's kernel registry says
//! which: `ge_sim::ops::registry`, e.g. f32 Conv, Gemm and Binary) is applied by that
//! task while its output is hot: one task and one global-memory round trip fewer. O(V + E).

use ge_runtime::format::{Activation, UnaryOp};

use super::pattern::bypass;
use super::{Pass, PassContext};
use crate::error::{CompileError, Result};
use crate::ir::{Graph, Op};

/// Task + activation, for the tasks whose kernels apply it.
pub struct FuseEpilogue;

/// The parameter field holding the epilogue activation of an op whose record has one.
fn act_field(op: &mut Op) -> Option<&mut Activation> {
    match op {
        Op::Conv(c) | Op::ConvTranspose(c) => Some(&mut c.act),
        Op::Gemm(c) | Op::GemmW8(c) => Some(&mut c.act),
        Op::Binary(c) | Op::Variadic(c) => Some(&mut c.act),
        Op::BatchNorm(c) | Op::InstanceNorm(c) => Some(&mut c.act),
        Op::LayerNorm(c) => Some(&mut c.act),
        Op::Unary(_)
        | Op::Where
        | Op::MatMul
        | Op::Pool(_)
        | Op::GlobalPool(_)
        | Op::QBinary(_)
        | Op::QSoftmax(_)
        | Op::QMean(_)
        | Op::Lrn(_)
        | Op::Softmax(_)
        | Op::Reduce(_)
        | Op::ArgReduce(_)
        | Op::Transpose(_)
        | Op::Slice(_)
        | Op::Concat(_)
        | Op::Split(_)
        | Op::Gather(_)
        | Op::Pad(_)
        | Op::Reshape
        | Op::Expand
        | Op::Tile
        | Op::Resize(_)
        | Op::Cast
        | Op::Fused(_)
        | Op::Attention(_)
        | Op::Recurrent(_)
        | Op::GatherElements(_)
        | Op::ScatterElements(_)
        | Op::ScatterNd(_)
        | Op::GatherNd(_)
        | Op::TopK(_)
        | Op::Cumulative(_)
        | Op::GridSample(_)
        | Op::QGemm(_)
        | Op::QConv(_)
        | Op::QConvFused(_)
        | Op::Reorder(_) => None,
    }
}

impl Pass for FuseEpilogue {
    pass_info!("fuse_epilogue", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let mut users = g.users();
        let mut changed = false;
        for n in g.topo_order() {
            let Op::Unary(up) = g.g[n].op else { continue };
            let Some(Some(x)) = g.g[n].inputs.first().copied() else {
                continue;
            };
            let y = g.g[n].outputs[0];
            let Some(op) = UnaryOp::from_u32(up.act.op) else {
                continue;
            };
            let Some(p) = g.value(x).producer else {
                continue;
            };
            if g.single_use(x, &users) != Some(n) || g.g[p].outputs.len() != 1 {
                continue;
            }
            let kind = g.g[p].op.lower().0;
            if !ge_sim::target::fuses_activation(kind, op, g.value(x).dtype) {
                continue;
            }
            let Some(act) = act_field(&mut g.g[p].op) else {
                let node = &g.g[p];
                return Err(CompileError::Node {
                    node: node.name.clone(),
                    op_type: node.op_type.clone(),
                    opset: node.opset,
                    reason: format!(
                        "internal: the device applies activations in the epilogue of {} \
                         tasks, but this op has no activation field",
                        kind.name()
                    ),
                });
            };
            if act.op != 0 {
                continue;
            }
            *act = up.act;
            let label = format!("{}+{}", g.g[p].op_type, g.g[n].op_type);
            g.g[p].op_type = label;
            bypass(g, &mut users, n, y, x);
            changed = true;
        }
        Ok(changed)
    }
}
