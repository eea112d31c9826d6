//! From O1 on, each f32 Conv's constant weights are stored pre-packed in the tiles' panel
//! order (format version 5) and give the results of the ONNX-order weights at O0; weights
//! another node reads, and depthwise convs, stay in ONNX order. A Gemm's or MatMul's
//! constant f32 B is stored in the GEMM's panel order when A has several rows (a GemmPacked
//! task, format version 11). (GemmW8's packed int8 B: `weight_only.rs`.)

use ge_build::ir::{Graph, Op};
use ge_build::{Compiled, OptLevel};
use ge_runtime::format::{WeightLayout, pack_panels};
use ge_tests::onnx_builder::{Attr, ModelBuilder};
use ge_tests::{assert_close, compile_at, random_inputs, run};

/// The weight layout of every Conv, in topological order.
fn layouts(g: &Graph) -> Vec<Option<WeightLayout>> {
    g.topo_order()
        .iter()
        .filter_map(|&n| match g.g[n].op {
            Op::Conv(p) => Some(p.weight_layout()),
            _ => None,
        })
        .collect()
}

fn version(c: &Compiled) -> u32 {
    let blob = ge_runtime::AlignedBlob::from_bytes(&c.blob);
    ge_runtime::Model::from_bytes(blob.as_bytes())
        .expect("loads")
        .version()
}

/// The constant input 1 (weights, B) of the first node (topological order) whose op is `kind`.
fn first_weights(g: &Graph, kind: impl Fn(&Op) -> bool) -> &ge_build::tensor::TensorData {
    g.topo_order()
        .into_iter()
        .find(|&n| kind(&g.g[n].op))
        .and_then(|n| g.g[n].inputs[1])
        .and_then(|w| g.constant(w))
        .expect("a node of that kind with constant weights")
}

/// Compiles at O0 and O2; the outputs agree (rtol 1e-4 / atol 1e-5: O2 also folds and fuses).
fn both(m: &ModelBuilder) -> (Compiled, Compiled) {
    let bytes = m.build();
    let (o0, o2) = (
        compile_at(&bytes, OptLevel::O0),
        compile_at(&bytes, OptLevel::O2),
    );
    let inputs = random_inputs(&o0, 3);
    assert_close(&run(&o2, &inputs), &run(&o0, &inputs));
    (o0, o2)
}

#[test]
fn conv_weights_are_packed_from_o1_on() {
    // 13 filters: two full panels and a one-filter panel; a grouped conv with 5 filters per
    // group (one partial panel each); a strided 1×1 conv.
    let mut m = ModelBuilder::new(13);
    m.input("x", &[1, 4, 9, 9])
        .weight("w1", &[13, 4, 3, 3], -0.5, 0.5)
        .weight("b1", &[13], -0.1, 0.1)
        .weight("w2", &[10, 1, 3, 3], -0.5, 0.5)
        .weight("w3", &[7, 10, 1, 1], -0.5, 0.5)
        .node(
            "Conv",
            &["x", "w1", "b1"],
            &["a"],
            &[("pads", Attr::Is(vec![1, 1, 1, 1]))],
        )
        .node("Relu", &["a"], &["r"], &[])
        .weight("w1b", &[10, 13, 1, 1], -0.5, 0.5)
        .node("Conv", &["r", "w1b"], &["c"], &[])
        .node(
            "Conv",
            &["c", "w2"],
            &["d"],
            &[("group", Attr::I(10)), ("pads", Attr::Is(vec![1, 1, 1, 1]))],
        )
        .node(
            "Conv",
            &["d", "w3"],
            &["y"],
            &[("strides", Attr::Is(vec![2, 2]))],
        )
        .output("y", &[1, 7, 5, 5]);
    let (o0, o2) = both(&m);
    use WeightLayout::{Oihw, Panels};
    assert_eq!(layouts(&o0.graph), [Some(Oihw); 4]);
    // The depthwise conv (one filter per group) keeps ONNX order: the layouts coincide.
    assert_eq!(
        layouts(&o2.graph),
        [Some(Panels), Some(Panels), Some(Oihw), Some(Panels)]
    );
    assert!(version(&o0) < 5, "O0 blobs need no newer format");
    assert_eq!(version(&o2), 5);
    // The stored bytes are the panels of the ONNX weights.
    let is_conv = |op: &Op| matches!(op, Op::Conv(_));
    let packed = first_weights(&o2.graph, is_conv).to_f32_vec();
    let onnx = first_weights(&o0.graph, is_conv).to_f32_vec();
    let mut want = vec![0.0; onnx.len()];
    pack_panels(&onnx, 13, 36, &mut want);
    assert_eq!(packed, want);
    // Report: the pass is listed last.
    assert_eq!(
        o2.report.passes.last().map(|p| p.name.as_str()),
        Some("pack_weights")
    );
}

#[test]
fn shared_weights_stay_in_onnx_order() {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[1, 8, 6, 6])
        .weight("w", &[8, 8, 3, 3], -0.5, 0.5)
        .node(
            "Conv",
            &["x", "w"],
            &["a"],
            &[("pads", Attr::Is(vec![1, 1, 1, 1]))],
        )
        .node(
            "Conv",
            &["a", "w"],
            &["y"],
            &[("pads", Attr::Is(vec![1, 1, 1, 1]))],
        )
        .output("y", &[1, 8, 6, 6]);
    let (_, o2) = both(&m);
    assert_eq!(layouts(&o2.graph), [Some(WeightLayout::Oihw); 2]);
}

/// Whether each Gemm/MatMul (topological order) has its B pre-packed.
fn gemm_b_packed(g: &Graph) -> Vec<bool> {
    g.topo_order()
        .iter()
        .filter_map(|&n| match g.g[n].op {
            Op::Gemm(p) => Some(p.b_panels()),
            Op::MatMul => Some(false),
            _ => None,
        })
        .collect()
}

#[test]
fn gemm_and_matmul_b_are_packed_when_a_has_rows() {
    // A Gemm with B transposed (37 columns: two whole panels and a narrow one; 300 = two K
    // blocks), a MatMul with batch axes on A, and a one-row Gemm (the matrix-vector path
    // reads ONNX order: not packed).
    let mut m = ModelBuilder::new(13);
    m.input("x", &[5, 300])
        .input("v", &[1, 37])
        .weight("w", &[37, 300], -0.5, 0.5)
        .weight("c", &[37], -0.5, 0.5)
        .weight("w2", &[37, 20], -0.5, 0.5)
        .weight("w3", &[37, 8], -0.5, 0.5)
        .node("Gemm", &["x", "w", "c"], &["a"], &[("transB", Attr::I(1))])
        .node("Relu", &["a"], &["r"], &[])
        .ints("shape", &[1, 5, 37])
        .node("Reshape", &["r", "shape"], &["r3"], &[])
        .node("MatMul", &["r3", "w2"], &["y"], &[])
        .node("Gemm", &["v", "w3"], &["z"], &[])
        .output("y", &[1, 5, 20])
        .output("z", &[1, 8]);
    let (o0, o2) = both(&m);
    assert_eq!(gemm_b_packed(&o0.graph), [false, false, false]);
    assert_eq!(gemm_b_packed(&o2.graph), [true, true, false]);
    assert_eq!(version(&o2), 11);
    // The transposed B is stored [K, N] in panel order.
    let is_gemm = |op: &Op| matches!(op, Op::Gemm(_));
    let packed = first_weights(&o2.graph, is_gemm);
    assert_eq!(packed.dims, [300, 37]);
    let onnx = first_weights(&o0.graph, is_gemm).to_f32_vec();
    let mut want = vec![0.0; onnx.len()];
    ge_runtime::format::pack_gemm_b(&onnx, 300, 37, true, &mut want);
    assert_eq!(packed.to_f32_vec(), want);
}
