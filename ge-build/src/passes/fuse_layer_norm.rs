//! LayerNorm recognition from the decomposed form PyTorch and Paddle export:
//! `d = x − ReduceMean(x)`, `v = ReduceMean(d² )` (Pow 2 or d·d), `n = d / √(v + ε)` or
//! `n = d · Reciprocal(√(v + ε))` (the ONNX function body of LayerNormalization, either
//! operand order), then optional `· gamma` and `+ beta` (either operand order) → one
//! LayerNorm task over the reduced trailing axes. f32 only (the kernel's type). O(V + E).

use ge_runtime::format::{Activation, BinaryOp, DType, LayerNormParams, ReduceOp, UnaryOp};
use petgraph::stable_graph::NodeIndex;

use super::pattern::{
    Rewrite, Users, binary_operands, binary_with, is_unary, near, out, producer, rewrite_each,
    scalar,
};
use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op, ValueId};

/// Decomposed LayerNorm → LayerNorm.
pub struct FuseLayerNorm;

/// Reduced-axes mask of a keepdims ReduceMean over trailing axes of `x`, and its input.
fn mean_over_tail(g: &Graph, n: NodeIndex) -> Option<(ValueId, u32)> {
    let Op::Reduce(p) = g.g[n].op else {
        return None;
    };
    if p.op != ReduceOp::Mean as u32 {
        return None;
    }
    let x = g.g[n].inputs.first().copied().flatten()?;
    let rank = g.value(x).shape.len();
    let (m, r) = (p.axes_mask, rank as u32);
    let first = m.trailing_zeros();
    let tail = if first >= r {
        0
    } else {
        ((1u32 << r) - 1) & !((1u32 << first) - 1)
    };
    (m != 0 && m == tail && g.value(out(g, n)).shape.len() == rank).then_some((x, first))
}

struct Match {
    x: ValueId,
    axis: u32,
    eps: f32,
    gamma: Option<ValueId>,
    beta: Option<ValueId>,
    dead: Vec<NodeIndex>,
    last: NodeIndex,
}

/// The normalizing step at `n`: `d / s` (no reciprocal) or `d · r` with `r = Reciprocal(s)`
/// (either operand order), as `(d, s, Some((reciprocal node, r)))`.
type Normalize = (ValueId, ValueId, Option<(NodeIndex, ValueId)>);

fn normalize_step(g: &Graph, n: NodeIndex) -> Option<Normalize> {
    if let Some((d, s)) = binary_operands(g, n, BinaryOp::Div) {
        return Some((d, s, None));
    }
    let (a, b) = binary_operands(g, n, BinaryOp::Mul)?;
    [(a, b), (b, a)].into_iter().find_map(|(d, r)| {
        let (recip, sub) = (producer(g, r)?, producer(g, d)?);
        if !is_unary(g, recip, UnaryOp::Reciprocal)
            || binary_operands(g, sub, BinaryOp::Sub).is_none()
        {
            return None;
        }
        let s = g.g[recip].inputs.first().copied().flatten()?;
        Some((d, s, Some((recip, r))))
    })
}

fn match_at(g: &Graph, users: &Users, step: NodeIndex) -> Option<Match> {
    let (d, s, recip) = normalize_step(g, step)?;
    let sub = producer(g, d)?;
    let (x, m) = binary_operands(g, sub, BinaryOp::Sub)?;
    if g.value(x).dtype != DType::F32 {
        return None;
    }
    let mean1 = producer(g, m)?;
    let (mx, axis) = mean_over_tail(g, mean1)?;
    let sqrt = producer(g, s)?;
    if mx != x || !is_unary(g, sqrt, UnaryOp::Sqrt) {
        return None;
    }
    let add = producer(g, g.g[sqrt].inputs[0]?)?;
    let (v, e) = binary_operands(g, add, BinaryOp::Add)?;
    let (v, e) = if scalar(g, e).is_some() {
        (v, e)
    } else {
        (e, v)
    };
    let eps = scalar(g, e)?;
    let mean2 = producer(g, v)?;
    let (sq, axis2) = mean_over_tail(g, mean2)?;
    let pow = producer(g, sq)?;
    let squares = binary_with(g, pow, BinaryOp::Pow, d)
        .and_then(|two| scalar(g, two))
        .is_some_and(|t| near(t, 2.0))
        || binary_operands(g, pow, BinaryOp::Mul) == Some((d, d));
    if axis2 != axis || !squares {
        return None;
    }
    // Every intermediate is private to the pattern (d feeds exactly the square and the Div).
    let private = |v: ValueId, by: &[NodeIndex]| {
        users
            .get(&v)
            .is_some_and(|u| u.iter().all(|n| by.contains(n)))
            && !g.is_output(v)
    };
    let interior_ok = private(m, &[sub])
        && private(d, &[pow, step])
        && private(sq, &[mean2])
        && private(v, &[add])
        && private(out(g, add), &[sqrt])
        && match recip {
            None => private(s, &[step]),
            Some((rn, r)) => private(s, &[rn]) && private(r, &[step]),
        };
    if !interior_ok {
        return None;
    }
    let mut dead = vec![mean1, sub, pow, mean2, add, sqrt];
    dead.extend(recip.map(|(rn, _)| rn));
    let mut last = step;
    let norm_shape = &g.value(x).shape[axis as usize..];
    let fits = |p: ValueId| {
        g.constant(p).is_some()
            && g.value(p).dtype == DType::F32
            && g.value(p).shape.len() <= norm_shape.len()
            && {
                let ps = &g.value(p).shape;
                ps.iter()
                    .rev()
                    .zip(norm_shape.iter().rev())
                    .all(|(a, b)| a == b || *a == 1)
            }
    };
    let mut gamma = None;
    let mut beta = None;
    if let Some(mul) = g.single_use(out(g, last), users)
        && let Some(gm) = binary_with(g, mul, BinaryOp::Mul, out(g, last))
        && fits(gm)
    {
        dead.push(last);
        last = mul;
        gamma = Some(gm);
        if let Some(addb) = g.single_use(out(g, last), users)
            && let Some(bt) = binary_with(g, addb, BinaryOp::Add, out(g, last))
            && fits(bt)
        {
            dead.push(last);
            last = addb;
            beta = Some(bt);
        }
    }
    if g.value(out(g, last)).shape != g.value(x).shape {
        return None;
    }
    Some(Match {
        x,
        axis,
        eps: eps as f32,
        gamma,
        beta,
        dead,
        last,
    })
}

impl Pass for FuseLayerNorm {
    pass_info!("fuse_layer_norm", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        Ok(rewrite_each(g, |g, users, n| {
            let m = match_at(g, users, n)?;
            Some(Rewrite {
                dead: m.dead,
                last: m.last,
                op: Op::LayerNorm(LayerNormParams {
                    axis: m.axis,
                    epsilon: m.eps,
                    act: Activation::default(),
                }),
                op_type: "LayerNorm",
                inputs: vec![Some(m.x), m.gamma, m.beta],
            })
        }))
    }
}
