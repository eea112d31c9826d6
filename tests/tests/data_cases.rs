//! RNN/GRU/LSTM cases the node suite lacks (sequence_lens masking, linear_before_reset,
//! clip, activations with alpha/beta, input_forget), against onnxruntime's outputs
//! (`tools/gen_recurrent_cases.py`), at every opt level.

use ge_build::check::{Tolerance, check_case_isolated, suite_cases};
use ge_build::{CompileOptions, OptLevel};

#[test]
fn recurrent_cases_match_onnxruntime() {
    let cases = suite_cases(&ge_tests::workspace_root().join("tests/data/recurrent"));
    assert_eq!(cases.len(), 9, "expected 9 cases: {cases:?}");
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
