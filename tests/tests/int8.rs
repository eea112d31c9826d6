//! Integer matrix products on ge's int8 kernel (`QGemm`) against onnxruntime
//! (`tools/gen_int8_cases.py`, `tests/data/int8`), at every opt level: the i32 results of
//! MatMulInteger exactly, QLinearMatMul's requantized u8/i8 within 1 LSB (ge requantizes
//! with an exact 31-bit fixed-point multiplier, onnxruntime with `f32(acc)·scale`: they can
//! differ by 1 near a rounding tie), the dynamic-quantization chain within the default
//! float tolerance. Each case must compile to a blob that runs a `QGemm` task and holds no
//! f32 copy of the weight.

use ge_build::check::{Tolerance, check_case_isolated, suite_cases};
use ge_build::{CompileOptions, OptLevel, compile_bytes};
use ge_runtime::format::OpKind;
use ge_runtime::{AlignedBlob, Model};

/// The tolerance a case states: exact for i32 outputs, 1 LSB for requantized ones.
fn tolerance(name: &str) -> Tolerance {
    if name.starts_with("matmul_integer") {
        Tolerance {
            rtol: 0.0,
            atol: 0.0,
        }
    } else if name.starts_with("qlinear") {
        Tolerance {
            rtol: 0.0,
            atol: 1.0,
        }
    } else {
        Tolerance::default()
    }
}

fn cases() -> Vec<std::path::PathBuf> {
    let cases = suite_cases(&ge_tests::workspace_root().join("tests/data/int8"));
    assert_eq!(cases.len(), 8, "tests/data/int8: expected 8 cases");
    cases
}

#[test]
fn int8_cases_match_onnxruntime() {
    let mut failures = Vec::new();
    for c in cases() {
        let name = c.file_name().unwrap().to_string_lossy().into_owned();
        for level in [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3] {
            let opts = CompileOptions {
                opt_level: level,
                ..CompileOptions::default()
            };
            let o = check_case_isolated(&c, &opts, tolerance(&name));
            if !o.passed() {
                failures.push(format!("{name} at {level:?}: {o:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn int8_cases_run_the_int8_kernel() {
    for c in cases() {
        let bytes = std::fs::read(c.join("model.onnx")).unwrap();
        let compiled = compile_bytes(&bytes, None, &CompileOptions::default()).unwrap();
        let blob = AlignedBlob::from_bytes(&compiled.blob);
        let model = Model::from_bytes(blob.as_bytes()).unwrap();
        let kinds: Vec<_> = model
            .tasks()
            .iter()
            .filter_map(|t| OpKind::from_u16(t.op))
            .collect();
        assert!(kinds.contains(&OpKind::QGemm), "{}: {kinds:?}", c.display());
        assert!(
            !kinds.contains(&OpKind::MatMul),
            "{}: {kinds:?}",
            c.display()
        );
        assert_eq!(model.version(), 4, "{}", c.display());
    }
}
