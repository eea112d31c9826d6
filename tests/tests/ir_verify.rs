//! `Graph::verify` holds on real graphs after import and after every pass (the pass manager
//! checks it when `GE_VERIFY_IR=1`, which `.cargo/config.toml` sets for every cargo command in
//! this workspace), and catches each kind of corruption a buggy pass could leave behind.

use ge_build::OptLevel;
use ge_build::ir::{Graph, Node, ValueId};
use ge_build::onnx::{ImportOptions, decode_model, import_model};
use ge_tests::compile_at;
use ge_tests::onnx_builder::{Attr, ModelBuilder};

/// x → Conv → Relu → Add(skip) → Sigmoid: enough structure for every corruption below.
fn model() -> Vec<u8> {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[1, 3, 8, 8])
        .weight("w", &[3, 3, 3, 3], -0.5, 0.5)
        .weight("b", &[3], -0.1, 0.1)
        .node(
            "Conv",
            &["x", "w", "b"],
            &["c"],
            &[("pads", Attr::Is(vec![1, 1, 1, 1]))],
        )
        .node("Relu", &["c"], &["r"], &[])
        .node("Add", &["r", "x"], &["s"], &[])
        .node("Sigmoid", &["s"], &["y"], &[])
        .output("y", &[1, 3, 8, 8]);
    m.build()
}

fn imported() -> Graph {
    let m = decode_model(&model()).expect("decodes");
    import_model(&m, None, &ImportOptions::default()).expect("imports")
}

fn node_of(g: &Graph, op_type: &str) -> petgraph::stable_graph::NodeIndex {
    g.g.node_indices()
        .find(|&n| g.g[n].op_type == op_type)
        .expect("node present")
}

fn value_named(g: &Graph, name: &str) -> ValueId {
    ValueId(
        g.values
            .iter()
            .position(|v| v.name == name)
            .expect("value present") as u32,
    )
}

fn caught(g: &Graph, what: &str) -> String {
    match g.verify() {
        Err(e) => e.to_string(),
        Ok(()) => panic!("verify missed: {what}"),
    }
}

#[test]
fn a_fresh_import_and_every_optimized_graph_verify() {
    imported().verify().expect("import keeps the invariants");
    for level in [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3] {
        compile_at(&model(), level)
            .graph
            .verify()
            .expect("passes keep the invariants");
    }
}

#[test]
fn the_test_suite_verifies_after_every_pass() {
    assert!(
        ge_build::ir::verify::verify_each_pass(),
        "GE_VERIFY_IR must be set for tests (.cargo/config.toml [env])"
    );
}

#[test]
fn a_removed_producer_leaves_a_dangling_reader() {
    let mut g = imported();
    let relu = node_of(&g, "Relu");
    g.remove_node(relu);
    let e = caught(&g, "reader of a removed node's output");
    assert!(e.contains("reads 'r'"), "{e}");
}

#[test]
fn two_writers_of_one_value_are_caught() {
    let mut g = imported();
    let relu = node_of(&g, "Relu");
    let r = value_named(&g, "r");
    let c = value_named(&g, "c");
    g.add_node(Node {
        name: "dup".into(),
        op_type: "Relu".into(),
        opset: 13,
        op: g.g[relu].op,
        inputs: vec![Some(c)],
        outputs: vec![r],
    });
    let e = caught(&g, "second writer");
    assert!(e.contains("written by"), "{e}");
}

#[test]
fn an_input_slot_changed_behind_the_edges_back_is_caught() {
    let mut g = imported();
    let sig = node_of(&g, "Sigmoid");
    let r = value_named(&g, "r");
    g.g[sig].inputs[0] = Some(r);
    let e = caught(&g, "slot changed without rewiring");
    assert!(
        e.contains("stale edge") || e.contains("without an edge"),
        "{e}"
    );
}

#[test]
fn a_shape_changing_byte_view_is_caught() {
    let mut g = imported();
    let sig = node_of(&g, "Sigmoid");
    let y = g.g[sig].outputs[0];
    g.value_mut(y).shape = vec![1, 3, 8, 4];
    let e = caught(&g, "unary output of another shape");
    assert!(e.contains("changes the shape"), "{e}");
}

#[test]
fn a_constant_whose_data_disagrees_with_its_type_is_caught() {
    let mut g = imported();
    let w = value_named(&g, "w");
    g.value_mut(w).shape = vec![3, 3, 9];
    let e = caught(&g, "constant of the wrong shape");
    assert!(e.contains("constant 'w'"), "{e}");
}

#[test]
fn a_cycle_is_caught() {
    let mut g = imported();
    let conv = node_of(&g, "Conv");
    let s = value_named(&g, "s");
    // Conv reads the Add's output: Conv → Relu → Add → Conv.
    let mut ins = g.g[conv].inputs.clone();
    ins[0] = Some(s);
    g.set_inputs(conv, ins);
    let e = caught(&g, "cycle");
    assert!(e.contains("cycle"), "{e}");
}

#[test]
fn a_lost_graph_output_is_caught() {
    let mut g = imported();
    let sig = node_of(&g, "Sigmoid");
    g.remove_node(sig);
    let e = caught(&g, "graph output without a producer");
    assert!(e.contains("graph output"), "{e}");
}
