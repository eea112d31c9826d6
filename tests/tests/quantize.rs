//! `ge quantize` (issue 14): post-training static quantization with a calibration set, the
//! QDQ model compiled and run by ge against the fp32 model.
//!
//! * digits CNN, calibrated on its training split (corpus/calib/digits_train): accuracy on
//!   the 360 held-out images within 1 image of fp32's, per tensor and per channel.

use ge_build::quantize::{QuantizeOptions, quantize};
use ge_build::run::Runner;
use ge_build::tensor::TensorData;
use ge_build::{CompileOptions, compile_bytes};
use ge_runtime::AlignedBlob;
use ge_runtime::format::DType;
use ge_sim::SimDevice;
use ge_tests::{corpus, workspace_root};

fn opts(input: &str, dims: &[usize]) -> CompileOptions {
    let mut o = CompileOptions::default();
    o.input_shapes.insert(input.into(), dims.to_vec());
    o
}

/// The index of the largest value of each row of `[rows, classes]` logits.
fn top1(t: &TensorData, classes: usize) -> Vec<usize> {
    let v = t.to_f32_vec();
    v.chunks_exact(classes)
        .map(|r| (0..classes).fold(0, |m, i| if r[i] > r[m] { i } else { m }))
        .collect()
}

/// Runs `model` (ONNX bytes) compiled with `o` on every sample; the first output's top-1.
fn classify(
    model: &[u8],
    o: &CompileOptions,
    samples: &[TensorData],
    classes: usize,
) -> Vec<usize> {
    let c = compile_bytes(model, None, o).expect("compiles");
    let mut r = Runner::new(AlignedBlob::from_bytes(&c.blob)).expect("loads");
    samples
        .iter()
        .flat_map(|s| {
            let (outs, _) = r
                .run(std::slice::from_ref(s), SimDevice::new(o.device))
                .expect("runs");
            top1(&outs[0], classes)
        })
        .collect()
}

#[test]
fn digits_quantized_within_one_image_of_fp32() {
    let root = workspace_root().join("examples/digits");
    let model = std::fs::read(root.join("models/digits.onnx")).expect("digits.onnx");
    let x = std::fs::read(root.join("data/test_x.bin")).expect("test_x.bin");
    let labels = std::fs::read(root.join("data/test_y.bin")).expect("test_y.bin");
    let n = labels.len();
    let images = TensorData::new(DType::F32, vec![n, 1, 8, 8], x).expect("[N,1,8,8]");
    let calib = corpus("calib").join("digits_train");
    let correct = |model: &[u8]| {
        let p = classify(
            model,
            &opts("x", &[n, 1, 8, 8]),
            std::slice::from_ref(&images),
            10,
        );
        p.iter()
            .zip(&labels)
            .filter(|(p, l)| **p == **l as usize)
            .count()
    };
    let fp32 = correct(&model);
    println!("digits fp32: {fp32}/{n}");
    for per_channel in [false, true] {
        let q = QuantizeOptions {
            per_channel,
            ..QuantizeOptions::default()
        };
        let out = quantize(&model, None, &calib, &q, &opts("x", &[1, 1, 8, 8])).expect("quantizes");
        assert_eq!(out.report.samples, 1437);
        assert_eq!(out.report.layers.len(), 2, "Conv and Gemm quantized");
        let int8 = correct(&out.onnx);
        println!("digits int8 (per_channel = {per_channel}): {int8}/{n}");
        assert!(
            int8.abs_diff(fp32) <= 1,
            "per_channel = {per_channel}: {int8} vs fp32 {fp32}"
        );
    }
}
