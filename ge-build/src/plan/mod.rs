//! Planning: execution order, tensor lifetimes and arena offsets.

pub mod memory;

pub use memory::{Buffer, MemoryPlan, plan};
