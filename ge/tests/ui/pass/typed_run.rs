//! The plain form, a static arena, typed and untyped runs: builds (without warnings, with
//! the generated items public) and runs.
#![deny(warnings, missing_docs, unused_doc_comments)]

ge::ge_model!(pub "models/digits.onnx", input_shape(x = [1, 1, 8, 8]));

static ARENA: digits::StaticArena = digits::StaticArena::new();

fn main() {
    assert_eq!(digits::INPUT_X_SHAPE, [1, 1, 8, 8]);
    assert_eq!(digits::OUTPUT_PROBS_SHAPE, [1, 10]);
    assert_eq!(digits::BLOB.as_ptr() as usize % 64, 0);
    let mut net = digits::Digits::new(ARENA.take().unwrap()).unwrap();
    let mut inputs = digits::Inputs::zeroed();
    inputs.x[0][0][3] = [1.0; 8];
    let mut outputs = digits::Outputs::default();
    let report = net.run(&inputs, &mut outputs).unwrap();
    assert!(report.tasks > 0 && report.time_ns > 0);
    let sum: f32 = outputs.probs[0].iter().sum();
    assert!((sum - 1.0).abs() < 1e-5, "{sum}");

    let flat: Vec<f32> = inputs.x[0][0].iter().flatten().copied().collect();
    let (mut logits, mut probs) = ([0f32; 10], [0f32; 10]);
    net.run_slices(&flat, &mut logits, &mut probs).unwrap();
    assert_eq!(logits, outputs.logits[0]);
    assert!(net.run_slices(&flat[1..], &mut logits, &mut probs).is_err());

    let mut out_bytes = [[0u8; 40]; 2];
    let [a, b] = &mut out_bytes;
    let x_bytes: Vec<u8> = flat.iter().flat_map(|v| v.to_le_bytes()).collect();
    net.run_bytes(&[&x_bytes], &mut [a, b]).unwrap();
    assert_eq!(out_bytes[0][..4], logits[0].to_le_bytes());
}
