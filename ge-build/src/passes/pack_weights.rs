//! Pre-packs each Conv's constant f32 weights into the panel order the host tiles read
//! ([`WeightLayout::Panels`]), so `run` never packs weights: the blob carries them ready, the
//! direct path's workspace shrinks from all of the panels to one partial panel, and the GEMM
//! path reads one contiguous panel per tile instead of six filter rows.
//!
//! It runs last (after the precision pass): every pass before it reads weights in ONNX order.
//! Same shape and byte count, so planning and the cost model see no change. Skipped for
//! depthwise convs (one filter per group: the layouts coincide), non-f32 convs (the half
//! kernels read ONNX order), and weights with another reader. O(V + E + weight bytes).

use std::sync::Arc;

use ge_runtime::format::{DType, WeightLayout, pack_panels};

use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op};
use crate::tensor::TensorData;

/// Conv weights → tile panels.
pub struct PackWeights;

impl Pass for PackWeights {
    pass_info!("pack_weights", O1);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let users = g.users();
        let mut changed = false;
        for n in g.topo_order() {
            let Op::Conv(p) = g.g[n].op else { continue };
            let (Some(Some(x)), Some(Some(w))) = (
                g.g[n].inputs.first().copied(),
                g.g[n].inputs.get(1).copied(),
            ) else {
                continue;
            };
            if p.weight_layout() != Some(WeightLayout::Oihw)
                || g.value(x).dtype != DType::F32
                || g.single_use(w, &users) != Some(n)
                || g.g[n].inputs.iter().filter(|&&i| i == Some(w)).count() != 1
            {
                continue;
            }
            let Some(data) = g.constant(w) else { continue };
            let groups = p.group as usize;
            let (m, k) = match data.dims.split_first() {
                Some((&m, rest)) => (m, rest.iter().product::<usize>()),
                None => continue,
            };
            if data.dtype != DType::F32
                || k == 0
                || groups == 0
                || m % groups != 0
                || m / groups <= 1
            {
                continue;
            }
            let rows = m / groups;
            let src = data.to_f32_vec();
            if src.len() != m * k {
                continue;
            }
            let mut packed = vec![0.0f32; src.len()];
            for (s, d) in src
                .chunks_exact(rows * k)
                .zip(packed.chunks_exact_mut(rows * k))
            {
                pack_panels(s, rows, k, d);
            }
            let Ok(t) = TensorData::from_elements(DType::F32, data.dims.clone(), &packed) else {
                continue;
            };
            g.value_mut(w).data = Some(Arc::new(t));
            g.g[n].op = Op::Conv(p.with_weight_layout(WeightLayout::Panels));
            changed = true;
        }
        Ok(changed)
    }
}
