//! Resize: nearest, linear and cubic resampling with ONNX coordinate modes.

use ge_runtime::format::{ResizeParams, TensorMut, TensorRef};

use super::{KernelError, KernelResult};

/// TODO(helper): implement.
pub fn run_resize(p: &ResizeParams, ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let _ = (p, ins, outs);
    Err(KernelError::BadParams("not implemented yet"))
}
