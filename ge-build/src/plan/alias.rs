//! Zero-copy aliasing: values that can live inside another value's bytes, so the op that
//! produced the copy disappears from the task list.
//!
//! - Reshape-like ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) alias their
//!   output to their input: same bytes, new shape.
//! - Concat along an axis whose outer dims are all 1 (so every input is one contiguous slice
//!   of the output) makes each input's producer write straight into its slice, when that input
//!   is computed (not a constant, graph input or reshape), not a graph output, and not already
//!   placed inside another value.
//!
//! One pass over the execution order: O(V + E).

use std::collections::{HashMap, HashSet};

use petgraph::stable_graph::NodeIndex;

use crate::ir::{Graph, Op, ValueId};

/// The alias map and the nodes that no longer need a task.
#[derive(Default, Debug)]
pub struct Aliases {
    parent: HashMap<ValueId, (ValueId, usize)>,
    pub elided: HashSet<NodeIndex>,
}

impl Aliases {
    /// The value whose buffer holds `v`, and `v`'s byte offset inside it.
    pub fn resolve(&self, mut v: ValueId) -> (ValueId, usize) {
        let mut off = 0;
        while let Some(&(p, o)) = self.parent.get(&v) {
            off += o;
            v = p;
        }
        (v, off)
    }

    /// True when `v` lives inside another value's buffer.
    pub fn is_alias(&self, v: ValueId) -> bool {
        self.parent.contains_key(&v)
    }
}

/// Finds aliases along `order`.
pub fn analyze(g: &Graph, order: &[NodeIndex]) -> Aliases {
    let mut a = Aliases::default();
    for &n in order {
        let node = &g.g[n];
        match node.op {
            Op::Reshape => {
                if let (Some(Some(x)), [y]) = (node.inputs.first(), node.outputs.as_slice()) {
                    a.parent.insert(*y, (*x, 0));
                    a.elided.insert(n);
                }
            }
            Op::Concat(p) => {
                let y = node.outputs[0];
                let shape = &g.value(y).shape;
                let axis = p.axis as usize;
                if shape[..axis].iter().any(|&d| d != 1) {
                    continue;
                }
                let ins: Vec<ValueId> = node.inputs.iter().flatten().copied().collect();
                let mut distinct = HashSet::new();
                // Each input is written once, by its producer, into its slice; readers of the
                // input read the same bytes. So an input may have other readers, and may itself
                // be a concat output (DenseNet's growing concats become one buffer).
                let eligible = ins.len() == node.inputs.len()
                    && ins.iter().all(|&x| {
                        distinct.insert(x)
                            && g.value(x).data.is_none()
                            && g.value(x).producer.is_some_and(|p| {
                                g.g[p].outputs.len() == 1 && !matches!(g.g[p].op, Op::Reshape)
                            })
                            && !a.parent.contains_key(&x)
                            && !g.is_output(x)
                    });
                if !eligible {
                    continue;
                }
                let mut off = 0;
                for &x in &ins {
                    a.parent.insert(x, (y, off));
                    off += g.value(x).bytes();
                }
                a.elided.insert(n);
            }
            _ => {}
        }
    }
    a
}
