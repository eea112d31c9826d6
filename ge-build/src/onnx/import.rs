//! ONNX `ModelProto` → IR [`Graph`]. Nodes are visited in topological order; each is typed by
//! its op importer (attributes validated, output shapes inferred). A node whose kernel
//! inputs are all constant is evaluated on the spot, so shape subgraphs
//! (`Shape → Gather → Concat → Reshape`) become constants before their consumers need them.
//! Cost: O(nodes + edges) plus the folded kernels' own work.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use ge_runtime::format::{DType, MAX_RANK};
use prost::Message;

use super::ctx::{Imported, InputInfo, NodeCtx};
use super::legalize;
use super::ops;
use super::ops::registry::{self, Importer};
use super::proto::{
    ModelProto, NodeProto, ValueInfoProto, tensor_shape_proto::dimension, type_proto,
};
use super::sequence::Sequences;
use crate::error::{CompileError, Result};
use crate::ir::{Graph, Node, Value, ValueId, eval};
use crate::tensor::{TensorData, decode_tensor};

/// Import options.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Shapes that replace the declared ones (symbolic dims), by input name.
    pub input_shapes: BTreeMap<String, Vec<usize>>,
    /// Inputs frozen to constants, by input name (they stop being graph inputs).
    pub input_values: BTreeMap<String, TensorData>,
    /// Largest tensor (bytes) the graph may hold; `None`: only overflow is refused.
    pub max_tensor_bytes: Option<u64>,
    /// Largest node output (bytes) constant folding computes; `None`: any. A node over it
    /// runs as a task on its constant inputs.
    pub max_fold_bytes: Option<u64>,
    /// (input, dim) pairs whose fixed declared value `input_shapes` may change (gear dims
    /// marked `-1`).
    pub overrides: std::collections::BTreeSet<(String, usize)>,
    /// Whose arithmetic the int8 ops follow.
    pub int8_rounding: crate::Int8Rounding,
}

/// An input's declared dims (`None`: symbolic), or `None` for a non-tensor input.
pub fn declared_dims(vi: &ValueInfoProto) -> Option<Vec<Option<usize>>> {
    declared_type(vi).map(|(_, dims, _)| dims.iter().map(|d| d.map(|v| v as usize)).collect())
}

/// Bytes of a `dtype` tensor of `shape`, `None` when the count overflows.
pub fn tensor_bytes(dtype: DType, shape: &[usize]) -> Option<u64> {
    shape
        .iter()
        .try_fold(dtype.size() as u64, |a, &d| a.checked_mul(d as u64))
}

/// Checks that a tensor of `shape` fits in memory: the byte size must not overflow and must
/// be at most `limit`. Called before any tensor of that shape is allocated.
pub fn check_tensor_size(
    dtype: DType,
    shape: &[usize],
    limit: Option<u64>,
) -> std::result::Result<(), String> {
    let bytes = tensor_bytes(dtype, shape).ok_or_else(|| format!("shape {shape:?} overflows"))?;
    match limit {
        Some(l) if bytes > l => Err(format!(
            "a {} tensor of shape {shape:?} needs {bytes} bytes, over the limit of {l} (raise --max-tensor-bytes / max_tensor_bytes)",
            dtype.name()
        )),
        _ => Ok(()),
    }
}

/// Decodes a `.onnx` file's bytes.
pub fn decode_model(bytes: &[u8]) -> Result<ModelProto> {
    ModelProto::decode(bytes)
        .map_err(|e| CompileError::Parse(format!("protobuf decoding failed: {e}")))
}

/// The default-domain opset a model imports.
pub fn default_opset(model: &ModelProto) -> i64 {
    model
        .opset_import
        .iter()
        .find(|o| matches!(o.domain(), "" | "ai.onnx"))
        .map_or(1, |o| o.version())
}

fn declared_type(vi: &ValueInfoProto) -> Option<(i32, Vec<Option<i64>>, Vec<String>)> {
    let Some(type_proto::Value::TensorType(t)) = vi.r#type.as_ref()?.value.as_ref() else {
        return None;
    };
    let mut dims = Vec::new();
    let mut params = Vec::new();
    if let Some(s) = &t.shape {
        for d in &s.dim {
            match &d.value {
                Some(dimension::Value::DimValue(v)) if *v >= 0 => dims.push(Some(*v)),
                Some(dimension::Value::DimParam(p)) => {
                    dims.push(None);
                    params.push(p.clone());
                }
                _ => dims.push(None),
            }
        }
    }
    Some((t.elem_type(), dims, params))
}

/// Imports a decoded model. `model_dir` resolves external-data initializers.
pub fn import_model(
    model: &ModelProto,
    model_dir: Option<&Path>,
    opts: &ImportOptions,
) -> Result<Graph> {
    let opset = default_opset(model);
    let gp = model
        .graph
        .as_ref()
        .ok_or_else(|| CompileError::Parse("the model has no graph".into()))?;
    let mut g = Graph {
        name: gp.name().to_string(),
        opset,
        ..Graph::default()
    };
    let mut by_name: HashMap<String, ValueId> = HashMap::new();

    for t in &gp.initializer {
        let data = decode_tensor(t, model_dir)
            .map_err(|e| CompileError::Model(format!("initializer '{}': {e}", t.name())))?;
        let id = g.add_value(Value {
            name: t.name().to_string(),
            dtype: data.dtype,
            shape: data.dims.clone(),
            producer: None,
            data: Some(Arc::new(data)),
        });
        by_name.insert(t.name().to_string(), id);
    }
    for name in opts.input_shapes.keys().chain(opts.input_values.keys()) {
        if !gp.input.iter().any(|i| i.name() == name) {
            let known: Vec<&str> = gp.input.iter().map(|i| i.name()).collect();
            return Err(CompileError::Input {
                input: name.clone(),
                reason: format!("no such graph input (inputs: {})", known.join(", ")),
            });
        }
    }
    for vi in &gp.input {
        if by_name.contains_key(vi.name()) {
            continue; // an initializer listed as input (IR < 4): a constant
        }
        if let Some(data) = opts.input_values.get(vi.name()) {
            let id = g.add_value(Value {
                name: vi.name().to_string(),
                dtype: data.dtype,
                shape: data.dims.clone(),
                producer: None,
                data: Some(Arc::new(data.clone())),
            });
            by_name.insert(vi.name().to_string(), id);
            continue;
        }
        let (et, dims, params) = declared_type(vi).ok_or_else(|| CompileError::Input {
            input: vi.name().into(),
            reason: "only tensor inputs are supported".into(),
        })?;
        let dtype =
            DType::from_u8(u8::try_from(et).unwrap_or(0)).ok_or_else(|| CompileError::Input {
                input: vi.name().into(),
                reason: format!("element type {et} is not supported"),
            })?;
        let shape = match opts.input_shapes.get(vi.name()) {
            Some(s) => {
                if s.len() != dims.len() && !dims.is_empty() {
                    return Err(CompileError::Input {
                        input: vi.name().into(),
                        reason: format!(
                            "--input-shape gives rank {} but the model declares rank {}",
                            s.len(),
                            dims.len()
                        ),
                    });
                }
                for (i, (&given, decl)) in s.iter().zip(&dims).enumerate() {
                    if let Some(d) = decl
                        && *d as usize != given
                        && !opts.overrides.contains(&(vi.name().to_string(), i))
                    {
                        return Err(CompileError::Input {
                            input: vi.name().into(),
                            reason: format!(
                                "--input-shape sets dim {i} to {given} but the model fixes it to {d}"
                            ),
                        });
                    }
                }
                s.clone()
            }
            None => dims
                .iter()
                .map(|d| d.map(|v| v as usize))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| CompileError::Input {
                    input: vi.name().into(),
                    reason: format!(
                        "has symbolic dimension(s) {}; set them with --input-shape {}:{}",
                        if params.is_empty() {
                            "?".to_string()
                        } else {
                            params.join(", ")
                        },
                        vi.name(),
                        dims.iter()
                            .map(|d| d.map_or("N".to_string(), |v| v.to_string()))
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                })?,
        };
        if shape.len() > MAX_RANK {
            return Err(CompileError::Input {
                input: vi.name().into(),
                reason: format!("rank {} exceeds {MAX_RANK}", shape.len()),
            });
        }
        check_tensor_size(dtype, &shape, opts.max_tensor_bytes).map_err(|reason| {
            CompileError::Input {
                input: vi.name().into(),
                reason,
            }
        })?;
        let id = g.add_value(Value {
            name: vi.name().to_string(),
            dtype,
            shape,
            producer: None,
            data: None,
        });
        g.inputs.push(id);
        by_name.insert(vi.name().to_string(), id);
    }

    let mut seqs = Sequences::default();
    // QDQ groups become QOperator nodes first, at every opt level (see passes::qdq).
    let fused = crate::passes::qdq::recognize(gp, opset, opts.int8_rounding);
    let nodes = fused.as_deref().unwrap_or(&gp.node);
    // Weight-only int8 tables and matrices stay int8 (see passes::qdq::weight_only).
    let tables = crate::passes::qdq::weight_only::rewrite(gp, nodes);
    let nodes = tables.as_deref().unwrap_or(nodes);
    for node in topo_sort(nodes, &by_name)? {
        let entry = registry::lookup(node.domain(), node.op_type());
        if entry.is_some_and(|e| matches!(e.import, Importer::Sequence)) {
            seqs.import(&mut g, &mut by_name, node, opset)?;
        } else {
            import_node(&mut g, &mut by_name, node, opset, opts, false)?;
        }
    }

    for vi in &gp.output {
        if seqs.is_sequence(vi.name()) {
            return Err(CompileError::Unsupported {
                node: vi.name().into(),
                op_type: "graph output".into(),
                opset,
                reason: "sequence-typed graph outputs are not supported (only tensors)".into(),
            });
        }
        let id = *by_name.get(vi.name()).ok_or_else(|| {
            CompileError::Model(format!(
                "graph output '{}' is produced by no node",
                vi.name()
            ))
        })?;
        g.outputs.push(id);
        g.output_names.push(vi.name().to_string());
    }
    Ok(g)
}

/// Orders nodes so every input is produced first (ONNX requires it, exporters mostly
/// comply). Kahn's algorithm over value names: O(nodes + edges).
fn topo_sort<'a>(
    nodes: &'a [NodeProto],
    known: &HashMap<String, ValueId>,
) -> Result<Vec<&'a NodeProto>> {
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        for o in &n.output {
            if !o.is_empty() {
                producer.insert(o.as_str(), i);
            }
        }
    }
    let mut indeg = vec![0usize; nodes.len()];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        for inp in n.input.iter().filter(|s| !s.is_empty()) {
            if known.contains_key(inp) {
                continue;
            }
            if let Some(&p) = producer.get(inp.as_str()) {
                indeg[i] += 1;
                users[p].push(i);
            }
        }
    }
    let mut ready: std::collections::BTreeSet<usize> =
        (0..nodes.len()).filter(|&i| indeg[i] == 0).collect();
    let mut out = Vec::with_capacity(nodes.len());
    while let Some(i) = ready.pop_first() {
        out.push(&nodes[i]);
        for &u in &users[i] {
            indeg[u] -= 1;
            if indeg[u] == 0 {
                ready.insert(u);
            }
        }
    }
    if out.len() != nodes.len() {
        return Err(CompileError::Model("the graph has a cycle".into()));
    }
    Ok(out)
}

fn import_node(
    g: &mut Graph,
    by_name: &mut HashMap<String, ValueId>,
    node: &NodeProto,
    opset: i64,
    opts: &ImportOptions,
    generated: bool,
) -> Result<()> {
    let limit = opts.max_tensor_bytes;
    let domain = node.domain();
    let opset = ops::opset_for(domain, opset);
    let mut input_ids = Vec::with_capacity(node.input.len());
    for name in &node.input {
        if name.is_empty() {
            input_ids.push(None);
            continue;
        }
        let id = by_name
            .get(name)
            .copied()
            .ok_or_else(|| CompileError::Node {
                node: node.name().into(),
                op_type: node.op_type().into(),
                opset,
                reason: format!(
                    "input '{name}' is produced by no node, initializer or graph input"
                ),
            })?;
        input_ids.push(Some(id));
    }
    let ctx = NodeCtx {
        node,
        opset,
        int8_rounding: opts.int8_rounding,
        max_tensor_bytes: opts.max_tensor_bytes,
        max_fold_bytes: opts.max_fold_bytes,
        inputs: input_ids
            .iter()
            .map(|id| {
                id.map(|id| {
                    let v = g.value(id);
                    InputInfo {
                        dtype: v.dtype,
                        shape: &v.shape,
                        data: v.data.as_deref(),
                    }
                })
            })
            .collect(),
    };
    let imported = ops::import(&ctx, generated)?;
    let (op, kernel_inputs, outputs, overrides) = match imported {
        Imported::Constants(values) => {
            if values.len() < node.output.iter().filter(|o| !o.is_empty()).count() {
                return Err(ctx.err("importer produced fewer outputs than the node has"));
            }
            drop(ctx);
            for (name, data) in node.output.iter().zip(values) {
                if name.is_empty() {
                    continue;
                }
                let id = g.add_value(Value {
                    name: name.clone(),
                    dtype: data.dtype,
                    shape: data.dims.clone(),
                    producer: None,
                    data: Some(Arc::new(data)),
                });
                by_name.insert(name.clone(), id);
            }
            return Ok(());
        }
        Imported::Nodes { nodes, consts } => {
            drop(ctx);
            for (name, data) in consts {
                let id = g.add_value(Value {
                    name: name.clone(),
                    dtype: data.dtype,
                    shape: data.dims.clone(),
                    producer: None,
                    data: Some(Arc::new(data)),
                });
                by_name.insert(name, id);
            }
            for n in &nodes {
                import_node(g, by_name, n, opset, opts, true)?;
            }
            return Ok(());
        }
        Imported::Op {
            op,
            inputs,
            outputs,
            overrides,
        } => (op, inputs, outputs, overrides),
    };
    if outputs.iter().any(|(_, s)| s.len() > MAX_RANK) {
        return Err(ctx.unsupported(format!("an output's rank exceeds {MAX_RANK}")));
    }
    for (dtype, shape) in &outputs {
        check_tensor_size(*dtype, shape, limit).map_err(|e| ctx.err(e))?;
    }
    let node_name = ctx.name().to_string();
    drop(ctx);
    let mut kernel_ids: Vec<Option<ValueId>> = kernel_inputs
        .iter()
        .map(|&i| input_ids.get(i).copied().flatten())
        .collect();
    for (pos, data) in overrides {
        let name = constant_name(&node_name, pos);
        let id = g.add_value(Value {
            name,
            dtype: data.dtype,
            shape: data.dims.clone(),
            producer: None,
            data: Some(Arc::new(data)),
        });
        if let Some(slot) = kernel_ids.get_mut(pos) {
            *slot = Some(id);
        }
    }
    // Ops computed in f32 on f16/bf16 tensors: cast the inputs up and the outputs back.
    let mut outputs = outputs;
    let mut narrow: Vec<Option<DType>> = vec![None; outputs.len()];
    if op.computes_in_f32() {
        let half = |d: DType| matches!(d, DType::F16 | DType::Bf16);
        let any_half = kernel_ids
            .iter()
            .flatten()
            .any(|id| half(g.value(*id).dtype))
            || outputs.iter().any(|(d, _)| half(*d));
        if any_half {
            for (k, slot) in kernel_ids.iter_mut().enumerate() {
                if let Some(id) = *slot
                    && half(g.value(id).dtype)
                {
                    let name = format!("{node_name}:f32in{k}");
                    *slot = Some(legalize::cast_value(g, id, DType::F32, name, opset)?);
                }
            }
            for (o, n) in outputs.iter_mut().zip(narrow.iter_mut()) {
                if half(o.0) {
                    *n = Some(o.0);
                    o.0 = DType::F32;
                }
            }
        }
    }
    // Folded only within the fold budget: a larger value runs as a task (its constant
    // inputs become weights) instead of being computed, held and stored by the compiler.
    let folded_bytes = outputs
        .iter()
        .try_fold(0u64, |a, (d, dims)| a.checked_add(tensor_bytes(*d, dims)?));
    let within_budget = match (opts.max_fold_bytes, folded_bytes) {
        (None, _) => true,
        (Some(l), Some(b)) => b <= l,
        (Some(_), None) => false,
    };
    let all_const = within_budget
        && kernel_ids
            .iter()
            .flatten()
            .all(|id| g.value(*id).data.is_some());
    let names: Vec<String> = node.output.iter().take(outputs.len()).cloned().collect();
    if all_const {
        let datas: Vec<Option<&TensorData>> = kernel_ids
            .iter()
            .map(|id| id.and_then(|id| g.value(id).data.as_deref()))
            .collect();
        let values = eval(&op, &datas, &outputs).map_err(|e| CompileError::Node {
            node: node_name.clone(),
            op_type: node.op_type().into(),
            opset,
            reason: format!("constant folding failed: {e}"),
        })?;
        for ((name, data), to) in names.iter().zip(values).zip(&narrow) {
            let data = match to {
                Some(to) => legalize::cast_data(&data, *to).map_err(|e| CompileError::Node {
                    node: node_name.clone(),
                    op_type: node.op_type().into(),
                    opset,
                    reason: format!("constant folding failed: {e}"),
                })?,
                None => data,
            };
            let id = g.add_value(Value {
                name: name.clone(),
                dtype: data.dtype,
                shape: data.dims.clone(),
                producer: None,
                data: Some(Arc::new(data)),
            });
            by_name.insert(name.clone(), id);
        }
        return Ok(());
    }
    let mut out_ids = Vec::with_capacity(outputs.len());
    let mut cast_back = Vec::new();
    for (i, (dtype, shape)) in outputs.into_iter().enumerate() {
        let name = names.get(i).cloned().unwrap_or_default();
        let name = if name.is_empty() {
            format!("{node_name}:unused{i}")
        } else {
            name
        };
        let name = match narrow[i] {
            Some(to) => {
                cast_back.push((i, name.clone(), to, shape.clone()));
                format!("{name}:f32")
            }
            None => name,
        };
        let id = g.add_value(Value {
            name: name.clone(),
            dtype,
            shape,
            producer: None,
            data: None,
        });
        by_name.insert(name, id);
        out_ids.push(id);
    }
    let narrowed: Vec<(ValueId, String, DType, Vec<usize>)> = cast_back
        .into_iter()
        .map(|(i, name, to, shape)| (out_ids[i], name, to, shape))
        .collect();
    g.add_node(Node {
        name: node_name.clone(),
        op_type: node.op_type().to_string(),
        opset,
        op,
        inputs: kernel_ids,
        outputs: out_ids,
    });
    for (wide, name, to, shape) in narrowed {
        let id = g.add_value(Value {
            name: name.clone(),
            dtype: to,
            shape,
            producer: None,
            data: None,
        });
        g.add_node(Node {
            name: format!("{node_name}:narrow"),
            op_type: "Cast".into(),
            opset,
            op: crate::ir::Op::Cast,
            inputs: vec![Some(wide)],
            outputs: vec![id],
        });
        by_name.insert(name, id);
    }
    Ok(())
}

/// The name of the constant a lowering computed for input slot `pos` of node `node`
/// (packed weights, folded corrections): `node:constPOS`.
pub(crate) fn constant_name(node: &str, pos: usize) -> String {
    format!("{node}:const{pos}")
}

/// The node a [`constant_name`] belongs to, `None` for any other name.
pub(crate) fn constant_owner(name: &str) -> Option<&str> {
    let (node, pos) = name.rsplit_once(":const")?;
    (!pos.is_empty() && pos.bytes().all(|b| b.is_ascii_digit())).then_some(node)
}

#[cfg(test)]
mod constant_name_tests {
    use super::{constant_name, constant_owner};

    #[test]
    fn constant_names_round_trip_and_nothing_else_matches() {
        assert_eq!(
            constant_owner(&constant_name("a/b;c:0", 4)),
            Some("a/b;c:0")
        );
        assert_eq!(constant_owner("x:const"), None);
        assert_eq!(constant_owner("x:constant7"), None);
        assert_eq!(constant_owner("weights"), None);
    }
}
