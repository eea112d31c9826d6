//! The structured fuzzer's bounded CI run (issue 59 item 2, `ge_tests::structured`):
//! `GE_STRUCTURED_FUZZ_RUNS` graphs (default 3,000) built from ge's op registry and the onnx
//! schemas with hostile shapes, values and attributes, each compiled at a drawn opt level
//! and, when it compiles, loaded and run. A panic fails the run naming the seed that rebuilds
//! its graph (`GE_STRUCTURED_FUZZ_SEED=<seed> GE_STRUCTURED_FUZZ_RUNS=1`; the graph is also
//! written to `<target>/tmp/structured-fuzz-<seed>.onnx`), so does a graph
//! that takes over 10 s, or a peak resident size over 2 GiB (the compiler holding a
//! model-sized value). The long campaign is the same test with a larger count (closing
//! notes), or the cargo-fuzz target `structured`.

use std::time::{Duration, Instant};

use ge_tests::structured::{Catalog, Choices, Outcome, build, run_model};

/// The process's peak resident set (`VmHWM`), in KiB.
fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Writes a graph to `<target>/tmp/<name>` (for `ge compile` and a debugger).
fn save(model: &[u8], name: &str) -> std::path::PathBuf {
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::write(&file, model);
    file
}

#[test]
fn hostile_graphs_from_every_op_give_errors_not_crashes() {
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let runs = env("GE_STRUCTURED_FUZZ_RUNS", 3_000);
    let base = env("GE_STRUCTURED_FUZZ_SEED", 0x6e5f_2026);
    let cat = Catalog::shared().expect("the schema file");
    // `GE_STRUCTURED_FUZZ_TRACE=1`: each seed on stderr, and its graph in
    // `<target>/tmp/structured-fuzz-current.onnx`, before it runs (a hang's is the last).
    let trace = std::env::var_os("GE_STRUCTURED_FUZZ_TRACE").is_some();
    // Panics are caught per graph (and reported with the seed); keep their messages quiet.
    std::panic::set_hook(Box::new(|_| {}));
    let (mut compiled, mut refused) = (0u64, 0u64);
    let mut ops = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    let t0 = Instant::now();
    for i in 0..runs {
        let seed = base.wrapping_add(i);
        // One stream per seed: the graph, then the compile's choices.
        let mut choices = Choices::seed(seed);
        let (model, desc) = build(cat, &mut choices);
        ops.insert(
            desc.split(['@', ' '])
                .next()
                .unwrap_or_default()
                .to_string(),
        );
        if trace {
            eprintln!("seed {seed} ({desc})");
            save(&model, "structured-fuzz-current.onnx");
        }
        let t = Instant::now();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_model(&model, &mut choices)
        }));
        match r {
            Ok(Outcome::Compiled) => compiled += 1,
            Ok(Outcome::Refused) => refused += 1,
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                let file = save(&model, &format!("structured-fuzz-{seed}.onnx"));
                failures.push(format!(
                    "seed {seed} ({desc}): panicked: {msg} (graph: {})",
                    file.display()
                ));
            }
        }
        if t.elapsed() > Duration::from_secs(10) {
            let file = save(&model, &format!("structured-fuzz-{seed}.onnx"));
            failures.push(format!(
                "seed {seed} ({desc}): took {:?} (graph: {})",
                t.elapsed(),
                file.display()
            ));
        }
    }
    let _ = std::panic::take_hook();
    let rss = peak_rss_kib().unwrap_or(0);
    println!(
        "structured fuzz: {runs} graphs from {} ops in {:.1} s: {compiled} compiled and ran, \
         {refused} refused; peak RSS {} MiB",
        ops.len(),
        t0.elapsed().as_secs_f64(),
        rss / 1024
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(rss < 2 << 20, "peak resident size {rss} KiB");
    // Not vacuous: most ops are drawn, and a share of the graphs get through to a run.
    if runs >= 1_000 {
        assert!(ops.len() >= 100, "only {} ops drawn", ops.len());
        assert!(
            compiled * 20 >= runs,
            "only {compiled} of {runs} graphs compiled"
        );
    }
}
