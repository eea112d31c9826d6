//! Cast round trips that change nothing: `Cast(to f32) ∘ Cast(to an integer type)` applied
//! to an f32 value that is an integer inside that type's range is the value itself, so the
//! outer Cast's readers read the value directly. A QuantizeLinear feeding a
//! DequantizeLinear (as imported: `Round → (+ zero point) → Clip → Cast`, then `Cast → …`)
//! is such a trip; without it the requantized value crosses memory as int8 between two
//! vector programs (YOLO's SiLU: Sigmoid's QuantizeLinear → DequantizeLinear → Mul), with
//! it autofusion makes one program of the whole chain. Only where the round trip is the
//! integer value's one reader. Exact: the two Casts are the identity on those values.
//! O(V + E).

use ge_runtime::format::{BinaryOp, DType, UnaryOp};
use petgraph::stable_graph::NodeIndex;

use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op, ValueId};
use crate::onnx::int_range;

/// Removes Cast round trips on integral in-range values.
pub struct CastRoundTrip;

/// Whether every element of a constant is an integer small enough to add exactly in f32.
fn whole(g: &Graph, c: ValueId) -> bool {
    g.constant(c)
        .and_then(|d| d.to_f64_vec().ok())
        .is_some_and(|v| v.iter().all(|x| x.fract() == 0.0 && x.abs() < 16_777_216.0))
}

/// True when every element of f32 value `v` is an integer: a Round's output, or a sum or
/// difference of such a value and a constant of integers (a zero point), looked through
/// `depth` more such steps.
fn integral(g: &Graph, v: ValueId, depth: usize) -> bool {
    let Some(p) = g.value(v).producer else {
        return false;
    };
    let node = &g.g[p];
    match node.op {
        Op::Unary(u) => u.act.op == UnaryOp::Round as u32,
        Op::Binary(b) if depth > 0 && b.act.is_none() => integral_sum(g, p, depth - 1),
        _ => false,
    }
}

/// True when node `p` adds or subtracts an integral value (see [`integral`]) and a constant
/// of integers.
fn integral_sum(g: &Graph, p: NodeIndex, depth: usize) -> bool {
    let node = &g.g[p];
    let Op::Binary(b) = node.op else {
        return false;
    };
    let [Some(a), Some(c)] = node.inputs[..] else {
        return false;
    };
    matches!(
        BinaryOp::from_u32(b.op),
        Some(BinaryOp::Add | BinaryOp::Sub)
    ) && ((integral(g, a, depth) && whole(g, c)) || (whole(g, a) && integral(g, c, depth)))
}

/// The bounds of node `p` when its output is an integral value clipped to them: a Clip of
/// an integral value, or an Add/Sub of one and a zero point carrying the Clip as its fused
/// activation (`fuse_epilogue` folds a QuantizeLinear's Clip into its Add).
fn clipped_integral(g: &Graph, p: NodeIndex) -> Option<(f32, f32)> {
    let node = &g.g[p];
    let clip = |a: &ge_runtime::format::Activation| {
        (a.op == UnaryOp::Clip as u32).then_some((a.alpha, a.beta))
    };
    match node.op {
        Op::Unary(u) => {
            let [Some(r)] = node.inputs[..] else {
                return None;
            };
            clip(&u.act).filter(|_| integral(g, r, 2))
        }
        Op::Binary(b) => clip(&b.act).filter(|_| integral_sum(g, p, 1)),
        _ => None,
    }
}

/// For Cast `n` (integer → f32) whose input is Cast (f32 → that integer type) of a clipped
/// integral value inside the type's range, and `n` that integer value's only reader: that
/// f32 value. (With other readers the integer tensor stays, and reading the f32 one instead
/// would put four times its bytes in memory: a ResNet block's output feeds the next conv
/// as int8 and the next residual Add.)
fn round_trip_source(
    g: &Graph,
    users: &std::collections::HashMap<ValueId, Vec<NodeIndex>>,
    n: NodeIndex,
) -> Option<ValueId> {
    let node = &g.g[n];
    let (Op::Cast, [Some(i)], [y]) = (&node.op, node.inputs.as_slice(), node.outputs.as_slice())
    else {
        return None;
    };
    if g.is_output(*i) || users.get(i).is_none_or(|u| u.as_slice() != [n]) {
        return None;
    }
    let (lo, hi) = int_range(g.value(*i).dtype)?;
    if g.value(*y).dtype != DType::F32 {
        return None;
    }
    let inner = &g.g[g.value(*i).producer?];
    let (Op::Cast, [Some(c)]) = (&inner.op, inner.inputs.as_slice()) else {
        return None;
    };
    if g.value(*c).dtype != DType::F32 || g.value(*c).shape != g.value(*y).shape {
        return None;
    }
    let (a, b) = clipped_integral(g, g.value(*c).producer?)?;
    (f64::from(a) >= lo && f64::from(b) <= hi).then_some(*c)
}

impl Pass for CastRoundTrip {
    pass_info!("cast_round_trip", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let mut users = g.users();
        let mut changed = false;
        for n in g.topo_order() {
            let Some(src) = round_trip_source(g, &users, n) else {
                continue;
            };
            let y = g.g[n].outputs[0];
            if g.is_output(y) {
                continue;
            }
            let u = users.remove(&y).unwrap_or_default();
            g.replace_uses(y, src, &u);
            users.entry(src).or_default().extend(u);
            g.remove_node(n);
            changed = true;
        }
        Ok(changed)
    }
}
