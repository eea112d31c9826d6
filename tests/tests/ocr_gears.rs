//! OCR width gears (issue 15): a CRNN-shaped recognizer (conv stack, bidirectional LSTM over
//! the width, class softmax; corpus/ocr_gears by tools/gen_ocr_gears.py) compiled with image
//! size gears 48×320 and 48×960 into one blob matches onnxruntime at both widths. A line of
//! width 250 is refused without `--gear-pad spatial`; with it, the line runs on the 320 gear
//! with zeros in columns 250..320 of every channel and row (the right end), and the output
//! has the gear's 80 time steps: onnxruntime on the zero-padded line, not on the line itself.
//! Tolerance: ge check's rtol 1e-3 / atol 1e-4 on the class probabilities.

use ge_build::check::{Tolerance, compare};
use ge_build::tensor::{TensorData, read_tensor_file};
use ge_build::{CompileOptions, GearPad, GearSpec, compile_file};
use ge_runtime::format::DType;
use ge_runtime::{AlignedBlob, Error, Model, Session};
use ge_sim::SimDevice;
use ge_tests::corpus;

const CLASSES: usize = 37;

fn options(pad: GearPad) -> CompileOptions {
    let mut o = CompileOptions {
        gears: GearSpec::ImageSize(vec![[48, 320], [48, 960]]),
        gear_pad: pad,
        ..CompileOptions::default()
    };
    // Batch 1; H (48 in the file) and W are the gears' (`--input-shape x:1,3,-1,-1`).
    o.gear_inputs
        .insert("x".into(), vec![Some(1), Some(3), None, None]);
    o
}

fn tensor(case: &str, file: &str) -> TensorData {
    let p = corpus("ocr_gears").join(case).join(file);
    read_tensor_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn probs(steps: usize, data: &[f32]) -> TensorData {
    TensorData {
        dtype: DType::F32,
        dims: vec![1, steps, CLASSES],
        bytes: bytemuck::cast_slice(data).to_vec(),
    }
}

fn max_abs_err(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Runs `case`'s input through `run_shaped`; returns the gear and the output.
fn run(s: &mut Session<'_, '_, SimDevice>, case: &str) -> Result<(usize, Vec<f32>), Error> {
    let x = tensor(case, "input_0.pb");
    // Time steps are a quarter of the gear's width: 320 → 80, 960 → 240.
    let steps = if x.dims[3] <= 320 { 80 } else { 240 };
    let mut y = vec![0f32; steps * CLASSES];
    let (_, gear) = s.run_shaped(
        &[&x.bytes],
        &[&x.dims],
        &mut [bytemuck::cast_slice_mut(&mut y)],
    )?;
    Ok((gear, y))
}

#[test]
fn ocr_width_gears_match_onnxruntime() {
    let model_path = corpus("ocr_gears").join("model.onnx");
    let tol = Tolerance::default();
    let out = compile_file(&model_path, &options(GearPad::Batch)).expect("compiles with gears");
    let gears: Vec<_> = out
        .report
        .gears
        .iter()
        .map(|g| g.inputs["x"].clone())
        .collect();
    assert_eq!(gears, [vec![1, 3, 48, 320], vec![1, 3, 48, 960]]);
    let blob = AlignedBlob::from_bytes(&out.blob);
    let model = Model::from_bytes(blob.as_bytes()).expect("loads");
    let mut arena = vec![0u8; model.arena_bytes_unaligned()];
    let mut s = Session::new(&model, &mut arena, SimDevice::default()).expect("session");
    for (gear, case) in [(0, "w320"), (1, "w960")] {
        let want = tensor(case, "output_0.pb");
        let steps = want.dims[1];
        let x = tensor(case, "input_0.pb");
        let mut y = vec![0f32; steps * CLASSES];
        let r = s
            .run_gear(gear, &[&x.bytes], &mut [bytemuck::cast_slice_mut(&mut y)])
            .expect("gear runs");
        let err = max_abs_err(&y, &want.to_f32_vec());
        println!(
            "ocr_gears {case}: gear {gear}, output [1, {steps}, {CLASSES}], max abs err {err:.3e} \
             vs onnxruntime, simulated {:.1} us",
            r.time_ns as f64 / 1e3
        );
        compare(&probs(steps, &y), &want, tol).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(run(&mut s, case).expect("exact shapes").0, gear);
    }

    // Width 250 fits the 320 gear only by padding the width: refused without the opt-in.
    let e = run(&mut s, "w250").unwrap_err();
    assert!(
        matches!(
            e,
            Error::Gear {
                input: 0,
                dim: 3,
                given: 250,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("--gear-pad spatial"), "{e}");
}

#[test]
fn ocr_width_padding_with_opt_in_is_onnxruntime_on_the_zero_padded_line() {
    let model_path = corpus("ocr_gears").join("model.onnx");
    let out = compile_file(&model_path, &options(GearPad::Spatial)).expect("compiles");
    let blob = AlignedBlob::from_bytes(&out.blob);
    let model = Model::from_bytes(blob.as_bytes()).expect("loads");
    let mut arena = vec![0u8; model.arena_bytes_unaligned()];
    let mut s = Session::new(&model, &mut arena, SimDevice::default()).expect("session");
    let (gear, y) = run(&mut s, "w250").expect("padded onto the 320 gear");
    assert_eq!(gear, 0);
    let padded = tensor("w250", "output_padded.pb");
    assert_eq!(padded.dims, [1, 80, CLASSES]);
    let err = max_abs_err(&y, &padded.to_f32_vec());
    compare(&probs(80, &y), &padded, Tolerance::default()).expect("matches the padded reference");
    // What padding changes: onnxruntime on the unpadded line has 62 steps; the padded run's
    // first 62 differ from them (the backward LSTM starts in the zero columns).
    let own = tensor("w250", "output_0.pb");
    assert_eq!(own.dims, [1, 62, CLASSES]);
    let diff = max_abs_err(&y[..62 * CLASSES], &own.to_f32_vec());
    println!(
        "ocr_gears w250 padded to 320 (--gear-pad spatial): max abs err {err:.3e} vs \
         onnxruntime on the zero-padded line; first 62 steps differ from the unpadded line's \
         by up to {diff:.3e}"
    );
    assert!(diff > 1e-4, "padding the width changed nothing ({diff})");
}
