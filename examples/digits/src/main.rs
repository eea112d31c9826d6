//! Classifies the held-out split of scikit-learn's 8×8 digits with a small CNN compiled by
//! `ge_model!` at build time, on the simulated NPU, and compares the accuracy with the one
//! onnxruntime got in `tools/train_digits.py`.
//!
//! ```sh
//! cargo run --release -p digits
//! ```
#![forbid(unsafe_code)]

use std::error::Error;

use digits_data::{argmax, load};

ge::ge_model!(pub Digits = "models/digits.onnx", opt_level = 2, input_shape(x = [1, 1, 8, 8]));

// The same network compiled in reduced precision (issue 13): fp16 by the default op lists,
// everything fp16, and bf16 by the lists. Each must stay within one image of fp32.
ge::ge_model!(pub DigitsMixFp16 = "models/digits.onnx", opt_level = 2,
    input_shape(x = [1, 1, 8, 8]), precision = "allow_mix_precision");
ge::ge_model!(pub DigitsForceFp16 = "models/digits.onnx", opt_level = 2,
    input_shape(x = [1, 1, 8, 8]), precision = "force_fp16");
ge::ge_model!(pub DigitsMixBf16 = "models/digits.onnx", opt_level = 2,
    input_shape(x = [1, 1, 8, 8]), precision = "allow_mix_precision_bf16");

/// Correct predictions of a reduced-precision model `$module::$net` on `$data`.
macro_rules! count_correct {
    ($module:ident :: $net:ident, $data:expr) => {{
        let mut arena = $module::Arena::new();
        let mut net = $module::$net::new(&mut arena)?;
        let mut inputs = $module::Inputs::zeroed();
        let mut outputs = $module::Outputs::zeroed();
        let mut correct = 0usize;
        for (image, &label) in $data.images.iter().zip(&$data.labels) {
            inputs.x[0][0] = *image;
            net.run(&inputs, &mut outputs)?;
            correct += usize::from(argmax(&outputs.logits[0]) == usize::from(label));
        }
        correct
    }};
}

fn main() -> Result<(), Box<dyn Error>> {
    let data = load(&digits_data::data_dir())?;
    let n = data.labels.len();

    // No heap for the model: a 64-byte aligned arena of exactly ARENA_BYTES on the stack.
    let mut arena = digits::Arena::new();
    let mut net = digits::Digits::new(&mut arena)?;
    let mut inputs = digits::Inputs::zeroed();
    let mut outputs = digits::Outputs::zeroed();

    let (mut correct, mut agree) = (0, 0);
    let mut total = ge::RunReport::default();
    let mut first = ge::RunReport::default();
    for (i, image) in data.images.iter().enumerate() {
        inputs.x[0][0] = *image;
        let r = net.run(&inputs, &mut outputs)?;
        if i == 0 {
            first = r;
        }
        total.cycles += r.cycles;
        total.time_ns += r.time_ns;
        total.gm_bytes += r.gm_bytes;
        total.launches += r.launches;
        total.tasks += r.tasks;
        let pred = argmax(&outputs.logits[0]);
        correct += usize::from(pred == usize::from(data.labels[i]));
        agree += usize::from(pred == usize::from(data.ort_predictions[i]));
    }

    // The zero-copy slice path gives the same answer as the typed one.
    let flat: Vec<f32> = data.images[0].iter().flatten().copied().collect();
    let (mut logits, mut probs) = ([0f32; 10], [0f32; 10]);
    net.run_slices(&flat, &mut logits, &mut probs)?;
    inputs.x[0][0] = data.images[0];
    net.run(&inputs, &mut outputs)?;
    assert_eq!(logits, outputs.logits[0], "run_slices and run disagree");

    let p = &net.device().profile;
    let acc = correct as f64 / n as f64;
    let ort_acc = data.ort_correct as f64 / n as f64;
    println!(
        "digits: {n} held-out 8x8 digits classified by ge on the simulated NPU \
         (device `{}`: {} AI cores @ {} MHz, sink mode; arena {} B, blob {} B)",
        p.name,
        p.cores,
        p.clock_mhz,
        digits::ARENA_BYTES,
        digits::BLOB.len()
    );
    println!("accuracy: {correct}/{n} = {acc:.6}");
    println!(
        "onnxruntime accuracy: {}/{n} = {ort_acc:.6} ({})",
        data.ort_correct,
        if correct == data.ort_correct {
            "equal"
        } else {
            "DIFFERENT"
        }
    );
    println!("agreement with onnxruntime's predictions: {agree}/{n}");
    println!(
        "device profile, one inference: {:.3} us simulated ({} cycles), {} B global-memory \
         traffic, {} launch(es), {} tasks",
        first.time_ns as f64 / 1e3,
        first.cycles,
        first.gm_bytes,
        first.launches,
        first.tasks
    );
    println!(
        "device profile, all {n}: {:.3} ms simulated ({} cycles), {} B traffic, {} launches, \
         {} tasks",
        total.time_ns as f64 / 1e6,
        total.cycles,
        total.gm_bytes,
        total.launches,
        total.tasks
    );
    let mut reduced_off = Vec::new();
    for (mode, c) in [
        (
            "allow_mix_precision",
            count_correct!(digits_mix_fp16::DigitsMixFp16, data),
        ),
        (
            "force_fp16",
            count_correct!(digits_force_fp16::DigitsForceFp16, data),
        ),
        (
            "allow_mix_precision_bf16",
            count_correct!(digits_mix_bf16::DigitsMixBf16, data),
        ),
    ] {
        println!(
            "accuracy with precision = \"{mode}\": {c}/{n} = {:.6} ({:+} images against fp32)",
            c as f64 / n as f64,
            c as i64 - correct as i64
        );
        if c.abs_diff(correct) > 1 {
            reduced_off.push(format!("{mode}: {c}/{n}"));
        }
    }
    if !reduced_off.is_empty() {
        return Err(format!(
            "reduced precision is more than one image from fp32's {correct}/{n}: {}",
            reduced_off.join(", ")
        )
        .into());
    }
    if correct != data.ort_correct {
        return Err(format!(
            "ge's accuracy {correct}/{n} differs from onnxruntime's {}/{n}",
            data.ort_correct
        )
        .into());
    }
    Ok(())
}
