//! The operator registry: an op added by one registry line works end to end
//! (`com.microsoft` Gelu, the form onnxruntime's optimizer writes), opset ranges are enforced
//! with a message naming the range, and unknown ops and domains are refused by name.

use ge_build::onnx::registry;
use ge_build::{CompileOptions, OptLevel, compile_bytes};
use ge_tests::onnx_builder::{Attr, ModelBuilder};
use ge_tests::{compile_at, random_inputs, run};

fn one_node(opset: i64, op: &str, domain: Option<&str>, attrs: &[(&str, Attr)]) -> Vec<u8> {
    let mut m = ModelBuilder::new(opset);
    m.input("x", &[2, 3, 17]).node(op, &["x"], &["y"], attrs);
    if let Some(d) = domain {
        m.in_domain(d);
    }
    m.output("y", &[2, 3, 17]);
    m.build()
}

fn compile_err(model: &[u8]) -> String {
    match compile_bytes(model, None, &CompileOptions::default()) {
        Ok(_) => panic!("compiled a model that must be refused"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn contrib_gelu_is_one_task_and_equals_the_onnx_gelu() {
    let contrib = compile_at(
        &one_node(17, "Gelu", Some("com.microsoft"), &[]),
        OptLevel::O2,
    );
    assert_eq!(contrib.report.tasks, 1, "one Gelu task");
    let onnx20 = compile_at(&one_node(20, "Gelu", None, &[]), OptLevel::O2);
    let inputs = random_inputs(&contrib, 11);
    assert!(
        inputs[0].bytes.iter().any(|&b| b != 0),
        "inputs are not all zero"
    );
    // Same kernel, same parameters: bitwise equal to the default-domain Gelu (which the node
    // suite checks against onnxruntime).
    assert_eq!(
        run(&contrib, &inputs)[0].bytes,
        run(&onnx20, &inputs)[0].bytes
    );
    let e = registry::lookup("com.microsoft", "Gelu").expect("registered");
    assert_eq!(e.lowering, registry::Lowering::Kernel);
}

#[test]
fn an_op_used_outside_its_opsets_is_refused_naming_the_range() {
    // Gelu entered the default domain at opset 20.
    let e = compile_err(&one_node(18, "Gelu", None, &[]));
    assert!(e.contains("opset 20 to 28"), "{e}");
    assert!(e.contains("Gelu") && e.contains("opset 18"), "{e}");
    // Upsample was removed after opset 9.
    let mut m = ModelBuilder::new(10);
    m.input("x", &[1, 1, 2, 2])
        .constant("s", &[4], &[1.0, 1.0, 2.0, 2.0])
        .node("Upsample", &["x", "s"], &["y"], &[])
        .output("y", &[1, 1, 4, 4]);
    let e = compile_err(&m.build());
    assert!(e.contains("opset 7 to 9"), "{e}");
}

#[test]
fn unknown_ops_and_domains_are_refused_by_name() {
    let e = compile_err(&one_node(17, "Relux", None, &[]));
    assert!(
        e.contains("Relux") && e.contains("no importer for this op type"),
        "{e}"
    );
    let e = compile_err(&one_node(17, "Relu", Some("com.example"), &[]));
    assert!(
        e.contains("com.example") && e.contains("com.microsoft"),
        "{e}"
    );
}

#[test]
fn the_table_lists_every_domain() {
    let rows = ge_build::onnx::table::table();
    assert!(
        rows.iter()
            .any(|r| r.domain == "com.microsoft" && r.op == "Gelu")
    );
    assert!(
        rows.iter()
            .any(|r| r.domain == "ai.onnx.preview.training" && r.op == "Adam")
    );
    assert!(rows.iter().any(|r| r.op == "SequenceAt"));
    assert_eq!(
        rows.len(),
        registry::entries().count(),
        "one row per registry entry"
    );
}
