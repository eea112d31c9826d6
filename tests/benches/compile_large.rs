//! Compile time of a generated 50,000-node graph (a benchmark, not a test):
//! `cargo bench -p ge-tests --bench compile_large`. Prints per-stage times (median of 3).
//!
//! The graph repeats a residual block of ten ops — Conv 1×1, BatchNormalization, Relu,
//! Mul by a constant, Add (residual), Transpose ∘ Transpose, Identity, Sigmoid, Mul — so every
//! pass has work to do, and keeps activations small so the time measured is the compiler's.

use std::time::Instant;

use ge_build::{CompileOptions, OptLevel, compile_bytes};
use ge_tests::onnx_builder::{Attr, ModelBuilder};

fn model(blocks: usize) -> Vec<u8> {
    let mut m = ModelBuilder::new(13);
    m.input("x0", &[1, 4, 4, 4])
        .weight("w", &[4, 4, 1, 1], -0.5, 0.5)
        .weight("g", &[4], 0.5, 1.5)
        .weight("b", &[4], -0.1, 0.1)
        .weight("mu", &[4], -0.1, 0.1)
        .weight("var", &[4], 0.5, 1.5)
        .constant("half", &[], &[0.5]);
    for i in 0..blocks {
        let x = format!("x{i}");
        let n = |s: &str| format!("{s}{i}");
        let (c, bn, r, h, a, t1, t2, id, s, y) = (
            n("c"),
            n("bn"),
            n("r"),
            n("h"),
            n("a"),
            n("t1"),
            n("t2"),
            n("id"),
            n("s"),
            format!("x{}", i + 1),
        );
        m.node("Conv", &[&x, "w"], &[&c], &[])
            .node(
                "BatchNormalization",
                &[&c, "g", "b", "mu", "var"],
                &[&bn],
                &[],
            )
            .node("Relu", &[&bn], &[&r], &[])
            .node("Mul", &[&r, "half"], &[&h], &[])
            .node("Add", &[&h, &x], &[&a], &[])
            .node(
                "Transpose",
                &[&a],
                &[&t1],
                &[("perm", Attr::Is(vec![0, 1, 3, 2]))],
            )
            .node(
                "Transpose",
                &[&t1],
                &[&t2],
                &[("perm", Attr::Is(vec![0, 1, 3, 2]))],
            )
            .node("Identity", &[&t2], &[&id], &[])
            .node("Sigmoid", &[&id], &[&s], &[])
            .node("Mul", &[&s, &id], &[&y], &[]);
    }
    m.output(&format!("x{blocks}"), &[1, 4, 4, 4]);
    m.build()
}

fn main() {
    let blocks = 5_000;
    let bytes = model(blocks);
    println!("graph: {} nodes, {} bytes", blocks * 10, bytes.len());
    for level in [OptLevel::O0, OptLevel::O2] {
        let opts = CompileOptions {
            opt_level: level,
            ..CompileOptions::default()
        };
        let mut runs = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let c = compile_bytes(&bytes, None, &opts).expect("compiles");
            runs.push((t.elapsed().as_secs_f64(), c.report));
        }
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (secs, r) = &runs[1];
        let passes: Vec<String> = r
            .passes
            .iter()
            .map(|p| format!("{} {:.0}ms", p.name, p.millis))
            .collect();
        println!(
            "{level:?}: median {secs:.2} s wall; nodes {} → tasks {}; stages ms: parse {:.0}, import {:.0}, passes {:.0}, plan+emit {:.0}; passes: {}",
            r.nodes_before,
            r.tasks,
            r.compile_millis.parse,
            r.compile_millis.import,
            r.compile_millis.passes,
            r.compile_millis.plan_and_emit,
            passes.join(", ")
        );
    }
}
