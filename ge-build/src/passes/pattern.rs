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
    if p.op != op as u32 || p.act.op != 0 {
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
    if p.op != op as u32 || p.act.op != 0 {
        return None;
    }
    match g.g[n].inputs[..] {
        [Some(a), Some(b)] => Some((a, b)),
        _ => None,
    }
}

/// True when `n` is a plain unary `op`.
pub fn is_unary(g: &Graph, n: NodeIndex, op: UnaryOp) -> bool {
    matches!(g.g[n].op, Op::Unary(p) if p.act.op == op as u32)
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
/// `n`), keeping `users` current. O(users of y).
pub fn bypass(g: &mut Graph, users: &mut Users, n: NodeIndex, y: ValueId, x: ValueId) {
    let u = users.remove(&y).unwrap_or_default();
    g.replace_uses(y, x, &u);
    users.insert(x, u);
    g.remove_node(n);
}

/// A matched pattern: the nodes it removes, and the node that becomes the fused op.
pub struct Rewrite {
    pub dead: Vec<NodeIndex>,
    pub last: NodeIndex,
    pub op: Op,
    pub op_type: &'static str,
    pub inputs: Vec<Option<ValueId>>,
}

/// Runs `find` at every node in topological order and applies each match. O(V + E) plus the
/// matcher's own cost per node.
pub fn rewrite_each(
    g: &mut Graph,
    find: impl Fn(&Graph, &Users, NodeIndex) -> Option<Rewrite>,
) -> bool {
    let users = g.users();
    let mut changed = false;
    for n in g.topo_order() {
        if !g.g.contains_node(n) {
            continue;
        }
        let Some(r) = find(g, &users, n) else {
            continue;
        };
        for d in r.dead {
            g.remove_node(d);
        }
        g.g[r.last].op = r.op;
        g.g[r.last].op_type = r.op_type.into();
        g.set_inputs(r.last, r.inputs);
        changed = true;
    }
    changed
}
