//! The intermediate representation: one graph type for every pass.

mod eval;
mod graph;
mod op;
pub mod verify;

pub use eval::eval;
pub use graph::{Graph, Node, Value, ValueId};
pub use op::Op;
