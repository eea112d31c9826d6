//! The IR verifier: the invariants every pass must keep. The pass manager runs it after each
//! pass in debug builds and whenever `GE_VERIFY_IR=1` (the test suite sets it), so a pass
//! that corrupts the graph is named at once instead of surfacing as a wrong plan later.
//!
//! Checked, in O(V + E):
//! - every value id a node or the graph names exists;
//! - single producer: a value lists its producer and that node lists it among its outputs,
//!   and no two nodes write one value;
//! - no dangling readers: every value read is produced by a live node, is a graph input or a
//!   constant; graph outputs likewise;
//! - edges agree with the input slots (an edge `p → n` carrying `v` exactly when `n` reads
//!   `v` and `p` produces it);
//! - types and shapes: constants' data matches their declared dtype and shape; byte views
//!   (`Reshape`) keep the byte count; elementwise unary ops keep the shape;
//! - acyclic: a topological order covers every node.

use std::collections::{HashMap, HashSet};

use petgraph::Direction;
use petgraph::stable_graph::NodeIndex;
use petgraph::visit::EdgeRef;

use super::graph::{Graph, ValueId};
use super::op::Op;

/// A broken invariant, naming what broke it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("IR invariant broken: {0}")]
pub struct VerifyError(pub String);

impl Graph {
    /// Checks the IR invariants (see the module docs). O(V + E).
    pub fn verify(&self) -> Result<(), VerifyError> {
        let fail = |m: String| Err(VerifyError(m));
        let nv = self.values.len();
        let exists = |v: ValueId| (v.0 as usize) < nv;
        let node_desc = |n: NodeIndex| {
            let node = &self.g[n];
            format!("node '{}' ({})", node.name, node.op_type)
        };
        let inputs: HashSet<ValueId> = self.inputs.iter().copied().collect();
        let mut writer: HashMap<ValueId, NodeIndex> = HashMap::new();
        for n in self.g.node_indices() {
            let node = &self.g[n];
            for &v in &node.outputs {
                if !exists(v) {
                    return fail(format!("{} writes unknown value {}", node_desc(n), v.0));
                }
                if let Some(other) = writer.insert(v, n) {
                    return fail(format!(
                        "value '{}' is written by {} and {}",
                        self.value(v).name,
                        node_desc(other),
                        node_desc(n)
                    ));
                }
                if self.value(v).producer != Some(n) {
                    return fail(format!(
                        "value '{}' written by {} does not name it as its producer",
                        self.value(v).name,
                        node_desc(n)
                    ));
                }
                if inputs.contains(&v) || self.value(v).data.is_some() {
                    return fail(format!(
                        "{} writes '{}', which is a graph input or a constant",
                        node_desc(n),
                        self.value(v).name
                    ));
                }
            }
        }
        for (i, v) in self.values.iter().enumerate() {
            if let Some(p) = v.producer
                && writer.get(&ValueId(i as u32)) != Some(&p)
            {
                return fail(format!(
                    "value '{}' names a producer that does not write it (removed node?)",
                    v.name
                ));
            }
            if let Some(d) = &v.data
                && (d.dtype != v.dtype || d.dims != v.shape)
            {
                return fail(format!(
                    "constant '{}' is declared {} {:?} but holds {} {:?}",
                    v.name,
                    v.dtype.name(),
                    v.shape,
                    d.dtype.name(),
                    d.dims
                ));
            }
        }
        let readable = |v: ValueId| {
            exists(v)
                && (writer.contains_key(&v) || inputs.contains(&v) || self.value(v).data.is_some())
        };
        let mut edge_count = 0usize;
        for n in self.g.node_indices() {
            let node = &self.g[n];
            let mut wanted: HashSet<(NodeIndex, ValueId)> = HashSet::new();
            for &v in node.inputs.iter().flatten() {
                if !readable(v) {
                    let name = if exists(v) {
                        self.value(v).name.as_str()
                    } else {
                        "<unknown id>"
                    };
                    return fail(format!(
                        "{} reads '{name}', which no live node produces and is neither an input nor a constant",
                        node_desc(n)
                    ));
                }
                if let Some(&p) = writer.get(&v) {
                    wanted.insert((p, v));
                }
            }
            let mut seen: HashSet<(NodeIndex, ValueId)> = HashSet::new();
            for e in self.g.edges_directed(n, Direction::Incoming) {
                edge_count += 1;
                let key = (e.source(), *e.weight());
                if !wanted.contains(&key) {
                    return fail(format!(
                        "{} has a stale edge from {} carrying '{}'",
                        node_desc(n),
                        node_desc(e.source()),
                        self.value(*e.weight()).name
                    ));
                }
                seen.insert(key);
            }
            if let Some(&(p, v)) = wanted.difference(&seen).next() {
                return fail(format!(
                    "{} reads '{}' from {} without an edge",
                    node_desc(n),
                    self.value(v).name,
                    node_desc(p)
                ));
            }
            self.verify_types(n)?;
        }
        let _ = edge_count;
        for &v in &self.outputs {
            if !readable(v) {
                return fail(format!(
                    "graph output {} is produced by no live node",
                    if exists(v) {
                        self.value(v).name.clone()
                    } else {
                        format!("id {}", v.0)
                    }
                ));
            }
        }
        if self.topo_order().len() != self.node_count() {
            return fail("the graph has a cycle".into());
        }
        Ok(())
    }

    /// The op-level type and shape facts that hold for every op of a kind. O(degree).
    fn verify_types(&self, n: NodeIndex) -> Result<(), VerifyError> {
        let node = &self.g[n];
        let first_in = node
            .inputs
            .first()
            .copied()
            .flatten()
            .map(|v| self.value(v));
        let first_out = node.outputs.first().map(|&v| self.value(v));
        let (Some(x), Some(y)) = (first_in, first_out) else {
            return Ok(());
        };
        let bad = |what: &str| {
            Err(VerifyError(format!(
                "node '{}' ({}): {what}: input '{}' {} {:?}, output '{}' {} {:?}",
                node.name,
                node.op_type,
                x.name,
                x.dtype.name(),
                x.shape,
                y.name,
                y.dtype.name(),
                y.shape
            )))
        };
        match node.op {
            Op::Reshape if x.bytes() != y.bytes() => bad("a byte view changes the byte count"),
            Op::Unary(_) | Op::Cast if x.shape != y.shape => {
                bad("an elementwise op changes the shape")
            }
            _ => Ok(()),
        }
    }
}

/// True when the IR is verified after every pass: debug builds, or `GE_VERIFY_IR=1`.
pub fn verify_each_pass() -> bool {
    cfg!(debug_assertions)
        || std::env::var_os("GE_VERIFY_IR").is_some_and(|v| !v.is_empty() && v != "0")
}
