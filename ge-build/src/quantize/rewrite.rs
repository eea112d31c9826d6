//! Writes the QDQ form: each calibrated activation `t` gets `QuantizeLinear(t) →
//! DequantizeLinear` right after its producer and every reader of `t` reads the dequantized
//! value; each target's weight becomes an int8 initializer behind a DequantizeLinear (`axis`
//! on the output channels when per channel), its bias an int32 one. O(nodes + weight
//! elements).

use std::collections::HashMap;
use std::path::Path;

use ge_runtime::format::DType;
use serde::Serialize;

use super::graph::{Names, ctx, drop_unused_initializers, f32_value, initializers};
use super::params::{self, ActParams};
use super::select::Target;
use crate::error::{CompileError, Result};
use crate::onnx::proto::{AttributeProto, GraphProto, NodeProto, attribute_proto};
use crate::tensor::{TensorData, encode_tensor};

/// One quantized op, for the report.
#[derive(Clone, Debug, Serialize)]
pub struct LayerReport {
    pub node: String,
    pub op_type: String,
    pub weight: String,
    /// One scale per output channel, or one.
    pub weight_scales: usize,
    pub weight_scale_min: f32,
    pub weight_scale_max: f32,
    pub bias_int32: bool,
    /// The activation it reads and its parameters.
    pub input: String,
    pub input_scale: f32,
    pub input_zero_point: i32,
    /// The value quantized after it (its output or its Relu's), if any.
    pub output: Option<String>,
}

fn node(
    op: &str,
    name: String,
    inputs: Vec<String>,
    output: String,
    axis: Option<i64>,
) -> NodeProto {
    NodeProto {
        input: inputs,
        output: vec![output],
        name: Some(name),
        op_type: Some(op.to_string()),
        attribute: axis
            .map(|a| AttributeProto {
                name: Some("axis".into()),
                i: Some(a),
                r#type: Some(attribute_proto::AttributeType::Int as i32),
                ..AttributeProto::default()
            })
            .into_iter()
            .collect(),
        ..NodeProto::default()
    }
}

fn tensor<T: bytemuck::Pod>(dtype: DType, dims: Vec<usize>, v: &[T]) -> Result<TensorData> {
    TensorData::from_elements(dtype, dims, v).map_err(|e| CompileError::Model(e.to_string()))
}

/// Adds a DequantizeLinear of the constant `q` (scales `scales`, zero points 0 of `q`'s
/// type) named after `base`; returns the dequantized value's name.
fn dequantized_constant(
    g: &mut GraphProto,
    names: &mut Names,
    dq_nodes: &mut Vec<NodeProto>,
    base: &str,
    q: TensorData,
    scales: &[f32],
    axis: Option<usize>,
) -> Result<String> {
    let per_axis = scales.len() > 1 || axis.is_some();
    let sdims = if per_axis { vec![scales.len()] } else { vec![] };
    let zeros = vec![0u8; scales.len() * q.dtype.size()];
    let zp = TensorData::new(q.dtype, sdims.clone(), zeros)
        .map_err(|e| CompileError::Model(e.to_string()))?;
    let (qn, sn, zn, out) = (
        names.fresh(&format!("{base}_quantized")),
        names.fresh(&format!("{base}_scale")),
        names.fresh(&format!("{base}_zero_point")),
        names.fresh(&format!("{base}_dequantized")),
    );
    g.initializer.push(encode_tensor(&qn, &q));
    g.initializer
        .push(encode_tensor(&sn, &tensor(DType::F32, sdims, scales)?));
    g.initializer.push(encode_tensor(&zn, &zp));
    let dq = names.fresh(&format!("{base}_DequantizeLinear"));
    dq_nodes.push(node(
        "DequantizeLinear",
        dq,
        vec![qn, sn, zn],
        out.clone(),
        axis.filter(|_| per_axis).map(|a| a as i64),
    ));
    Ok(out)
}

/// Rewrites `g` (whose nodes `targets` index) into the QDQ form with the activation
/// parameters `acts`; returns one report per target.
pub fn rewrite(
    g: &mut GraphProto,
    model_dir: Option<&Path>,
    targets: &[Target],
    acts: &HashMap<String, ActParams>,
    per_channel: bool,
    opset: i64,
) -> Result<Vec<LayerReport>> {
    let mut names = Names::of(g);
    let inits = initializers(g);
    let mut head: Vec<NodeProto> = Vec::new();
    let mut weight_dq: HashMap<(String, usize), (String, Vec<f32>)> = HashMap::new();
    let mut reports = Vec::with_capacity(targets.len());
    let mut new_inputs: Vec<(usize, usize, String)> = Vec::new();
    for t in targets {
        let n = g.node[t.node].clone();
        let c = ctx(&n, opset);
        let Some(a) = acts.get(&t.input) else {
            return Err(c.err(format!("input '{}' was not calibrated", t.input)));
        };
        let key = (t.weight.clone(), t.axis);
        if !weight_dq.contains_key(&key) {
            let w = inits
                .get(&t.weight)
                .map(|&i| f32_value(&g.initializer[i], model_dir))
                .transpose()?
                .flatten()
                .ok_or_else(|| c.err(format!("weight '{}' is not an f32 constant", t.weight)))?;
            let axis = per_channel.then_some(t.axis);
            let q = params::weights(&w.to_f32_vec(), &w.dims, axis);
            let qt = tensor(DType::I8, w.dims.clone(), &q.values)?;
            let out =
                dequantized_constant(g, &mut names, &mut head, &t.weight, qt, &q.scales, axis)?;
            weight_dq.insert(key.clone(), (out, q.scales));
        }
        let (wout, wscales) = weight_dq[&key].clone();
        new_inputs.push((t.node, 1, wout));
        if let Some(b) = &t.bias {
            let bv = inits
                .get(b)
                .map(|&i| f32_value(&g.initializer[i], model_dir))
                .transpose()?
                .flatten()
                .ok_or_else(|| c.err(format!("bias '{b}' is not an f32 constant")))?;
            let (v, s) = params::bias(&bv.to_f32_vec(), a.scale, &wscales);
            let bt = tensor(DType::I32, bv.dims.clone(), &v)?;
            let axis = (s.len() > 1).then_some(0);
            let out = dequantized_constant(g, &mut names, &mut head, b, bt, &s, axis)?;
            new_inputs.push((t.node, 2, out));
        }
        reports.push(LayerReport {
            node: crate::accuracy::probe::keep_name(&n).to_string(),
            op_type: n.op_type().to_string(),
            weight: t.weight.clone(),
            weight_scales: wscales.len(),
            weight_scale_min: wscales.iter().copied().fold(f32::INFINITY, f32::min),
            weight_scale_max: wscales.iter().copied().fold(0.0, f32::max),
            bias_int32: t.bias.is_some(),
            input: t.input.clone(),
            input_scale: a.scale,
            input_zero_point: a.zero_point,
            output: t.output.clone(),
        });
    }
    for (ni, slot, v) in new_inputs {
        g.node[ni].input[slot] = v;
    }
    // Activation Q/DQ pairs, and every reader rewired to the dequantized value.
    let mut pairs: HashMap<&str, (Vec<NodeProto>, String)> = HashMap::new();
    let mut order: Vec<&String> = acts.keys().collect();
    order.sort();
    for t in order {
        let a = acts[t];
        let zp = if a.signed {
            tensor(DType::I8, vec![], &[a.zero_point as i8])?
        } else {
            tensor(DType::U8, vec![], &[a.zero_point as u8])?
        };
        let (sn, zn, qv, dv) = (
            names.fresh(&format!("{t}_scale")),
            names.fresh(&format!("{t}_zero_point")),
            names.fresh(&format!("{t}_QuantizeLinear_Output")),
            names.fresh(&format!("{t}_DequantizeLinear_Output")),
        );
        g.initializer
            .push(encode_tensor(&sn, &tensor(DType::F32, vec![], &[a.scale])?));
        g.initializer.push(encode_tensor(&zn, &zp));
        let q = node(
            "QuantizeLinear",
            names.fresh(&format!("{t}_QuantizeLinear")),
            vec![t.clone(), sn.clone(), zn.clone()],
            qv.clone(),
            None,
        );
        let d = node(
            "DequantizeLinear",
            names.fresh(&format!("{t}_DequantizeLinear")),
            vec![qv, sn, zn],
            dv.clone(),
            None,
        );
        pairs.insert(t.as_str(), (vec![q, d], dv));
    }
    let mut nodes = head;
    let graph_inputs: Vec<String> = g.input.iter().map(|i| i.name().to_string()).collect();
    for i in &graph_inputs {
        if let Some((qd, _)) = pairs.get(i.as_str()) {
            nodes.extend(qd.iter().cloned());
        }
    }
    for mut n in std::mem::take(&mut g.node) {
        for v in n.input.iter_mut() {
            if let Some((_, dv)) = pairs.get(v.as_str()) {
                *v = dv.clone();
            }
        }
        let after: Vec<NodeProto> = n
            .output
            .iter()
            .filter_map(|o| pairs.get(o.as_str()))
            .flat_map(|(qd, _)| qd.iter().cloned())
            .collect();
        nodes.push(n);
        nodes.extend(after);
    }
    g.node = nodes;
    drop_unused_initializers(g);
    Ok(reports)
}
