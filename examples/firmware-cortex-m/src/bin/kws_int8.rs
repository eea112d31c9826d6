//! MLPerf Tiny keyword spotting (DS-CNN, int8 QDQ as tf2onnx converts TFLite's) on a
//! Cortex-M4F/M7: the corpus's real MFCC windows, classified from a `.bss` arena, in
//! TFLite Micro's int8 arithmetic (`int8_rounding = tflite`: the outputs of the TFLM build
//! this firmware replaces, bit for bit).
#![no_std]
#![no_main]

ge::ge_model!(
    KwsInt8 = "../../../shared/corpus/mlperf-tiny/onnx/kws_ref_model.onnx",
    int8_rounding = tflite
);

firmware_cortex_m::classify_main!(
    entry: cortex_m_rt::entry,
    board: firmware_cortex_m::Mps2::take(),
    "kws_int8", kws_int8::KwsInt8,
    input: input_1, output: identity,
    sample_bytes: 49 * 10,
    // int8 [N, 49, 10, 1], from build.rs.
    inputs: include_bytes!(concat!(env!("OUT_DIR"), "/kws_int8.bin")),
);
