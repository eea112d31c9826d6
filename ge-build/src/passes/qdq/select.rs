//! Which groups are fused: onnxruntime's node-group selectors (`qdq_selectors.cc`), so ge
//! fuses exactly the groups onnxruntime does. A group is the target, a DequantizeLinear
//! on every input, and one QuantizeLinear as the only consumer of its
//! output (optionally behind a Relu/Clip that the QuantizeLinear's range makes
//! redundant); the 8-bit types must agree as each selector requires.
//!
//! The selectors mirror onnxruntime's int8 configuration: its CPU provider on ARM, and on
//! x86 with the session option `session.qdqisint8allowed = 1`. On x86 by default
//! onnxruntime first rewrites int8 Q/DQ pairs to uint8 (`QDQS8ToU8Transformer`) and keeps
//! Conv/MatMul groups with int8 activations in float; those groups are then not int8
//! arithmetic at all (the float convolution approximates the integer result ge computes),
//! so the int8 configuration is the one ge's outputs are held to, bit for bit.

use super::{Index, code, is_op};
use crate::onnx::proto::NodeProto;
use crate::tensor::decode_tensor;

/// The selector families.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Conv,
    MatMul,
    Gemm,
    /// AveragePool, GlobalAveragePool, LeakyRelu, Sigmoid, Softmax.
    Unary,
    /// Add, Mul.
    Binary,
    /// Concat.
    Variadic,
}

/// The selector family of a default-domain node.
pub(super) fn kind(n: &NodeProto) -> Option<Kind> {
    if !matches!(n.domain(), "" | "ai.onnx") {
        return None;
    }
    Some(match n.op_type() {
        "Conv" => Kind::Conv,
        "MatMul" => Kind::MatMul,
        "Gemm" => Kind::Gemm,
        "AveragePool" | "GlobalAveragePool" | "LeakyRelu" | "Sigmoid" | "Softmax" => Kind::Unary,
        "Add" | "Mul" => Kind::Binary,
        "Concat" => Kind::Variadic,
        _ => return None,
    })
}

/// A selected group (node indices).
pub(super) struct Group {
    pub kind: Kind,
    /// The DequantizeLinear feeding each input slot (`None`: an absent optional input).
    pub dq: Vec<Option<usize>>,
    /// A Relu/Clip between the target and its QuantizeLinear, dropped.
    pub clip: Option<usize>,
    /// The QuantizeLinear (absent only for a Gemm with a float output).
    pub q: Option<usize>,
}

fn is_q8(t: Option<i32>) -> bool {
    matches!(t, Some(code::UINT8 | code::INT8))
}

/// The group around node `t`, or `None` when onnxruntime would not fuse it.
pub(super) fn group(ix: &Index<'_>, t: usize) -> Option<Group> {
    let n = ix.node(t);
    let kind = kind(n)?;
    let mut dq = Vec::with_capacity(n.input.len());
    for v in &n.input {
        if v.is_empty() {
            dq.push(None);
            continue;
        }
        // A DequantizeLinear shared with other consumers is fine: onnxruntime's
        // EnsureUniqueDQForNodeUnit gives each consumer its own copy first.
        dq.push(Some(ix.producer_of(v, "DequantizeLinear")?));
    }
    let count = dq.iter().flatten().count();
    let arity_ok = match kind {
        Kind::Unary => count == 1,
        Kind::Binary | Kind::MatMul => count == 2,
        Kind::Conv | Kind::Gemm => (2..=3).contains(&count) && dq[0].is_some() && dq[1].is_some(),
        Kind::Variadic => count >= 1,
    };
    if !arity_ok || n.output.iter().skip(1).any(|o| !o.is_empty()) {
        return None;
    }
    let (clip, q) = output_q(ix, t)?;
    if q.is_none() && kind != Kind::Gemm {
        return None;
    }
    let g = Group { kind, dq, clip, q };
    types_agree(ix, n, &g).then_some(g)
}

/// The QuantizeLinear consuming the target's output (through a redundant Relu/Clip), `None`
/// inside when the output is used unquantized (a graph output included: a Gemm's float
/// output); `None` when the group cannot be formed.
pub(super) fn output_q(ix: &Index<'_>, t: usize) -> Option<(Option<usize>, Option<usize>)> {
    let out = ix.node(t).output.first()?.as_str();
    let users = ix.consumers(out);
    let q_of = |v: &str, users: &[usize]| -> Option<Option<usize>> {
        let qs: Vec<usize> = users
            .iter()
            .copied()
            .filter(|&u| is_op(ix.node(u), "QuantizeLinear"))
            .collect();
        match qs.len() {
            0 => Some(None),
            1 if users.len() == 1 && !ix.is_output(v) => Some(Some(qs[0])),
            _ => None,
        }
    };
    if let [c] = users {
        let cn = ix.node(*c);
        if (is_op(cn, "Relu") || is_op(cn, "Clip")) && !ix.is_output(out) {
            let co = cn.output.first()?.as_str();
            let cu = ix.consumers(co);
            if cu.len() == 1 && !ix.is_output(co) {
                let q = q_of(co, cu)??;
                return redundant(ix, cn, ix.node(q)).then_some((Some(*c), Some(q)));
            }
        }
    }
    Some((None, q_of(out, users)?))
}

/// The values of a constant (initializer) `v` as f64.
pub(super) fn constant(ix: &Index<'_>, v: &str) -> Option<Vec<f64>> {
    let t = ix.init(v)?;
    decode_tensor(t, None).ok()?.to_f64_vec().ok()
}

/// onnxruntime's `IsClipMadeRedundantByQ`: the QuantizeLinear's saturation range lies
/// inside the Relu's / Clip's, so the clamp changes nothing.
fn redundant(ix: &Index<'_>, clip: &NodeProto, q: &NodeProto) -> bool {
    let Some(dt) = ix.elem_type(q.output.first().map_or("", String::as_str)) else {
        return false;
    };
    let (qmin, qmax) = if dt == code::INT8 {
        (-128.0, 127.0)
    } else {
        (0.0, 255.0)
    };
    let scalar = |i: usize| -> Option<f64> {
        match q.input.get(i).filter(|s| !s.is_empty()) {
            None => Some(0.0),
            Some(s) => constant(ix, s).filter(|v| v.len() == 1).map(|v| v[0]),
        }
    };
    let (Some(s), Some(z)) = (scalar(1), scalar(2)) else {
        return false;
    };
    if !(is_q8(Some(dt)) && s.is_finite() && s > 0.0) {
        return false;
    }
    let (lo, hi) = if clip.op_type() == "Relu" {
        (0.0, f64::INFINITY)
    } else {
        match clip_bounds(ix, clip) {
            Some(b) => b,
            None => return false,
        }
    };
    lo <= (qmin - z) * s && hi >= (qmax - z) * s
}

/// A Clip's constant bounds (inputs from opset 11, attributes before).
fn clip_bounds(ix: &Index<'_>, clip: &NodeProto) -> Option<(f64, f64)> {
    let attr = |name: &str| {
        clip.attribute
            .iter()
            .find(|a| a.name() == name)
            .and_then(|a| a.f)
    };
    let bound = |i: usize, attr_v: Option<f32>, none: f64| -> Option<f64> {
        match clip.input.get(i).filter(|s| !s.is_empty()) {
            Some(s) => constant(ix, s).filter(|v| v.len() == 1).map(|v| v[0]),
            None => Some(attr_v.map_or(none, f64::from)),
        }
    };
    Some((
        bound(1, attr("min"), f64::NEG_INFINITY)?,
        bound(2, attr("max"), f64::INFINITY)?,
    ))
}

/// The selectors' element-type rules, as onnxruntime applies them when int8 is allowed
/// (no S8 → U8 rewrite beforehand; int8 activations accepted by the Conv and MatMul
/// selectors).
pub(super) fn types_agree(ix: &Index<'_>, n: &NodeProto, g: &Group) -> bool {
    let dt = |slot: usize| -> Option<i32> {
        let d = ix.node((*g.dq.get(slot)?)?);
        ix.elem_type(d.input.first()?)
    };
    let out = g.q.and_then(|q| ix.elem_type(ix.node(q).output.first()?));
    let a = dt(0);
    match g.kind {
        Kind::Unary | Kind::Binary | Kind::Variadic => {
            is_q8(a) && (0..g.dq.len()).all(|i| dt(i) == a) && out == a
        }
        // One rule for the three (onnxruntime's Conv, MatMul and Gemm selectors agree once
        // int8 is allowed): int8 activations need int8 weights, the output has the
        // activations' type (only a Gemm may have none: `group` demands a QuantizeLinear of
        // the others), a bias is int32 and, on a Gemm, taken with beta 1.
        Kind::Conv | Kind::MatMul | Kind::Gemm => {
            let w = dt(1);
            let beta = n
                .attribute
                .iter()
                .find(|x| x.name() == "beta")
                .and_then(|x| x.f)
                .unwrap_or(1.0);
            let bias_ok = g.dq.get(2).copied().flatten().is_none()
                || (dt(2) == Some(code::INT32) && beta == 1.0);
            is_q8(a)
                && is_q8(w)
                && (a != Some(code::INT8) || w == a)
                && (g.q.is_none() || out == a)
                && bias_ok
        }
    }
}

/// Ops that only move or select values: a DequantizeLinear → op → QuantizeLinear group
/// around one of them with the same scale and zero point on both sides is the op on the
/// 8-bit values (onnxruntime's `DropQDQNodesRules`; exact, the order of values being kept).
pub(super) fn moves_values(n: &NodeProto) -> bool {
    matches!(n.domain(), "" | "ai.onnx")
        && matches!(
            n.op_type(),
            "MaxPool" | "Reshape" | "Flatten" | "Transpose" | "Squeeze" | "Unsqueeze"
        )
}

/// The (DequantizeLinear, QuantizeLinear) around node `t` that can be dropped: `t` moves
/// values, its data input is the DequantizeLinear's output and its only output feeds one
/// QuantizeLinear alone, and both use equal constant per-tensor scale and zero point.
pub(super) fn droppable(ix: &Index<'_>, t: usize) -> Option<(usize, usize)> {
    let n = ix.node(t);
    if !moves_values(n) || n.output.iter().skip(1).any(|o| !o.is_empty()) {
        return None;
    }
    // MaxPool's optional Indices output rules it out (checked above); a Reshape's shape
    // and the like stay as they are.
    let (d, q) = ix.dq_q_around(t)?;
    let params = |node: &NodeProto| -> Option<(f64, f64, Option<i32>)> {
        let s = constant(ix, node.input.get(1)?)?;
        let (z, zt) = match node.input.get(2).filter(|z| !z.is_empty()) {
            Some(z) => (constant(ix, z)?, ix.init(z)?.data_type),
            None => (vec![0.0], Some(code::UINT8)),
        };
        (s.len() == 1 && z.len() == 1 && s[0].is_finite() && s[0] > 0.0).then(|| (s[0], z[0], zt))
    };
    let (dn, qn) = (ix.node(d), ix.node(q));
    let same = params(dn)? == params(qn)?;
    let dq_type = ix.elem_type(dn.input.first()?);
    (same && is_q8(dq_type) && dq_type == params(qn)?.2).then_some((d, q))
}
