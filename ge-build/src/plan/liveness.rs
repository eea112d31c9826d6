//! Buffer lifetimes on an execution order: one buffer per non-alias activation (spanning every
//! value aliased into it) and one per kernel workspace (live at its task only).
//! O(V + E).

use std::collections::HashMap;

use ge_runtime::format::Shape;
use petgraph::stable_graph::NodeIndex;

use super::alias::Aliases;
use super::memory::Buffer;
use crate::ir::{Graph, ValueId};

/// Buffers to place, and what each belongs to.
#[derive(Debug, Default)]
pub struct Lifetimes {
    pub buffers: Vec<Buffer>,
    /// Buffer of each root activation value.
    pub buffer_of: HashMap<ValueId, usize>,
    /// Workspace buffer of each step, if its kernel needs one.
    pub workspace_of: Vec<Option<usize>>,
    /// Sum of every activation's and workspace's size, aliases included (no reuse, no aliasing).
    pub naive_bytes: usize,
}

fn shape_of(dims: &[usize]) -> Shape {
    Shape::new(dims).unwrap_or_default()
}

/// Computes lifetimes of the activations of `g` along `order`.
pub fn lifetimes(g: &Graph, order: &[NodeIndex], aliases: &Aliases) -> Lifetimes {
    let steps = order.len().max(1);
    let mut lt = Lifetimes {
        workspace_of: vec![None; order.len()],
        ..Lifetimes::default()
    };
    let touch = |lt: &mut Lifetimes, v: ValueId, step: usize| {
        let (root, _) = aliases.resolve(v);
        if g.value(root).data.is_some() || g.value(root).producer.is_none() {
            return; // constants and graph inputs live outside the arena
        }
        let b = *lt.buffer_of.entry(root).or_insert_with(|| {
            lt.buffers.push(Buffer {
                bytes: g.value(root).bytes(),
                first: step,
                last: step,
            });
            lt.buffers.len() - 1
        });
        let buf = &mut lt.buffers[b];
        buf.first = buf.first.min(step);
        buf.last = buf.last.max(step);
    };
    for (step, &n) in order.iter().enumerate() {
        let node = &g.g[n];
        for &v in &node.outputs {
            lt.naive_bytes += g.value(v).bytes();
            touch(&mut lt, v, step);
        }
        for v in node.inputs.iter().flatten() {
            touch(&mut lt, *v, step);
        }
        if aliases.elided.contains(&n) {
            continue;
        }
        let (kind, params) = node.op.lower();
        let ins: Vec<Option<Shape>> = node
            .inputs
            .iter()
            .map(|i| i.map(|v| shape_of(&g.value(v).shape)))
            .collect();
        let outs: Vec<Shape> = node
            .outputs
            .iter()
            .map(|&v| shape_of(&g.value(v).shape))
            .collect();
        let ws = ge_sim::kernels::workspace_bytes(kind, &params, &ins, &outs);
        if ws > 0 {
            lt.naive_bytes += ws;
            lt.workspace_of[step] = Some(lt.buffers.len());
            lt.buffers.push(Buffer {
                bytes: ws,
                first: step,
                last: step,
            });
        }
    }
    for &v in &g.outputs {
        touch(&mut lt, v, steps - 1);
    }
    lt
}
