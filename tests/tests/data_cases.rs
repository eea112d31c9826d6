//! Checked-in cases for paths the node suite lacks, at every opt level: RNN/GRU/LSTM against
//! onnxruntime (`tools/gen_recurrent_cases.py`: sequence_lens masking, linear_before_reset,
//! clip, activation alpha/beta, input_forget) and GridSample against onnx.reference
//! (`tools/gen_grid_sample_cases.py`: every mode × padding × align_corners, 3-D, f16, f64);
//! import decompositions (`tools/gen_decomposed_cases.py`: Scan axes/directions and a nested
//! If, Loop scan outputs, DFT/STFT lengths, constant-input Col2Im, CenterCropPad, Compress,
//! ReverseSequence, BitCast, RotaryEmbedding).

use ge_build::check::{Tolerance, check_case_isolated, suite_cases};
use ge_build::{CompileOptions, OptLevel};

fn all_pass(folder: &str, expect: usize) {
    let cases = suite_cases(&ge_tests::workspace_root().join("tests/data").join(folder));
    assert_eq!(cases.len(), expect, "{folder}: expected {expect} cases");
    let mut failures = Vec::new();
    for c in &cases {
        for level in [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3] {
            let opts = CompileOptions {
                opt_level: level,
                ..CompileOptions::default()
            };
            let o = check_case_isolated(c, &opts, Tolerance::default());
            if !o.passed() {
                failures.push(format!("{} at {level:?}: {o:?}", c.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn recurrent_cases_match_onnxruntime() {
    all_pass("recurrent", 9);
}

#[test]
fn grid_sample_cases_match_the_reference() {
    all_pass("grid_sample", 32);
}

#[test]
fn decomposed_cases_match_the_reference() {
    all_pass("decomposed", 12);
}
