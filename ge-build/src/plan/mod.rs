//! Planning: execution order, zero-copy aliases, streams and events, buffer lifetimes and
//! arena offsets.

pub mod alias;
pub mod liveness;
pub mod memory;
mod pipeline;
pub mod schedule;
pub mod streams;
pub mod workspaces;

pub use alias::{Aliases, analyze};
pub use liveness::{Lifetimes, lifetimes};
pub use memory::{Buffer, MemoryPlan, place_buffers};
pub use pipeline::{Plan, PlanOptions, plan};
pub use schedule::{Schedule, schedule};
pub use streams::{StreamPlan, assign};
pub use workspaces::fit_workspaces;
