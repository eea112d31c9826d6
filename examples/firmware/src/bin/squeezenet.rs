//! The light SqueezeNet (ONNX backend test data, seeded random weights: `corpus/light/`) as
//! firmware, to measure the footprint of a bigger CNN: like `firmware`, `#![no_std]`,
//! `#![no_main]`, no allocator, and only the model's kernels linked. Classifies an all-zero
//! image; exit status 0 when the model ran and its probabilities sum to 1, 255 otherwise.
//!
//! ```sh
//! cargo build --release --manifest-path examples/firmware/Cargo.toml --features squeezenet
//! ```
#![no_std]
#![no_main]

// For the panic handler; the argument and stack helpers are the digits binary's.
#[allow(dead_code)]
#[path = "../rt.rs"]
mod rt;

ge::ge_model!(
    Squeezenet = "../../corpus/light/squeezenet/model.onnx",
    input_shape(data_0 = [1, 3, 224, 224])
);

use squeezenet::{ARENA_BYTES, INPUT_DATA_0_SHAPE, OUTPUT_SOFTMAXOUT_1_SHAPE};

const INPUT_BYTES: usize = 4 * INPUT_DATA_0_SHAPE[1] * INPUT_DATA_0_SHAPE[2] * INPUT_DATA_0_SHAPE[3];
const CLASSES: usize = OUTPUT_SOFTMAXOUT_1_SHAPE[1];

/// Working memory and the input image, in `.bss` (zeroed), each handed out once.
static ARENA: ge::StaticArena<ARENA_BYTES> = ge::StaticArena::new();
static INPUT: ge::StaticArena<INPUT_BYTES> = ge::StaticArena::new();

fn classify() -> Result<f32, ge::Error> {
    let taken = ge::Error::Device("buffer already taken");
    let arena = ARENA.take().ok_or(taken)?;
    let input = INPUT.take().ok_or(taken)?;
    let mut net = squeezenet::Squeezenet::new(arena)?;
    let mut probs = [0u8; 4 * CLASSES];
    net.run_bytes(&[&input[..]], &mut [&mut probs[..]])?;
    Ok(probs
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .sum())
}

/// Entry point called by the C runtime.
#[unsafe(no_mangle)]
extern "C" fn main(_: i32, _: *const *const u8) -> i32 {
    match classify() {
        Ok(sum) if (sum - 1.0).abs() < 1e-3 => 0,
        _ => 255,
    }
}
