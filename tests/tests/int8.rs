//! Integer matrix products and 2-D convolutions on ge's int8 kernels (`QGemm`, `QConv`)
//! against onnxruntime (`tools/gen_int8_cases.py`, `tests/data/int8`), at every opt level:
//! the i32 results of MatMulInteger / ConvInteger and QLinearMatMul's and QLinearConv's
//! requantized u8/i8 exactly (ge requantizes as onnxruntime, `f32(acc)·scale` rounded half
//! to even, on every ISA path), the dynamic-quantization chain within the default float
//! tolerance. Each case must compile to a blob that runs an int8 task and no f32
//! MatMul or Conv.

use ge_build::check::{Tolerance, suite_cases};
use ge_build::{CompileOptions, compile_bytes};
use ge_runtime::format::{OpKind, task_since_version};
use ge_runtime::{AlignedBlob, Model};

/// The tolerance a case states: exact for i32 outputs and requantized ones.
fn tolerance(name: &str) -> Tolerance {
    if name.starts_with("matmul_integer")
        || name.starts_with("conv_integer")
        || name.starts_with("qlinear")
    {
        Tolerance {
            rtol: 0.0,
            atol: 0.0,
        }
    } else {
        Tolerance::default()
    }
}

fn cases() -> Vec<std::path::PathBuf> {
    let cases = suite_cases(&ge_tests::workspace_root().join("tests/data/int8"));
    assert_eq!(cases.len(), 14, "tests/data/int8: expected 14 cases");
    cases
}

#[test]
fn int8_cases_match_onnxruntime() {
    let failures = ge_tests::check_all_levels(&cases(), tolerance);
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
        let int8 = kinds.contains(&OpKind::QGemm) || kinds.contains(&OpKind::QConv);
        assert!(int8, "{}: {kinds:?}", c.display());
        let float = [OpKind::MatMul, OpKind::Conv]
            .iter()
            .any(|k| kinds.contains(k));
        assert!(!float, "{}: {kinds:?}", c.display());
        // Requantizing cases use onnxruntime's f32 requantization (format version 5); a
        // vector program loading or storing int8 (the dynamic cases' quantization chains,
        // from O2) needs version 7.
        let name = c.file_name().unwrap().to_string_lossy();
        let eight_bit = model.tasks().iter().any(|t| {
            t.op == OpKind::Fused as u16
                && task_since_version(OpKind::Fused, model.task_params(t)) == 7
        });
        assert_eq!(eight_bit, name.starts_with("dynamic"), "{}", c.display());
        // Convs (not pointwise, not depthwise) store their weight in quads (version 13).
        let quads = model.tasks().iter().any(|t| {
            t.op == OpKind::QConv as u16
                && task_since_version(OpKind::QConv, model.task_params(t)) == 13
        });
        let want = if quads {
            13
        } else if eight_bit {
            7
        } else if name.starts_with("qlinear") {
            5
        } else {
            4
        };
        assert_eq!(model.version(), want, "{}", c.display());
    }
}

/// Malformed quantization parameters (`tests/data/int8_bad`, written by
/// `tools/gen_int8_cases.py`) are compile errors naming the node, its op type and opset,
/// the input at fault and what to do.
#[test]
fn malformed_quantization_parameters_are_compile_errors() {
    let dir = ge_tests::workspace_root().join("tests/data/int8_bad");
    for (file, says) in [
        (
            "zero_scale",
            "b_scale (input 4) is 0 at index 15: quantization scales must be finite and positive; recalibrate",
        ),
        ("negative_y_scale", "y_scale (input 6) is -0.05"),
        (
            "scale_length",
            "b_scale (input 4) has shape [5]: it must hold one value (per tensor) or a 1-D list of 16 (one per column)",
        ),
        (
            "zero_point_type",
            "the activation zero point (input 2) is int8 but input 0 is uint8: a zero point has the type of the value it shifts",
        ),
    ] {
        let bytes = std::fs::read(dir.join(format!("{file}.onnx"))).unwrap();
        let e = match compile_bytes(&bytes, None, &CompileOptions::default()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{file} compiled"),
        };
        assert!(e.contains("'qmm' (QLinearMatMul, opset 13)"), "{file}: {e}");
        assert!(e.contains(says), "{file}: {e}");
    }
}
