//! The digits model through `build.rs` + `include!` instead of `ge_model!`: classifies the
//! held-out split and checks the accuracy against onnxruntime's.
//!
//! ```sh
//! cargo run --release -p build-script
//! ```
#![forbid(unsafe_code)]

use std::error::Error;
use std::path::Path;

include!(concat!(env!("OUT_DIR"), "/ge_models.rs"));

/// The compile report the build script wrote next to the bindings.
const REPORT: &str = include_str!(concat!(env!("OUT_DIR"), "/digits.report.json"));

fn main() -> Result<(), Box<dyn Error>> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../digits/data");
    let x = std::fs::read(data.join("test_x.bin"))?;
    let y = std::fs::read(data.join("test_y.bin"))?;
    let ort: usize = std::fs::read_to_string(data.join("ort_accuracy.txt"))?
        .split_whitespace()
        .next()
        .ok_or("ort_accuracy.txt is empty")?
        .parse()?;

    // A heap buffer of any alignment works too, given ARENA_BYTES_UNALIGNED bytes.
    let mut arena = vec![0u8; digits::ARENA_BYTES_UNALIGNED];
    let mut net = digits::Digits::new(&mut arena)?;
    let mut probs = [0f32; 10];
    let mut logits = [0f32; 10];
    let mut image = [0f32; 64];
    let mut correct = 0;
    let mut sim_ns = 0;
    for (i, chunk) in x.chunks_exact(64 * 4).enumerate() {
        for (v, b) in image.iter_mut().zip(chunk.chunks_exact(4)) {
            *v = f32::from_le_bytes(b.try_into()?);
        }
        // The zero-copy slice path: flat element slices, checked lengths.
        sim_ns += net.run_slices(&image, &mut logits, &mut probs)?.time_ns;
        let pred = (0..10).fold(0, |b, k| if probs[k] > probs[b] { k } else { b });
        correct += usize::from(pred == usize::from(y[i]));
    }
    let n = y.len();
    let arena_line = REPORT
        .lines()
        .find(|l| l.contains("\"arena_bytes\""))
        .map_or("", str::trim);
    println!("build-script: digits compiled by build.rs (report: {arena_line})");
    println!(
        "accuracy: {correct}/{n} = {:.6} (onnxruntime: {ort}/{n}); {:.3} ms simulated",
        correct as f64 / n as f64,
        sim_ns as f64 / 1e6
    );
    if correct != ort {
        return Err(format!("accuracy {correct}/{n} differs from onnxruntime's {ort}/{n}").into());
    }
    Ok(())
}
