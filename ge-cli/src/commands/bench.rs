//! `ge bench`: wall-clock time of `Session::run` on a model (compiled on the fly from
//! `.onnx`, or a `.om`), with deterministic random inputs.

use std::path::Path;
use std::time::Instant;

use ge_build::tensor::TensorData;
use ge_runtime::format::DType;
use ge_runtime::{AlignedBlob, Model};

use super::{Res, load_blob, options};
use crate::cli::CompileFlags;
use crate::profile;

/// Deterministic pseudo-random inputs (xorshift; floats ~ uniform[-1, 1)).
pub fn random_input(dtype: DType, dims: &[usize], seed: u64) -> TensorData {
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
            .flat_map(|_| ((next() % 4) as i64).to_le_bytes())
            .collect(),
        DType::I32 => (0..n)
            .flat_map(|_| ((next() % 4) as i32).to_le_bytes())
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

pub(super) fn bench(
    path: &Path,
    threads: usize,
    iters: usize,
    json: bool,
    flags: &CompileFlags,
) -> Res {
    if threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    if iters == 0 {
        return Err("--iters must be at least 1".into());
    }
    let blob = if path.extension().is_some_and(|e| e == "onnx") {
        let opts = options(flags)?;
        let c = ge_build::compile_file(path, &opts).map_err(|e| e.to_string())?;
        AlignedBlob::from_bytes(&c.blob)
    } else {
        load_blob(path)?
    };
    // What an application does: validate the blob once, bind one session (arena and
    // buffers allocated up front), then time `Session::run` alone.
    let model = Model::from_bytes(blob.as_bytes()).map_err(|e| e.to_string())?;
    let ins: Vec<TensorData> = (0..model.input_count())
        .filter_map(|i| model.input(i))
        .enumerate()
        .map(|(i, io)| random_input(io.dtype, io.shape.dims(), 42 + i as u64))
        .collect();
    let mut device = profile::device(&flags.device)?;
    if threads > 1 {
        device.host = ge_sim::threads::Host::on(ge_sim::threads::ThreadPool::shared(threads));
    }
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
    if json {
        let v = serde_json::json!({
            "model": path.display().to_string(),
            "median_ms": median, "min_ms": times[0], "mean_ms": mean,
            "iters": iters, "threads": threads, "sim_time_us": sim_us,
            "sim_gm_bytes": rep.gm_bytes, "sim_launches": rep.launches,
        });
        println!("{v}");
    } else {
        println!(
            "{}: median {median:.3} ms, min {:.3} ms over {iters} runs ({threads} thread); simulated {sim_us:.1} us",
            path.display(),
            times[0]
        );
    }
    Ok(())
}
