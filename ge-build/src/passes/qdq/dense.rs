//! TFLite's FullyConnected as tf2onnx writes it — `DQ(x) · DQ(w)`, then `+ DQ(bias int32)`,
//! a redundant Relu, a QuantizeLinear — recognized as one int8 layer for
//! `--int8-rounding tflite` (`ge.internal:FullyConnected`, [`OP`]): TFLite computes it as
//! one int8 product with an int32 bias and one requantization, where onnxruntime's rules
//! (which leave a MatMul whose output is not quantized in float) give other values.
//! O(1) per MatMul.

use super::select::{Group, Kind, output_q};
use super::{Index, code, is_op};

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
