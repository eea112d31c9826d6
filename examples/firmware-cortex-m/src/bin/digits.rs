//! The digits MLP on a Cortex-M4F/M7: every held-out 8×8 image of the digits example,
//! classified from a `.bss` arena with the blob read in place from flash.
#![no_std]
#![no_main]

use firmware_cortex_m as board;

ge::ge_model!(
    Digits = "../digits/models/digits.onnx",
    input_shape(x = [1, 1, 8, 8])
);

/// The held-out images (float32 [N, 1, 8, 8], little-endian).
static INPUTS: [u8; include_bytes!("../../../digits/data/test_x.bin").len()] =
    *include_bytes!("../../../digits/data/test_x.bin");

static ARENA: digits::StaticArena = digits::StaticArena::new();

#[cortex_m_rt::entry]
fn main() -> ! {
    let Some(cp) = cortex_m::Peripherals::take() else {
        board::exit(false)
    };
    let Some(arena) = ARENA.take() else {
        board::exit(false)
    };
    let mut net = digits::Digits::new(arena).unwrap_or_else(|e| board::fail("digits", e));
    board::run_samples(cp.SYST, "digits", &INPUTS, 64 * 4, |image| {
        let mut inputs = digits::Inputs::zeroed();
        ge::bytes::of_mut(&mut inputs.x).copy_from_slice(image);
        let mut outputs = digits::Outputs::zeroed();
        net.run(&inputs, &mut outputs)?;
        Ok(board::argmax(&outputs.logits[0]))
    })
}
