//! The `.om` offline-model format: records, op parameter records, and tensor views.
//! `ge-build` writes it and this crate reads it, so there is exactly one definition.

#[macro_use]
mod ops;
mod blocked;
mod dtype;
mod gemm_b;
mod kernel_id;
mod records;
mod shape;
mod typed;
mod view;

pub use blocked::*;
pub use dtype::DType;
pub use gemm_b::*;
pub use kernel_id::{KernelId, KernelVariant};
pub use ops::*;
pub use records::*;
pub use shape::{MAX_RANK, Shape};
pub use view::{Element, TensorMut, TensorRef, ViewError};
