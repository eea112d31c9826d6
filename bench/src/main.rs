//! Times tract on one corpus case (model.onnx + test_data_set_0/input_*.pb), like
//! `tools/ort_bench.py` does for onnxruntime: the model is optimized once, then K timed
//! runs after W warm-up runs; prints the median (and a JSON object with `--json`).
//!
//! `cargo run --release --manifest-path bench/Cargo.toml -- CASE_DIR [--iters K] [--warmup W] [--json]`

use std::path::PathBuf;
use std::time::Instant;

use prost::Message;
use tract_onnx::data_resolver::FopenDataResolver;
use tract_onnx::prelude::*;

fn main() -> TractResult<()> {
    let mut args = std::env::args().skip(1);
    let (mut dir, mut iters, mut warmup, mut json) = (None, 20usize, 3usize, false);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--iters" => iters = args.next().and_then(|v| v.parse().ok()).unwrap_or(iters),
            "--warmup" => warmup = args.next().and_then(|v| v.parse().ok()).unwrap_or(warmup),
            "--json" => json = true,
            _ => dir = Some(PathBuf::from(a)),
        }
    }
    let dir = dir.ok_or_else(|| {
        TractError::msg("usage: ge-bench-tract CASE_DIR [--iters K] [--warmup W] [--json]")
    })?;
    let iters = iters.max(1);
    let mut inputs = TVec::new();
    for i in 0.. {
        let p = dir.join("test_data_set_0").join(format!("input_{i}.pb"));
        if !p.is_file() {
            break;
        }
        let proto = tract_onnx::pb::TensorProto::decode(&*std::fs::read(&p)?)?;
        inputs
            .push(tract_onnx::tensor::load_tensor(&FopenDataResolver, &proto, None)?.into_tvalue());
    }
    let t0 = Instant::now();
    let mut model = tract_onnx::onnx().model_for_path(dir.join("model.onnx"))?;
    for (i, t) in inputs.iter().enumerate() {
        model = model.with_input_fact(
            i,
            InferenceFact::from(t.clone().into_tensor()).without_value(),
        )?;
    }
    let plan = model.into_optimized()?.into_runnable()?;
    let load_ms = t0.elapsed().as_secs_f64() * 1e3;
    for _ in 0..warmup {
        plan.run(inputs.clone())?;
    }
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let ins = inputs.clone();
        let t = Instant::now();
        plan.run(ins)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let median = if iters % 2 == 1 {
        times[iters / 2]
    } else {
        (times[iters / 2 - 1] + times[iters / 2]) / 2.0
    };
    if json {
        println!(
            "{}",
            serde_json::json!({
                "model": dir.display().to_string(), "median_ms": median, "min_ms": times[0],
                "iters": iters, "warmup": warmup, "threads": 1, "load_ms": load_ms,
                "tract": "0.23.9",
            })
        );
    } else {
        println!(
            "{}: median {median:.3} ms, min {:.3} ms over {iters} runs (tract 0.23.9)",
            dir.display(),
            times[0]
        );
    }
    Ok(())
}
