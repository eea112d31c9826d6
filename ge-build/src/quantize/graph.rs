//! Lookups on an ONNX graph that the quantizer's steps share: initializers by name, the
//! consumers of each value, unique new names. Each is built in O(nodes + initializers).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use ge_runtime::format::DType;

use crate::error::{CompileError, Result};
use crate::onnx::NodeCtx;
use crate::onnx::proto::{GraphProto, NodeProto, TensorProto};
use crate::tensor::{TensorData, decode_tensor};

/// The index of each initializer by name.
pub fn initializers(g: &GraphProto) -> HashMap<String, usize> {
    g.initializer
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name().to_string(), i))
        .collect()
}

/// The indices of the nodes reading each value (a node reading it twice counts twice).
pub fn consumers(g: &GraphProto) -> HashMap<String, Vec<usize>> {
    let mut m: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, n) in g.node.iter().enumerate() {
        for v in n.input.iter().filter(|v| !v.is_empty()) {
            m.entry(v.clone()).or_default().push(i);
        }
    }
    m
}

/// The index of the node writing each value.
pub(crate) fn producers(g: &GraphProto) -> HashMap<&str, usize> {
    g.node
        .iter()
        .enumerate()
        .flat_map(|(i, n)| n.output.iter().map(move |o| (o.as_str(), i)))
        .collect()
}

/// The graph's output names.
pub fn outputs(g: &GraphProto) -> HashSet<String> {
    g.output.iter().map(|o| o.name().to_string()).collect()
}

/// The node as an importer sees it (attributes, errors naming it).
pub fn ctx(node: &NodeProto, opset: i64) -> NodeCtx<'_> {
    NodeCtx {
        node,
        opset,
        int8_rounding: crate::Int8Rounding::Onnx,
        max_tensor_bytes: None,
        max_fold_bytes: None,
        inputs: Vec::new(),
    }
}

/// The f32 value of initializer `t`, or `None` when it holds another type.
pub fn f32_value(t: &TensorProto, model_dir: Option<&Path>) -> Result<Option<TensorData>> {
    let d = decode_tensor(t, model_dir).map_err(|e| CompileError::Model(e.to_string()))?;
    Ok((d.dtype == DType::F32).then_some(d))
}

/// Every name in use in `g` (values, initializers, nodes), for [`Names::fresh`].
pub struct Names(HashSet<String>);

impl Names {
    pub fn of(g: &GraphProto) -> Names {
        let mut s: HashSet<String> = g.initializer.iter().map(|t| t.name().to_string()).collect();
        s.extend(g.input.iter().map(|i| i.name().to_string()));
        for n in &g.node {
            s.extend(n.output.iter().cloned());
            s.insert(n.name().to_string());
        }
        Names(s)
    }

    /// `base`, or `base_2`, `base_3`… when taken; the name is then taken.
    pub fn fresh(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut k = 2;
        while self.0.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.0.insert(name.clone());
        name
    }
}

/// Drops the initializers no node reads any more (and their graph-input entries, the old IR
/// form that lists weights as inputs). O(nodes + initializers).
pub fn drop_unused_initializers(g: &mut GraphProto) {
    let mut used: HashSet<String> = g.output.iter().map(|o| o.name().to_string()).collect();
    reads(&g.node, &mut used);
    let dropped: HashSet<String> = g
        .initializer
        .iter()
        .map(|t| t.name().to_string())
        .filter(|n| !used.contains(n))
        .collect();
    g.initializer.retain(|t| !dropped.contains(t.name()));
    g.input.retain(|i| !dropped.contains(i.name()));
}

/// Adds every value `nodes` read, subgraphs (If/Loop/Scan bodies) included.
fn reads(nodes: &[NodeProto], used: &mut HashSet<String>) {
    for n in nodes {
        used.extend(n.input.iter().cloned());
        for a in &n.attribute {
            for sub in a.g.iter().chain(&a.graphs) {
                reads(&sub.node, used);
            }
        }
    }
}
