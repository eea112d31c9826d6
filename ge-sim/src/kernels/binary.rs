//! Broadcast binary ops, variadic Sum/Max/Min/Mean, and Where.

use ge_runtime::format::{BinaryParams, TensorMut, TensorRef};

use super::{KernelError, KernelResult};

/// TODO(helper): implement.
pub fn run_binary(p: &BinaryParams, ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let _ = (p, ins, outs);
    Err(KernelError::BadParams("not implemented yet"))
}

/// TODO(helper): implement.
pub fn run_variadic(p: &BinaryParams, ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let _ = (p, ins, outs);
    Err(KernelError::BadParams("not implemented yet"))
}

/// TODO(helper): implement.
pub fn run_where(ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let _ = (ins, outs);
    Err(KernelError::BadParams("not implemented yet"))
}
