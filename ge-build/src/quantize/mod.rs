//! `ge quantize`: post-training static quantization of an fp32 ONNX model with a calibration
//! set (like onnxruntime's `quantize_static` and AMCT).
//!
//! The result is a **QDQ ONNX model**: QuantizeLinear → DequantizeLinear pairs on the
//! activations around every Conv, Gemm and MatMul with a constant weight, the weights stored as
//! int8 (symmetric, per output channel with `per_channel`) behind a DequantizeLinear, biases as
//! int32 at scale `s_input · s_weight`; every other op stays float. That is the form
//! onnxruntime's quantizer writes, so onnxruntime runs the very same model for a side-by-side
//! check, and ge's QDQ recognition lowers it to the int8 QGemm/QConv tasks; an `.om` output is
//! that model compiled.
//!
//! Steps, each near-linear in graph size: BatchNormalization folded into the Conv before it
//! ([`fold_bn`]), the ops to quantize chosen ([`select`]), the ranges of their activations
//! measured on the calibration samples ([`calibrate`]: one fp32 compile and one run per
//! sample, O(elements) per run; histograms for `percentile` / `entropy`), Q/DQ written
//! ([`rewrite`]), and the quantized model's error against fp32 measured on the same samples.

pub mod calib_set;
pub mod calibrate;
pub mod equalize;
pub mod fold_bn;
pub(crate) mod graph;
pub mod histogram;
pub mod params;
pub mod report;
pub mod rewrite;
pub mod select;

use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;

use prost::Message;

use crate::accuracy::compare;
use crate::accuracy::probe::{fp32_options, run_converted};
use crate::error::{CompileError, Result};
use crate::onnx::{decode_model, default_opset};
use crate::options::CompileOptions;
use crate::tensor::TensorData;

pub use report::QuantReport;

/// How an activation's range is chosen from the calibration samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Method {
    /// The smallest and largest value seen.
    #[default]
    MinMax,
    /// The `percentile`-th percentile of the values seen (and the mirror one below): outliers
    /// are clipped.
    Percentile,
    /// The clipping threshold whose 8-bit histogram is closest (Kullback–Leibler) to the
    /// fp32 one (TensorRT's calibration).
    Entropy,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::MinMax => "minmax",
            Method::Percentile => "percentile",
            Method::Entropy => "entropy",
        }
    }
}

impl FromStr for Method {
    type Err = CompileError;
    fn from_str(s: &str) -> Result<Method> {
        match s {
            "minmax" => Ok(Method::MinMax),
            "percentile" => Ok(Method::Percentile),
            "entropy" => Ok(Method::Entropy),
            _ => Err(CompileError::Option(format!(
                "--method '{s}' must be minmax, percentile or entropy"
            ))),
        }
    }
}

/// What `ge quantize` is asked for.
#[derive(Clone, Debug)]
pub struct QuantizeOptions {
    pub method: Method,
    /// The percentile `Method::Percentile` keeps (e.g. 99.999).
    pub percentile: f64,
    /// One weight scale per output channel (else one per tensor).
    pub per_channel: bool,
    /// int8 activations with zero point 0 (else uint8 with a zero point).
    pub symmetric_activations: bool,
    /// Nodes (by name, as `--keep-dtype` names them) left in float.
    pub exclude: Vec<String>,
    /// Use at most this many calibration samples.
    pub max_samples: Option<usize>,
    /// Even out activation channel ranges before quantizing them (see [`equalize`]).
    pub equalize: bool,
}

impl Default for QuantizeOptions {
    fn default() -> Self {
        QuantizeOptions {
            method: Method::MinMax,
            percentile: 99.999,
            per_channel: false,
            symmetric_activations: false,
            exclude: Vec::new(),
            max_samples: None,
            equalize: false,
        }
    }
}

/// A quantized model.
#[derive(Clone, Debug)]
pub struct Quantized {
    /// The QDQ ONNX model.
    pub onnx: Vec<u8>,
    pub report: QuantReport,
}

/// Quantizes the fp32 model `model_bytes` (`model_dir` resolves external data) with the
/// samples in `calib_dir` (see [`calib_set`]); `opts` are the compile options of the
/// calibration and evaluation runs (input shapes, device; the precision is always fp32).
pub fn quantize(
    model_bytes: &[u8],
    model_dir: Option<&Path>,
    calib_dir: &Path,
    q: &QuantizeOptions,
    opts: &CompileOptions,
) -> Result<Quantized> {
    if !(q.percentile > 0.0 && q.percentile <= 100.0) {
        return Err(CompileError::Option(format!(
            "--percentile {} must be in (0, 100]",
            q.percentile
        )));
    }
    let mut model = decode_model(model_bytes)?;
    let opset = default_opset(&model);
    let min_opset = if q.per_channel { 13 } else { 10 };
    if opset < min_opset {
        return Err(CompileError::Model(format!(
            "the model imports opset {opset}; {} needs opset {min_opset} or later: upgrade the \
             model (onnx.version_converter){}",
            if q.per_channel {
                "per-channel DequantizeLinear (its axis attribute)"
            } else {
                "QuantizeLinear/DequantizeLinear"
            },
            if q.per_channel && opset >= 10 {
                " or quantize per tensor (drop --per-channel)"
            } else {
                ""
            }
        )));
    }
    let Some(graph) = model.graph.as_mut() else {
        return Err(CompileError::Model("the model has no graph".into()));
    };
    let folded = fold_bn::fold_batch_norms(graph, model_dir, opset)?;
    let mut selection = select::select(graph, model_dir, opset, &q.exclude)?;
    let opts = CompileOptions {
        gears: crate::gears::GearSpec::None,
        ..fp32_options(opts)
    };
    let mut equalized = 0;
    if q.equalize {
        let sites = equalize::sites(graph, &selection);
        if !sites.is_empty() {
            let values: Vec<String> = sites.iter().map(|s| s.value().to_string()).collect();
            let src = calibrate::Source::new(&model, model_dir, &opts, calib_dir, q);
            let amax = calibrate::channel_absmax(&src, &values)?;
            let graph = model
                .graph
                .as_mut()
                .ok_or_else(|| CompileError::Model("the model has no graph".into()))?;
            equalized = equalize::apply(graph, model_dir, &sites, &amax)?;
            selection = select::select(graph, model_dir, opset, &q.exclude)?;
        }
    }
    let tensors = selection.activations();
    let src = calibrate::Source::new(&model, model_dir, &opts, calib_dir, q);
    let cal = calibrate::calibrate(&src, &tensors)?;
    let acts: HashMap<String, params::ActParams> = cal
        .ranges
        .iter()
        .map(|(t, &(lo, hi))| {
            (
                t.clone(),
                params::activation(lo, hi, q.symmetric_activations),
            )
        })
        .collect();
    let graph = model
        .graph
        .as_mut()
        .ok_or_else(|| CompileError::Model("the model has no graph".into()))?;
    let layers = rewrite::rewrite(
        graph,
        model_dir,
        &selection.targets,
        &acts,
        q.per_channel,
        opset,
    )?;
    let onnx = model.encode_to_vec();
    let outputs = evaluate(&onnx, model_dir, &opts, &cal)?;
    let report =
        report::QuantReport::new(q, &cal, &acts, layers, selection.skipped, folded, outputs);
    let report = QuantReport {
        equalized,
        ..report
    };
    Ok(Quantized { onnx, report })
}

/// The quantized model's outputs against fp32's on the calibration samples (each output's
/// samples concatenated along dim 0, so top-1 agreement counts samples).
fn evaluate(
    onnx: &[u8],
    model_dir: Option<&Path>,
    opts: &CompileOptions,
    cal: &calibrate::Calibration,
) -> Result<Vec<crate::accuracy::OutputAccuracy>> {
    let c = crate::compile_bytes(onnx, model_dir, opts)?;
    let mut got: Vec<Vec<TensorData>> = Vec::with_capacity(cal.set.samples.len());
    for s in &cal.set.samples {
        got.push(run_converted(&c.blob, s, opts)?);
    }
    let cat = |runs: &[Vec<TensorData>], i: usize| -> Option<TensorData> {
        let first = runs.first()?.get(i)?;
        let mut t = first.clone();
        for r in &runs[1..] {
            t.bytes.extend_from_slice(&r.get(i)?.bytes);
        }
        match t.dims.first_mut() {
            Some(d) => *d *= runs.len(),
            None => t.dims = vec![runs.len()],
        }
        Some(t)
    };
    Ok(cal
        .output_names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| Some(compare(name, &cat(&got, i)?, &cat(&cal.fp32_outputs, i)?)))
        .collect())
}
