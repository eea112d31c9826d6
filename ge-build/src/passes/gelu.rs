//! GELU recognition: `0.5 · x · (1 + erf(x / √2))` as exporters decompose it
//! (Div or Mul by a constant → Erf → Add 1 → Mul x → Mul 0.5, in either multiplication order)
//! becomes one Gelu task. O(V + E).

use ge_runtime::format::{BinaryOp, UnaryOp};
use petgraph::stable_graph::NodeIndex;

use super::pattern::{Rewrite, Users, binary_with, near, rewrite_each, scalar};
use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op, ValueId};
use crate::options::OptLevel;

/// Erf-form GELU → Gelu.
pub struct FuseGelu;

fn matches_gelu(
    g: &Graph,
    users: &Users,
    erf: NodeIndex,
) -> Option<(ValueId, Vec<NodeIndex>, NodeIndex)> {
    let Op::Unary(u) = g.g[erf].op else {
        return None;
    };
    if u.act.op != UnaryOp::Erf as u32 {
        return None;
    }
    let e_in = g.g[erf].inputs.first().copied().flatten()?;
    let scale = g.value(e_in).producer?;
    let e_out = g.g[erf].outputs[0];
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
    let add = g.single_use(e_out, users)?;
    let one = binary_with(g, add, BinaryOp::Add, e_out)?;
    if !scalar(g, one).is_some_and(|s| near(s, 1.0)) {
        return None;
    }
    let a_out = g.g[add].outputs[0];
    let m1 = g.single_use(a_out, users)?;
    let other = binary_with(g, m1, BinaryOp::Mul, a_out)?;
    let m1_out = g.g[m1].outputs[0];
    if other == x {
        // (1 + erf) · x, then · 0.5
        let m2 = g.single_use(m1_out, users)?;
        let half = binary_with(g, m2, BinaryOp::Mul, m1_out)?;
        scalar(g, half).filter(|&h| near(h, 0.5))?;
        return Some((x, vec![scale, erf, add, m1], m2));
    }
    // (0.5 · x) · (1 + erf)
    let h = g.value(other).producer?;
    let half = binary_with(g, h, BinaryOp::Mul, x)?;
    scalar(g, half).filter(|&v| near(v, 0.5))?;
    if g.single_use(other, users) != Some(m1) {
        return None;
    }
    Some((x, vec![scale, erf, add, h], m1))
}

impl Pass for FuseGelu {
    fn name(&self) -> &'static str {
        "fuse_gelu"
    }
    fn level(&self) -> OptLevel {
        OptLevel::O2
    }
    fn is_fusion(&self) -> bool {
        true
    }
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        Ok(rewrite_each(g, |g, users, n| {
            let (x, dead, last) = matches_gelu(g, users, n)?;
            Some(Rewrite {
                dead,
                last,
                op: Op::unary(UnaryOp::Gelu, 0.0, 0.0),
                op_type: "Gelu",
                inputs: vec![Some(x)],
            })
        }))
    }
}
