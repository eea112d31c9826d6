//! ge-runtime: the `.om` offline-model format and a runtime that executes it without the heap.
//!
//! ```text
//! Model::from_bytes(blob)          validate once (checksums, every offset/length/id)
//! Session::new(&model, arena, dev) bind a caller-given arena (no allocation)
//! session.run(inputs, outputs)     execute the task list on the device
//! ```
#![no_std]
// Every `unsafe` block states why it is sound in a `// SAFETY:` comment.
#![deny(clippy::undocumented_unsafe_blocks)]
// Panics policy: library code returns errors; `unwrap`/`expect`/`panic!` are denied outside
// tests. Exceptions carry an `#[allow(..., reason = "...")]` naming the invariant.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

#[cfg(feature = "std")]
extern crate std;

mod crc;
mod error;
pub mod format;
#[cfg(feature = "gears")]
mod gears;
mod memory;
mod model;
#[cfg(feature = "std")]
mod owned;
mod session;
#[cfg(test)]
mod tests;

pub use crc::{Crc32, crc32};
pub use error::{Error, KernelError};
pub use memory::Memory;
pub use model::{
    IoInfo, Limits, MAX_SECTIONS, Model, header_checksum, header_len, tensor_dtype, tensor_shape,
};
#[cfg(feature = "std")]
pub use owned::AlignedBlob;
pub use session::{Device, Session};
