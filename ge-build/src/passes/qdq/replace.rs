//! The QOperator node a selected group becomes (onnxruntime's `qdq_actions.cc`): the
//! DequantizeLinear inputs and the QuantizeLinear's scale and zero point moved onto one
//! `QLinear*` node that writes the QuantizeLinear's output. A group whose scales or zero
//! points are not constant initializers of the shape the QOperator op takes (per tensor;
//! per output channel for a weight) is left as it is.

use super::select::{Group, Kind, constant};
use super::{Index, attr_i};
use crate::onnx::proto::{AttributeProto, NodeProto};

/// `com.microsoft`, where onnxruntime's QLinear ops live.
const MS: &str = "com.microsoft";

/// The (value, scale, zero point) a DequantizeLinear or QuantizeLinear reads; the zero
/// point is `""` when absent.
pub(super) fn triple(n: &NodeProto) -> [String; 3] {
    let at = |i: usize| n.input.get(i).cloned().unwrap_or_default();
    [at(0), at(1), at(2)]
}

/// Elements of initializer `v` (`None`: not an initializer).
fn numel(ix: &Index<'_>, v: &str) -> Option<i64> {
    ix.init(v).map(|t| t.dims.iter().product())
}

/// True when the scale is constant, finite and positive: a malformed one is left to the
/// DequantizeLinear / QuantizeLinear importer, whose error names that node.
fn scale_ok(ix: &Index<'_>, t: &[String; 3]) -> bool {
    constant(ix, &t[1]).is_some_and(|v| v.iter().all(|s| s.is_finite() && *s > 0.0))
}

/// True when a DequantizeLinear's zero point (if any) has its quantized value's type (when
/// known; a QuantizeLinear's value is float and its zero point sets the type); a mismatch
/// is left to the DequantizeLinear importer, whose error names that node.
fn zp_type_ok(ix: &Index<'_>, t: &[String; 3]) -> bool {
    /// FLOAT, FLOAT16, DOUBLE, BFLOAT16: a QuantizeLinear's input, whatever its zero point.
    const FLOATS: [i32; 4] = [1, 10, 11, 16];
    match (t[2].is_empty(), ix.elem_type(&t[0])) {
        (false, Some(x)) if !FLOATS.contains(&x) => {
            ix.init(&t[2]).and_then(|z| z.data_type) == Some(x)
        }
        _ => true,
    }
}

/// A per-tensor scale and zero point (constant, one element each; the zero point may be
/// absent when `zp_optional`).
pub(super) fn per_tensor(ix: &Index<'_>, t: &[String; 3], zp_optional: bool) -> bool {
    let zp_ok = if t[2].is_empty() {
        zp_optional
    } else {
        numel(ix, &t[2]) == Some(1)
    };
    numel(ix, &t[1]) == Some(1) && zp_ok && scale_ok(ix, t) && zp_type_ok(ix, t)
}

/// A weight's scale: per tensor, or one per output channel along `axis` (the
/// DequantizeLinear's own axis must be that one).
fn per_channel(ix: &Index<'_>, dq: &NodeProto, t: &[String; 3], axis: usize) -> bool {
    if per_tensor(ix, t, true) {
        return true;
    }
    let Some(w) = ix.init(&t[0]) else {
        return false;
    };
    let rank = w.dims.len() as i64;
    let a = attr_i(dq, "axis").unwrap_or(1);
    let a = if a < 0 { a + rank } else { a };
    let n = w.dims.get(axis).copied();
    a == axis as i64
        && scale_ok(ix, t)
        && zp_type_ok(ix, t)
        && numel(ix, &t[1]) == n
        && (t[2].is_empty() || numel(ix, &t[2]) == n)
}

/// The activation's and the weight's (value, scale, zero point), in QOperator order.
fn operands(x: &[String; 3], w: &[String; 3]) -> Vec<String> {
    x.iter().chain(w).cloned().collect()
}

pub(super) fn int_attr(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(2),
        i: Some(v),
        ..AttributeProto::default()
    }
}

/// The QOperator node for `g` around target `n`, or `None` when its parameters do not fit.
pub(super) fn qoperator(ix: &Index<'_>, n: &NodeProto, g: &Group, opset: i64) -> Option<NodeProto> {
    let dq: Vec<Option<&NodeProto>> = g.dq.iter().map(|d| d.map(|i| ix.node(i))).collect();
    let tri: Vec<Option<[String; 3]>> = dq.iter().map(|d| d.map(triple)).collect();
    let q = g.q.map(|i| ix.node(i));
    let qt = q.map(triple);
    let out = match q {
        Some(q) => q.output.first()?.clone(),
        None => n.output.first()?.clone(),
    };
    let x = tri.first()?.clone()?;
    let mut attrs = n.attribute.clone();
    let (op, domain, inputs): (String, &str, Vec<String>) = match g.kind {
        Kind::Conv | Kind::MatMul => {
            let (w, wd) = (tri.get(1)?.clone()?, dq.get(1).copied()??);
            let axis = if g.kind == Kind::Conv { 0 } else { 1 };
            let y = qt?;
            if !per_tensor(ix, &x, true)
                || !per_channel(ix, wd, &w, axis)
                || !per_tensor(ix, &y, true)
            {
                return None;
            }
            let mut inputs = operands(&x, &w);
            inputs.extend([y[1].clone(), y[2].clone()]);
            let op = if g.kind == Kind::Conv {
                if let Some(Some(b)) = tri.get(2) {
                    inputs.push(b[0].clone());
                }
                "QLinearConv"
            } else {
                "QLinearMatMul"
            };
            (op.into(), "", inputs)
        }
        Kind::Gemm => {
            let (w, wd) = (tri.get(1)?.clone()?, dq.get(1).copied()??);
            let axis = if attr_i(n, "transB").unwrap_or(0) != 0 {
                0
            } else {
                1
            };
            if !per_tensor(ix, &x, true) || !per_channel(ix, wd, &w, axis) {
                return None;
            }
            let bias = tri
                .get(2)
                .cloned()
                .flatten()
                .map_or(String::new(), |b| b[0].clone());
            let mut inputs = operands(&x, &w);
            inputs.push(bias);
            if let Some(y) = &qt {
                if !per_tensor(ix, y, true) {
                    return None;
                }
                inputs.extend([y[1].clone(), y[2].clone()]);
            }
            attrs.retain(|a| matches!(a.name(), "alpha" | "transA" | "transB"));
            ("QGemm".into(), MS, inputs)
        }
        Kind::Unary | Kind::Binary => {
            let y = qt?;
            let mut inputs = Vec::new();
            for t in tri.iter().flatten() {
                if !per_tensor(ix, t, false) {
                    return None;
                }
                inputs.extend(t.iter().cloned());
            }
            if !per_tensor(ix, &y, false) {
                return None;
            }
            inputs.extend([y[1].clone(), y[2].clone()]);
            if n.op_type() == "Softmax" {
                attrs.retain(|a| a.name() != "opset");
                attrs.push(int_attr("opset", opset));
            }
            (format!("QLinear{}", n.op_type()), MS, inputs)
        }
        Kind::Variadic => {
            let y = qt?;
            if !per_tensor(ix, &y, false) {
                return None;
            }
            let mut inputs = vec![y[1].clone(), y[2].clone()];
            for t in tri.iter().flatten() {
                if !per_tensor(ix, t, false) {
                    return None;
                }
                inputs.extend(t.iter().cloned());
            }
            ("QLinearConcat".into(), MS, inputs)
        }
    };
    Some(NodeProto {
        input: inputs,
        output: vec![out],
        name: Some(n.name().to_string()),
        op_type: Some(op),
        domain: (!domain.is_empty()).then(|| domain.to_string()),
        attribute: attrs,
        ..NodeProto::default()
    })
}
