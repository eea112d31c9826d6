//! Firmware-style use of ge: `#![no_std]`, `#![no_main]`, no global allocator and its own
//! panic handler, so any use of `std` or the heap anywhere in the dependency graph fails to
//! build (or link). Runs the digits model from a `static` arena on the simulated NPU and
//! returns the predicted class of one held-out image as the exit status. The device is the
//! generated `digits::device()`, which dispatches through the model's `KERNELS`, so the
//! binary links only the four kernels the model runs.
//!
//! ```sh
//! cargo build --release --manifest-path examples/firmware/Cargo.toml
//! examples/firmware/target/release/firmware 17; echo $?   # class of held-out image 17
//! examples/firmware/target/release/firmware stack         # prints `run_stack_bytes N`
//! ```
//!
//! On Linux the C runtime calls `main`; libc is linked for the start files, `abort` and
//! `write`. Exit status: the class (0–9), 254 for a bad argument, 255 if the model fails to
//! run. `stack` runs image 0 with `Digits::run` on a painted stack and prints the deepest
//! stack it used.
#![no_std]
#![no_main]

mod rt;

ge::ge_model!(
    Digits = "../digits/models/digits.onnx",
    input_shape(x = [1, 1, 8, 8])
);

/// The held-out images (float32 [N, 1, 8, 8], little-endian), embedded.
static TEST_X: &[u8] = include_bytes!("../../digits/data/test_x.bin");

/// The model's working memory: in `.bss`, handed out once.
static ARENA: digits::StaticArena = digits::StaticArena::new();

/// Classifies held-out image `index`; with `measure`, runs the model on a painted stack
/// and also returns the stack bytes the run used.
fn classify(index: usize, measure: bool) -> Result<(u8, usize), ge::Error> {
    let arena = ARENA
        .take()
        .ok_or(ge::Error::Device("arena already taken"))?;
    let mut net = digits::Digits::new(arena)?;
    let mut inputs = digits::Inputs::zeroed();
    let image = TEST_X
        .chunks_exact(64 * 4)
        .nth(index)
        .ok_or(ge::Error::Device("no such image"))?;
    for (k, px) in image.chunks_exact(4).enumerate() {
        inputs.x[0][0][k / 8][k % 8] = f32::from_le_bytes([px[0], px[1], px[2], px[3]]);
    }
    let mut outputs = digits::Outputs::zeroed();
    let mut stack = 0;
    if measure {
        let mut result = Ok(ge::RunReport::default());
        stack = rt::on_painted_stack(&mut || result = net.run(&inputs, &mut outputs))
            .ok_or(ge::Error::Device("no stack switch on this target"))?;
        result?;
    } else {
        net.run(&inputs, &mut outputs)?;
    }
    let logits = &outputs.logits[0];
    let best = (0..logits.len()).fold(0, |b, k| if logits[k] > logits[b] { k } else { b });
    Ok((best as u8, stack))
}

/// Entry point called by the C runtime: `firmware [INDEX | stack]` (default image 0).
#[unsafe(no_mangle)]
extern "C" fn main(argc: i32, argv: *const *const u8) -> i32 {
    // SAFETY: the C runtime passes argc valid NUL-terminated strings in argv.
    let arg = unsafe { rt::arg(argc, argv, 1) };
    let (index, measure) = match arg {
        None => (0, false),
        Some(b"stack") => (0, true),
        Some(s) => match rt::parse_index(s) {
            Some(i) => (i, false),
            None => return 254,
        },
    };
    match classify(index, measure) {
        Ok((class, stack)) => {
            if measure {
                rt::print_number(b"run_stack_bytes", stack);
            }
            i32::from(class)
        }
        Err(_) => 255,
    }
}
