//! The planning pipeline: everything the `.om` writer needs decided about a graph — the
//! execution order, zero-copy aliases and in-place updates, streams and events, buffer
//! lifetimes under the stream order, and arena offsets — computed here, once, so that
//! [`crate::om::emit`] is a pure serializer. Near-linear: each stage states its own cost
//! (schedule O((V + E) log V), aliases and streams O(V + E), lifetimes O(V + E), placement
//! O(B log B) in the number of buffers plus its bounded search).

use super::{
    Aliases, Lifetimes, MemoryPlan, Schedule, StreamPlan, analyze, assign, fit_workspaces,
    lifetimes, place_buffers, schedule,
};
use crate::ir::Graph;

/// How to plan.
#[derive(Clone, Copy, Debug)]
pub struct PlanOptions {
    /// Arena sharing by liveness and zero-copy aliases; without it every activation gets its
    /// own bytes (the naive plan).
    pub reuse: bool,
    /// Most streams independent branches may use (1 = everything in order on one stream).
    pub max_streams: usize,
    /// Plan memory on the task order alone, ignoring stream concurrency. Wrong on purpose:
    /// only for demonstrating the race checker.
    pub ignore_stream_concurrency: bool,
}

/// A complete plan of one graph.
#[derive(Debug)]
pub struct Plan {
    /// The execution order and its peak-memory figures.
    pub schedule: Schedule,
    pub aliases: Aliases,
    pub streams: StreamPlan,
    pub lifetimes: Lifetimes,
    pub memory: MemoryPlan,
}

impl Plan {
    /// The execution order.
    pub fn order(&self) -> &[petgraph::stable_graph::NodeIndex] {
        &self.schedule.order
    }
}

/// Plans `g` for emission.
pub fn plan(g: &Graph, opts: &PlanOptions) -> Plan {
    let schedule = schedule(g);
    let order = &schedule.order;
    let steps = order.len().max(1);
    let aliases = if opts.reuse {
        analyze(g, order)
    } else {
        Aliases::default()
    };
    let streams = assign(g, order, &aliases, opts.max_streams);
    let ranges =
        (!opts.ignore_stream_concurrency).then_some((streams.lo.as_slice(), streams.hi.as_slice()));
    let mut lifetimes = lifetimes(g, order, &aliases, ranges);
    if opts.reuse {
        fit_workspaces(&mut lifetimes, steps);
    }
    let mut memory = place_buffers(&lifetimes.buffers, steps, opts.reuse);
    memory.naive_bytes = lifetimes
        .naive_bytes
        .next_multiple_of(64)
        .max(memory.naive_bytes);
    Plan {
        schedule,
        aliases,
        streams,
        lifetimes,
        memory,
    }
}
