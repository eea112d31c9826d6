//! Type legalization at import: ops whose kernels compute in f32 get f16/bf16 operands cast
//! up and their results cast back (one rounding per op, as an fp16 device accumulating in
//! fp32 would do).

use std::sync::Arc;

use ge_runtime::format::DType;

use crate::error::{CompileError, Result};
use crate::ir::{Graph, Node, Op, Value, ValueId, eval};
use crate::tensor::TensorData;

/// `data` converted to `to` by the device's Cast kernel.
pub fn cast_data(data: &TensorData, to: DType) -> Result<TensorData, ge_runtime::KernelError> {
    let mut v = eval(&Op::Cast, &[Some(data)], &[(to, data.dims.clone())])?;
    Ok(v.remove(0))
}

/// A value holding `id` converted to `to`: folded when `id` is constant, else a Cast node.
pub fn cast_value(
    g: &mut Graph,
    id: ValueId,
    to: DType,
    name: String,
    opset: i64,
) -> Result<ValueId> {
    let v = g.value(id).clone();
    if let Some(d) = &v.data {
        let data = cast_data(d, to).map_err(|e| CompileError::Node {
            node: name.clone(),
            op_type: "Cast".into(),
            opset,
            reason: format!("constant folding failed: {e}"),
        })?;
        return Ok(g.add_value(Value {
            name,
            dtype: to,
            shape: v.shape,
            producer: None,
            data: Some(Arc::new(data)),
        }));
    }
    let out = g.add_value(Value {
        name: name.clone(),
        dtype: to,
        shape: v.shape,
        producer: None,
        data: None,
    });
    g.add_node(Node {
        name,
        op_type: "Cast".into(),
        opset,
        op: Op::Cast,
        inputs: vec![Some(id)],
        outputs: vec![out],
    });
    Ok(out)
}
