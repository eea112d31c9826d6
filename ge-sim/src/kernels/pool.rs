//! Max / average / Lp pooling, windowed and global.

use ge_runtime::format::{PoolParams, TensorMut, TensorRef};

use super::{KernelError, KernelResult};

/// TODO(helper): implement.
pub fn run_pool(p: &PoolParams, ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let _ = (p, ins, outs);
    Err(KernelError::BadParams("not implemented yet"))
}

/// TODO(helper): implement.
pub fn run_global_pool(p: &PoolParams, ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let _ = (p, ins, outs);
    Err(KernelError::BadParams("not implemented yet"))
}
