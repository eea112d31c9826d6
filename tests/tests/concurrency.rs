//! One compiled `Model` shared by many threads (issue 59 item 4): `Model` is `Sync` and
//! `Send`, each thread brings its own arena and `Session`, and eight threads running each of
//! three models (an fp32 CNN, an attention block, an int8 keyword spotter) a thousand times
//! all in all, on four inputs in turn, give bitwise the single-threaded outputs.

use std::path::Path;

use ge_build::tensor::{TensorData, read_tensor_file};
use ge_build::{CompileOptions, compile_file};
use ge_runtime::{AlignedBlob, Model, Session};
use ge_sim::SimDevice;

/// Threads sharing one model.
const THREADS: usize = 8;
/// Runs of each model over all threads.
const RUNS: usize = 1_000;

fn assert_shareable<T: Sync + Send>() {}

/// `inputs` through a `Session` of `model` on `arena`.
fn run(model: &Model<'_>, arena: &mut [u8], inputs: &[TensorData]) -> Vec<Vec<u8>> {
    let mut outs: Vec<Vec<u8>> = (0..model.output_count())
        .map(|i| vec![0u8; model.output(i).expect("output").bytes()])
        .collect();
    let ins: Vec<&[u8]> = inputs.iter().map(|t| t.bytes.as_slice()).collect();
    let mut bufs: Vec<&mut [u8]> = outs.iter_mut().map(|o| o.as_mut_slice()).collect();
    let mut s = Session::new(model, arena, SimDevice::default()).expect("session");
    s.run(&ins, &mut bufs).expect("runs");
    outs
}

/// Compiles `onnx`, computes each input set's outputs on one thread, then has `THREADS`
/// threads share the one `Model` for `RUNS` runs in all, each comparing bitwise.
fn shared_by_threads(name: &str, onnx: &Path, inputs: Vec<Vec<TensorData>>) {
    let c =
        compile_file(onnx, &CompileOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let blob = AlignedBlob::from_bytes(&c.blob);
    let model = Model::from_bytes(blob.as_bytes()).expect("loads");
    let mut arena = vec![0u8; model.arena_bytes_unaligned()];
    let want: Vec<Vec<Vec<u8>>> = inputs.iter().map(|i| run(&model, &mut arena, i)).collect();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (model, inputs, want) = (&model, &inputs, &want);
            s.spawn(move || {
                let mut arena = vec![0u8; model.arena_bytes_unaligned()];
                for r in 0..RUNS / THREADS {
                    let k = (t + r) % inputs.len();
                    let got = run(model, &mut arena, &inputs[k]);
                    assert!(
                        got == want[k],
                        "{name}: thread {t} run {r} differs on input {k}"
                    );
                }
            });
        }
    });
}

#[test]
fn one_model_shared_by_eight_threads_gives_the_single_threaded_outputs() {
    assert_shareable::<Model<'static>>();
    assert_shareable::<AlignedBlob>();
    // Four seeded float inputs for a model compiled from `onnx`.
    let seeded = |onnx: &Path| -> Vec<Vec<TensorData>> {
        let c = compile_file(onnx, &CompileOptions::default()).expect("compiles");
        (0..4)
            .map(|s| ge_tests::random_inputs(&c, 100 + s))
            .collect()
    };
    let squeezenet = ge_tests::corpus("light").join("squeezenet/model.onnx");
    shared_by_threads("squeezenet", &squeezenet, seeded(&squeezenet));
    let encoder = ge_tests::corpus("transformer").join("encoder_block/model.onnx");
    shared_by_threads("encoder_block", &encoder, seeded(&encoder));
    // MLPerf Tiny's keyword spotter in int8, on four of the benchmark's own inputs.
    let tiny = ge_tests::workspace_root().join("../shared/corpus/mlperf-tiny");
    let kws: Vec<Vec<TensorData>> = (0..4)
        .map(|s| {
            let p = tiny.join(format!("data/kws_int8/input_s{s:02}.npy"));
            vec![read_tensor_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))]
        })
        .collect();
    shared_by_threads("kws_int8", &tiny.join("onnx/kws_ref_model.onnx"), kws);
}
