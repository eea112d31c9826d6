//! Zero-copy aliasing: values that can live inside another value's bytes, so the op that
//! produced the copy disappears from the task list.
//!
//! - Reshape-like ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) alias their
//!   output to their input: same bytes, new shape.
//! - Concat along an axis whose outer dims are all 1 (so every input is one contiguous slice
//!   of the output) makes each input's producer write straight into its slice, when that input
//!   is computed (not a constant, graph input or reshape), not a graph output, and not already
//!   placed inside another value; an input that is a Reshape's view of such a value places
//!   that value.
//!
//! - In-place: a task whose kernel can overwrite that input, for its params and dtypes (the
//!   device's kernel registry says which: `ge_sim::ops::registry`, e.g. f32 Unary and
//!   arithmetic Binary), and whose input dies there — its only reader, not a graph input,
//!   output or constant, and holding nothing else's bytes — writes its output over that
//!   input (`TaskDesc::in_place`), so the two never coexist.
//!
//! Two passes over the execution order (concat slices first, so in-place never takes a value
//! that a concat would have placed): O(V + E).

use std::collections::{HashMap, HashSet};

use petgraph::stable_graph::NodeIndex;

use crate::ir::{Graph, Op, ValueId};

/// The alias map and the nodes that no longer need a task.
#[derive(Default, Debug)]
pub struct Aliases {
    parent: HashMap<ValueId, (ValueId, usize)>,
    pub elided: HashSet<NodeIndex>,
    /// Tasks that update input `k` in place (their output 0 aliases it).
    pub in_place: HashMap<NodeIndex, usize>,
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
                // An input a Reshape gives is its source's bytes: the source is placed (a
                // blocked Resize writes through such a view).
                let placed: Vec<ValueId> = ins
                    .iter()
                    .map(|&x| match g.value(x).producer {
                        Some(p) if matches!(g.g[p].op, Op::Reshape) && !g.is_output(x) => {
                            match g.g[p].inputs.first() {
                                Some(&Some(src)) if a.parent.get(&x) == Some(&(src, 0)) => src,
                                _ => x,
                            }
                        }
                        _ => x,
                    })
                    .collect();
                let mut distinct = HashSet::new();
                // Each input is written once, by its producer, into its slice; readers of the
                // input read the same bytes. So an input may have other readers, and may itself
                // be a concat output (DenseNet's growing concats become one buffer).
                let eligible = ins.len() == node.inputs.len()
                    && placed.iter().all(|&x| {
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
                for &x in &placed {
                    a.parent.insert(x, (y, off));
                    off += g.value(x).bytes();
                }
                a.elided.insert(n);
            }
            _ => {}
        }
    }
    in_place(g, order, &mut a);
    a
}

/// Marks the tasks that can overwrite a dying input.
fn in_place(g: &Graph, order: &[NodeIndex], a: &mut Aliases) {
    let users = g.users();
    // Values whose bytes hold other values (concat slices, reshapes, earlier in-place outputs).
    let mut holders: HashSet<ValueId> = a.parent.values().map(|&(p, _)| p).collect();
    let mut from_in_place: HashSet<ValueId> = HashSet::new();
    for &n in order {
        let node = &g.g[n];
        let [y] = node.outputs[..] else { continue };
        let (kind, params) = node.op.lower();
        if !ge_sim::target::runs_in_place(kind) || a.parent.contains_key(&y) {
            continue;
        }
        let Some(in_dtypes) = node
            .inputs
            .iter()
            .map(|i| i.map(|v| g.value(v).dtype))
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let candidates =
            ge_sim::target::in_place_inputs(kind, &params, &in_dtypes, g.value(y).dtype);
        let dies_here = |x: ValueId| {
            g.value(x).data.is_none()
                && g.value(x).producer.is_some()
                && !g.is_output(x)
                && g.value(x).shape == g.value(y).shape
                && users.get(&x).is_some_and(|u| u.as_slice() == [n])
                && node.inputs.iter().flatten().filter(|&&v| v == x).count() == 1
                && !holders.contains(&x)
                && (!a.parent.contains_key(&x) || from_in_place.contains(&x))
        };
        let Some(&k) = candidates
            .iter()
            .find(|&&k| node.inputs[k].is_some_and(dies_here))
        else {
            continue;
        };
        let Some(x) = node.inputs[k] else { continue };
        a.parent.insert(y, (x, 0));
        a.in_place.insert(n, k);
        holders.insert(x);
        from_in_place.insert(y);
    }
}
