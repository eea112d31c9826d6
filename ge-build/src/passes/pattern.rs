//! Small matching helpers shared by the pattern-fusion passes. All O(1) per query.

use ge_runtime::format::{BinaryOp, UnaryOp};
use petgraph::stable_graph::NodeIndex;

use crate::ir::{Graph, Op, ValueId};

/// Users of each value, as `Graph::users` returns.
pub type Users = std::collections::HashMap<ValueId, Vec<NodeIndex>>;

/// The single element of a constant, as f64.
pub fn scalar(g: &Graph, v: ValueId) -> Option<f64> {
    let d = g.constant(v)?;
    let vals = d.to_f64_vec().ok()?;
    (vals.len() == 1).then(|| vals[0])
}

/// The elements of an f32 constant.
pub fn f32_values(d: &crate::tensor::TensorData) -> Option<Vec<f32>> {
    (d.dtype == ge_runtime::format::DType::F32).then(|| d.to_f32_vec())
}

/// An f32 constant tensor.
pub fn f32_tensor(dims: Vec<usize>, v: &[f32]) -> crate::tensor::TensorData {
    crate::tensor::TensorData {
        dtype: ge_runtime::format::DType::F32,
        dims,
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// An int64 constant tensor (indices a rewrite adds).
pub fn i64_tensor(dims: Vec<usize>, v: &[i64]) -> crate::tensor::TensorData {
    crate::tensor::TensorData {
        dtype: ge_runtime::format::DType::I64,
        dims,
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// Approximate equality for recognized constants (exporters round them).
pub fn near(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-4 * b.abs().max(1.0)
}

/// If `n` is `op(v, other)` (or `op(other, v)` for commutative ops) without an epilogue,
/// the other operand.
pub fn binary_with(g: &Graph, n: NodeIndex, op: BinaryOp, v: ValueId) -> Option<ValueId> {
    let Op::Binary(p) = g.g[n].op else {
        return None;
    };
    if !p.is_plain(op) {
        return None;
    }
    match g.g[n].inputs[..] {
        [Some(a), Some(b)] if a == v => Some(b),
        [Some(a), Some(b)] if b == v && matches!(op, BinaryOp::Mul | BinaryOp::Add) => Some(a),
        _ => None,
    }
}

/// The two operands of a plain binary `op` node.
pub fn binary_operands(g: &Graph, n: NodeIndex, op: BinaryOp) -> Option<(ValueId, ValueId)> {
    let Op::Binary(p) = g.g[n].op else {
        return None;
    };
    if !p.is_plain(op) {
        return None;
    }
    match g.g[n].inputs[..] {
        [Some(a), Some(b)] => Some((a, b)),
        _ => None,
    }
}

/// True when `n` is a plain unary `op`.
pub fn is_unary(g: &Graph, n: NodeIndex, op: UnaryOp) -> bool {
    matches!(g.g[n].op, Op::Unary(p) if p.act.unary_op() == Some(op))
}

/// The producer of `v`, if it is a node.
pub fn producer(g: &Graph, v: ValueId) -> Option<NodeIndex> {
    g.value(v).producer
}

/// The only output of `n`.
pub fn out(g: &Graph, n: NodeIndex) -> ValueId {
    g.g[n].outputs[0]
}

/// Removes `n`, a node whose output `y` now reads as `x` (its input, whose only reader was
/// `n`), keeping `users` current; `x`'s producer inherits `n`'s keep-dtype mark. O(users
/// of y).
pub fn bypass(g: &mut Graph, users: &mut Users, n: NodeIndex, y: ValueId, x: ValueId) {
    let u = users.remove(&y).unwrap_or_default();
    g.replace_uses(y, x, &u);
    users.insert(x, u);
    let into = g.value(x).producer;
    g.merge_into(n, into);
}

/// A matched pattern: the nodes it removes, and the node that becomes the fused op.
pub struct Rewrite {
    pub dead: Vec<NodeIndex>,
    pub last: NodeIndex,
    pub op: Op,
    pub op_type: &'static str,
    pub inputs: Vec<Option<ValueId>>,
}

impl Rewrite {
    /// True when every value the rewrite deletes is read only inside the pattern: no dead
    /// node's output is a graph output or has a reader other than the pattern's own nodes.
    /// A matcher that forgot a single-use check is refused here instead of leaving a dangling
    /// reader. O(pattern size × readers).
    fn is_closed(&self, g: &Graph, users: &Users) -> bool {
        let inside = |u: &NodeIndex| *u == self.last || self.dead.contains(u);
        self.dead.iter().all(|&d| {
            g.g[d]
                .outputs
                .iter()
                .all(|v| !g.is_output(*v) && users.get(v).is_none_or(|us| us.iter().all(inside)))
        })
    }
}

/// Removes `n` from the reader lists of its inputs.
fn forget_reader(g: &Graph, users: &mut Users, n: NodeIndex) {
    for v in g.g[n].inputs.iter().flatten() {
        if let Some(us) = users.get_mut(v) {
            us.retain(|&u| u != n);
        }
    }
}

/// Runs `find` at every node in topological order and applies each match whose deleted
/// values are read only inside the pattern ([`Rewrite::is_closed`]), keeping the users map
/// current for later matches. O(V + E) plus the matcher's own cost per node.
pub fn rewrite_each(
    g: &mut Graph,
    find: impl Fn(&Graph, &Users, NodeIndex) -> Option<Rewrite>,
) -> bool {
    let mut users = g.users();
    let mut changed = false;
    for n in g.topo_order() {
        if !g.g.contains_node(n) {
            continue;
        }
        let Some(r) = find(g, &users, n) else {
            continue;
        };
        if !r.is_closed(g, &users) {
            continue;
        }
        for &d in r.dead.iter().chain([&r.last]) {
            forget_reader(g, &mut users, d);
        }
        for d in r.dead {
            for v in &g.g[d].outputs {
                users.remove(v);
            }
            g.merge_into(d, Some(r.last));
        }
        for v in r.inputs.iter().flatten() {
            let us = users.entry(*v).or_default();
            if !us.contains(&r.last) {
                us.push(r.last);
            }
        }
        g.g[r.last].op = r.op;
        g.g[r.last].op_type = r.op_type.into();
        g.set_inputs(r.last, r.inputs);
        changed = true;
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Node, Value};

    fn value(g: &mut Graph, name: &str) -> ValueId {
        g.add_value(Value {
            name: name.into(),
            dtype: ge_runtime::format::DType::F32,
            shape: vec![4],
            producer: None,
            data: None,
        })
    }

    fn unary(g: &mut Graph, name: &str, x: ValueId, y: ValueId) -> NodeIndex {
        g.add_node(Node {
            name: name.into(),
            op_type: "Relu".into(),
            opset: 13,
            op: Op::unary(UnaryOp::Relu, 0.0, 0.0),
            inputs: vec![Some(x)],
            outputs: vec![y],
        })
    }

    /// x → a → b, and `a`'s output is also read by c (outside the pattern {a, b}).
    fn chain(extra_reader: bool) -> (Graph, NodeIndex, NodeIndex) {
        let mut g = Graph::default();
        let x = value(&mut g, "x");
        g.inputs.push(x);
        let (t, y) = (value(&mut g, "t"), value(&mut g, "y"));
        let a = unary(&mut g, "a", x, t);
        let b = unary(&mut g, "b", t, y);
        g.outputs.push(y);
        if extra_reader {
            let z = value(&mut g, "z");
            unary(&mut g, "c", t, z);
            g.outputs.push(z);
        }
        (g, a, b)
    }

    fn fuse_pair(g: &mut Graph, a: NodeIndex, b: NodeIndex) -> bool {
        let x = g.g[a].inputs[0];
        rewrite_each(g, |_, _, n| {
            (n == b).then(|| Rewrite {
                dead: vec![a],
                last: b,
                op: Op::unary(UnaryOp::Sigmoid, 0.0, 0.0),
                op_type: "Fused",
                inputs: vec![x],
            })
        })
    }

    #[test]
    fn a_closed_pattern_is_rewritten_and_verifies() {
        let (mut g, a, b) = chain(false);
        assert!(fuse_pair(&mut g, a, b));
        assert_eq!(g.node_count(), 1);
        g.verify().expect("valid after the rewrite");
    }

    #[test]
    fn a_pattern_deleting_a_value_read_outside_it_is_refused() {
        let (mut g, a, b) = chain(true);
        assert!(!fuse_pair(&mut g, a, b), "must not delete t: c reads it");
        assert_eq!(g.node_count(), 3);
        g.verify().expect("untouched graph still valid");
    }
}
