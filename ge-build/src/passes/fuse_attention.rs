//! Attention fusion: `MatMul(Q, Kt) → [· scale | / scale] → [+ mask] → Softmax(last axis) →
//! MatMul(·, V)` becomes one Attention task, so the S×T score matrix never leaves the chip.
//! Fires only when every intermediate is private to the pattern, the operands share their
//! batch dims, and the mask broadcasts to the score shape without changing it. O(V + E).

use ge_runtime::format::{AttentionParams, BinaryOp, DType, SoftmaxKind};
use petgraph::stable_graph::NodeIndex;

use super::pattern::{Rewrite, Users, binary_with, out, producer, rewrite_each, scalar};
use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op, ValueId};
use crate::onnx::broadcast_shapes;

/// MatMul-Softmax-MatMul → Attention.
pub struct FuseAttention;

struct Match {
    q: ValueId,
    kt: ValueId,
    v: ValueId,
    mask: Option<ValueId>,
    scale: f32,
    dead: Vec<NodeIndex>,
    last: NodeIndex,
}

fn match_at(g: &Graph, users: &Users, mm2: NodeIndex) -> Option<Match> {
    if !matches!(g.g[mm2].op, Op::MatMul) {
        return None;
    }
    let (p, v) = match g.g[mm2].inputs[..] {
        [Some(p), Some(v)] => (p, v),
        _ => return None,
    };
    let sm = producer(g, p)?;
    let Op::Softmax(sp) = g.g[sm].op else {
        return None;
    };
    let rank = g.value(p).shape.len();
    if sp.softmax_kind() != Some(SoftmaxKind::Softmax)
        || sp.axis as usize != rank - 1
        || g.single_use(p, users) != Some(mm2)
    {
        return None;
    }
    let mut dead = vec![sm];
    let mut cur = g.g[sm].inputs[0]?;
    let mut mask = None;
    let mut scale = 1.0f32;
    // Optional additive mask.
    if let Some(add) = producer(g, cur)
        && let Op::Binary(_) = g.g[add].op
        && g.single_use(cur, users) == Some(sm)
    {
        let ins: Vec<ValueId> = g.g[add].inputs.iter().flatten().copied().collect();
        for (i, &cand) in ins.iter().enumerate() {
            let other = ins[1 - i.min(1)];
            if ins.len() == 2
                && binary_with(g, add, BinaryOp::Add, cand) == Some(other)
                && producer(g, cand)
                    .is_some_and(|n| matches!(g.g[n].op, Op::MatMul | Op::Binary(_)))
            {
                let scores = &g.value(cand).shape;
                if broadcast_shapes(&[scores, &g.value(other).shape]).as_deref()
                    == Some(scores.as_slice())
                    && g.value(other).dtype == DType::F32
                {
                    mask = Some(other);
                    dead.push(add);
                    cur = cand;
                    break;
                }
            }
        }
    }
    // Optional scale.
    if let Some(sc) = producer(g, cur)
        && g.single_use(cur, users).is_some()
    {
        let ins: Vec<ValueId> = g.g[sc].inputs.iter().flatten().copied().collect();
        if ins.len() == 2 {
            if let Some(c) = binary_with(g, sc, BinaryOp::Mul, ins[0])
                .filter(|&c| c == ins[1])
                .and_then(|c| scalar(g, c))
            {
                scale = c as f32;
                dead.push(sc);
                cur = ins[0];
            } else if let Some(c) = binary_with(g, sc, BinaryOp::Mul, ins[1])
                .filter(|&c| c == ins[0])
                .and_then(|c| scalar(g, c))
            {
                scale = c as f32;
                dead.push(sc);
                cur = ins[1];
            } else if let Some(c) =
                binary_with(g, sc, BinaryOp::Div, ins[0]).and_then(|c| scalar(g, c))
            {
                scale = (1.0 / c) as f32;
                dead.push(sc);
                cur = ins[0];
            }
        }
    }
    let mm1 = producer(g, cur)?;
    if !matches!(g.g[mm1].op, Op::MatMul)
        || users.get(&cur).map(Vec::len) != Some(1)
        || g.is_output(cur)
    {
        return None;
    }
    let (q, kt) = match g.g[mm1].inputs[..] {
        [Some(q), Some(k)] => (q, k),
        _ => return None,
    };
    dead.push(mm1);
    // Every removed intermediate must be private.
    for &n in &dead {
        let o = out(g, n);
        if g.is_output(o) || users.get(&o).map_or(0, Vec::len) != 1 {
            return None;
        }
    }
    let (qs, ks, vs) = (&g.value(q).shape, &g.value(kt).shape, &g.value(v).shape);
    let same_batch = qs.len() == rank
        && ks.len() == rank
        && vs.len() == rank
        && qs[..rank - 2] == ks[..rank - 2]
        && qs[..rank - 2] == vs[..rank - 2];
    let f32s = [q, kt, v].iter().all(|&x| g.value(x).dtype == DType::F32);
    (rank >= 2 && same_batch && f32s).then_some(Match {
        q,
        kt,
        v,
        mask,
        scale,
        dead,
        last: mm2,
    })
}

impl Pass for FuseAttention {
    pass_info!("fuse_attention", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        Ok(rewrite_each(g, |g, users, n| {
            let m = match_at(g, users, n)?;
            Some(Rewrite {
                dead: m.dead,
                last: m.last,
                op: Op::Attention(AttentionParams {
                    scale: m.scale,
                    reserved: 0,
                }),
                op_type: "Attention",
                inputs: vec![Some(m.q), Some(m.kt), Some(m.v), m.mask],
            })
        }))
    }
}
