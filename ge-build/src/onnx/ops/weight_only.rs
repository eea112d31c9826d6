//! The internal node [`crate::passes::qdq::weight_only`] writes for a MatMul on a
//! weight-only int8 matrix — `MatMul(A, Cast(W) · s)` as `MatMul(A, W, s)` in the reserved
//! domain [`DOMAIN`] — imported as one GemmW8 task: the weights stay int8 in the blob and
//! are dequantized while the GEMM packs them.

use ge_runtime::format::{DType, GemmParams};
use ge_sim::target::PLAIN_GEMM;

use super::super::ctx::{Imported, NodeCtx};
use crate::error::Result;
use crate::ir::Op;

/// The domain of ge's own rewrite nodes (never an exporter's).
pub const DOMAIN: &str = "ge.internal";
/// The op type of a weight-only int8 matrix product in [`DOMAIN`]: the model's own
/// (`MatMul`), so that precision op lists, keep-dtype files and reports name it as the
/// model does.
pub const GEMM_W8: &str = "MatMul";

/// `MatMul(A [..., M, K] f32, W [K, N] int8/uint8 constant, s f32 constant: one, or one
/// per column)` → `[..., M, N]`, a GemmW8.
pub fn import(ctx: &NodeCtx<'_>) -> Result<Imported> {
    if ctx.node.op_type() != GEMM_W8 {
        return Err(ctx.unsupported(format!(
            "'{DOMAIN}' is ge's reserved domain; it has no op '{}'",
            ctx.node.op_type()
        )));
    }
    let (a, w, s) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    let (&[k, n], true) = (w.shape, w.data.is_some()) else {
        return Err(ctx.err("the int8 weights must be a constant matrix"));
    };
    let r = a.shape.len();
    if a.dtype != DType::F32 || r < 2 || a.shape[r - 1] != k {
        return Err(ctx.err(format!(
            "A must be float32 [..., M, {k}], got {} {:?}",
            a.dtype.name(),
            a.shape
        )));
    }
    let scales: usize = s.shape.iter().product();
    if !matches!(w.dtype, DType::I8 | DType::U8)
        || s.dtype != DType::F32
        || s.data.is_none()
        || (scales != 1 && scales != n)
    {
        return Err(ctx.err("weights must be int8/uint8 with one float32 scale, or one per column"));
    }
    let mut out = a.shape.to_vec();
    out[r - 1] = n;
    // beta 1: matmul_add_to_gemm may give it the bias as C.
    let p = GemmParams {
        beta: 1.0,
        ..PLAIN_GEMM
    };
    Ok(Imported::one(Op::GemmW8(p), vec![0, 1, 2], DType::F32, out))
}
