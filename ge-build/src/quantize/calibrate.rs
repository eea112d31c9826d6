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

/// What calibration runs: the fp32 model (`model_dir` resolves its external data), its
/// compile options, the calibration samples' folder and the quantization options.
#[derive(Clone, Copy)]
pub struct Source<'a> {
    pub model: &'a ModelProto,
    pub model_dir: Option<&'a Path>,
    pub opts: &'a CompileOptions,
    pub calib_dir: &'a Path,
    pub q: &'a QuantizeOptions,
}

impl<'a> Source<'a> {
    pub fn new(
        model: &'a ModelProto,
        model_dir: Option<&'a Path>,
        opts: &'a CompileOptions,
        calib_dir: &'a Path,
        q: &'a QuantizeOptions,
    ) -> Source<'a> {
        Source {
            model,
            model_dir,
            opts,
            calib_dir,
            q,
        }
    }
}

/// The model compiled with the values to measure as extra outputs, and the calibration set
/// read for its inputs.
struct Probe {
    blob: Vec<u8>,
    set: CalibSet,
    output_names: Vec<String>,
    /// The compiled model's output index of each value.
    position: HashMap<String, usize>,
    /// The input index of each graph input.
    input_position: HashMap<String, usize>,
}

impl Probe {
    /// Compiles the model with `tensors` exposed and loads the calibration samples.
    fn new(src: &Source<'_>, tensors: &[String]) -> Result<Probe> {
        let Source {
            model,
            model_dir,
            opts,
            calib_dir,
            q,
        } = *src;
        let mut probe = model.clone();
        let graph = probe
            .graph
            .as_mut()
            .ok_or_else(|| CompileError::Model("the model has no graph".into()))?;
        let graph_inputs: HashSet<String> =
            graph.input.iter().map(|i| i.name().to_string()).collect();
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
        let position = c
            .graph
            .output_names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        let input_position = specs
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), i))
            .collect();
        Ok(Probe {
            blob: c.blob,
            set,
            output_names,
            position,
            input_position,
        })
    }

    /// Runs sample `i`: the compiled model's outputs.
    fn run(&self, i: usize, opts: &CompileOptions) -> Result<Vec<TensorData>> {
        run_converted(&self.blob, &self.set.samples[i], opts)
    }

    /// The value `t` in run `outs` of sample `i`, or an error naming it.
    fn value<'a>(&'a self, t: &str, outs: &'a [TensorData], i: usize) -> Result<&'a TensorData> {
        let v = match (self.position.get(t), self.input_position.get(t)) {
            (Some(&o), _) => outs.get(o),
            (None, Some(&k)) => self.set.samples[i].get(k),
            _ => None,
        };
        v.ok_or_else(|| {
            CompileError::Model(format!(
                "calibration: value '{t}' was not computed (an output the compile dropped)"
            ))
        })
    }

    /// The model's own outputs in run `outs`.
    fn own_outputs(&self, outs: &[TensorData]) -> Vec<TensorData> {
        let own: Option<Vec<TensorData>> = self
            .output_names
            .iter()
            .map(|n| self.position.get(n).and_then(|&i| outs.get(i).cloned()))
            .collect();
        own.unwrap_or_default()
    }
}

/// The largest magnitude of each channel (axis 1) of every value of `tensors` over the
/// calibration samples, for [`super::equalize`]. One compile, one run per sample.
pub fn channel_absmax(src: &Source<'_>, tensors: &[String]) -> Result<HashMap<String, Vec<f32>>> {
    let p = Probe::new(src, tensors)?;
    let opts = src.opts;
    let mut amax: HashMap<String, Vec<f32>> = HashMap::new();
    for i in 0..p.set.samples.len() {
        let outs = p.run(i, opts)?;
        for t in tensors {
            let v = p.value(t, &outs, i)?;
            let channels = v.dims.get(1).copied().unwrap_or(1).max(1);
            let inner: usize = v.dims.iter().skip(2).product();
            let m = amax.entry(t.clone()).or_insert_with(|| vec![0.0; channels]);
            if m.len() != channels || inner == 0 {
                continue;
            }
            for (k, x) in v.to_f32_vec().into_iter().enumerate() {
                let c = (k / inner) % channels;
                if x.is_finite() {
                    m[c] = m[c].max(x.abs());
                }
            }
        }
    }
    Ok(amax)
}

/// Calibrates `tensors` of the model on the calibration samples.
pub fn calibrate(src: &Source<'_>, tensors: &[String]) -> Result<Calibration> {
    let p = Probe::new(src, tensors)?;
    let (opts, q) = (src.opts, src.q);
    let mut seen: HashMap<String, (f32, f32)> = HashMap::new();
    let mut fp32_outputs = Vec::with_capacity(p.set.samples.len());
    for i in 0..p.set.samples.len() {
        let outs = p.run(i, opts)?;
        for t in tensors {
            let v = p.value(t, &outs, i)?;
            let r = seen
                .entry(t.clone())
                .or_insert((f32::INFINITY, f32::NEG_INFINITY));
            for x in v.to_f32_vec().into_iter().filter(|x| x.is_finite()) {
                r.0 = r.0.min(x);
                r.1 = r.1.max(x);
            }
        }
        fp32_outputs.push(p.own_outputs(&outs));
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
            for i in 0..p.set.samples.len() {
                let outs = p.run(i, opts)?;
                for t in tensors {
                    if let Some(h) = h.get_mut(t.as_str()) {
                        h.add(&p.value(t, &outs, i)?.to_f32_vec());
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
        set: p.set,
        output_names: p.output_names,
        fp32_outputs,
    })
}
