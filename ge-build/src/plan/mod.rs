//! Planning: execution order, zero-copy aliases, buffer lifetimes and arena offsets.

pub mod alias;
pub mod liveness;
pub mod memory;

pub use alias::{Aliases, analyze};
pub use liveness::{Lifetimes, lifetimes};
pub use memory::{Buffer, MemoryPlan, plan};
