//! The digits CNN on a Cortex-M4F/M7: every held-out 8×8 image of the digits example,
//! classified from a `.bss` arena with the blob read in place from flash.
#![no_std]
#![no_main]

ge::ge_model!(
    Digits = "../digits/models/digits.onnx",
    input_shape(x = [1, 1, 8, 8])
);

firmware_cortex_m::classify_main!(
    entry: cortex_m_rt::entry,
    board: firmware_cortex_m::Mps2::take(),
    "digits", digits::Digits,
    input: x, output: logits,
    sample_bytes: 64 * 4,
    // float32 [N, 1, 8, 8].
    inputs: include_bytes!("../../../digits/data/test_x.bin"),
);
