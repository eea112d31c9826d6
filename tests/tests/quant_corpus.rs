//! The quantized corpus (`corpus/quant`, `tools/gen_quant_corpus.py`): CNNs quantized by
//! onnxruntime's `quantize_static` (QDQ, int8 activations, per-channel int8 weights) against
//! onnxruntime's int8 outputs, bit for bit at every opt level.
//!
//! The references come from onnxruntime's int8 configuration (`session.qdqisint8allowed =
//! 1`, its default on ARM): every QDQ group it can fuse runs as its int8 kernel. ge fuses
//! the same groups (`ge-build/src/passes/qdq`) and computes each as that kernel does (int32
//! accumulation, MLAS's `f32(acc)·scale` requantization rounded half to even, QLinearSoftmax's
//! exponential table, QLinearAveragePool's zero point added before rounding), so any
//! difference at all is a bug.

use ge_build::check::Tolerance;

/// The `*_qdq` cases the manifest lists (each must be present).
fn qdq_cases() -> Vec<std::path::PathBuf> {
    let root = ge_tests::corpus("quant");
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("manifest.json")).expect("corpus/quant/manifest.json"),
    )
    .expect("manifest.json parses");
    let cases: Vec<_> = manifest["models"]
        .as_array()
        .expect("manifest lists models")
        .iter()
        .filter_map(|m| m["name"].as_str())
        .filter(|n| n.ends_with("_qdq"))
        .map(|n| root.join(n))
        .collect();
    assert_eq!(cases.len(), 6, "corpus/quant: expected 6 *_qdq cases");
    cases
}

#[test]
fn qdq_models_match_onnxruntime_int8_bit_for_bit() {
    let exact = Tolerance {
        rtol: 0.0,
        atol: 0.0,
    };
    let failures = ge_tests::check_all_levels(&qdq_cases(), |_| exact);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
