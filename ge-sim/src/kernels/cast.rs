//! Element type conversion.

use ge_runtime::format::{TensorMut, TensorRef};

use super::{KernelError, KernelResult};

/// TODO(helper): implement.
pub fn run_cast(ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let _ = (ins, outs);
    Err(KernelError::BadParams("not implemented yet"))
}
