//! MLPerf Tiny keyword spotting (DS-CNN, float32 as tf2onnx converts it) on a
//! Cortex-M4F/M7: the corpus's real MFCC windows, classified from a `.bss` arena.
#![no_std]
#![no_main]

use firmware_cortex_m as board;

ge::ge_model!(KwsF32 = "../../../shared/corpus/mlperf-tiny/onnx/kws_ref_model_float32.onnx");

/// The corpus inputs (float32 [N, 49, 10, 1]).
static INPUTS: [u8; include_bytes!(concat!(env!("OUT_DIR"), "/kws_f32.bin")).len()] =
    *include_bytes!(concat!(env!("OUT_DIR"), "/kws_f32.bin"));

static ARENA: kws_f32::StaticArena = kws_f32::StaticArena::new();

#[cortex_m_rt::entry]
fn main() -> ! {
    let Some(cp) = cortex_m::Peripherals::take() else {
        board::exit(false)
    };
    let Some(arena) = ARENA.take() else {
        board::exit(false)
    };
    let mut net = kws_f32::KwsF32::new(arena).unwrap_or_else(|e| board::fail("kws_f32", e));
    board::run_samples(cp.SYST, "kws_f32", &INPUTS, 49 * 10 * 4, |mfcc| {
        let mut inputs = kws_f32::Inputs::zeroed();
        ge::bytes::of_mut(&mut inputs.input_1).copy_from_slice(mfcc);
        let mut outputs = kws_f32::Outputs::zeroed();
        net.run(&inputs, &mut outputs)?;
        Ok(board::argmax(&outputs.identity[0]))
    })
}
