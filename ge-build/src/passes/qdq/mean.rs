//! TFLite's Mean as tf2onnx writes it — `DQ(x) → ReduceMean → Q` (a Keras
//! `GlobalAveragePooling2D` or `reduce_mean`) — recognized for `--int8-rounding tflite` as
//! `ge.internal:Mean` ([`OP`]): TFLite computes it on the int8 values with one
//! requantization, where onnxruntime's rules leave the ReduceMean in float. O(1) per node.

use super::replace::{per_tensor, triple};
use super::select::constant;
use super::{Index, code, is_op};
use crate::onnx::proto::{AttributeProto, NodeProto};

/// The internal op: inputs `x, x_scale, x_zp, y_scale, y_zp`, attributes `axes` and
/// `keepdims` (ReduceMean's), output the QuantizeLinear's.
pub const OP: &str = "Mean";

/// The node replacing ReduceMean `t`, with the DequantizeLinear and QuantizeLinear it takes
/// over, or `None`.
pub(super) fn rewrite(ix: &Index<'_>, t: usize) -> Option<(NodeProto, usize, usize)> {
    let n = ix.node(t);
    if !is_op(n, "ReduceMean") {
        return None;
    }
    let (d, q) = ix.dq_q_around(t)?;
    // Opset 18 moved the axes to input 1.
    let axes: Vec<i64> = match n.input.get(1).filter(|v| !v.is_empty()) {
        Some(v) => constant(ix, v)?.iter().map(|&a| a as i64).collect(),
        None => n
            .attribute
            .iter()
            .find(|a| a.name() == "axes")?
            .ints
            .clone(),
    };
    let (dn, qn) = (ix.node(d), ix.node(q));
    let (x, y) = (triple(dn), triple(qn));
    let t8 = ix.elem_type(&x[0]);
    if axes.is_empty()
        || !per_tensor(ix, &x, true)
        || !per_tensor(ix, &y, true)
        || t8 != ix.elem_type(qn.output.first()?)
        || !matches!(t8, Some(code::INT8 | code::UINT8))
    {
        return None;
    }
    let keepdims = n
        .attribute
        .iter()
        .find(|a| a.name() == "keepdims")
        .and_then(|a| a.i)
        .unwrap_or(1);
    let node = NodeProto {
        input: vec![
            x[0].clone(),
            x[1].clone(),
            x[2].clone(),
            y[1].clone(),
            y[2].clone(),
        ],
        output: qn.output.clone(),
        name: n.name.clone(),
        op_type: Some(OP.into()),
        domain: Some(crate::onnx::weight_only::DOMAIN.into()),
        attribute: vec![
            AttributeProto {
                name: Some("axes".into()),
                r#type: Some(7),
                ints: axes,
                ..AttributeProto::default()
            },
            super::replace::int_attr("keepdims", keepdims),
        ],
        ..NodeProto::default()
    };
    Some((node, d, q))
}
