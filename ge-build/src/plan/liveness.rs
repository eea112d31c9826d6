//! Buffer lifetimes on an execution order: one buffer per non-alias activation (spanning every
//! value aliased into it) and one per kernel workspace (live at its task only).
//! O(V + E).

use std::collections::HashMap;

use ge_runtime::format::{DType, Shape};
use ge_sim::target::WORKSPACE_LEVELS;
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
    /// Workspace buffers whose kernel can run with less than its preferred size, with the
    /// sizes it can run with (largest first; the buffer starts at the largest). See
    /// [`super::workspaces::fit_workspaces`].
    pub elastic: Vec<(usize, [usize; WORKSPACE_LEVELS])>,
}

fn shape_of(dims: &[usize]) -> Shape {
    Shape::new(dims).unwrap_or_default()
}

/// Computes lifetimes of the activations of `g` along `order`. With `ranges` (each step's
/// concurrency range from the stream plan), a use at a step keeps its buffer live over every
/// step that may run concurrently with it.
pub fn lifetimes(
    g: &Graph,
    order: &[NodeIndex],
    aliases: &Aliases,
    ranges: Option<(&[usize], &[usize])>,
) -> Lifetimes {
    let steps = order.len().max(1);
    let mut lt = Lifetimes {
        workspace_of: vec![None; order.len()],
        ..Lifetimes::default()
    };
    let span = |step: usize| match ranges {
        Some((lo, hi)) => (
            lo.get(step).copied().unwrap_or(step),
            hi.get(step).copied().unwrap_or(step),
        ),
        None => (step, step),
    };
    let touch = |lt: &mut Lifetimes, v: ValueId, step: usize| {
        let (first, last) = span(step);
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
        buf.first = buf.first.min(first);
        buf.last = buf.last.max(last);
    };
    for (step, &n) in order.iter().enumerate() {
        let node = &g.g[n];
        for &v in &node.outputs {
            lt.naive_bytes += g.value(v).bytes();
        }
        if aliases.elided.contains(&n) {
            continue; // no task: its reads and writes are its neighbours'
        }
        for &v in &node.outputs {
            touch(&mut lt, v, step);
        }
        for v in node.inputs.iter().flatten() {
            touch(&mut lt, *v, step);
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
        let dtype = node
            .outputs
            .first()
            .map_or(DType::F32, |&v| g.value(v).dtype);
        let levels = ge_sim::target::workspace_levels_for(kind, &params, &ins, &outs, dtype);
        let ws = levels[0];
        if ws > 0 {
            if levels[WORKSPACE_LEVELS - 1] < ws {
                lt.elastic.push((lt.buffers.len(), levels));
            }
            lt.naive_bytes += ws;
            lt.workspace_of[step] = Some(lt.buffers.len());
            let (first, last) = span(step);
            lt.buffers.push(Buffer {
                bytes: ws,
                first,
                last,
            });
        }
    }
    for &v in &g.outputs {
        touch(&mut lt, v, steps - 1);
    }
    lt
}
