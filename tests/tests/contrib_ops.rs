//! onnxruntime's contrib ops (`com.microsoft`, and the contrib forms of LayerNormalization /
//! SimplifiedLayerNormalization) on the models `tools/gen_contrib_models.py` writes into
//! `corpus/contrib`: saved by onnxruntime's optimizer, its quantizers, or written directly
//! for the ops no optimization emits. Each must match onnxruntime's outputs at O0 and O2.

use ge_build::check::{Tolerance, check_case_isolated};
use ge_build::onnx::registry;
use ge_build::{CompileOptions, OptLevel};

/// Every model at the default tolerance (rtol 1e-3, atol 1e-4), the quantized ones too:
/// ge's decompositions compute the same integers as onnxruntime's int8 kernels (int32
/// products, f32 requantization with round half to even). The generator quantizes the
/// dynamic models' weights to 7 bits (`reduce_range`) because onnxruntime's AVX2 uint8 x
/// int8 kernel saturates pairs of full-range products in int16, which would make its
/// reference depend on the generating host's instruction set.
const CASES: &[&str] = &[
    "ort_cnn",
    "ort_bert",
    "ort_bert_tr",
    "ort_bert_dyn",
    "ort_lstm_dyn",
    "ort_bilstm_dyn",
    "ort_qop_cnn",
    "ms_fused",
    "ms_quantized",
    "ms_activations",
    "ms_norms",
    "ms_fused_matmul",
    "ms_nhwc_conv",
    "ms_attention",
    "ms_gqa",
    "ms_matmul_nbits",
];

#[test]
fn contrib_models_match_onnxruntime_at_o0_and_o2() {
    let root = ge_tests::corpus("contrib");
    let mut failures = Vec::new();
    for &name in CASES {
        let case = root.join(name);
        assert!(
            case.join("model.onnx").is_file(),
            "{} is missing: run tools/gen_corpus.py",
            case.display()
        );
        for level in [OptLevel::O0, OptLevel::O2] {
            let opts = CompileOptions {
                opt_level: level,
                ..CompileOptions::default()
            };
            let o = check_case_isolated(&case, &opts, Tolerance::default());
            if !o.passed() {
                failures.push(format!("{name} {level:?}: {o:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every `com.microsoft` op ge registers is exercised by some generated model (the
/// generator's manifest counts ops as `"domain:op"`).
#[test]
fn every_registered_contrib_op_has_a_generated_model() {
    let manifest = std::fs::read_to_string(ge_tests::corpus("contrib").join("manifest.json"))
        .unwrap_or_default();
    let missing: Vec<&str> = registry::entries()
        .filter(|e| e.domain == registry::MICROSOFT)
        .map(|e| e.op)
        .filter(|op| !manifest.contains(&format!("\"com.microsoft:{op}\"")))
        .collect();
    assert!(missing.is_empty(), "no generated model carries {missing:?}");
    for op in ["LayerNormalization", "SimplifiedLayerNormalization"] {
        assert!(manifest.contains(&format!("\"ai.onnx:{op}\"")), "{op}");
    }
}
