//! Folds `Mul`, `Add` and `Sub` by a per-channel (or scalar) constant into the Conv or
//! BatchNorm that produces their other operand, when that output feeds nothing else:
//! `Conv·m` scales the weights and bias of output channel `o` by `m[o]`; `Conv + a` adds to the
//! bias; `BN·m + a` rescales gamma and beta. Exporters write such affine tails (DenseNet's
//! `BatchNorm → Mul → Add → Relu`), and each one otherwise costs a full pass over the tensor.
//! Runs after `fold_batch_norm`, so `Conv → BN → Mul → Add` collapses into one Conv.
//! O(V + E + folded weight bytes).

use ge_runtime::format::{BinaryOp, DType};
use petgraph::stable_graph::NodeIndex;

use super::pattern::{Users, bypass, f32_tensor, f32_values};
use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op, ValueId};

/// Per-channel affine constants folded into Conv/BatchNorm.
pub struct FoldAffine;

/// How the constant combines with the tensor.
#[derive(Clone, Copy)]
enum Affine {
    Scale,
    Shift,
    Unshift,
}

impl Pass for FoldAffine {
    pass_info!("fold_affine", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let mut users = g.users();
        let mut changed = false;
        for n in g.topo_order() {
            let Some((x, kind, values)) = matches(g, &users, n) else {
                continue;
            };
            let Some(p) = g.value(x).producer else {
                continue;
            };
            if !fold_into(g, p, kind, &values) {
                continue;
            }
            let y = g.g[n].outputs[0];
            bypass(g, &mut users, n, y, x);
            changed = true;
        }
        Ok(changed)
    }
}

/// If `n` is `x·c`, `c·x`, `x + c`, `c + x` or `x − c` with `c` constant per channel (axis 1)
/// and `x` the only-used f32 output of a plain Conv or BatchNorm: `x`, the kind, and `c`
/// expanded to one value per channel.
fn matches(g: &Graph, users: &Users, n: NodeIndex) -> Option<(ValueId, Affine, Vec<f32>)> {
    let Op::Binary(bp) = g.g[n].op else {
        return None;
    };
    if !bp.act.is_none() {
        return None;
    }
    let [Some(a), Some(b)] = g.g[n].inputs[..] else {
        return None;
    };
    let (kind, pairs): (Affine, &[(ValueId, ValueId)]) = match BinaryOp::from_u32(bp.op)? {
        BinaryOp::Mul => (Affine::Scale, &[(a, b), (b, a)]),
        BinaryOp::Add => (Affine::Shift, &[(a, b), (b, a)]),
        BinaryOp::Sub => (Affine::Unshift, &[(a, b)]),
        _ => return None,
    };
    let y = g.g[n].outputs[0];
    pairs.iter().find_map(|&(x, c)| {
        let shape = &g.value(x).shape;
        if g.value(x).dtype != DType::F32 || g.value(y).shape != *shape {
            return None;
        }
        let p = g.value(x).producer?;
        let plain = match g.g[p].op {
            Op::Conv(cp) => cp.act.is_none() && g.g[p].inputs.len() <= 3,
            Op::BatchNorm(np) => np.act.is_none(),
            _ => false,
        };
        if !plain || g.g[p].outputs.len() != 1 || g.single_use(x, users) != Some(n) {
            return None;
        }
        Some((x, kind, per_channel(g, c, shape)?))
    })
}

/// `c` as one value per channel of a tensor shaped `shape` (channels on axis 1), if it is a
/// constant that varies along that axis only.
fn per_channel(g: &Graph, c: ValueId, shape: &[usize]) -> Option<Vec<f32>> {
    let d = g.constant(c)?;
    let values = f32_values(d)?;
    let (rank, channels) = (shape.len(), *shape.get(1)?);
    if d.dims.len() > rank {
        return None;
    }
    let off = rank - d.dims.len();
    let along_channels = d
        .dims
        .iter()
        .enumerate()
        .all(|(i, &dim)| dim == 1 || (off + i == 1 && dim == channels));
    match values.len() {
        1 if along_channels => Some(vec![values[0]; channels]),
        l if along_channels && l == channels => Some(values),
        _ => None,
    }
}

/// Rewrites `p`'s constants so its output already includes the affine step. False when its
/// weights or statistics are not f32 constants of the expected sizes.
fn fold_into(g: &mut Graph, p: NodeIndex, kind: Affine, v: &[f32]) -> bool {
    let inputs = g.g[p].inputs.clone();
    let m = v.len();
    let konst = |g: &Graph, i: usize| {
        let id = inputs.get(i).copied().flatten()?;
        g.constant(id).and_then(f32_values)
    };
    let name = g.g[p].name.clone();
    match g.g[p].op {
        Op::Conv(_) => {
            let (Some(w), Some(Some(wid))) = (konst(g, 1), inputs.get(1).copied()) else {
                return false;
            };
            let bias = match inputs.get(2).copied().flatten() {
                Some(_) => match konst(g, 2) {
                    Some(b) => b,
                    None => return false,
                },
                None => vec![0.0; m],
            };
            if bias.len() != m || w.len() % m != 0 {
                return false;
            }
            let per = w.len() / m;
            let (w2, b2): (Vec<f32>, Vec<f32>) = match kind {
                Affine::Scale => (
                    w.iter().enumerate().map(|(i, &x)| x * v[i / per]).collect(),
                    bias.iter().zip(v).map(|(b, s)| b * s).collect(),
                ),
                Affine::Shift => (w, bias.iter().zip(v).map(|(b, a)| b + a).collect()),
                Affine::Unshift => (w, bias.iter().zip(v).map(|(b, a)| b - a).collect()),
            };
            let wdims = g.value(wid).shape.clone();
            let wn = g.add_constant(format!("{name}:w_affine"), f32_tensor(wdims, &w2));
            let bn = g.add_constant(format!("{name}:b_affine"), f32_tensor(vec![m], &b2));
            g.set_inputs(p, vec![inputs[0], Some(wn), Some(bn)]);
            true
        }
        Op::BatchNorm(_) => {
            let (Some(gamma), Some(beta)) = (konst(g, 1), konst(g, 2)) else {
                return false;
            };
            if gamma.len() != m || beta.len() != m {
                return false;
            }
            let (g2, b2): (Vec<f32>, Vec<f32>) = match kind {
                Affine::Scale => (
                    gamma.iter().zip(v).map(|(x, s)| x * s).collect(),
                    beta.iter().zip(v).map(|(x, s)| x * s).collect(),
                ),
                Affine::Shift => (gamma, beta.iter().zip(v).map(|(b, a)| b + a).collect()),
                Affine::Unshift => (gamma, beta.iter().zip(v).map(|(b, a)| b - a).collect()),
            };
            let gn = g.add_constant(format!("{name}:gamma_affine"), f32_tensor(vec![m], &g2));
            let bn = g.add_constant(format!("{name}:beta_affine"), f32_tensor(vec![m], &b2));
            let mut new = inputs.clone();
            new[1] = Some(gn);
            new[2] = Some(bn);
            g.set_inputs(p, new);
            true
        }
        _ => false,
    }
}
