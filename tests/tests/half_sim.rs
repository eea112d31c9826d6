//! The fp16 ResNet-50 on the simulated edge device (the precision issue's sim criterion):
//! the light ResNet-50 compiled `force_fp16` against the same model `force_fp32`, at O2 on
//! the same seeded input. The cube runs fp16 at 4× the fp32 rate and every tensor is half
//! the bytes, so the run must take at most 0.5× the fp32 time, move about half the
//! global-memory bytes (0.40–0.55×: fp32 operands that do not fit in L1 are read again where
//! fp16 ones fit) and store half the weight bytes; its arena must stay within 0.55× fp32's
//! (the fp16 activations' peak is half, plus the least scratch of the half convs there:
//! `plan::workspaces`).

use ge_build::{CompileOptions, OptLevel, Precision, compile_bytes};

struct Figures {
    run: ge_sim::RunReport,
    arena: usize,
    weights: usize,
}

fn figures(precision: Precision) -> Figures {
    let bytes = std::fs::read(ge_tests::corpus("light/resnet50").join("model.onnx")).unwrap();
    let opts = CompileOptions {
        opt_level: OptLevel::O2,
        precision,
        ..CompileOptions::default()
    };
    let c = compile_bytes(&bytes, None, &opts).expect("compiles");
    let blob = ge_runtime::AlignedBlob::from_bytes(&c.blob);
    let (arena, weights) = {
        let model = ge_runtime::Model::from_bytes(blob.as_bytes()).expect("loads");
        (model.arena_bytes(), model.weights().len())
    };
    let inputs = ge_tests::random_inputs(&c, 11);
    let mut r = ge_build::run::Runner::new(blob).unwrap();
    let run = r.run(&inputs, ge_sim::SimDevice::default()).unwrap().1;
    Figures {
        run,
        arena,
        weights,
    }
}

#[test]
fn fp16_resnet50_takes_half_the_fp32_time_traffic_weights_and_arena() {
    let (h, f) = (figures(Precision::ForceFp16), figures(Precision::ForceFp32));
    let ratio = |a: u64, b: u64| a as f64 / b as f64;
    let time = ratio(h.run.cycles, f.run.cycles);
    let gm = ratio(h.run.gm_bytes, f.run.gm_bytes);
    let weights = ratio(h.weights as u64, f.weights as u64);
    let arena = ratio(h.arena as u64, f.arena as u64);
    println!(
        "fp16 {} cycles / fp32 {} = {time:.4}; GM {} / {} = {gm:.4}; weights {} / {} = \
         {weights:.4}; arena {} / {} = {arena:.4}",
        h.run.cycles,
        f.run.cycles,
        h.run.gm_bytes,
        f.run.gm_bytes,
        h.weights,
        f.weights,
        h.arena,
        f.arena
    );
    assert!(time <= 0.5, "fp16 / fp32 simulated time {time:.4} > 0.5");
    assert!(
        (0.40..=0.55).contains(&gm),
        "fp16 / fp32 GM bytes {gm:.4} not about half"
    );
    assert!(
        (0.49..=0.51).contains(&weights),
        "fp16 / fp32 weight bytes {weights:.4} not half"
    );
    assert!(arena <= 0.55, "fp16 / fp32 arena {arena:.4} > 0.55");
}
