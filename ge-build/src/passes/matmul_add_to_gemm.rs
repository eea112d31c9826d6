//! MatMul (A `[…, M, K]`, 2-D B) followed by Add of a per-column bias becomes one Gemm with
//! C = bias (the device's Gemm folds A's leading axes into M), so the bias — and through
//! `fuse_epilogue` the activation — are applied in the GEMM's register tile; a GemmW8 (a
//! MatMul on weight-only int8 B) without C takes the bias as its C the same way. O(V + E).

use ge_runtime::format::{BinaryOp, GemmParams};
use ge_sim::target::PLAIN_GEMM;

use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op};

/// MatMul + Add → Gemm.
pub struct MatMulAddToGemm;

impl Pass for MatMulAddToGemm {
    pass_info!("matmul_add_to_gemm", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let users = g.users();
        let mut changed = false;
        for mm in g.topo_order() {
            let w8 = match g.g[mm].op {
                Op::MatMul => None,
                // Inputs A, B, scales: no C yet.
                Op::GemmW8(p) if p.act.is_none() && g.g[mm].inputs.len() == 3 => g.g[mm].inputs[2],
                _ => continue,
            };
            let y = g.g[mm].outputs[0];
            let (Some(Some(a)), Some(Some(b))) = (
                g.g[mm].inputs.first().copied(),
                g.g[mm].inputs.get(1).copied(),
            ) else {
                continue;
            };
            let rank = g.value(a).shape.len();
            // Gemm has float kernels only; integer products (MatMulInteger's int32
            // decomposition plus an int32 bias) stay MatMul + Add.
            if !crate::onnx::is_float(g.value(y).dtype)
                || rank < 2
                || g.value(b).shape.len() != 2
                || g.value(y).shape.len() != rank
            {
                continue;
            }
            let Some(add) = g.single_use(y, &users) else {
                continue;
            };
            let Op::Binary(bp) = g.g[add].op else {
                continue;
            };
            if !bp.is_plain(BinaryOp::Add) {
                continue;
            }
            let bias = match g.g[add].inputs[..] {
                [Some(p), Some(q)] if p == y => q,
                [Some(p), Some(q)] if q == y => p,
                _ => continue,
            };
            let n = g.value(y).shape[rank - 1];
            let bshape = &g.value(bias).shape;
            // One value per column: [n], [1, n], [1, 1, n]…
            let per_column = bshape.len() <= rank
                && bshape.last() == Some(&n)
                && bshape.iter().rev().skip(1).all(|&d| d == 1);
            let out = g.g[add].outputs[0];
            if g.value(out).shape != g.value(y).shape || !per_column {
                continue;
            }
            let p = GemmParams {
                beta: 1.0,
                ..PLAIN_GEMM
            };
            if let Some(scales) = w8 {
                g.g[add].op = Op::GemmW8(p);
                g.g[add].op_type = g.g[mm].op_type.clone();
                g.set_inputs(add, vec![Some(a), Some(b), Some(scales), Some(bias)]);
            } else {
                g.g[add].op = Op::Gemm(p);
                g.g[add].op_type = "Gemm".into();
                g.set_inputs(add, vec![Some(a), Some(b), Some(bias)]);
            }
            g.merge_into(mm, Some(add));
            changed = true;
        }
        Ok(changed)
    }
}
