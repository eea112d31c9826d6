//! Any fan-in and fan-out: a Concat of 1,000 inputs, a Sum and a Mean of 300, and a Split
//! into 300 outputs compile (into trees of tasks within the runtime's 64 slots) and give the
//! exact results (Concat/Split move bytes: bitwise; Sum/Mean: within 1e-5 relative of an f64
//! reference, since the tree adds in another order).

use ge_build::OptLevel;
use ge_tests::onnx_builder::{Attr, ModelBuilder};
use ge_tests::{compile_at, random_inputs, run};

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn concat_of_1000_inputs() {
    let xs = names("x", 1000);
    let mut m = ModelBuilder::new(13);
    for x in &xs {
        m.input(x, &[1, 2, 3]);
    }
    m.node("Concat", &refs(&xs), &["y"], &[("axis", Attr::I(1))])
        .output("y", &[1, 2000, 3]);
    let bytes = m.build();
    for level in [OptLevel::O0, OptLevel::O2] {
        let c = compile_at(&bytes, level);
        assert!(
            c.report.tasks >= 16,
            "a tree of concats: {}",
            c.report.tasks
        );
        let inputs = random_inputs(&c, 3);
        let expected: Vec<u8> = inputs.iter().flat_map(|t| t.bytes.clone()).collect();
        assert_eq!(run(&c, &inputs)[0].bytes, expected, "{level:?}");
    }
}

#[test]
fn split_into_300_outputs() {
    let ys = names("y", 300);
    let mut m = ModelBuilder::new(13);
    m.input("x", &[600, 4]);
    m.node("Split", &["x"], &refs(&ys), &[("axis", Attr::I(0))]);
    for y in &ys {
        m.output(y, &[2, 4]);
    }
    let bytes = m.build();
    for level in [OptLevel::O0, OptLevel::O2] {
        let c = compile_at(&bytes, level);
        let inputs = random_inputs(&c, 5);
        let outs = run(&c, &inputs);
        assert_eq!(outs.len(), 300);
        for (i, o) in outs.iter().enumerate() {
            assert_eq!(o.dims, vec![2, 4]);
            assert_eq!(
                o.bytes[..],
                inputs[0].bytes[i * 32..(i + 1) * 32],
                "output {i}"
            );
        }
    }
}

fn variadic(op: &str, n: usize) -> Vec<u8> {
    let xs = names("x", n);
    let mut m = ModelBuilder::new(13);
    for x in &xs {
        m.input(x, &[5, 7]);
    }
    m.node(op, &refs(&xs), &["y"], &[]).output("y", &[5, 7]);
    m.build()
}

#[test]
fn sum_and_mean_of_300_inputs() {
    for op in ["Sum", "Mean", "Max"] {
        let c = compile_at(&variadic(op, 300), OptLevel::O2);
        let inputs = random_inputs(&c, 9);
        let got = run(&c, &inputs)[0].to_f32_vec();
        let xs: Vec<Vec<f32>> = inputs.iter().map(|t| t.to_f32_vec()).collect();
        for (k, g) in got.iter().enumerate() {
            let col = xs.iter().map(|x| f64::from(x[k]));
            let want = match op {
                "Sum" => col.sum::<f64>(),
                "Mean" => col.sum::<f64>() / 300.0,
                _ => col.fold(f64::MIN, f64::max),
            };
            let tol = 1e-5 * want.abs().max(1.0) * if op == "Max" { 0.0 } else { 10.0 };
            assert!(
                (f64::from(*g) - want).abs() <= tol,
                "{op} element {k}: got {g}, want {want}"
            );
        }
    }
}
