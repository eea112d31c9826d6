//! Firmware-style use of ge: `#![no_std]`, `#![no_main]`, no global allocator and its own
//! panic handler, so any use of `std` or the heap anywhere in the dependency graph fails to
//! build (or link). Runs the digits model from a `static` arena on the simulated NPU and
//! returns the predicted class of one held-out image as the exit status.
//!
//! ```sh
//! cargo build --release --manifest-path examples/firmware/Cargo.toml
//! examples/firmware/target/release/firmware 17; echo $?   # class of held-out image 17
//! ```
//!
//! On Linux the C runtime calls `main`; libc is linked for the start files and `abort`.
//! Exit status: the class (0–9), 254 for a bad argument, 255 if the model fails to run.
#![no_std]
#![no_main]

use core::panic::PanicInfo;

ge::ge_model!(
    Digits = "../digits/models/digits.onnx",
    input_shape(x = [1, 1, 8, 8])
);

/// The held-out images (float32 [N, 1, 8, 8], little-endian), embedded.
static TEST_X: &[u8] = include_bytes!("../../digits/data/test_x.bin");

/// The model's working memory: in `.bss`, handed out once.
static ARENA: digits::StaticArena = digits::StaticArena::new();

#[link(name = "c")]
unsafe extern "C" {
    fn abort() -> !;
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    // SAFETY: abort has no preconditions.
    unsafe { abort() }
}

/// Referenced by the precompiled `core` (built with unwinding); never called because this
/// binary is built with `panic = "abort"`.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}

/// Parses a non-negative decimal C string.
///
/// # Safety
/// `s` must point to a NUL-terminated string.
unsafe fn parse_index(s: *const u8) -> Option<usize> {
    let mut n: usize = 0;
    let mut i = 0;
    loop {
        // SAFETY: within the NUL-terminated string (the caller's contract).
        let c = unsafe { *s.add(i) };
        match c {
            0 if i > 0 => return Some(n),
            b'0'..=b'9' => n = n.checked_mul(10)?.checked_add(usize::from(c - b'0'))?,
            _ => return None,
        }
        i += 1;
    }
}

/// Classifies held-out image `index`.
fn classify(index: usize) -> Result<u8, ge::Error> {
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
    net.run(&inputs, &mut outputs)?;
    let logits = &outputs.logits[0];
    let best = (0..logits.len()).fold(0, |b, k| if logits[k] > logits[b] { k } else { b });
    Ok(best as u8)
}

/// Entry point called by the C runtime: `firmware [INDEX]` (default 0).
#[unsafe(no_mangle)]
extern "C" fn main(argc: i32, argv: *const *const u8) -> i32 {
    let index = if argc > 1 {
        // SAFETY: the C runtime passes argc valid NUL-terminated strings in argv.
        match unsafe { parse_index(*argv.add(1)) } {
            Some(i) => i,
            None => return 254,
        }
    } else {
        0
    };
    match classify(index) {
        Ok(class) => i32::from(class),
        Err(_) => 255,
    }
}
