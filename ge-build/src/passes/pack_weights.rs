//! Pre-packs constant weights into the order the host tiles read, so `run` never packs
//! weights: each Conv's f32 weights into panels of filters ([`WeightLayout::Panels`]; the
//! direct path's workspace shrinks from all of the panels to one partial panel, and the GEMM
//! path reads one contiguous panel per tile instead of six filter rows), and each GemmW8's
//! constant int8 B into K blocks of column panels ([`GEMM_B_PANELS`]: it dequantizes
//! contiguous panel rows instead of 16 bytes from each of `kc` rows).
//!
//! It runs last (after the precision pass): every pass before it reads weights in ONNX order.
//! Same byte count (and shape, but for a transposed Gemm B, stored `[K, N]`), so planning
//! and the cost model see no change. Skipped for
//! depthwise convs (one filter per group: the layouts coincide), non-f32 convs (the half
//! kernels read ONNX order), and weights with another reader. O(V + E + weight bytes).
//!
//! A Gemm's (or a MatMul's) constant f32 B, when A has several rows, goes into the same
//! order and the node into a GemmPacked task, whose kernel reads B's panels where they lie:
//! `run` no longer packs B (a transposed B was packed by strided gathers on every run). Its
//! own kind keeps that code out of devices that link only the plain Gemm.

use std::collections::HashMap;
use std::sync::Arc;

use ge_runtime::format::{
    DType, GEMM_B_PANELS, GemmParams, WeightLayout, pack_gemm_b, pack_panels,
};
use ge_sim::target::PLAIN_GEMM;
use petgraph::stable_graph::NodeIndex;

use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op, ValueId};
use crate::tensor::TensorData;

/// Each value's readers ([`Graph::users`]).
type Users = HashMap<ValueId, Vec<NodeIndex>>;

/// Conv, Gemm, MatMul and GemmW8 weights → tile panels.
pub struct PackWeights;

impl Pass for PackWeights {
    pass_info!("pack_weights", O1);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let users = g.users();
        let mut changed = false;
        for n in g.topo_order() {
            match g.g[n].op {
                Op::GemmW8(p) => {
                    changed |= pack_gemm_w8(g, n, p, &users);
                    continue;
                }
                Op::Gemm(p) => {
                    changed |= pack_gemm_f32(g, n, p, &users);
                    continue;
                }
                Op::MatMul => {
                    changed |= pack_gemm_f32(g, n, PLAIN_GEMM, &users);
                    continue;
                }
                _ => {}
            }
            let Op::Conv(p) = g.g[n].op else { continue };
            let (Some(Some(x)), Some(Some(w))) = (
                g.g[n].inputs.first().copied(),
                g.g[n].inputs.get(1).copied(),
            ) else {
                continue;
            };
            if p.weight_layout() != Some(WeightLayout::Oihw)
                || g.value(x).dtype != DType::F32
                || !sole_reader(g, n, w, &users)
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

/// Whether A (`a`, with `p`'s transpose) has at most one row, or a shape that says none:
/// the GEMM kernels then take the matrix-vector path, which reads B unpacked.
fn one_row(a: &crate::ir::Value, p: GemmParams) -> bool {
    let rows = match (p.trans_a != 0, &a.shape[..]) {
        (true, [_, m]) => *m,
        (false, [lead @ .., k]) if *k > 0 && !lead.is_empty() => a.numel() / k,
        _ => return true,
    };
    rows <= 1
}

/// Packs GemmW8 node `n`'s (with `p`) constant int8 B when A has more than one row (one
/// row — a dense layer at batch 1 — runs the GEMV, which reads B row-major, as ONNX stores
/// it, a contiguous row at a time); returns whether it did.
fn pack_gemm_w8(g: &mut Graph, n: NodeIndex, p: GemmParams, users: &Users) -> bool {
    let (Some(Some(a)), Some(Some(b))) = (
        g.g[n].inputs.first().copied(),
        g.g[n].inputs.get(1).copied(),
    ) else {
        return false;
    };
    if p.b_panels() || p.b_transposed() || one_row(g.value(a), p) || !sole_reader(g, n, b, users) {
        return false;
    }
    let Some(data) = g.constant(b) else {
        return false;
    };
    let [k, cols] = data.dims[..] else {
        return false;
    };
    if !matches!(data.dtype, DType::I8 | DType::U8)
        || k == 0
        || !store_packed_b(g, b, k, cols, false)
    {
        return false;
    }
    g.g[n].op = Op::GemmW8(GemmParams {
        trans_b: GEMM_B_PANELS,
        ..p
    });
    true
}

/// Packs the constant f32 B of Gemm (or MatMul with a 2-D B, which becomes that Gemm) node
/// `n` (with `p`) for the GemmPacked kernel, when A has more than one row: a single row
/// takes the matrix-vector path, which reads B as ONNX stores it. Returns whether it did.
fn pack_gemm_f32(g: &mut Graph, n: NodeIndex, p: GemmParams, users: &Users) -> bool {
    let node = &g.g[n];
    let (Some(Some(a)), Some(Some(b)), &[y]) = (
        node.inputs.first().copied(),
        node.inputs.get(1).copied(),
        &node.outputs[..],
    ) else {
        return false;
    };
    let (av, yv) = (g.value(a), g.value(y));
    if p.b_panels()
        || one_row(av, p)
        || av.dtype != DType::F32
        || yv.dtype != DType::F32
        || yv.shape.len() != av.shape.len()
        || (matches!(node.op, Op::MatMul) && node.inputs.len() != 2)
        || !sole_reader(g, n, b, users)
    {
        return false;
    }
    let Some(data) = g.constant(b) else {
        return false;
    };
    let trans = p.b_transposed();
    let (k, cols) = match data.dims[..] {
        [r, c] if trans => (c, r),
        [r, c] => (r, c),
        _ => return false,
    };
    if data.dtype != DType::F32 || k == 0 || cols == 0 || !store_packed_b(g, b, k, cols, trans) {
        return false;
    }
    g.g[n].op = Op::Gemm(GemmParams {
        trans_b: GEMM_B_PANELS,
        ..p
    });
    true
}

/// Stores constant `b` — op(B) `k × cols`, `[cols, k]` in the file when `trans` — in
/// [`pack_gemm_b`]'s order with dims `[k, cols]`, element bytes moved as they are (int8 or
/// f32). Returns whether it did.
fn store_packed_b(g: &mut Graph, b: ValueId, k: usize, cols: usize, trans: bool) -> bool {
    let Some(data) = g.constant(b) else {
        return false;
    };
    if data.numel() != k * cols {
        return false;
    }
    let mut packed = vec![0u8; data.bytes.len()];
    match data.dtype.size() {
        1 => pack_gemm_b(&data.bytes, k, cols, trans, &mut packed),
        4 => {
            let (src, _) = data.bytes.as_chunks::<4>();
            let (dst, _) = packed.as_chunks_mut::<4>();
            pack_gemm_b(src, k, cols, trans, dst);
        }
        _ => return false,
    }
    let Ok(t) = TensorData::new(data.dtype, vec![k, cols], packed) else {
        return false;
    };
    let bv = g.value_mut(b);
    bv.shape = vec![k, cols];
    bv.data = Some(Arc::new(t));
    true
}

/// Whether node `n` is `w`'s only reader, through one input: packing `w` in place then
/// changes what no other node (nor another input of `n`) reads.
fn sole_reader(g: &Graph, n: NodeIndex, w: ValueId, users: &Users) -> bool {
    g.single_use(w, users) == Some(n)
        && g.g[n].inputs.iter().filter(|&&i| i == Some(w)).count() == 1
}
