//! The `.om` writer (the format is defined in `ge_runtime::format`).

mod emit;
mod writer;

pub use emit::{Emitted, emit, emit_gears};
pub use writer::OmBuilder;
