//! Gemm and batched MatMul on a shared f32 GEMM core.

use ge_runtime::format::{GemmParams, Shape, TensorMut, TensorRef};

use super::{KernelError, KernelResult};

/// TODO(helper): implement.
pub fn run_gemm(p: &GemmParams, ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>], ws: &mut [u8]) -> KernelResult {
    let _ = (p, ins, outs, ws);
    Err(KernelError::BadParams("not implemented yet"))
}

/// TODO(helper): implement.
pub fn run_matmul(ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>], ws: &mut [u8]) -> KernelResult {
    let _ = (ins, outs, ws);
    Err(KernelError::BadParams("not implemented yet"))
}

/// Scratch bytes Gemm/MatMul need (packing), from the input shapes.
pub fn gemm_workspace_bytes(in_shapes: &[Option<Shape>], out_shapes: &[Shape]) -> usize {
    let _ = (in_shapes, out_shapes);
    0
}
