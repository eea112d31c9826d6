//! Differential testing (issue 18): random valid graphs from `tools/difftest.py` against
//! onnxruntime's outputs at every opt level, on the edge (2 streams) and datacenter (4
//! streams) profiles, with every compiled schedule proven race-free.
//! `corpus/difftest` is the fixed-seed batch that `tools/gen_corpus.py` writes;
//! `tests/data/difftest` holds the minimized mismatches that campaigns found (each fixed,
//! its `case.json` saying where it failed and why), kept forever.

use std::path::PathBuf;
use std::time::Instant;

use ge_build::check::{Tolerance, check_case_isolated_with, suite_cases};
use ge_build::{CompileOptions, OptLevel};
use ge_sim::Profile;

const LEVELS: [OptLevel; 4] = [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3];
const DEVICES: [Profile; 2] = [Profile::EDGE, Profile::DATACENTER];

/// Every case at every level on both devices; the failures, one line each.
fn check_all(cases: &[PathBuf]) -> Vec<String> {
    let mut failures = Vec::new();
    for c in cases {
        for level in LEVELS {
            for device in DEVICES {
                let opts = CompileOptions {
                    opt_level: level,
                    device,
                    ..CompileOptions::default()
                };
                let o = check_case_isolated_with(c, &opts, Tolerance::default(), true);
                if !o.passed() {
                    failures.push(format!(
                        "{} at {level:?} on {}: {o:?}",
                        c.display(),
                        device.name
                    ));
                }
            }
        }
    }
    failures
}

#[test]
fn fixed_seed_random_graphs_match_onnxruntime() {
    let cases = suite_cases(&ge_tests::corpus("difftest"));
    assert_eq!(cases.len(), 300, "corpus/difftest: expected 300 graphs");
    let t = Instant::now();
    let failures = check_all(&cases);
    eprintln!(
        "difftest: {} graphs x 4 levels x 2 devices in {:.1}s",
        cases.len(),
        t.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} failures (replay one with `python3 tools/difftest.py --replay CASE`):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn minimized_mismatches_stay_fixed() {
    let cases = suite_cases(&ge_tests::workspace_root().join("tests/data/difftest"));
    assert!(!cases.is_empty(), "tests/data/difftest has no cases");
    let failures = check_all(&cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
