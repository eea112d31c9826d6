//! GELU recognition: `0.5 · x · (1 + erf(x / √2))` as exporters decompose it
//! (Div or Mul by a constant → Erf → Add 1 → Mul x → Mul 0.5, in either multiplication order)
//! and the tanh approximation `0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))` (GPT-2's
//! `gelu_new`) each become one Gelu task (`approximate = tanh` for the second). O(V + E).

use ge_runtime::format::{BinaryOp, UnaryOp};
use petgraph::stable_graph::NodeIndex;

use super::pattern::{Rewrite, Users, binary_operands, binary_with, near, rewrite_each, scalar};
use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op, ValueId};

/// Erf- and tanh-form GELU → Gelu.
pub struct FuseGelu;

/// A matched GELU: its input, the nodes that vanish, the node that becomes Gelu, and the form
/// (`0` erf, `1` tanh: the Gelu op's `alpha`).
type Match = (ValueId, Vec<NodeIndex>, NodeIndex, f32);

/// The erf form, anchored at its Erf node.
fn matches_erf(g: &Graph, users: &Users, erf: NodeIndex) -> Option<Match> {
    let e_in = g.g[erf].inputs.first().copied().flatten()?;
    let scale = g.value(e_in).producer?;
    // x / √2 or x · (1/√2)
    let (x, c) = match g.g[scale].inputs[..] {
        [Some(a), Some(b)] => (a, b),
        _ => return None,
    };
    let ok_scale = binary_with(g, scale, BinaryOp::Div, x) == Some(c)
        && scalar(g, c).is_some_and(|s| near(s, std::f64::consts::SQRT_2))
        || binary_with(g, scale, BinaryOp::Mul, x) == Some(c)
            && scalar(g, c).is_some_and(|s| near(s, std::f64::consts::FRAC_1_SQRT_2));
    if !ok_scale || g.single_use(e_in, users) != Some(erf) {
        return None;
    }
    let (mut dead, last) = half_x_one_plus(g, users, g.g[erf].outputs[0], x)?;
    dead.extend([scale, erf]);
    Some((x, dead, last, 0.0))
}

/// The tanh form `tanh(√(2/π) · (x + 0.044715 · x³))`, anchored at its Tanh node; `x³` as
/// `Pow(x, 3)`, `x·x·x` or `x·(x·x)`.
fn matches_tanh(g: &Graph, users: &Users, tanh: NodeIndex) -> Option<Match> {
    let t_in = g.g[tanh].inputs.first().copied().flatten()?;
    let scale = g.value(t_in).producer?;
    let inner = constant_factor(g, scale, 0.797_884_560_802_865_4)?;
    let sum = g.value(inner).producer?;
    let (a, b) = binary_operands(g, sum, BinaryOp::Add)?;
    // x + 0.044715·x³, either operand order.
    let (x, mc, cube_nodes) = [(a, b), (b, a)].into_iter().find_map(|(x, c)| {
        let mc = g.value(c).producer?;
        let cube = constant_factor(g, mc, 0.044_715)?;
        let nodes = is_cube(g, users, g.value(cube).producer?, x)?;
        (g.single_use(cube, users) == Some(mc)).then_some((x, mc, nodes))
    })?;
    let interior = [(t_in, tanh), (inner, scale), (g.g[mc].outputs[0], sum)];
    if interior
        .iter()
        .any(|&(v, user)| g.single_use(v, users) != Some(user))
    {
        return None;
    }
    let (mut dead, last) = half_x_one_plus(g, users, g.g[tanh].outputs[0], x)?;
    dead.extend([scale, sum, mc, tanh]);
    dead.extend(cube_nodes);
    Some((x, dead, last, 1.0))
}

/// If `n` is `v · c` (either order) with the scalar constant `c ≈ want`: `v`.
fn constant_factor(g: &Graph, n: NodeIndex, want: f64) -> Option<ValueId> {
    let (a, b) = binary_operands(g, n, BinaryOp::Mul)?;
    [(a, b), (b, a)]
        .into_iter()
        .find(|&(_, c)| scalar(g, c).is_some_and(|s| near(s, want)))
        .map(|(v, _)| v)
}

/// If `n` computes `x³` (`Pow(x, 3)`, `(x·x)·x` or `x·(x·x)`): the nodes to remove with it.
fn is_cube(g: &Graph, users: &Users, n: NodeIndex, x: ValueId) -> Option<Vec<NodeIndex>> {
    if binary_with(g, n, BinaryOp::Pow, x).is_some_and(|e| scalar(g, e).is_some_and(|s| s == 3.0)) {
        return Some(vec![n]);
    }
    let sq = binary_with(g, n, BinaryOp::Mul, x)?;
    let sn = g.value(sq).producer?;
    (binary_with(g, sn, BinaryOp::Mul, x) == Some(x) && g.single_use(sq, users) == Some(n))
        .then(|| vec![n, sn])
}

/// The shared tail `0.5 · x · (1 + f)` from `f`'s value: `(1 + f) · x · 0.5` or
/// `(0.5 · x) · (1 + f)`. Returns the tail's nodes that vanish and the last one.
fn half_x_one_plus(
    g: &Graph,
    users: &Users,
    f: ValueId,
    x: ValueId,
) -> Option<(Vec<NodeIndex>, NodeIndex)> {
    let add = g.single_use(f, users)?;
    let one = binary_with(g, add, BinaryOp::Add, f)?;
    if !scalar(g, one).is_some_and(|s| near(s, 1.0)) {
        return None;
    }
    let a_out = g.g[add].outputs[0];
    let m1 = g.single_use(a_out, users)?;
    let other = binary_with(g, m1, BinaryOp::Mul, a_out)?;
    let m1_out = g.g[m1].outputs[0];
    if other == x {
        // (1 + f) · x, then · 0.5
        let m2 = g.single_use(m1_out, users)?;
        let half = binary_with(g, m2, BinaryOp::Mul, m1_out)?;
        scalar(g, half).filter(|&h| near(h, 0.5))?;
        return Some((vec![add, m1], m2));
    }
    // (0.5 · x) · (1 + f)
    let h = g.value(other).producer?;
    let half = binary_with(g, h, BinaryOp::Mul, x)?;
    scalar(g, half).filter(|&v| near(v, 0.5))?;
    if g.single_use(other, users) != Some(m1) {
        return None;
    }
    Some((vec![add, h], m1))
}

impl Pass for FuseGelu {
    pass_info!("fuse_gelu", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        Ok(rewrite_each(g, |g, users, n| {
            let Op::Unary(u) = g.g[n].op else {
                return None;
            };
            let (x, dead, last, form) = match UnaryOp::from_u32(u.act.op)? {
                UnaryOp::Erf => matches_erf(g, users, n)?,
                UnaryOp::Tanh => matches_tanh(g, users, n)?,
                _ => return None,
            };
            Some(Rewrite {
                dead,
                last,
                op: Op::unary(UnaryOp::Gelu, form, 0.0),
                op_type: "Gelu",
                inputs: vec![Some(x)],
            })
        }))
    }
}
