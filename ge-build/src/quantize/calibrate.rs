//! Activation ranges from the calibration samples. The values to calibrate are made graph
//! outputs (as the accuracy probe does), the model is compiled once in fp32 and run on every
//! sample: a min/max pass, then for `percentile` / `entropy` a histogram pass over the range
//! the first found. One compile, one or two runs per sample, O(elements) per run.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use prost::Message;

use super::calib_set::{self, CalibSet, InputSpec};
use super::histogram::Histogram;
use super::{Method, QuantizeOptions};
use crate::accuracy::probe::run_converted;
use crate::error::{CompileError, Result};
use crate::onnx::proto::{ModelProto, ValueInfoProto};
use crate::options::CompileOptions;
use crate::tensor::TensorData;

/// What calibration measured.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// The range chosen for each calibrated value.
    pub ranges: HashMap<String, (f32, f32)>,
    /// The smallest and largest value seen of each (the min/max pass).
    pub seen: HashMap<String, (f32, f32)>,
    pub set: CalibSet,
    /// The model's own outputs and, per sample, their fp32 values.
    pub output_names: Vec<String>,
    pub fp32_outputs: Vec<Vec<TensorData>>,
}

/// Calibrates `tensors` of `model` (fp32 `opts`) on the samples of `calib_dir`.
pub fn calibrate(
    model: &ModelProto,
    model_dir: Option<&Path>,
    opts: &CompileOptions,
    calib_dir: &Path,
    tensors: &[String],
    q: &QuantizeOptions,
) -> Result<Calibration> {
    let mut probe = model.clone();
    let graph = probe
        .graph
        .as_mut()
        .ok_or_else(|| CompileError::Model("the model has no graph".into()))?;
    let graph_inputs: HashSet<String> = graph.input.iter().map(|i| i.name().to_string()).collect();
    let output_names: Vec<String> = graph.output.iter().map(|o| o.name().to_string()).collect();
    let mut exposed: HashSet<String> = output_names.iter().cloned().collect();
    for t in tensors.iter().filter(|t| !graph_inputs.contains(*t)) {
        if exposed.insert(t.clone()) {
            graph.output.push(ValueInfoProto {
                name: Some(t.clone()),
                ..ValueInfoProto::default()
            });
        }
    }
    let c = crate::compile_bytes(&probe.encode_to_vec(), model_dir, opts)?;
    let runner = crate::run::Runner::new(ge_runtime::AlignedBlob::from_bytes(&c.blob))?;
    let m = runner.model()?;
    let specs: Vec<InputSpec> = (0..m.input_count())
        .filter_map(|i| m.input(i))
        .map(|io| InputSpec {
            name: io.name.to_string(),
            dims: io.shape.dims().to_vec(),
        })
        .collect();
    drop(runner);
    let set = calib_set::load(calib_dir, &specs, q.max_samples)?;
    let position: HashMap<&str, usize> = c
        .graph
        .output_names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let input_position: HashMap<&str, usize> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    // The values of `t` in one run (`outs`) on `sample`.
    let value = |t: &str, outs: &[TensorData], sample: &[TensorData]| -> Option<Vec<f32>> {
        match (position.get(t), input_position.get(t)) {
            (Some(&i), _) => outs.get(i).map(TensorData::to_f32_vec),
            (None, Some(&i)) => sample.get(i).map(TensorData::to_f32_vec),
            _ => None,
        }
    };
    let mut seen: HashMap<String, (f32, f32)> = HashMap::new();
    let mut fp32_outputs = Vec::with_capacity(set.samples.len());
    for sample in &set.samples {
        let outs = run_converted(&c.blob, sample, opts)?;
        for t in tensors {
            let Some(v) = value(t, &outs, sample) else {
                return Err(CompileError::Model(format!(
                    "calibration: value '{t}' was not computed (an output the compile dropped)"
                )));
            };
            let r = seen
                .entry(t.clone())
                .or_insert((f32::INFINITY, f32::NEG_INFINITY));
            for x in v.into_iter().filter(|x| x.is_finite()) {
                r.0 = r.0.min(x);
                r.1 = r.1.max(x);
            }
        }
        let own: Option<Vec<TensorData>> = output_names
            .iter()
            .map(|n| position.get(n.as_str()).and_then(|&i| outs.get(i).cloned()))
            .collect();
        fp32_outputs.push(own.unwrap_or_default());
    }
    for r in seen.values_mut().filter(|r| r.0 > r.1) {
        *r = (0.0, 0.0);
    }
    let ranges = match q.method {
        Method::MinMax => seen.clone(),
        m => {
            let abs = m == Method::Entropy;
            let mut h: HashMap<&str, Histogram> = seen
                .iter()
                .map(|(t, &(lo, hi))| (t.as_str(), Histogram::new(lo, hi, abs)))
                .collect();
            for sample in &set.samples {
                let outs = run_converted(&c.blob, sample, opts)?;
                for t in tensors {
                    if let (Some(v), Some(h)) = (value(t, &outs, sample), h.get_mut(t.as_str())) {
                        h.add(&v);
                    }
                }
            }
            h.into_iter()
                .map(|(t, h)| {
                    let (lo, hi) = if abs {
                        h.entropy_range()
                    } else {
                        h.percentile_range(q.percentile)
                    };
                    let (slo, shi) = seen[t];
                    (t.to_string(), (lo.max(slo), hi.min(shi)))
                })
                .collect()
        }
    };
    Ok(Calibration {
        ranges,
        seen,
        set,
        output_names,
        fp32_outputs,
    })
}
