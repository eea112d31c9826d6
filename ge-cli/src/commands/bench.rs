//! `ge bench`: wall-clock time of `Session::run` on a model (compiled on the fly from
//! `.onnx`, or a `.om`), on the given input files or deterministic random inputs that are
//! valid for the model: integer inputs that index a Gather (embeddings) stay below the
//! gathered axis, inputs named like masks are 0/1.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use ge_build::tensor::TensorData;
use ge_runtime::format::DType;
use ge_runtime::{AlignedBlob, Model};

use super::{Res, load_blob, options};
use crate::cli::CompileFlags;
use crate::profile;

/// Deterministic pseudo-random inputs (xorshift; floats ~ uniform[-1, 1); integers in
/// `0..int_bound`).
pub fn random_input(dtype: DType, dims: &[usize], seed: u64, int_bound: u64) -> TensorData {
    let int_bound = int_bound.max(1);
    let n: usize = dims.iter().product();
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let bytes: Vec<u8> = match dtype {
        DType::F32 => (0..n)
            .flat_map(|_| ((next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0).to_le_bytes())
            .collect(),
        DType::F64 => (0..n)
            .flat_map(|_| ((next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0).to_le_bytes())
            .collect(),
        DType::I64 => (0..n)
            .flat_map(|_| ((next() % int_bound) as i64).to_le_bytes())
            .collect(),
        DType::I32 => (0..n)
            .flat_map(|_| ((next() % int_bound) as i32).to_le_bytes())
            .collect(),
        DType::Bool => (0..n).map(|_| (next() & 1) as u8).collect(),
        d => vec![0u8; n * d.size()],
    };
    TensorData {
        dtype,
        dims: dims.to_vec(),
        bytes,
    }
}

/// Exclusive upper bound for the random values of each integer input: the smallest gathered
/// axis among the Gather/GatherElements tasks that read it as indices (through Cast and
/// byte-copy tasks), 2 for inputs named like masks, else 4. O(tasks × inputs).
pub(super) fn integer_bounds(model: &Model<'_>) -> Vec<u64> {
    use ge_runtime::format::{AxisParams, OpKind};
    let tensors = model.tensors();
    let dim = |t: u32, axis: u32| {
        tensors
            .get(t as usize)
            .map(|d| ge_runtime::tensor_shape(d).dim(axis as usize) as u64)
    };
    (0..model.input_count())
        .filter_map(|i| model.input(i))
        .map(|io| {
            let mut same = vec![io.tensor];
            let mut bound: Option<u64> = None;
            // Tasks are in execution order, so one pass sees every copy before its readers.
            for t in model.tasks() {
                let (ins, outs) = (model.task_inputs(t), model.task_outputs(t));
                let reads = |k: usize| ins.get(k).is_some_and(|x| same.contains(x));
                match model.task_op(t) {
                    OpKind::Cast | OpKind::Copy if reads(0) => same.extend_from_slice(outs),
                    OpKind::Gather | OpKind::GatherElements if reads(1) => {
                        let axis =
                            bytemuck::try_pod_read_unaligned::<AxisParams>(model.task_params(t))
                                .map_or(0, |p| p.axis);
                        if let Some(d) = ins.first().and_then(|&data| dim(data, axis)) {
                            bound = Some(bound.map_or(d, |b| b.min(d)));
                        }
                    }
                    _ => {}
                }
            }
            bound.unwrap_or(if io.name.to_ascii_lowercase().contains("mask") {
                2
            } else {
                4
            })
        })
        .collect()
}

/// The `--input NAME=FILE` tensors by name.
fn read_inputs(specs: &[String]) -> Res<std::collections::HashMap<String, TensorData>> {
    let mut by_name = std::collections::HashMap::new();
    for spec in specs {
        let (name, file) = spec
            .split_once('=')
            .ok_or_else(|| format!("--input '{spec}' must be NAME=FILE"))?;
        let t = ge_build::tensor::read_tensor_file(Path::new(file))
            .map_err(|e| format!("{file}: {e}"))?;
        by_name.insert(name.to_string(), t);
    }
    Ok(by_name)
}

pub(super) fn bench(
    path: &Path,
    inputs: &[String],
    threads: usize,
    iters: usize,
    (json, peak): (bool, bool),
    flags: &CompileFlags,
) -> Res {
    if threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    if iters == 0 {
        return Err("--iters must be at least 1".into());
    }
    let mut given = read_inputs(inputs)?;
    let blob = if path.extension().is_some_and(|e| e == "onnx") {
        let mut opts = options(flags)?;
        // Given inputs fix their symbolic dims, as `ge check` does with test data.
        for (name, t) in &given {
            opts.input_shapes
                .entry(name.clone())
                .or_insert_with(|| t.dims.clone());
        }
        let c = ge_build::compile_file(path, &opts).map_err(|e| e.to_string())?;
        AlignedBlob::from_bytes(&c.blob)
    } else {
        load_blob(path)?
    };
    // What an application does: validate the blob once, bind one session (arena and
    // buffers allocated up front), then time `Session::run` alone.
    let model = Model::from_bytes(blob.as_bytes()).map_err(|e| e.to_string())?;
    let bounds = integer_bounds(&model);
    let mut ins: Vec<TensorData> = Vec::with_capacity(model.input_count());
    for (i, io) in (0..model.input_count())
        .filter_map(|i| model.input(i))
        .enumerate()
    {
        ins.push(match given.remove(io.name) {
            Some(t) if t.dims != io.shape.dims() || t.dtype != io.dtype => {
                return Err(format!(
                    "input '{}': the file holds {} {:?}, the model takes {} {:?}",
                    io.name,
                    t.dtype.name(),
                    t.dims,
                    io.dtype.name(),
                    io.shape.dims()
                ));
            }
            Some(t) => t,
            None => random_input(io.dtype, io.shape.dims(), 42 + i as u64, bounds[i]),
        });
    }
    if let Some(extra) = given.keys().next() {
        return Err(format!("the model has no input named '{extra}'"));
    }
    let device = profile::on_threads(profile::device(&flags.device)?, threads);
    let mut arena = vec![0u8; model.arena_bytes_unaligned()];
    let mut session =
        ge_runtime::Session::new(&model, &mut arena, device).map_err(|e| e.to_string())?;
    let in_bufs: Vec<&[u8]> = ins.iter().map(|t| t.bytes.as_slice()).collect();
    let mut outs: Vec<Vec<u8>> = (0..model.output_count())
        .filter_map(|i| model.output(i))
        .map(|o| vec![0u8; o.bytes()])
        .collect();
    let mut out_bufs: Vec<&mut [u8]> = outs.iter_mut().map(|b| b.as_mut_slice()).collect();
    let rep = session
        .run(&in_bufs, &mut out_bufs)
        .map_err(|e| e.to_string())?;
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        session
            .run(&in_bufs, &mut out_bufs)
            .map_err(|e| e.to_string())?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let median = if iters % 2 == 1 {
        times[iters / 2]
    } else {
        (times[iters / 2 - 1] + times[iters / 2]) / 2.0
    };
    let mean = times.iter().sum::<f64>() / iters as f64;
    let sim_us = rep.time_ns as f64 / 1000.0;
    let isa = super::host_isa()?;
    let peak = peak.then(|| ge_sim::ops::gemm::peak::fma_peak_gflops(isa, 5));
    // A closed stdout (a pipe's reader gone) ends the output quietly.
    let mut out = std::io::stdout().lock();
    if json {
        let mut v = serde_json::json!({
            "model": path.display().to_string(),
            "median_ms": median, "min_ms": times[0], "mean_ms": mean,
            "iters": iters, "threads": threads, "sim_time_us": sim_us,
            "sim_gm_bytes": rep.gm_bytes, "sim_launches": rep.launches,
            "host_isa": isa.name(),
        });
        if let Some(p) = peak {
            v["isa_peak_gflops"] = p.into();
        }
        let _ = writeln!(out, "{v}");
    } else {
        let _ = writeln!(
            out,
            "{}: median {median:.3} ms, min {:.3} ms over {iters} runs ({threads} thread, {} kernels); simulated {sim_us:.1} us",
            path.display(),
            times[0],
            isa.name()
        );
        if let Some(p) = peak {
            let _ = writeln!(
                out,
                "host multiply-add peak: {p:.1} GFLOP/s per thread ({} path)",
                isa.name()
            );
        }
    }
    Ok(())
}
