//! Every corpus model at every opt level (O0–O3) against its onnxruntime reference (rtol 1e-3,
//! atol 1e-4). The light architectures and transformer blocks must all pass at every level;
//! for the onnx wheel's small cases, the outcome may not depend on the level.

use ge_build::check::{Outcome, Tolerance, check_case_isolated, suite_cases};
use ge_build::{CompileOptions, OptLevel};

const LEVELS: [OptLevel; 4] = [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3];

fn at(level: OptLevel) -> CompileOptions {
    CompileOptions {
        opt_level: level,
        ..CompileOptions::default()
    }
}

fn run_all(part: &str, must_pass: bool, expect_cases: Option<usize>) {
    let cases = suite_cases(&ge_tests::corpus(part));
    if let Some(n) = expect_cases {
        assert_eq!(
            cases.len(),
            n,
            "{part}: expected {n} cases, found {cases:?}"
        );
    }
    let mut failures = Vec::new();
    for c in &cases {
        let outcomes: Vec<Outcome> = LEVELS
            .iter()
            .map(|&l| check_case_isolated(c, &at(l), Tolerance::default()))
            .collect();
        let name = c
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        for (l, o) in LEVELS.iter().zip(&outcomes) {
            if must_pass && !o.passed() {
                failures.push(format!("{part}/{name} at {l:?}: {o:?}"));
            }
        }
        let passes: Vec<bool> = outcomes.iter().map(Outcome::passed).collect();
        if !must_pass && passes.iter().any(|&p| p != passes[0]) {
            failures.push(format!(
                "{part}/{name}: outcome depends on the level: {outcomes:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}

#[test]
fn light_architectures_at_every_level() {
    run_all("light", true, Some(9));
}

#[test]
fn transformer_blocks_at_every_level() {
    run_all("transformer", true, Some(5));
}

#[test]
fn pytorch_and_simple_cases_do_not_depend_on_the_level() {
    for part in ["pytorch-converted", "pytorch-operator", "simple"] {
        run_all(part, false, None);
    }
}
