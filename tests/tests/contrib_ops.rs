//! onnxruntime's contrib ops (`com.microsoft`, and the contrib forms of LayerNormalization /
//! SimplifiedLayerNormalization) on the models `tools/gen_contrib_models.py` writes into
//! `corpus/contrib`: saved by onnxruntime's optimizer, its quantizers, or written directly
//! for the ops no optimization emits. Each must match onnxruntime's outputs at O0 and O2.

use ge_build::onnx::registry;
use ge_build::{CompileOptions, OptLevel, compile_bytes};
use ge_tests::onnx_builder::{Attr, ModelBuilder};

const MS: &str = "com.microsoft";

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
    let failures = ge_tests::check_corpus_cases("contrib", CASES, &[OptLevel::O0, OptLevel::O2]);
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

/// The error for a one-node model (`com.microsoft` unless `domain` says otherwise).
fn refusal(
    inputs: &[(&str, &[usize])],
    weights: &[(&str, &[usize])],
    op: &str,
    domain: &str,
    attrs: &[(&str, Attr)],
) -> String {
    let mut m = ModelBuilder::new(13);
    for (n, s) in inputs {
        m.input(n, s);
    }
    for (n, s) in weights {
        m.weight(n, s, -1.0, 1.0);
    }
    let names: Vec<&str> = inputs.iter().chain(weights).map(|(n, _)| *n).collect();
    m.node(op, &names, &["y"], attrs).in_domain(domain);
    m.output("y", &[1]);
    match compile_bytes(&m.build(), None, &CompileOptions::default()) {
        Ok(_) => panic!("{op} compiled"),
        Err(e) => e.to_string(),
    }
}

/// Variants ge does not lower are refused naming the node, the domain-qualified op type
/// and what to do, never compiled into something else.
#[test]
fn unsupported_contrib_variants_are_refused_by_name() {
    let cases: Vec<(String, &[&str])> = vec![
        (
            refusal(
                &[("a", &[2, 3, 4]), ("b", &[2, 4, 5])],
                &[],
                "FusedMatMul",
                MS,
                &[("transBatchA", Attr::I(1))],
            ),
            &["com.microsoft:FusedMatMul", "transBatchA", "re-save"],
        ),
        (
            refusal(
                &[("x", &[1, 3, 8, 8])],
                &[("w", &[4, 3, 3, 3])],
                "FusedConv",
                MS,
                &[("activation", Attr::S("Elu"))],
            ),
            &["com.microsoft:FusedConv", "activation 'Elu'"],
        ),
        (
            refusal(
                &[
                    ("x", &[1, 4, 8]),
                    ("w", &[8, 24]),
                    ("b", &[24]),
                    ("m", &[1, 4]),
                    ("past", &[2, 1, 2, 3, 4]),
                ],
                &[],
                "Attention",
                MS,
                &[("num_heads", Attr::I(2))],
            ),
            &["com.microsoft:Attention", "past"],
        ),
        (
            refusal(
                &[("a", &[2, 32]), ("b", &[8, 2, 8]), ("s", &[8, 2])],
                &[],
                "MatMulNBits",
                MS,
                &[
                    ("K", Attr::I(32)),
                    ("N", Attr::I(8)),
                    ("block_size", Attr::I(16)),
                ],
            ),
            &["com.microsoft:MatMulNBits", "must be a constant"],
        ),
        (
            refusal(
                &[("x", &[1, 8, 4, 4])],
                &[],
                "ReorderInput",
                "com.microsoft.nchwc",
                &[],
            ),
            &["ReorderInput", "ORT_ENABLE_EXTENDED"],
        ),
    ];
    for (msg, want) in cases {
        for w in want {
            assert!(msg.contains(w), "{msg:?} does not say {w:?}");
        }
    }
}
