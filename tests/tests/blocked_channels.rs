//! Blocked channels (`--blocked-channels on`, NCHWc): every light architecture compiled with
//! the layout pass at O2 and O3 against its onnxruntime reference (rtol 1e-3, atol 1e-4, as
//! the opt-level suite), on whichever host kernels this CPU runs (the AVX-512 tile, else the
//! portable one). The layout must actually be planned: a model of whole channel blocks gets
//! blocked convs.

use ge_build::check::{Tolerance, check_case_isolated, suite_cases};
use ge_build::{BlockedChannels, CompileOptions, OptLevel};

#[test]
fn light_architectures_on_blocked_channels() {
    let cases = suite_cases(&ge_tests::corpus("light"));
    assert_eq!(cases.len(), 9, "light cases: {cases:?}");
    let mut failures = Vec::new();
    for c in &cases {
        for level in [OptLevel::O2, OptLevel::O3] {
            let opts = CompileOptions {
                opt_level: level,
                blocked_channels: BlockedChannels::On,
                ..CompileOptions::default()
            };
            let o = check_case_isolated(c, &opts, Tolerance::default());
            if !o.passed() {
                failures.push(format!("{} at {level:?}: {o:?}", c.display()));
            }
        }
    }
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}

#[test]
fn resnet50_is_planned_on_blocked_channels() {
    let model = ge_tests::corpus("light").join("resnet50/model.onnx");
    let opts = CompileOptions {
        blocked_channels: BlockedChannels::On,
        ..CompileOptions::default()
    };
    let out = ge_build::compile_file(&model, &opts).expect("resnet50 compiles");
    let stat = out
        .report
        .passes
        .iter()
        .find(|p| p.name == "blocked_layout")
        .expect("the layout pass ran");
    assert!(stat.changed, "resnet50 got no blocked convs");
}

/// SqueezeNet's fire modules concatenate conv outputs on channels: the concat runs on
/// blocked channels (whole blocks per image are one run in either layout), so the blocked
/// plan adds at most a couple of reorders at the graph's borders, none per module.
#[test]
fn channel_concats_stay_blocked() {
    let model = ge_tests::corpus("light").join("squeezenet/model.onnx");
    let tasks = |blocked_channels| {
        let opts = CompileOptions {
            blocked_channels,
            ..CompileOptions::default()
        };
        ge_build::compile_file(&model, &opts)
            .expect("squeezenet compiles")
            .report
            .tasks
    };
    let (plain, blocked) = (tasks(BlockedChannels::Off), tasks(BlockedChannels::On));
    assert!(
        blocked <= plain + 2,
        "blocked plan has {blocked} tasks, plain {plain}: reorders around the concats?"
    );
}
