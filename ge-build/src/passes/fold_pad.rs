//! Folds a zero-constant Pad of the spatial axes into the next Conv's pads (or an
//! AveragePool's that counts padding), when the Pad's output feeds only that op. The padded
//! tensor is never materialized. O(V + E).

use ge_runtime::format::{PadMode, PoolKind};

use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op};

/// Pad → Conv / AveragePool pads.
pub struct FoldPad;

impl Pass for FoldPad {
    pass_info!("fold_pad", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let users = g.users();
        let mut changed = false;
        for pad in g.topo_order() {
            let Op::Pad(pp) = g.g[pad].op else { continue };
            let (Some(Some(x)), &[y]) = (
                g.g[pad].inputs.first().copied(),
                g.g[pad].outputs.as_slice(),
            ) else {
                continue;
            };
            let rank = g.value(x).shape.len();
            if pp.pad_mode() != Some(PadMode::Constant)
                || pp.value != 0.0
                || !(3..=5).contains(&rank)
            {
                continue;
            }
            // Only spatial axes, never negative.
            let spatial_only = (0..2).all(|a| pp.begin[a] == 0 && pp.end[a] == 0)
                && (2..rank).all(|a| pp.begin[a] >= 0 && pp.end[a] >= 0);
            let Some(next) = g.single_use(y, &users) else {
                continue;
            };
            if !spatial_only || g.g[next].inputs.first().copied().flatten() != Some(y) {
                continue;
            }
            let n = rank - 2;
            let fold = |begin: &mut [u32; 3], end: &mut [u32; 3]| {
                for i in 0..n {
                    begin[i] += pp.begin[i + 2] as u32;
                    end[i] += pp.end[i + 2] as u32;
                }
            };
            match &mut g.g[next].op {
                Op::Conv(c) if c.rank() == n => fold(&mut c.pad_begin, &mut c.pad_end),
                Op::Pool(p)
                    if p.pool_kind() == Some(PoolKind::Average)
                        && p.count_include_pad != 0
                        && p.rank() == n =>
                {
                    fold(&mut p.pad_begin, &mut p.pad_end)
                }
                _ => continue,
            }
            let mut ins = g.g[next].inputs.clone();
            ins[0] = Some(x);
            g.set_inputs(next, ins);
            g.merge_into(pad, Some(next));
            changed = true;
        }
        Ok(changed)
    }
}
