//! Folds inference BatchNorm into the preceding Conv's weights and bias when the conv output
//! feeds only the BatchNorm: `w' = w·s`, `b' = (b − mean)·s + beta`, `s = gamma/√(var+ε)`.
//! O(V + E + folded weight bytes).

use super::pattern::{bypass, f32_tensor as data, f32_values as f32s};
use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op};

/// BatchNorm folding into Conv.
pub struct FoldBatchNorm;

impl Pass for FoldBatchNorm {
    pass_info!("fold_batch_norm", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let mut users = g.users();
        let mut changed = false;
        for bn in g.topo_order() {
            let node = &g.g[bn];
            let Op::BatchNorm(np) = node.op else { continue };
            if !np.act.is_none() {
                continue;
            }
            let ins: Vec<_> = node.inputs.iter().flatten().copied().collect();
            let [x, gamma, beta, mean, var] = ins[..] else {
                continue;
            };
            let y = node.outputs[0];
            let Some(conv) = g.value(x).producer else {
                continue;
            };
            let Op::Conv(cp) = g.g[conv].op else { continue };
            if !cp.act.is_none() || g.single_use(x, &users) != Some(bn) {
                continue;
            }
            let cin = g.g[conv].inputs.clone();
            let Some(Some(w)) = cin.get(1).copied() else {
                continue;
            };
            let bias = cin.get(2).copied().flatten();
            let consts = [w, gamma, beta, mean, var].map(|v| g.constant(v).and_then(f32s));
            let [Some(wv), Some(gv), Some(bv), Some(mv), Some(vv)] = consts else {
                continue;
            };
            let m = gv.len();
            let old_bias = match bias {
                Some(b) => match g.constant(b).and_then(f32s) {
                    Some(v) => v,
                    None => continue,
                },
                None => vec![0.0; m],
            };
            if wv.len() % m != 0
                || old_bias.len() != m
                || bv.len() != m
                || mv.len() != m
                || vv.len() != m
            {
                continue;
            }
            let per = wv.len() / m;
            let s: Vec<f32> = (0..m)
                .map(|c| gv[c] / (vv[c] + np.epsilon).sqrt())
                .collect();
            let new_w: Vec<f32> = wv
                .iter()
                .enumerate()
                .map(|(i, &w)| w * s[i / per])
                .collect();
            let new_b: Vec<f32> = (0..m)
                .map(|c| (old_bias[c] - mv[c]) * s[c] + bv[c])
                .collect();
            let wname = format!("{}:w_bn", g.value(w).name);
            let w2 = g.add_constant(wname, data(g.value(w).shape.clone(), &new_w));
            let b2 = g.add_constant(format!("{}:b_bn", g.g[conv].name), data(vec![m], &new_b));
            g.set_inputs(conv, vec![cin[0], Some(w2), Some(b2)]);
            bypass(g, &mut users, bn, y, x);
            changed = true;
        }
        Ok(changed)
    }
}
