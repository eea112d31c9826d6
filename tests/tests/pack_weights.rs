//! From O1 on, each f32 Conv's constant weights are stored pre-packed in the tiles' panel
//! order (format version 5) and give the results of the ONNX-order weights at O0; weights
//! another node reads, and depthwise convs, stay in ONNX order. (GemmW8's packed int8 B:
//! `weight_only.rs`.)

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
    let conv = o2
        .graph
        .topo_order()
        .into_iter()
        .find(|&n| matches!(o2.graph.g[n].op, Op::Conv(_)))
        .expect("a conv");
    let w = o2.graph.g[conv].inputs[1].expect("weights");
    let packed: Vec<f32> = o2.graph.constant(w).expect("const").to_f32_vec();
    let w0 = o0
        .graph
        .topo_order()
        .into_iter()
        .find(|&n| matches!(o0.graph.g[n].op, Op::Conv(_)))
        .and_then(|n| o0.graph.g[n].inputs[1])
        .expect("weights");
    let onnx: Vec<f32> = o0.graph.constant(w0).expect("const").to_f32_vec();
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
