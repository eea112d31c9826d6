//! Shared helpers of the cross-crate tests: the generated corpus, a model builder, and
//! running compiled models on the simulated device.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use ge_build::check::{Tolerance, check_case_isolated};
use ge_build::run::Runner;
use ge_build::tensor::TensorData;
use ge_build::{CompileOptions, Compiled, OptLevel, compile_bytes};
use ge_runtime::format::DType;

pub mod elf;
pub mod fuzz;
pub mod onnx_builder;
pub mod structured;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// The corpus folder (`GE_CORPUS`, else `<workspace>/corpus`). Panics with the command to
/// run when it is missing: a test must not pass vacuously.
pub fn corpus(part: &str) -> PathBuf {
    let root = std::env::var_os("GE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("corpus"));
    let p = root.join(part);
    assert!(
        p.is_dir(),
        "corpus part {} is missing: run `python3 -m pip install -r tools/requirements.txt && python3 tools/gen_corpus.py`",
        p.display()
    );
    p
}

/// Checks the corpus cases `names` of `part` (each must exist) at every level in `levels`
/// against their references at the default tolerance; returns one line per failure.
pub fn check_corpus_cases(part: &str, names: &[&str], levels: &[OptLevel]) -> Vec<String> {
    let root = corpus(part);
    let mut failures = Vec::new();
    for name in names {
        let case = root.join(name);
        assert!(
            case.join("model.onnx").is_file(),
            "{} is missing: run tools/gen_corpus.py",
            case.display()
        );
        failures.extend(check_at_levels(&case, levels, Tolerance::default()));
    }
    failures
}

/// All four opt levels.
pub const ALL_LEVELS: [OptLevel; 4] = [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3];

/// Checks every case of `cases` at every opt level, each with the tolerance `tol` gives
/// for its name; returns one line per failure.
pub fn check_all_levels(cases: &[PathBuf], tol: impl Fn(&str) -> Tolerance) -> Vec<String> {
    cases
        .iter()
        .flat_map(|c| {
            let name = c.file_name().unwrap_or_default().to_string_lossy();
            check_at_levels(c, &ALL_LEVELS, tol(&name))
        })
        .collect()
}

/// Checks one case directory against its reference at each of `levels` with `tol`; returns
/// one line per failure, naming the case and level.
pub fn check_at_levels(case: &std::path::Path, levels: &[OptLevel], tol: Tolerance) -> Vec<String> {
    let name = case.file_name().unwrap_or_default().to_string_lossy();
    let mut failures = Vec::new();
    for &level in levels {
        let opts = CompileOptions {
            opt_level: level,
            ..CompileOptions::default()
        };
        let o = check_case_isolated(case, &opts, tol);
        if !o.passed() {
            failures.push(format!("{name} {level:?}: {o:?}"));
        }
    }
    failures
}

/// Compiles model bytes at `level`.
pub fn compile_at(model: &[u8], level: OptLevel) -> Compiled {
    compile_bytes(
        model,
        None,
        &CompileOptions {
            opt_level: level,
            ..CompileOptions::default()
        },
    )
    .expect("compiles")
}

/// Seeded inputs in [-2, 2) for every input of a compiled model.
pub fn random_inputs(c: &Compiled, seed: u64) -> Vec<TensorData> {
    let mut s = seed | 1;
    c.graph
        .inputs
        .iter()
        .map(|&v| {
            let val = c.graph.value(v);
            assert_eq!(
                val.dtype,
                DType::F32,
                "random_inputs makes float32 inputs only"
            );
            let bytes = (0..val.numel())
                .flat_map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    (((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0).to_le_bytes()
                })
                .collect();
            TensorData {
                dtype: DType::F32,
                dims: val.shape.clone(),
                bytes,
            }
        })
        .collect()
}

/// Runs a compiled model on the default device.
pub fn run(c: &Compiled, inputs: &[TensorData]) -> Vec<TensorData> {
    let mut r = Runner::new(ge_runtime::AlignedBlob::from_bytes(&c.blob)).expect("loads");
    r.run(inputs, ge_sim::SimDevice::default()).expect("runs").0
}

/// Asserts two runs agree within rtol 1e-4 / atol 1e-5 (the same math, reassociated).
pub fn assert_close(a: &[TensorData], b: &[TensorData]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        ge_build::check::compare(
            x,
            y,
            ge_build::check::Tolerance {
                rtol: 1e-4,
                atol: 1e-5,
            },
        )
        .expect("outputs agree");
    }
}
