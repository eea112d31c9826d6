//! Epilogue fusion: an activation whose input comes only from a Conv, ConvTranspose, Gemm,
//! Binary, Variadic or BatchNorm task (f32) is applied by that task while its output is hot:
//! one task and one global-memory round trip fewer. O(V + E).

use ge_runtime::format::{DType, UnaryOp};

use super::pattern::bypass;
use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op};

/// Conv/Gemm/Binary/BatchNorm + activation.
pub struct FuseEpilogue;

/// Activations every epilogue-capable kernel applies.
fn fusable(op: u32) -> bool {
    matches!(
        UnaryOp::from_u32(op),
        Some(
            UnaryOp::Relu
                | UnaryOp::LeakyRelu
                | UnaryOp::Clip
                | UnaryOp::Sigmoid
                | UnaryOp::HardSigmoid
                | UnaryOp::HardSwish
                | UnaryOp::Tanh
                | UnaryOp::Elu
                | UnaryOp::Selu
                | UnaryOp::Gelu
                | UnaryOp::Softplus
                | UnaryOp::Mish
        )
    )
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
            if !fusable(up.act.op) || g.value(x).dtype != DType::F32 {
                continue;
            }
            let Some(p) = g.value(x).producer else {
                continue;
            };
            if g.single_use(x, &users) != Some(n) || g.g[p].outputs.len() != 1 {
                continue;
            }
            let act = match &mut g.g[p].op {
                Op::Conv(c) | Op::ConvTranspose(c) => &mut c.act,
                Op::Gemm(c) => &mut c.act,
                Op::Binary(c) | Op::Variadic(c) => &mut c.act,
                Op::BatchNorm(c) => &mut c.act,
                _ => continue,
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
