//! Common-subexpression elimination: two nodes with the same op, parameters and inputs
//! compute the same values, so the later one's uses move to the earlier one. Hashing in
//! topological order: O(V + E).

use std::collections::HashMap;

use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, ValueId};

/// What makes two nodes compute the same: kind, params, inputs, output dtypes and shapes.
type Key = (u16, Vec<u8>, Vec<Option<ValueId>>, Vec<(u8, Vec<usize>)>);

/// CSE.
pub struct CommonSubexpressions;

impl Pass for CommonSubexpressions {
    pass_info!("cse", O1);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let mut users = g.users();
        let mut seen: HashMap<Key, Vec<ValueId>> = HashMap::new();
        let mut changed = false;
        for n in g.topo_order() {
            let node = &g.g[n];
            let (kind, params) = node.op.lower();
            let outs: Vec<(u8, Vec<usize>)> = node
                .outputs
                .iter()
                .map(|&v| (g.value(v).dtype as u8, g.value(v).shape.clone()))
                .collect();
            let key = (kind as u16, params, node.inputs.clone(), outs);
            match seen.get(&key) {
                Some(prev) => {
                    let prev = prev.clone();
                    let outs = node.outputs.clone();
                    for (old, new) in outs.into_iter().zip(prev) {
                        let u = users.remove(&old).unwrap_or_default();
                        g.replace_uses(old, new, &u);
                        users.entry(new).or_default().extend(u);
                    }
                    g.remove_node(n);
                    changed = true;
                }
                None => {
                    seen.insert(key, node.outputs.clone());
                }
            }
        }
        Ok(changed)
    }
}
