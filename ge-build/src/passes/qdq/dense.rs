//! A dense layer as tf2onnx writes TFLite's FullyConnected — `DQ(x) · DQ(w)`, then `+ DQ(bias
//! int32)`, a redundant Relu, a QuantizeLinear — recognized as one int8 layer
//! (`ge.internal:FullyConnected`, [`OP`]). With `--int8-rounding tflite` it is TFLite's one
//! int8 product with an int32 bias and one requantization; with `onnx` it is what
//! onnxruntime makes of it: its MatMul + Add fusion gives a Gemm whose QDQ group becomes a
//! QGemm (int32 bias in the accumulator; see `onnx::ops::qgemm::fully_connected`).
//! O(1) per MatMul.

use super::select::{Group, Kind, output_q, types_agree};
use super::{Index, code, is_op};
use crate::onnx::proto::NodeProto;

/// The internal op: inputs `x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias`
/// (QLinearMatMul's, then the int32 bias), output the QuantizeLinear's.
pub const OP: &str = "FullyConnected";

/// The group around MatMul `t` — DequantizeLinear of x, of w and of the bias (its `dq`), a
/// redundant Relu (`clip`) and the QuantizeLinear (`q`) — and the bias Add, or `None`.
pub(super) fn group(ix: &Index<'_>, t: usize) -> Option<(Group, usize)> {
    let n = ix.node(t);
    if !is_op(n, "MatMul") || n.input.len() != 2 {
        return None;
    }
    let x = ix.producer_of(&n.input[0], "DequantizeLinear")?;
    let w = ix.producer_of(&n.input[1], "DequantizeLinear")?;
    let wt = ix.init(ix.node(w).input.first()?)?;
    if wt.dims.len() != 2 {
        return None;
    }
    let out = n.output.first()?.as_str();
    let [add] = ix.consumers(out) else {
        return None;
    };
    let an = ix.node(*add);
    if ix.is_output(out) || !is_op(an, "Add") || an.input.len() != 2 {
        return None;
    }
    let other = if an.input[0] == out {
        &an.input[1]
    } else {
        &an.input[0]
    };
    let b = ix.producer_of(other, "DequantizeLinear")?;
    let bt = ix.init(ix.node(b).input.first()?)?;
    let cols = wt.dims[1];
    if bt.data_type != Some(code::INT32) || bt.dims.iter().product::<i64>() != cols {
        return None;
    }
    let (clip, q) = output_q(ix, *add)?;
    let g = Group {
        kind: Kind::MatMul,
        dq: vec![Some(x), Some(w), Some(b)],
        clip,
        q: Some(q?),
    };
    Some((g, *add))
}

/// True when onnxruntime's QDQ Gemm selector takes the group (with int8 allowed): its
/// element-type rules ([`types_agree`]; the layout checks are `replace::qoperator`'s).
pub(super) fn onnxruntime_fuses(ix: &Index<'_>, matmul: &NodeProto, g: &Group) -> bool {
    types_agree(ix, matmul, g)
}
