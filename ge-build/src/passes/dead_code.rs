//! Dead-code elimination: removes nodes none of whose outputs reach a graph output.
//! One reverse walk from the outputs: O(V + E).

use petgraph::Direction;
use petgraph::visit::EdgeRef;

use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::Graph;

/// Dead-code elimination.
pub struct DeadCode;

impl Pass for DeadCode {
    pass_info!("dead_code", O1);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let mut live = std::collections::HashSet::new();
        let mut stack: Vec<_> = g
            .outputs
            .iter()
            .filter_map(|&v| g.value(v).producer)
            .collect();
        while let Some(n) = stack.pop() {
            if live.insert(n) {
                stack.extend(
                    g.g.edges_directed(n, Direction::Incoming)
                        .map(|e| e.source()),
                );
            }
        }
        let dead: Vec<_> = g.g.node_indices().filter(|n| !live.contains(n)).collect();
        for &n in &dead {
            g.remove_node(n);
        }
        Ok(!dead.is_empty())
    }
}
