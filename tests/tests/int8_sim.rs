//! The int8 ResNet-50 on the simulated edge device (the int8 issue's sim criterion):
//! onnxruntime's QDQ model (`corpus/quant/resnet50_qdq`, tools/gen_quant_corpus.py) against
//! the fp32 light ResNet-50 it was quantized from, at O2 on the same seeded input. int8
//! halves the cube's cycles twice over fp16 and moves a quarter of the bytes, so the run
//! must take at most 0.3× the fp32 time and move at most 0.3× its global-memory bytes.

use ge_build::OptLevel;

fn report(model: &str) -> ge_sim::RunReport {
    let bytes = std::fs::read(ge_tests::corpus(model).join("model.onnx")).unwrap();
    let c = ge_tests::compile_at(&bytes, OptLevel::O2);
    let inputs = ge_tests::random_inputs(&c, 11);
    let mut r = ge_build::run::Runner::new(ge_runtime::AlignedBlob::from_bytes(&c.blob)).unwrap();
    r.run(&inputs, ge_sim::SimDevice::default()).unwrap().1
}

#[test]
fn int8_resnet50_takes_under_a_third_of_fp32_time_and_traffic() {
    let (q, f) = (report("quant/resnet50_qdq"), report("light/resnet50"));
    let (time, gm) = (
        q.cycles as f64 / f.cycles as f64,
        q.gm_bytes as f64 / f.gm_bytes as f64,
    );
    println!(
        "int8 {} cycles / fp32 {} = {time:.3}; GM {} / {} = {gm:.3}",
        q.cycles, f.cycles, q.gm_bytes, f.gm_bytes
    );
    assert!(time <= 0.3, "int8 / fp32 simulated time {time:.3} > 0.3");
    assert!(gm <= 0.3, "int8 / fp32 GM bytes {gm:.3} > 0.3");
}
