//! QDQ-format graphs (`tools/gen_qdq_cases.py`, `tests/data/qdq`) against onnxruntime's int8
//! outputs at every opt level, bit for bit, and the groups ge fuses are the ones
//! onnxruntime's QDQ transformer fuses in its int8 configuration (`session.qdqisint8allowed
//! = 1`: what it does on ARM; on x86 it otherwise keeps groups with int8 activations in
//! float, see `ge-build/src/passes/qdq/select.rs`).

use ge_build::check::{Tolerance, suite_cases};
use ge_build::{CompileOptions, OptLevel, compile_bytes};
use ge_runtime::format::{OpKind, task_since_version};
use ge_runtime::{AlignedBlob, Model};

fn cases() -> Vec<std::path::PathBuf> {
    let cases = suite_cases(&ge_tests::workspace_root().join("tests/data/qdq"));
    assert_eq!(cases.len(), 12, "tests/data/qdq: expected 12 cases");
    cases
}

/// Bit-exact for the quantized outputs; the float one (Gemm without a QuantizeLinear) at
/// the default tolerance.
fn tolerance(name: &str) -> Tolerance {
    if name.contains("float") {
        Tolerance::default()
    } else {
        Tolerance {
            rtol: 0.0,
            atol: 0.0,
        }
    }
}

#[test]
fn qdq_cases_match_onnxruntime() {
    let failures = ge_tests::check_all_levels(&cases(), tolerance);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Task kinds of a case compiled at O0 (the fusion happens at import, at every level).
fn kinds(case: &str) -> Vec<OpKind> {
    let dir = ge_tests::workspace_root().join("tests/data/qdq").join(case);
    let bytes = std::fs::read(dir.join("model.onnx")).unwrap();
    let opts = CompileOptions {
        opt_level: OptLevel::O0,
        ..CompileOptions::default()
    };
    let compiled = compile_bytes(&bytes, None, &opts).unwrap();
    let blob = AlignedBlob::from_bytes(&compiled.blob);
    let model = Model::from_bytes(blob.as_bytes()).unwrap();
    model
        .tasks()
        .iter()
        .filter_map(|t| OpKind::from_u16(t.op))
        .collect()
}

fn count(k: &[OpKind], of: OpKind) -> usize {
    k.iter().filter(|&&x| x == of).count()
}

#[test]
fn fused_groups_are_onnxruntimes() {
    // (case, QConv tasks, f32 Conv tasks, QGemm tasks): onnxruntime's optimized graphs
    // hold that many QLinearConv / Conv / QGemm (printed by gen_qdq_cases.py).
    for (case, qconv, conv, qgemm) in [
        ("conv_chain_u8", 2, 0, 0),
        ("conv_chain_s8", 2, 0, 0),
        // One DequantizeLinear feeding two Convs: each gets its own copy.
        ("conv_shared_dq", 2, 0, 0),
        ("pools_u8", 2, 0, 0),
    ] {
        let k = kinds(case);
        assert_eq!(count(&k, OpKind::QConv), qconv, "{case}: {k:?}");
        assert_eq!(count(&k, OpKind::Conv), conv, "{case}: {k:?}");
        assert_eq!(count(&k, OpKind::QGemm), qgemm, "{case}: {k:?}");
    }
    // An Add of constant quantization: one QBinary in onnxruntime's arithmetic (the zero
    // points folded in before rounding; add_ties_s8 has 521 of 2,048 values on ties that
    // rounding first and adding the zero point after gets wrong).
    let k = kinds("add_ties_s8");
    assert_eq!(count(&k, OpKind::QBinary), 1, "add_ties_s8: {k:?}");
    // Equal Q/DQ pairs around MaxPool, Reshape and Transpose dropped: those move int8
    // values, and only the input's QuantizeLinear converts (one Cast task at O0).
    let k = kinds("moves_s8");
    assert_eq!(count(&k, OpKind::QConv), 1, "moves_s8: {k:?}");
    assert_eq!(count(&k, OpKind::Pool), 1, "moves_s8: {k:?}");
    assert_eq!(count(&k, OpKind::Cast), 1, "moves_s8: {k:?}");
    // tf2onnx's dense layers (MatMul + int32-bias Add): onnxruntime's MatMul + Add fusion
    // makes each a QGemm, so do their groups here (2-D A: requantizing; 3-D: an i32 product
    // then the float-output QGemm's scaling and the QuantizeLinear).
    for (case, qgemm) in [
        ("gemm_softmax_s8", 1),
        ("gemm_float_u8", 1),
        ("dense_s8", 2),
        ("dense_rank3_s8", 2),
    ] {
        let k = kinds(case);
        assert_eq!(count(&k, OpKind::QGemm), qgemm, "{case}: {k:?}");
        assert_eq!(
            count(&k, OpKind::Gemm) + count(&k, OpKind::MatMul),
            0,
            "{case}: {k:?}"
        );
    }
}

/// Malformed quantization parameters (`tests/data/qdq_bad`, written by
/// `tools/gen_qdq_cases.py`) on DequantizeLinear / QuantizeLinear (of a QDQ group, which is
/// then not fused) and QLinearConv are compile errors naming the node, its op type and
/// opset, the input at fault and what to do.
#[test]
fn malformed_quantization_parameters_are_compile_errors() {
    let dir = ge_tests::workspace_root().join("tests/data/qdq_bad");
    for (file, node, says) in [
        (
            "dq_zero_scale",
            "'dqw' (DequantizeLinear, opset 13)",
            "x_scale (input 1) is 0 at index 2: quantization scales must be finite and positive; recalibrate",
        ),
        (
            "q_zero_scale",
            "'qy' (QuantizeLinear, opset 13)",
            "y_scale (input 1) is 0 at index 0: quantization scales must be finite and positive",
        ),
        (
            "dq_axis_mismatch",
            "'dqw' (DequantizeLinear, opset 13)",
            "x_scale (input 1) has shape [5]: it must hold one value (per tensor) or a 1-D list of 8",
        ),
        (
            "dq_zero_point_length",
            "'dqw' (DequantizeLinear, opset 13)",
            "x_zero_point (input 2) has shape [3]: it must hold one value (per tensor) or a 1-D list of 8",
        ),
        (
            "dq_zero_point_type",
            "'dqx' (DequantizeLinear, opset 13)",
            "x_zero_point (input 2) is int8 but input 0 is uint8: a zero point has the type of the value it shifts",
        ),
        (
            "qlinear_conv_zero_x_scale",
            "'qconv' (QLinearConv, opset 13)",
            "x_scale (input 1) is 0 at index 0: quantization scales must be finite and positive",
        ),
        (
            "qlinear_conv_w_scale_length",
            "'qconv' (QLinearConv, opset 13)",
            "w_scale (input 4) has shape [5]: it must hold one value (per tensor) or a 1-D list of 8",
        ),
        (
            "qlinear_conv_zero_point_type",
            "'qconv' (QLinearConv, opset 13)",
            "w_zero_point (input 5) is int32 but input 3 is int8",
        ),
    ] {
        let bytes = std::fs::read(dir.join(format!("{file}.onnx"))).unwrap();
        let e = match compile_bytes(&bytes, None, &CompileOptions::default()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{file} compiled"),
        };
        assert!(e.contains(node), "{file}: {e}");
        assert!(e.contains(says), "{file}: {e}");
    }
}

/// The int8 conv epilogue (from O2: a QConv and the vector program reading it, as one
/// `QConvFused` task running the program in place over the conv's tile) gives exactly the
/// bytes of the two tasks it replaces (O1), on seeded inputs; O0 agrees too.
#[test]
fn qconv_epilogue_gives_the_bytes_of_the_separate_tasks() {
    // (case, QConvFused tasks at O2): pools_u8's conv takes the Sigmoid in; MaxPool after a
    // conv is no vector program, so moves_s8 has none, and an Add of constant quantization
    // is a QBinary task (onnxruntime's arithmetic), not a program: conv_shared_dq none.
    for (case, fused) in [("conv_shared_dq", 0), ("conv_chain_u8", 0), ("pools_u8", 1)] {
        let dir = ge_tests::workspace_root().join("tests/data/qdq").join(case);
        let bytes = std::fs::read(dir.join("model.onnx")).unwrap();
        let runs: Vec<_> = [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3]
            .into_iter()
            .map(|level| {
                let c = ge_tests::compile_at(&bytes, level);
                let model = Model::from_bytes(AlignedBlob::from_bytes(&c.blob).as_bytes())
                    .unwrap()
                    .tasks()
                    .iter()
                    .filter(|t| OpKind::from_u16(t.op) == Some(OpKind::QConvFused))
                    .count();
                let out = ge_tests::run(&c, &ge_tests::random_inputs(&c, 7));
                (model, out)
            })
            .collect();
        assert_eq!(runs[1].0, 0, "{case}: no epilogue below O2");
        assert_eq!(runs[2].0, fused, "{case}: QConvFused tasks at O2");
        for (level, r) in runs.iter().enumerate() {
            assert_eq!(r.1.len(), runs[1].1.len());
            for (a, b) in r.1.iter().zip(&runs[1].1) {
                assert_eq!(a.bytes, b.bytes, "{case}: O{level} differs from O1");
            }
        }
        assert!(
            runs[1].1[0]
                .bytes
                .iter()
                .any(|&v| v != runs[1].1[0].bytes[0]),
            "{case}: a constant output tests nothing"
        );
    }
}

/// A vector program that loads or stores int8 marks its record (`FUSED_8BIT_IO`): its task
/// needs format version 7 and the blob is stamped with its tasks' newest version, so a
/// runtime without 8-bit loads refuses it at load; without autofusion (O0) no program needs
/// it (the conv's quad weights need 13 at either level).
#[test]
fn eight_bit_vector_programs_need_format_version_7() {
    let dir = ge_tests::workspace_root().join("tests/data/qdq/moves_s8");
    let bytes = std::fs::read(dir.join("model.onnx")).unwrap();
    for (level, eight_bit) in [(OptLevel::O0, false), (OptLevel::O2, true)] {
        let c = ge_tests::compile_at(&bytes, level);
        let blob = AlignedBlob::from_bytes(&c.blob);
        let model = Model::from_bytes(blob.as_bytes()).unwrap();
        let since = |t: &ge_runtime::format::TaskDesc| {
            let kind = OpKind::from_u16(t.op).unwrap();
            task_since_version(kind, model.task_params(t))
        };
        let fused8 = model
            .tasks()
            .iter()
            .any(|t| t.op == OpKind::Fused as u16 && since(t) == 7);
        assert_eq!(fused8, eight_bit, "{level:?}");
        let newest = model.tasks().iter().map(since).max().unwrap();
        assert!(newest >= if eight_bit { 7 } else { 5 }, "{level:?}");
        assert_eq!(model.version(), newest, "{level:?}");
    }
}
