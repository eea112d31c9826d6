//! The digits CNN on RISC-V (rv32imac, soft float): every held-out 8×8 image of the digits
//! example, classified from a `.bss` arena with the blob read in place.
#![no_std]
#![no_main]

ge::ge_model!(
    Digits = "../digits/models/digits.onnx",
    input_shape(x = [1, 1, 8, 8])
);

firmware_riscv::classify_main!(
    entry: riscv_rt::entry,
    board: firmware_riscv::Virt,
    "digits", digits::Digits,
    input: x, output: logits,
    sample_bytes: 64 * 4,
    // float32 [N, 1, 8, 8].
    inputs: include_bytes!("../../../digits/data/test_x.bin"),
);
