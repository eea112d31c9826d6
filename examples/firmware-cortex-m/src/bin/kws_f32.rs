//! MLPerf Tiny keyword spotting (DS-CNN, float32 as tf2onnx converts it) on a
//! Cortex-M4F/M7: the corpus's real MFCC windows, classified from a `.bss` arena.
#![no_std]
#![no_main]

ge::ge_model!(KwsF32 = "../../../shared/corpus/mlperf-tiny/onnx/kws_ref_model_float32.onnx");

firmware_cortex_m::classify_main!(
    entry: cortex_m_rt::entry,
    board: firmware_cortex_m::Mps2::take(),
    "kws_f32", kws_f32::KwsF32,
    input: input_1, output: identity,
    sample_bytes: 49 * 10 * 4,
    // float32 [N, 49, 10, 1], from build.rs.
    inputs: include_bytes!(concat!(env!("OUT_DIR"), "/kws_f32.bin")),
);
