//! QDQ recognition: `DequantizeLinear → op → QuantizeLinear` groups of a QDQ-format model
//! rewritten into the QOperator ops that onnxruntime's QDQ transformer
//! (`qdq_transformer/selectors_actions`) turns them into, before import, so ge computes them
//! the way onnxruntime's int8 kernels do (bit for bit on the quantized corpus,
//! `tests/tests/quant_corpus.rs`):
//! - Conv → `QLinearConv`, MatMul → `QLinearMatMul`, Gemm → `com.microsoft:QGemm` (int8
//!   tasks, [`crate::onnx`]'s qconv/qgemm lowerings; a redundant Relu/Clip before the
//!   QuantizeLinear is dropped, as onnxruntime does);
//! - Add/Mul, Concat, AveragePool/GlobalAveragePool, Sigmoid/LeakyRelu, Softmax → their
//!   `com.microsoft:QLinear*` ops.
//!
//! It runs at import, at every opt level: the int8 weights and the scales exist as such
//! only in the ONNX graph (import decomposes Q/DQ into float arithmetic), and which groups
//! onnxruntime fuses decides its rounding, so O0 must fuse the same ones. Groups it does
//! not select keep their DequantizeLinear/QuantizeLinear nodes (float tasks), as in
//! onnxruntime. Pairs of equal parameters around ops that only move values (MaxPool,
//! Reshape, Flatten, Transpose, Squeeze, Unsqueeze) are dropped, as onnxruntime drops
//! them: the op then runs on the 8-bit values, exactly.
//!
//! Cost: one pass over the nodes to index producers and consumers, then O(degree) per
//! node: O(nodes + edges).

pub mod dense;
pub mod mean;
mod replace;
mod select;
pub mod weight_only;

use std::collections::{HashMap, HashSet};

use crate::onnx::proto::{GraphProto, NodeProto, TensorProto, ValueInfoProto, type_proto};

/// ONNX element type codes the rules look at.
pub(crate) mod code {
    pub const UINT8: i32 = 2;
    pub const INT8: i32 = 3;
    pub const INT32: i32 = 6;
}

/// What the rules need to know of the graph: who produces and who consumes each value.
pub(crate) struct Index<'g> {
    nodes: &'g [NodeProto],
    producer: HashMap<&'g str, usize>,
    /// Consumers of a value, one entry per input slot (onnxruntime's edge count).
    consumers: HashMap<&'g str, Vec<usize>>,
    outputs: HashSet<&'g str>,
    inits: HashMap<&'g str, &'g TensorProto>,
    /// Element types the graph declares (its inputs, outputs and `value_info`).
    declared: HashMap<&'g str, i32>,
}

impl<'g> Index<'g> {
    fn new(gp: &'g GraphProto) -> Index<'g> {
        let mut producer = HashMap::new();
        let mut consumers: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, n) in gp.node.iter().enumerate() {
            for o in n.output.iter().filter(|o| !o.is_empty()) {
                producer.insert(o.as_str(), i);
            }
            for v in n.input.iter().filter(|v| !v.is_empty()) {
                consumers.entry(v.as_str()).or_default().push(i);
            }
        }
        Index {
            nodes: &gp.node,
            producer,
            consumers,
            outputs: gp.output.iter().map(|o| o.name()).collect(),
            inits: gp.initializer.iter().map(|t| (t.name(), t)).collect(),
            declared: gp
                .input
                .iter()
                .chain(&gp.output)
                .chain(&gp.value_info)
                .filter_map(|vi| Some((vi.name(), declared_elem_type(vi)?)))
                .collect(),
        }
    }

    fn node(&self, i: usize) -> &'g NodeProto {
        &self.nodes[i]
    }

    /// The node producing `v` when it is a default-domain `op`.
    fn producer_of(&self, v: &str, op: &str) -> Option<usize> {
        let &p = self.producer.get(v)?;
        is_op(self.node(p), op).then_some(p)
    }

    /// The DequantizeLinear feeding node `t`'s first input and the one QuantizeLinear that
    /// alone consumes its first output (not a graph output): the pair around a single-input
    /// op.
    fn dq_q_around(&self, t: usize) -> Option<(usize, usize)> {
        let n = self.node(t);
        let d = self.producer_of(n.input.first()?, "DequantizeLinear")?;
        let out = n.output.first()?.as_str();
        let [q] = self.consumers(out) else {
            return None;
        };
        (!self.is_output(out) && is_op(self.node(*q), "QuantizeLinear")).then_some((d, *q))
    }

    fn consumers(&self, v: &str) -> &[usize] {
        self.consumers.get(v).map_or(&[], Vec::as_slice)
    }

    fn is_output(&self, v: &str) -> bool {
        self.outputs.contains(v)
    }

    fn init(&self, v: &str) -> Option<&'g TensorProto> {
        self.inits.get(v).copied()
    }

    /// The element type of `v` when known: an initializer's, a declared one (a graph
    /// input's, a `value_info`'s), a QuantizeLinear's output (its zero point's type, else
    /// `output_dtype`, else uint8), or, through ops that only move values (Reshape,
    /// Transpose, …), their data input's — so `input → Transpose → DequantizeLinear`, as
    /// tf2onnx writes a TFLite model's first layer, is known to be 8-bit.
    fn elem_type(&self, v: &str) -> Option<i32> {
        let mut v = v;
        // Each step walks one producer up a chain of value-moving ops: at most one step
        // per node, so a (malformed) cycle cannot loop forever.
        for _ in 0..=self.nodes.len() {
            if let Some(t) = self.init(v) {
                return t.data_type;
            }
            if let Some(&t) = self.declared.get(v) {
                return Some(t);
            }
            let &p = self.producer.get(v)?;
            let n = self.node(p);
            if is_op(n, "QuantizeLinear") {
                return match n.input.get(2).filter(|z| !z.is_empty()) {
                    Some(z) => self.init(z)?.data_type,
                    None => Some(
                        attr_i(n, "output_dtype")
                            .filter(|&d| d != 0)
                            .map_or(code::UINT8, |d| d as i32),
                    ),
                };
            }
            if !select::moves_values(n) {
                return None;
            }
            v = n.input.first()?;
        }
        None
    }
}

/// The tensor element type a `ValueInfoProto` declares (0, undefined, is `None`).
fn declared_elem_type(vi: &ValueInfoProto) -> Option<i32> {
    match vi.r#type.as_ref()?.value.as_ref()? {
        type_proto::Value::TensorType(t) => t.elem_type.filter(|&e| e != 0),
        _ => None,
    }
}

/// True for a default-domain node of type `op`.
fn is_op(n: &NodeProto, op: &str) -> bool {
    matches!(n.domain(), "" | "ai.onnx") && n.op_type() == op
}

/// An integer attribute of `n`.
fn attr_i(n: &NodeProto, name: &str) -> Option<i64> {
    n.attribute
        .iter()
        .find(|a| a.name() == name)
        .and_then(|a| a.i)
}

/// The nodes with every selected group replaced by its QOperator node (in the target's
/// place), or `None` when no group was selected. `opset` is the model's default-domain
/// opset (QLinearSoftmax records it). A dense layer as tf2onnx writes it ([`dense`]) is
/// one group in both roundings (onnxruntime fuses MatMul + Add into a Gemm first); with
/// `--int8-rounding tflite`, TFLite's Mean ([`mean`]) groups are recognized too.
pub fn recognize(
    gp: &GraphProto,
    opset: i64,
    rounding: crate::Int8Rounding,
) -> Option<Vec<NodeProto>> {
    let ix = Index::new(gp);
    let mut replaced: HashMap<usize, NodeProto> = HashMap::new();
    let mut removed: HashSet<usize> = HashSet::new();
    // Consumer edges of each DequantizeLinear that fused groups took over.
    let mut absorbed: HashMap<usize, usize> = HashMap::new();
    for (i, n) in gp.node.iter().enumerate() {
        if let Some((d, q)) = select::droppable(&ix, i) {
            let mut node = n.clone();
            node.input[0] = gp.node[d].input.first().cloned().unwrap_or_default();
            node.output = gp.node[q].output.clone();
            *absorbed.entry(d).or_default() += 1;
            removed.insert(q);
            replaced.insert(i, node);
            continue;
        }
        if let Some((group, add)) = dense::group(&ix, i)
            && (rounding == crate::Int8Rounding::Tflite || dense::onnxruntime_fuses(&ix, n, &group))
            && let Some(mut node) = replace::qoperator(&ix, n, &group, opset)
        {
            // QLinearMatMul's inputs, then the bias's int32 values.
            let bias = group.dq[2].and_then(|b| ix.node(b).input.first().cloned());
            node.input.push(bias.unwrap_or_default());
            node.op_type = Some(dense::OP.into());
            node.domain = Some(crate::onnx::weight_only::DOMAIN.into());
            for &d in group.dq.iter().flatten() {
                *absorbed.entry(d).or_default() += 1;
            }
            removed.insert(add);
            removed.extend(group.clip);
            removed.extend(group.q);
            replaced.insert(i, node);
            continue;
        }
        if rounding == crate::Int8Rounding::Tflite
            && let Some((node, d, q)) = mean::rewrite(&ix, i)
        {
            *absorbed.entry(d).or_default() += 1;
            removed.insert(q);
            replaced.insert(i, node);
            continue;
        }
        let Some(group) = select::group(&ix, i) else {
            continue;
        };
        let Some(node) = replace::qoperator(&ix, n, &group, opset) else {
            continue;
        };
        for &d in group.dq.iter().flatten() {
            *absorbed.entry(d).or_default() += 1;
        }
        removed.extend(group.clip);
        removed.extend(group.q);
        replaced.insert(i, node);
    }
    if replaced.is_empty() {
        return None;
    }
    // A DequantizeLinear goes when every consumer it had was fused (else it stays for the
    // others, as onnxruntime's copy would).
    for (d, taken) in absorbed {
        let out = gp.node[d].output.first().map_or("", String::as_str);
        if taken == ix.consumers(out).len() && !ix.is_output(out) {
            removed.insert(d);
        }
    }
    let mut out = Vec::with_capacity(gp.node.len());
    for (i, n) in gp.node.iter().enumerate() {
        if let Some(r) = replaced.remove(&i) {
            out.push(r);
        } else if !removed.contains(&i) {
            out.push(n.clone());
        }
    }
    Some(out)
}
