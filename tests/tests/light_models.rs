//! The 9 architectures of the onnx wheel's `light` set, with seeded random weights and
//! onnxruntime reference outputs, must match within rtol 1e-3 / atol 1e-4.

use ge_build::CompileOptions;
use ge_build::check::{Outcome, Tolerance, check_case_isolated, suite_cases};

#[test]
fn light_architectures_match_onnxruntime() {
    let cases = suite_cases(&ge_tests::corpus("light"));
    assert_eq!(
        cases.len(),
        9,
        "expected the 9 light architectures, found {cases:?}"
    );
    let mut failures = Vec::new();
    for c in &cases {
        let outcome = check_case_isolated(c, &CompileOptions::default(), Tolerance::default());
        eprintln!("{}: {outcome:?}", c.display());
        if outcome != Outcome::Pass {
            failures.push(format!("{}: {outcome:?}", c.display()));
        }
    }
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}
