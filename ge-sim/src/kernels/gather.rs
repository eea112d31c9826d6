//! Gather along an axis.

use ge_runtime::format::{AxisParams, TensorMut, TensorRef};

use super::{KernelError, KernelResult};

/// TODO(helper): implement.
pub fn run_gather(p: &AxisParams, ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let _ = (p, ins, outs);
    Err(KernelError::BadParams("not implemented yet"))
}
