//! The `ge quantize --report` file: per activation its calibrated range, scale and zero
//! point; per quantized op its weight scales; the ops left in float and why; the quantized
//! model's output error against fp32 on the calibration set.

use std::collections::HashMap;

use serde::Serialize;

use super::QuantizeOptions;
use super::calibrate::Calibration;
use super::params::ActParams;
use super::rewrite::LayerReport;
use super::select::Skipped;
use crate::accuracy::OutputAccuracy;

/// One calibrated activation.
#[derive(Clone, Debug, Serialize)]
pub struct ActivationReport {
    pub tensor: String,
    /// The smallest and largest value seen on the calibration set.
    pub min: f32,
    pub max: f32,
    /// The range the method chose (equal to min/max for minmax).
    pub range: (f32, f32),
    pub dtype: &'static str,
    pub scale: f32,
    pub zero_point: i32,
}

/// What `ge quantize` did.
#[derive(Clone, Debug, Serialize)]
pub struct QuantReport {
    pub method: &'static str,
    pub percentile: Option<f64>,
    pub per_channel: bool,
    pub symmetric_activations: bool,
    pub calibration_layout: &'static str,
    pub samples: usize,
    pub batch_norms_folded: usize,
    /// Activations whose channel ranges were evened out (`--equalize`).
    pub equalized: usize,
    pub layers: Vec<LayerReport>,
    pub activations: Vec<ActivationReport>,
    /// The Conv/Gemm/MatMul ops left in float, and why.
    pub float_ops: Vec<Skipped>,
    /// The quantized model against fp32 on the calibration samples.
    pub outputs: Vec<OutputAccuracy>,
}

impl QuantReport {
    pub fn new(
        q: &QuantizeOptions,
        cal: &Calibration,
        acts: &HashMap<String, ActParams>,
        layers: Vec<LayerReport>,
        float_ops: Vec<Skipped>,
        batch_norms_folded: usize,
        outputs: Vec<OutputAccuracy>,
    ) -> QuantReport {
        let mut activations: Vec<ActivationReport> = acts
            .iter()
            .map(|(t, a)| {
                let (min, max) = cal.seen.get(t).copied().unwrap_or_default();
                ActivationReport {
                    tensor: t.clone(),
                    min,
                    max,
                    range: cal.ranges.get(t).copied().unwrap_or_default(),
                    dtype: if a.signed { "int8" } else { "uint8" },
                    scale: a.scale,
                    zero_point: a.zero_point,
                }
            })
            .collect();
        activations.sort_by(|a, b| a.tensor.cmp(&b.tensor));
        QuantReport {
            method: q.method.name(),
            percentile: (q.method == super::Method::Percentile).then_some(q.percentile),
            per_channel: q.per_channel,
            symmetric_activations: q.symmetric_activations,
            calibration_layout: cal.set.layout,
            samples: cal.set.samples.len(),
            batch_norms_folded,
            equalized: 0,
            layers,
            activations,
            float_ops,
            outputs,
        }
    }
}
