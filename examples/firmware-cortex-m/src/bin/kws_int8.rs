//! MLPerf Tiny keyword spotting (DS-CNN, int8 QDQ as tf2onnx converts TFLite's) on a
//! Cortex-M4F/M7: the corpus's real MFCC windows, classified from a `.bss` arena.
#![no_std]
#![no_main]

use firmware_cortex_m as board;

ge::ge_model!(KwsInt8 = "../../../shared/corpus/mlperf-tiny/onnx/kws_ref_model.onnx");

/// The corpus inputs (int8 [N, 49, 10, 1]).
static INPUTS: [u8; include_bytes!(concat!(env!("OUT_DIR"), "/kws_int8.bin")).len()] =
    *include_bytes!(concat!(env!("OUT_DIR"), "/kws_int8.bin"));

static ARENA: kws_int8::StaticArena = kws_int8::StaticArena::new();

#[cortex_m_rt::entry]
fn main() -> ! {
    let Some(cp) = cortex_m::Peripherals::take() else {
        board::exit(false)
    };
    let Some(arena) = ARENA.take() else {
        board::exit(false)
    };
    let mut net = kws_int8::KwsInt8::new(arena).unwrap_or_else(|e| board::fail("kws_int8", e));
    board::run_samples(cp.SYST, "kws_int8", &INPUTS, 49 * 10, |mfcc| {
        let mut inputs = kws_int8::Inputs::zeroed();
        ge::bytes::of_mut(&mut inputs.input_1).copy_from_slice(mfcc);
        let mut outputs = kws_int8::Outputs::zeroed();
        net.run(&inputs, &mut outputs)?;
        Ok(board::argmax(&outputs.identity[0]))
    })
}
