//! Plain copies (reshape-like ops), Expand and Tile.

use ge_runtime::format::{TensorMut, TensorRef};

use super::{KernelError, KernelResult};

/// TODO(helper): implement.
pub fn run_copy(ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let _ = (ins, outs);
    Err(KernelError::BadParams("not implemented yet"))
}

/// TODO(helper): implement.
pub fn run_expand(ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let _ = (ins, outs);
    Err(KernelError::BadParams("not implemented yet"))
}

/// TODO(helper): implement.
pub fn run_tile(ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let _ = (ins, outs);
    Err(KernelError::BadParams("not implemented yet"))
}
