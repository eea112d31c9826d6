//! In-place elementwise: a Unary/Binary task whose input dies there writes its output over
//! that input, so a chain of them needs one buffer, not two; results equal the naive plan's.
//! A blob whose in-place task names different input and output bytes is refused at load.

use ge_build::{CompileOptions, Compiled, OptLevel, compile_bytes};
use ge_runtime::format::OpKind;
use ge_runtime::{AlignedBlob, Model};
use ge_tests::onnx_builder::ModelBuilder;
use ge_tests::{assert_close, random_inputs, run};

const SHAPE: [usize; 4] = [1, 64, 32, 32];
const BYTES: u64 = 64 * 32 * 32 * 4;

/// `Add(Tanh(Sigmoid(Relu(x))), b) - x`, b broadcast per channel.
fn chain() -> Vec<u8> {
    let mut m = ModelBuilder::new(13);
    m.input("x", &SHAPE)
        .weight("b", &[64, 1, 1], -1.0, 1.0)
        .node("Relu", &["x"], &["r"], &[])
        .node("Sigmoid", &["r"], &["s"], &[])
        .node("Tanh", &["s"], &["t"], &[])
        .node("Add", &["t", "b"], &["a"], &[])
        .node("Sub", &["x", "a"], &["y"], &[])
        .output("y", &SHAPE);
    m.build()
}

fn compile(model: &[u8], reuse: bool) -> Compiled {
    let opts = CompileOptions {
        opt_level: OptLevel::O1,
        memory_reuse: reuse,
        ..CompileOptions::default()
    };
    compile_bytes(model, None, &opts).expect("compiles")
}

fn in_place_tasks(c: &Compiled) -> Vec<(OpKind, u16)> {
    let blob = AlignedBlob::from_bytes(&c.blob);
    let m = Model::from_bytes(blob.as_bytes()).expect("loads");
    m.tasks()
        .iter()
        .filter(|t| t.in_place != 0)
        .map(|t| (m.task_op(t), t.in_place))
        .collect()
}

#[test]
fn an_elementwise_chain_runs_in_one_buffer() {
    let model = chain();
    let planned = compile(&model, true);
    let naive = compile(&model, false);
    // Relu reads the graph input (not in the arena); Sigmoid, Tanh, Add (input 0) and Sub
    // (input 1: x stays alive until Sub, but `a` dies there) update their input in place.
    assert_eq!(
        in_place_tasks(&planned),
        [
            (OpKind::Unary, 1),
            (OpKind::Unary, 1),
            (OpKind::Binary, 1),
            (OpKind::Binary, 2)
        ]
    );
    assert_eq!(planned.report.memory.arena_bytes, BYTES);
    assert!(in_place_tasks(&naive).is_empty());
    let inputs = random_inputs(&planned, 3);
    assert_close(&run(&planned, &inputs), &run(&naive, &inputs));
}

#[test]
fn a_value_read_later_is_not_overwritten() {
    // `r` is read by Sigmoid and by the final Mul: Sigmoid must not write over it.
    let mut m = ModelBuilder::new(13);
    m.input("x", &SHAPE)
        .node("Relu", &["x"], &["r"], &[])
        .node("Sigmoid", &["r"], &["s"], &[])
        .node("Mul", &["s", "r"], &["y"], &[])
        .output("y", &SHAPE);
    let model = m.build();
    let planned = compile(&model, true);
    assert_eq!(in_place_tasks(&planned), [(OpKind::Binary, 1)]);
    let inputs = random_inputs(&planned, 5);
    assert_close(
        &run(&planned, &inputs),
        &run(&compile(&model, false), &inputs),
    );
}

#[test]
fn a_forged_in_place_flag_is_refused() {
    let c = compile(&chain(), true);
    let blob = AlignedBlob::from_bytes(&c.blob);
    let m = Model::from_bytes(blob.as_bytes()).expect("loads");
    // The first task (Relu) reads the graph input: claiming it runs in place must fail.
    let tasks_at = m.tasks().as_ptr() as usize - blob.as_bytes().as_ptr() as usize;
    let mut bytes = c.blob.clone();
    let field = tasks_at + std::mem::offset_of!(ge_runtime::format::TaskDesc, in_place);
    bytes[field] = 1;
    ge_tests::fuzz::fix_checksums(&mut bytes, false);
    let forged = AlignedBlob::from_bytes(&bytes);
    let err = Model::from_bytes(forged.as_bytes()).expect_err("refused");
    assert!(err.to_string().contains("in-place"), "{err}");
}
