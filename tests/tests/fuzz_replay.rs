//! The fuzz targets on stable: replays the committed seed corpora and every saved crash
//! (`fuzz/seeds/<target>/`, `fuzz/regressions/<target>/`) through the same bodies the
//! libFuzzer harnesses call (`ge_tests::fuzz`), then runs a bounded random-mutation loop
//! per target. The long coverage-guided runs are `cargo +nightly fuzz run <target>` (see
//! `fuzz/README.md`).
//!
//! `cargo test --release -p ge-tests --test fuzz_replay -- --ignored generate_seeds`
//! regenerates the seeds from the corpus (`tools/gen_corpus.py`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ge_build::onnx::proto::TensorProto;
use ge_build::tensor::{npy_to_bytes, read_tensor_pb};
use ge_build::{CompileOptions, compile_bytes};
use ge_tests::fuzz::{Rng, mutate, om_loader, onnx_import, tensor_readers};
use prost::Message;

type Target = fn(&[u8]);

const TARGETS: [(&str, Target); 3] = [
    ("om_loader", om_loader),
    ("onnx_import", onnx_import),
    ("tensor_readers", tensor_readers),
];

fn fuzz_dir() -> PathBuf {
    ge_tests::workspace_root().join("fuzz")
}

fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .map(|p| {
            let b = std::fs::read(&p).expect("read seed");
            (p, b)
        })
        .collect();
    out.sort();
    out
}

/// Runs `f` on `data`, turning a panic into a message that names the input.
fn run_one(name: &str, f: Target, data: &[u8], what: &str) -> Result<(), String> {
    std::panic::catch_unwind(|| f(data)).map_err(|e| {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let keep = std::env::temp_dir().join(format!("ge-fuzz-{name}-crash-{n}.bin"));
        let _ = std::fs::write(&keep, data);
        format!(
            "{name}: {what} panicked ({msg}); input saved to {}",
            keep.display()
        )
    })
}

#[test]
fn seeds_and_regressions_replay() {
    let mut failures = Vec::new();
    for (name, f) in TARGETS {
        let seeds = files(&fuzz_dir().join("seeds").join(name));
        assert!(
            seeds.len() >= 5,
            "{name}: only {} committed seeds in fuzz/seeds/{name}",
            seeds.len()
        );
        let regressions = files(&fuzz_dir().join("regressions").join(name));
        for (p, data) in seeds.iter().chain(&regressions) {
            if let Err(e) = run_one(name, f, data, &p.display().to_string()) {
                failures.push(e);
            }
        }
        eprintln!(
            "{name}: {} seeds, {} regressions replayed",
            seeds.len(),
            regressions.len()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Budget of the mutation loop per target (`GE_FUZZ_SECONDS` overrides, e.g. for a longer
/// local soak on stable).
fn budget() -> Duration {
    let s = std::env::var("GE_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(6.0);
    Duration::from_secs_f64(s)
}

#[test]
fn bounded_mutation_loop() {
    let mut failures = Vec::new();
    for (k, (name, f)) in TARGETS.into_iter().enumerate() {
        let seeds = files(&fuzz_dir().join("seeds").join(name));
        assert!(!seeds.is_empty(), "{name}: no seeds");
        let mut rng = Rng::new(0x5eed + k as u64);
        let start = Instant::now();
        let mut execs = 0u64;
        while start.elapsed() < budget() {
            let a = &seeds[rng.below(seeds.len())].1;
            let b = &seeds[rng.below(seeds.len())].1;
            let mut data = a.clone();
            mutate(&mut data, b, &mut rng);
            execs += 1;
            if let Err(e) = run_one(name, f, &data, &format!("mutant {execs}")) {
                failures.push(e);
                if failures.len() >= 30 {
                    break;
                }
            }
        }
        eprintln!(
            "{name}: {execs} mutated inputs in {:.1} s, {} crashes",
            start.elapsed().as_secs_f64(),
            failures.len()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Writes the seed corpora from the generated corpus: small node-suite models (one per op
/// type) with a flags byte, their compiled blobs, and their test inputs as `.pb` and `.npy`.
#[test]
#[ignore = "regenerates fuzz/seeds from corpus/"]
fn generate_seeds() {
    let node = ge_tests::corpus("node");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&node)
        .expect("node corpus")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("model.onnx").is_file())
        .collect();
    dirs.sort();
    let out = fuzz_dir().join("seeds");
    for (name, _) in TARGETS {
        let d = out.join(name);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("seed dir");
    }
    let mut seen_ops = std::collections::BTreeSet::new();
    let (mut n_onnx, mut n_om, mut n_tensor) = (0usize, 0usize, 0usize);
    for dir in &dirs {
        let model = std::fs::read(dir.join("model.onnx")).expect("model");
        if model.len() > 1500 {
            continue;
        }
        let Ok(m) = ge_build::onnx::decode_model(&model) else {
            continue;
        };
        let ops: Vec<String> = m
            .graph
            .iter()
            .flat_map(|g| g.node.iter().map(|n| n.op_type().to_string()))
            .collect();
        let key = ops.join("+");
        if key.is_empty() || !seen_ops.insert(key) {
            continue;
        }
        let Ok(c) = compile_bytes(&model, None, &CompileOptions::default()) else {
            continue;
        };
        let case = dir.file_name().unwrap().to_string_lossy().to_string();
        let flags = (n_onnx % 8) as u8 | 4;
        let mut seed = vec![flags];
        seed.extend_from_slice(&model);
        std::fs::write(out.join("onnx_import").join(&case), seed).unwrap();
        n_onnx += 1;
        if c.blob.len() <= 6000 && n_om < 48 {
            // Flags 0x11: recompute the checksums and `file_len`.
            let mut seed = vec![0x11];
            seed.extend_from_slice(&c.blob);
            std::fs::write(out.join("om_loader").join(format!("{case}.om")), seed).unwrap();
            n_om += 1;
        }
        let input = dir.join("test_data_set_0").join("input_0.pb");
        if n_tensor < 32
            && let Ok(t) = read_tensor_pb(&input)
            && t.bytes.len() <= 512
        {
            let pb = std::fs::read(&input).unwrap();
            let _ = TensorProto::decode(pb.as_slice()).expect("decodes");
            let mut seed = vec![1u8];
            seed.extend_from_slice(&pb);
            std::fs::write(out.join("tensor_readers").join(format!("{case}.pb")), seed).unwrap();
            if let Ok(npy) = npy_to_bytes(&t) {
                let mut seed = vec![0u8];
                seed.extend_from_slice(&npy);
                std::fs::write(out.join("tensor_readers").join(format!("{case}.npy")), seed)
                    .unwrap();
            }
            n_tensor += 1;
        }
    }
    eprintln!("seeds: {n_onnx} onnx, {n_om} om, {n_tensor} tensors (x2)");
}

/// Replays one input: `GE_FUZZ_REPLAY=<target>:<file> cargo test -p ge-tests --test
/// fuzz_replay -- --ignored replay_one` (a panic shows its backtrace).
#[test]
#[ignore = "debugging aid: replays GE_FUZZ_REPLAY"]
fn replay_one() {
    let spec = std::env::var("GE_FUZZ_REPLAY").expect("GE_FUZZ_REPLAY=<target>:<file>");
    let (target, file) = spec.split_once(':').expect("<target>:<file>");
    let f = TARGETS
        .iter()
        .find(|(n, _)| *n == target)
        .expect("known target")
        .1;
    f(&std::fs::read(file).expect("input"));
}
