//! Stream assignment and cross-stream events.
//!
//! Tasks run in a topological order (the task table's). A task continues the stream of an
//! input's producer when that producer is still the stream's last task; otherwise it opens a
//! new stream (up to `max_streams`) or joins the stream that went idle first. Happens-before
//! is tracked with vector clocks (one counter per stream), so a cross-stream dependency gets an
//! event only when no earlier event already orders it: a minimal set per stream pair.
//!
//! From the clocks each task also gets its concurrency range: the first and last task-table
//! steps of tasks it is unordered with. Widening buffer lifetimes to those ranges makes the
//! interval-based memory planner respect the stream partial order: two buffers share bytes
//! only when every use of one happens-before the other is written.
//!
//! Cost: O(V · S + E · S + V · S · log V) for S streams.

use std::collections::HashMap;

use petgraph::stable_graph::NodeIndex;

use super::alias::Aliases;
use crate::ir::Graph;

/// The stream plan of a task order.
#[derive(Clone, Debug, Default)]
pub struct StreamPlan {
    /// Stream of each step (elided steps: the stream they would have joined; unused).
    pub stream_of: Vec<u16>,
    /// (record step, wait step) pairs.
    pub events: Vec<(usize, usize)>,
    pub stream_count: usize,
    /// Concurrency range of each step (inclusive), in steps.
    pub lo: Vec<usize>,
    pub hi: Vec<usize>,
}

/// Assigns streams to the non-elided steps of `order`.
pub fn assign(g: &Graph, order: &[NodeIndex], aliases: &Aliases, max_streams: usize) -> StreamPlan {
    let n = order.len();
    let s_max = max_streams.max(1);
    let step_of: HashMap<NodeIndex, usize> =
        order.iter().enumerate().map(|(i, &x)| (x, i)).collect();
    // Vector clock per step: vc[step][s] = number of tasks of stream s that happen before or at it.
    let mut vc: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut stream_of = vec![0u16; n];
    let mut tail: Vec<Option<usize>> = Vec::new(); // last step of each stream
    let mut tasks_of: Vec<Vec<usize>> = Vec::new(); // steps of each stream, in order
    let mut events = Vec::new();
    for (step, &node) in order.iter().enumerate() {
        let preds: Vec<usize> = g.g[node]
            .inputs
            .iter()
            .flatten()
            .filter_map(|v| g.value(*v).producer)
            .filter_map(|p| step_of.get(&p).copied())
            .collect();
        let mut need = vec![0u32; s_max];
        for &p in &preds {
            for (d, &c) in need.iter_mut().zip(&vc[p]) {
                *d = (*d).max(c);
            }
        }
        if aliases.elided.contains(&node) {
            // A zero-cost pseudo-task: it only forwards what its inputs' producers knew.
            vc[step] = need;
            continue;
        }
        let direct: Vec<usize> = preds
            .iter()
            .copied()
            .filter(|&p| !aliases.elided.contains(&order[p]))
            .collect();
        let cont = direct
            .iter()
            .find(|&&p| tail.get(stream_of[p] as usize).copied().flatten() == Some(p))
            .map(|&p| stream_of[p] as usize);
        let s = match cont {
            Some(s) => s,
            None if tail.len() < s_max => {
                tail.push(None);
                tasks_of.push(Vec::new());
                tail.len() - 1
            }
            None => (0..tail.len())
                .min_by_key(|&s| tail[s].unwrap_or(0))
                .unwrap_or(0),
        };
        // What the stream already knows by program order (its previous task's clock); an
        // event is needed only for what the inputs know beyond that.
        let known: Vec<u32> = tail[s].map_or_else(|| vec![0; s_max], |t| vc[t].clone());
        let mut clock = known.clone();
        for s2 in 0..tail.len() {
            if s2 != s && need[s2] > known[s2] {
                let record = tasks_of[s2][need[s2] as usize - 1];
                events.push((record, step));
                for (d, &c) in clock.iter_mut().zip(&vc[record]) {
                    *d = (*d).max(c);
                }
            }
        }
        for (d, &c) in clock.iter_mut().zip(&need) {
            *d = (*d).max(c);
        }
        let mut need = clock;
        need[s] = tasks_of[s].len() as u32 + 1;
        vc[step] = need;
        stream_of[step] = s as u16;
        tail[s] = Some(step);
        tasks_of[s].push(step);
    }
    let streams = tail.len().max(1);
    // Concurrency ranges.
    let mut lo: Vec<usize> = (0..n).collect();
    let mut hi: Vec<usize> = (0..n).collect();
    for step in 0..n {
        if aliases.elided.contains(&order[step]) {
            continue;
        }
        let r = stream_of[step] as usize;
        let p = vc[step][r]; // 1-based position of `step` on its stream
        for (s2, tasks) in tasks_of.iter().enumerate() {
            if s2 == r || tasks.is_empty() {
                continue;
            }
            let before = vc[step][s2] as usize; // tasks[..before] happen before `step`
            // First task on s2 that `step` happens before: its clock of r reaches p.
            let after = tasks.partition_point(|&t| vc[t][r] < p);
            if before < after {
                lo[step] = lo[step].min(tasks[before]);
                hi[step] = hi[step].max(tasks[after - 1]);
            }
        }
    }
    StreamPlan {
        stream_of,
        events,
        stream_count: streams,
        lo,
        hi,
    }
}
