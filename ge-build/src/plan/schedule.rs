//! Memory-aware scheduling: the topological order that runs the graph, chosen to lower peak
//! live memory.
//!
//! A greedy list schedule: among ready nodes, run the one that frees the most (bytes of
//! inputs it is the last reader of) relative to what it allocates (its outputs), breaking ties
//! toward the most recently readied node, which finishes a branch before starting the next.
//! The plain topological order and the greedy one are both measured (peak bytes of live
//! activations); the lower wins, so the choice is never worse. O((V + E) log V).

use std::collections::{BTreeSet, HashMap};

use petgraph::Direction;
use petgraph::stable_graph::NodeIndex;
use petgraph::visit::EdgeRef;

use crate::ir::{Graph, ValueId};

/// The chosen order and the peaks that decided it.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub order: Vec<NodeIndex>,
    /// Peak live activation bytes under the plain topological order.
    pub topo_peak_bytes: usize,
    /// Peak under the chosen order.
    pub chosen_peak_bytes: usize,
    /// No order can peak lower: the largest single-node footprint (its produced inputs and
    /// its outputs are all live while it runs). A chosen peak equal to it is optimal.
    pub peak_lower_bound_bytes: usize,
}

/// The largest bytes any one node needs live at once: its computed inputs (each once) plus
/// its outputs. O(V + E).
pub fn footprint_bound(g: &Graph) -> usize {
    g.g.node_indices()
        .map(|n| {
            let node = &g.g[n];
            let mut seen: Vec<ValueId> = Vec::new();
            let ins: usize = node
                .inputs
                .iter()
                .flatten()
                .filter(|&&v| {
                    let fresh = !seen.contains(&v);
                    seen.push(v);
                    fresh && g.value(v).producer.is_some()
                })
                .map(|&v| g.value(v).bytes())
                .sum();
            ins + node
                .outputs
                .iter()
                .map(|&v| g.value(v).bytes())
                .sum::<usize>()
        })
        .max()
        .unwrap_or(0)
}

/// Peak bytes of live activations (node outputs, from producer to last reader; graph outputs
/// to the end) along `order`.
pub fn peak_bytes(g: &Graph, order: &[NodeIndex]) -> usize {
    let step: HashMap<NodeIndex, usize> = order.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let n = order.len().max(1);
    let mut delta = vec![0i64; n + 1];
    for (i, &node) in order.iter().enumerate() {
        for &v in &g.g[node].outputs {
            let bytes = g.value(v).bytes() as i64;
            let mut last = i;
            if g.is_output(v) {
                last = n - 1;
            }
            for e in g.g.edges_directed(node, Direction::Outgoing) {
                if *e.weight() == v {
                    last = last.max(step.get(&e.target()).copied().unwrap_or(i));
                }
            }
            delta[i] += bytes;
            delta[last + 1] -= bytes;
        }
    }
    let mut live = 0i64;
    let mut peak = 0i64;
    for d in &delta[..n] {
        live += d;
        peak = peak.max(live);
    }
    peak.max(0) as usize
}

fn greedy(g: &Graph) -> Vec<NodeIndex> {
    let mut remaining: HashMap<ValueId, usize> = HashMap::new();
    for n in g.g.node_indices() {
        for v in g.g[n].inputs.iter().flatten() {
            *remaining.entry(*v).or_default() += 1;
        }
    }
    let mut indeg: HashMap<NodeIndex, usize> =
        g.g.node_indices()
            .map(|n| (n, g.g.edges_directed(n, Direction::Incoming).count()))
            .collect();
    let score = |n: NodeIndex, remaining: &HashMap<ValueId, usize>| -> i64 {
        let node = &g.g[n];
        let alloc: i64 = node
            .outputs
            .iter()
            .map(|&v| g.value(v).bytes() as i64)
            .sum();
        let mut seen = Vec::new();
        let freed: i64 = node
            .inputs
            .iter()
            .flatten()
            .filter(|v| {
                let fresh = !seen.contains(*v);
                seen.push(**v);
                fresh && g.value(**v).producer.is_some() && !g.is_output(**v)
            })
            .filter(|v| {
                let uses = node.inputs.iter().flatten().filter(|x| x == v).count();
                remaining.get(*v).copied().unwrap_or(0) <= uses
            })
            .map(|v| g.value(*v).bytes() as i64)
            .sum();
        alloc - freed
    };
    let mut seq = 0u64;
    let mut ready: BTreeSet<(i64, std::cmp::Reverse<u64>, NodeIndex)> = BTreeSet::new();
    // Seed in node order, not hash-map order: `seq` breaks ties, so the order must not
    // depend on the map's per-process random state (reproducible builds).
    let mut sources: Vec<NodeIndex> = indeg
        .iter()
        .filter(|(_, d)| **d == 0)
        .map(|(n, _)| *n)
        .collect();
    sources.sort_unstable();
    for n in sources {
        ready.insert((score(n, &remaining), std::cmp::Reverse(seq), n));
        seq += 1;
    }
    let mut order = Vec::with_capacity(indeg.len());
    while let Some((_, _, n)) = ready.pop_first() {
        order.push(n);
        for v in g.g[n].inputs.iter().flatten() {
            if let Some(r) = remaining.get_mut(v) {
                *r = r.saturating_sub(1);
            }
        }
        let succ: Vec<NodeIndex> =
            g.g.edges_directed(n, Direction::Outgoing)
                .map(|e| e.target())
                .collect();
        for t in succ {
            let d = indeg.entry(t).or_default();
            *d -= 1;
            if *d == 0 {
                ready.insert((score(t, &remaining), std::cmp::Reverse(seq), t));
                seq += 1;
            }
        }
    }
    order
}

/// Chooses the execution order of `g`.
pub fn schedule(g: &Graph) -> Schedule {
    let topo = g.topo_order();
    let topo_peak = peak_bytes(g, &topo);
    let greedy = greedy(g);
    let greedy_peak = if greedy.len() == topo.len() {
        peak_bytes(g, &greedy)
    } else {
        usize::MAX
    };
    let peak_lower_bound_bytes = footprint_bound(g);
    if greedy_peak < topo_peak {
        Schedule {
            order: greedy,
            topo_peak_bytes: topo_peak,
            chosen_peak_bytes: greedy_peak,
            peak_lower_bound_bytes,
        }
    } else {
        Schedule {
            order: topo,
            topo_peak_bytes: topo_peak,
            chosen_peak_bytes: topo_peak,
            peak_lower_bound_bytes,
        }
    }
}
