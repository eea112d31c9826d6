//! The race checker: every corpus model at every opt level is race-free under its stream
//! plan; a deliberately broken plan (memory planned on the task order, ignoring stream
//! concurrency) is caught; and parallel branches shorten simulated time.

use ge_build::check::suite_cases;
use ge_build::{CompileOptions, OptLevel, compile_file};
use ge_runtime::{AlignedBlob, Model};
use ge_sim::{Profile, SimDevice};

const LEVELS: [OptLevel; 4] = [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3];

fn blob(model: &std::path::Path, opts: &CompileOptions) -> AlignedBlob {
    let c = compile_file(model, opts).unwrap_or_else(|e| panic!("{}: {e}", model.display()));
    AlignedBlob::from_bytes(&c.blob)
}

#[test]
fn every_corpus_model_is_race_free_at_every_level() {
    let mut checked = 0;
    for part in [
        "light",
        "transformer",
        "pytorch-converted",
        "pytorch-operator",
    ] {
        for case in suite_cases(&ge_tests::corpus(part)) {
            for level in LEVELS {
                for device in [Profile::EDGE, Profile::DATACENTER] {
                    let opts = CompileOptions {
                        opt_level: level,
                        device,
                        ..CompileOptions::default()
                    };
                    let Ok(c) = compile_file(&case.join("model.onnx"), &opts) else {
                        continue;
                    };
                    let b = AlignedBlob::from_bytes(&c.blob);
                    let m = Model::from_bytes(b.as_bytes()).expect("loads");
                    if let Err(r) = ge_sim::race::check_races(&m) {
                        panic!("{} at {level:?} on {}: {r:?}", case.display(), device.name);
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 900, "only {checked} compiled plans checked");
}

#[test]
fn a_plan_that_ignores_stream_concurrency_is_caught() {
    let model = ge_tests::corpus("light")
        .join("inception_v1")
        .join("model.onnx");
    let opts = CompileOptions {
        device: Profile::DATACENTER,
        unsafe_linear_memory_plan: true,
        ..CompileOptions::default()
    };
    let b = blob(&model, &opts);
    let m = Model::from_bytes(b.as_bytes()).expect("loads");
    let race = ge_sim::race::check_races(&m).expect_err("the broken plan must race");
    assert!(
        race.first < race.second && race.bytes.0 < race.bytes.1,
        "{race:?}"
    );
}

#[test]
fn inception_branches_overlap_and_shorten_simulated_time() {
    let model = ge_tests::corpus("light")
        .join("inception_v1")
        .join("model.onnx");
    let time = |streams: usize| {
        let opts = CompileOptions {
            device: Profile::DATACENTER,
            max_streams: Some(streams),
            ..CompileOptions::default()
        };
        let b = blob(&model, &opts);
        let m = Model::from_bytes(b.as_bytes()).expect("loads");
        assert!(m.stream_count() <= streams);
        SimDevice::new(Profile::DATACENTER).predict(&m).time_ns
    };
    let (one, four) = (time(1), time(4));
    eprintln!("inception_v1 on datacenter: 1 stream {one} ns, 4 streams {four} ns");
    assert!(
        four < one,
        "4 streams {four} ns is not faster than 1 stream {one} ns"
    );
}
