//! Which ops deviate most in reduced precision (`--accuracy-report`'s `ops`, and the ranking
//! `--auto-mixed-precision` starts from). Every main-graph node output is made a graph
//! output, the model is compiled in fp32 and in the asked mode, both run on the same inputs,
//! and each value is compared. A node's *added* error is its output's error minus the largest
//! error among its inputs, so the op that introduces a deviation ranks above the ops that only
//! carry it downstream.
//!
//! Two compiles, two runs, and O(V + E + elements) to compare.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use ge_runtime::format::DType;
use prost::Message;
use serde::Serialize;

use crate::error::{CompileError, Result};
use crate::onnx::decode_model;
use crate::onnx::proto::ValueInfoProto;
use crate::options::CompileOptions;
use crate::tensor::TensorData;

/// How far one node's reduced-precision output is from its fp32 output.
#[derive(Clone, Debug, Serialize)]
pub struct OpDeviation {
    /// The name `--keep-dtype` takes: the ONNX node name, or its first output's when unnamed.
    pub node: String,
    pub op_type: String,
    /// The node's float output with the largest error.
    pub output: String,
    /// [`normalized_error`] of that output.
    pub error: f64,
    /// `error` minus the largest error among the node's inputs (0 when it only carries one).
    pub added: f64,
    /// Non-finite elements in the reduced output where fp32 is finite (fp16 overflow).
    pub non_finite: usize,
}

/// The name `--keep-dtype` matches a node by: its ONNX name, else its first output's (the
/// importer names unnamed nodes so).
pub fn keep_name(n: &crate::onnx::proto::NodeProto) -> &str {
    if n.name().is_empty() {
        n.output.first().map_or("", String::as_str)
    } else {
        n.name()
    }
}

/// max |got − want| / max |want|: the error relative to the output's own scale (elementwise
/// relative error explodes near zero). Infinite for a non-finite `got` where `want` is finite
/// or for mismatched shapes; the plain max error for an all-zero `want`. O(elements).
pub fn normalized_error(got: &TensorData, want: &TensorData) -> f64 {
    deviation(got, want).0
}

/// [`normalized_error`] and the count of non-finite `got` elements where `want` is finite,
/// from one pass over both.
fn deviation(got: &TensorData, want: &TensorData) -> (f64, usize) {
    if got.dims != want.dims {
        return (f64::INFINITY, 0);
    }
    let (g, w) = (got.to_f32_vec(), want.to_f32_vec());
    let (mut err, mut scale, mut non_finite) = (0f64, 0f64, 0usize);
    for (&x, &y) in g.iter().zip(&w) {
        if !y.is_finite() {
            continue;
        }
        if !x.is_finite() {
            non_finite += 1;
            continue;
        }
        err = err.max(f64::from(x - y).abs());
        scale = scale.max(f64::from(y).abs());
    }
    if non_finite > 0 {
        (f64::INFINITY, non_finite)
    } else if scale > 0.0 {
        (err / scale, 0)
    } else {
        (err, 0)
    }
}

/// Runs `blob` on `inputs`, each converted to the blob's input dtype (an `--io-dtype fp16`
/// model takes halves), on `opts.device`.
pub fn run_converted(
    blob: &[u8],
    inputs: &[TensorData],
    opts: &CompileOptions,
) -> Result<Vec<TensorData>> {
    let mut r = crate::run::Runner::new(ge_runtime::AlignedBlob::from_bytes(blob))?;
    let model = r.model()?;
    let ins: Vec<TensorData> = inputs
        .iter()
        .zip((0..model.input_count()).filter_map(|i| model.input(i)))
        .map(|(t, io)| {
            if t.dtype == io.dtype {
                Ok(t.clone())
            } else {
                crate::onnx::cast_data(t, io.dtype)
                    .map_err(|e| CompileError::Model(format!("input '{}': {e}", io.name)))
            }
        })
        .collect::<Result<_>>()?;
    Ok(r.run(&ins, ge_sim::SimDevice::new(opts.device))?.0)
}

/// The same options in plain fp32 (no lists, model I/O dtypes).
pub fn fp32_options(opts: &CompileOptions) -> CompileOptions {
    CompileOptions {
        precision: crate::options::Precision::ForceFp32,
        io_dtype: None,
        keep_dtype: None,
        modify_mixlist: None,
        ..opts.clone()
    }
}

/// A node whose outputs are probed.
struct Probe {
    node: String,
    op_type: String,
    inputs: Vec<String>,
    outputs: Vec<String>,
}

/// Every node's deviation under `opts` (a reduced `--precision`) on `inputs`, the largest
/// added error first.
pub fn op_deviations(
    model_bytes: &[u8],
    model_dir: Option<&Path>,
    opts: &CompileOptions,
    inputs: &[TensorData],
) -> Result<Vec<OpDeviation>> {
    let mut model = decode_model(model_bytes)?;
    let Some(graph) = model.graph.as_mut() else {
        return Ok(Vec::new());
    };
    let mut exposed: HashSet<String> = graph.output.iter().map(|o| o.name().to_string()).collect();
    exposed.extend(graph.initializer.iter().map(|t| t.name().to_string()));
    exposed.extend(graph.input.iter().map(|i| i.name().to_string()));
    let mut probes = Vec::new();
    let mut extra = Vec::new();
    for n in graph.node.iter().filter(|n| n.op_type() != "Constant") {
        let outputs: Vec<String> = n.output.iter().filter(|o| !o.is_empty()).cloned().collect();
        for o in &outputs {
            if exposed.insert(o.clone()) {
                extra.push(ValueInfoProto {
                    name: Some(o.clone()),
                    ..ValueInfoProto::default()
                });
            }
        }
        probes.push(Probe {
            node: keep_name(n).to_string(),
            op_type: n.op_type().to_string(),
            inputs: n.input.clone(),
            outputs,
        });
    }
    graph.output.extend(extra);
    let bytes = model.encode_to_vec();
    let probe_opts = CompileOptions {
        gears: crate::gears::GearSpec::None,
        ..opts.clone()
    };
    let values = |o: &CompileOptions| -> Result<HashMap<String, TensorData>> {
        let c = crate::compile_bytes(&bytes, model_dir, o)?;
        let outs = run_converted(&c.blob, inputs, o)?;
        Ok(c.graph.output_names.iter().cloned().zip(outs).collect())
    };
    let want = values(&fp32_options(&probe_opts))?;
    let got = values(&probe_opts)?;
    let mut error: HashMap<&str, f64> = HashMap::new();
    let mut devs = Vec::with_capacity(probes.len());
    for p in &probes {
        let input_error = p
            .inputs
            .iter()
            .filter_map(|i| error.get(i.as_str()))
            .fold(0f64, |a, &b| a.max(b));
        let mut worst: Option<(f64, &str, usize)> = None;
        for o in &p.outputs {
            let (Some(g), Some(w)) = (got.get(o), want.get(o)) else {
                continue;
            };
            if !matches!(w.dtype, DType::F32 | DType::F16 | DType::Bf16 | DType::F64) {
                continue;
            }
            let (e, bad) = deviation(g, w);
            error.insert(o.as_str(), e);
            if worst.is_none_or(|(we, ..)| e > we) {
                worst = Some((e, o.as_str(), bad));
            }
        }
        if let Some((e, o, bad)) = worst {
            devs.push(OpDeviation {
                node: p.node.clone(),
                op_type: p.op_type.clone(),
                output: o.to_string(),
                error: e,
                added: if e.is_infinite() && input_error.is_infinite() {
                    0.0
                } else {
                    (e - input_error).max(0.0)
                },
                non_finite: bad,
            });
        }
    }
    devs.sort_by(|a, b| {
        b.added
            .total_cmp(&a.added)
            .then(b.error.total_cmp(&a.error))
    });
    Ok(devs)
}
