//! Unary elementwise math and fused activations.

use ge_runtime::format::{UnaryParams, Activation, TensorMut, TensorRef};

use super::{KernelError, KernelResult};

/// TODO(helper): implement.
pub fn run_unary(p: &UnaryParams, ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let _ = (p, ins, outs);
    Err(KernelError::BadParams("not implemented yet"))
}

/// Applies a fused activation (`act.op == 0`: none) to `data` in place.
pub fn apply_activation(act: &Activation, data: &mut [f32]) -> Result<(), KernelError> {
    let _ = (act, data);
    Err(KernelError::BadParams("not implemented yet"))
}
