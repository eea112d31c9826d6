//! N-d convolution and transposed convolution (im2col + GEMM).

use ge_runtime::format::{ConvParams, Shape, TensorMut, TensorRef};

use super::{KernelError, KernelResult};

/// TODO(helper): implement.
pub fn run_conv(p: &ConvParams, ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>], ws: &mut [u8]) -> KernelResult {
    let _ = (p, ins, outs, ws);
    Err(KernelError::BadParams("not implemented yet"))
}

/// TODO(helper): implement.
pub fn run_conv_transpose(p: &ConvParams, ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>], ws: &mut [u8]) -> KernelResult {
    let _ = (p, ins, outs, ws);
    Err(KernelError::BadParams("not implemented yet"))
}

/// Scratch bytes Conv / ConvTranspose need (im2col / col2im buffers).
pub fn conv_workspace_bytes(p: &ConvParams, transpose: bool, in_shapes: &[Option<Shape>], out_shapes: &[Shape]) -> usize {
    let _ = (p, transpose, in_shapes, out_shapes);
    0
}
