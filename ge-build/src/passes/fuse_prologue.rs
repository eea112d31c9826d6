//! Prologue fusion: a BatchNorm (+ Relu/Clip/LeakyRelu) whose output only feeds an unpadded,
//! ungrouped Conv is applied by that Conv while it packs its input (`ConvParams::prologue`,
//! inputs 4 and 5 = per-channel `scale = γ/√(var+ε)` and `shift = β − mean·scale`). This is
//! the pre-activation layout of DenseNet (`concat → BN → Relu → 1×1 conv`), where the BN cannot
//! fold into weights because the Relu sits between them: the BN task and its output tensor
//! vanish. Padded convs are left alone (padding must stay zero, not `act(shift)`).
//! O(V + E + channels).

use ge_runtime::format::DType;

use super::pattern::{f32_tensor, f32_values};
use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op};

/// BatchNorm(+activation) → Conv input prologue.
pub struct FusePrologue;

impl Pass for FusePrologue {
    pass_info!("fuse_prologue", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let users = g.users();
        let mut changed = false;
        for conv in g.topo_order() {
            let Op::Conv(mut cp) = g.g[conv].op else {
                continue;
            };
            let padded = cp.pad_begin.iter().chain(&cp.pad_end).any(|&v| v != 0);
            let inputs = g.g[conv].inputs.clone();
            if padded || cp.group != 1 || !cp.prologue.is_none() || inputs.len() > 4 {
                continue;
            }
            let Some(Some(x)) = inputs.first().copied() else {
                continue;
            };
            let Some(bn) = g.value(x).producer else {
                continue;
            };
            let Op::BatchNorm(np) = g.g[bn].op else {
                continue;
            };
            let in_register = ge_sim::target::tile_applies(&np.act);
            let shape = &g.value(x).shape;
            // A single input channel would make the conv depthwise-shaped (group = C = M).
            if !in_register
                || g.value(x).dtype != DType::F32
                || shape.len() < 3
                || shape[1] < 2
                || g.g[bn].outputs.len() != 1
                || g.single_use(x, &users) != Some(conv)
            {
                continue;
            }
            let [Some(bn_x), Some(gv), Some(bv), Some(mv), Some(vv)] = g.g[bn].inputs[..] else {
                continue;
            };
            let [Some(gamma), Some(beta), Some(mean), Some(var)] =
                [gv, bv, mv, vv].map(|v| g.constant(v).and_then(f32_values))
            else {
                continue;
            };
            let c = shape[1];
            if [&gamma, &beta, &mean, &var].iter().any(|v| v.len() != c) {
                continue;
            }
            let scale: Vec<f32> = (0..c)
                .map(|i| gamma[i] / (var[i] + np.epsilon).sqrt())
                .collect();
            let shift: Vec<f32> = (0..c).map(|i| beta[i] - mean[i] * scale[i]).collect();
            let name = g.g[bn].name.clone();
            let s = g.add_constant(
                format!("{name}:prologue_scale"),
                f32_tensor(vec![c], &scale),
            );
            let t = g.add_constant(
                format!("{name}:prologue_shift"),
                f32_tensor(vec![c], &shift),
            );
            cp.prologue = np.act;
            let mut new = inputs;
            new[0] = Some(bn_x);
            new.resize(4, None);
            new.extend([Some(s), Some(t)]);
            let label = format!("{}+{}", g.g[bn].op_type, g.g[conv].op_type);
            g.merge_into(bn, Some(conv));
            g.g[conv].op = Op::Conv(cp);
            g.g[conv].op_type = label;
            g.set_inputs(conv, new);
            changed = true;
        }
        Ok(changed)
    }
}
