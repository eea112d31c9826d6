//! ge-build: the ge compiler as a library.
//!
//! ```text
//! .onnx ─ onnx (prost) ─► ir::Graph ─ passes ─► plan (order, arena) ─► om (.om blob) ─► codegen
//! ```
//! [`compile_file`] runs the whole pipeline; the CLI, the `ge_model!` macro and the build.rs
//! helper are thin layers over it.
#![forbid(unsafe_code)]

pub mod accuracy;
mod builder;
pub mod check;
pub mod codegen;
mod compile;
pub mod error;
pub mod gears;
pub mod ir;
pub mod om;
pub mod onnx;
mod options;
pub mod passes;
pub mod plan;
pub mod quantize;
pub mod report;
pub mod run;
mod suggest;
pub mod tensor;
pub mod viz;

pub use builder::{BuildError, Builder, BuiltModel};
pub use compile::{Compiled, PRODUCER, compile_bytes, compile_file};
pub use error::{CompileError, Result};
pub use gears::{GearPad, GearSpec};
pub use options::{
    BlockedChannels, CompileOptions, Int8Rounding, Limits, LowerPolicy, OptLevel, Precision,
    QuantizeSpec, parse_input_shape, parse_input_shape_gears,
};
pub use report::Report;
