//! The newcomer's path, as the README tells it: a crate outside this workspace, written to a
//! temporary directory from the README's "Using ge in your crate" `Cargo.toml` and
//! `src/main.rs` (only the path to `ge/` replaced), with the real-model corpus's
//! YOLOv8n (12 MB of weights, a 7 MB arena, 1.2 MB of input) as its model, builds and runs
//! with plain `cargo run` in the debug profile — where a by-value `Arena::new()` overflows
//! the main thread's stack — and in release.
//!
//! Beside it, in the same crate (an example, so `cargo run` still runs the README's main),
//! a generated model whose arena (over 16 MiB) is larger than the main thread's 8 MiB stack
//! runs the README's steps in debug and release: `Arena::boxed()`, `Inputs::boxed()` and
//! `Outputs::boxed()` must never hold their value in a frame (issue 57: a zero-sized-type
//! branch did, in unoptimized code, and the debug build overflowed its stack), and the main
//! thread's stack high-water mark over the boxes, `new` and `run` (Linux's `VmStk`: the
//! stack mapping, which grows as pages below it are touched and never shrinks, so it is at
//! least the high-water mark) must stay under [`STACK_BOUND_KIB`].
//!
//! Its build tree is `<target>/fresh-crate` (kept, like the firmware's, so a second run
//! only rebuilds the ge crates that changed). Cold, this builds every dependency twice
//! (debug and release); see `docs/BENCHMARKS.md` for what it costs.

use std::path::{Path, PathBuf};
use std::process::Command;

use ge_tests::onnx_builder::{Attr, ModelBuilder};

/// The largest main-thread stack mapping (`VmStk`, KiB) the big-arena example may end with
/// after boxing its arena, inputs and outputs, `new` and `run`. Measured: 132 KiB in debug
/// and release, the mapping Linux starts a process with (the example never grows it); an
/// arena-sized frame would be 32 MiB.
const STACK_BOUND_KIB: u64 = 512;

/// A model whose arena is larger than a main thread's 8 MiB stack but which runs in a
/// fraction of a second unoptimized: x [1, 8, 512, 512] (8 MiB), its transpose concatenated
/// to it (16 MiB), a softmax over the rows (16 MiB), each row's sum (1 for every row, so
/// the example checks its own output).
fn big_arena_model() -> Vec<u8> {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[1, 8, 512, 512])
        .output("y", &[1, 16, 512])
        .ints("axes", &[3])
        .node(
            "Transpose",
            &["x"],
            &["t"],
            &[("perm", Attr::Is(vec![0, 1, 3, 2]))],
        )
        .node("Concat", &["x", "t"], &["c"], &[("axis", Attr::I(1))])
        .node("Softmax", &["c"], &["s"], &[("axis", Attr::I(-1))])
        .node(
            "ReduceSum",
            &["s", "axes"],
            &["y"],
            &[("keepdims", Attr::I(0))],
        );
    m.build()
}

/// The README's steps on [`big_arena_model`], printing its arena size, the main thread's
/// stack growth and the largest row-sum error.
const BIG_ARENA_MAIN: &str = r#"use std::error::Error;

ge::ge_model!(Big = "models/big_arena.onnx");

/// The main thread's stack mapping in KiB: Linux grows it as pages are touched and never
/// shrinks it, so its growth is the stack's high-water mark.
fn stack_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmStk:"))?;
    line.trim().trim_end_matches("kB").trim().parse().ok()
}

fn main() -> Result<(), Box<dyn Error>> {
    let before = stack_kib();
    let mut arena = big::Arena::boxed();
    let mut inputs = big::Inputs::boxed();
    let mut outputs = big::Outputs::boxed();
    for (c, channel) in inputs.x[0].iter_mut().enumerate() {
        for (r, row) in channel.iter_mut().enumerate() {
            for (k, v) in row.iter_mut().enumerate() {
                *v = ((c * 7 + r * 3 + k) % 29) as f32 * 0.125 - 1.5;
            }
        }
    }
    let mut net = big::Big::new(&mut arena)?;
    net.run(&inputs, &mut outputs)?;
    let (before, after) = match (before, stack_kib()) {
        (Some(b), Some(a)) => (b.to_string(), a.to_string()),
        _ => ("unknown".into(), "unknown".into()),
    };
    let err = outputs.y[0].iter().flatten().fold(0.0f32, |e, &v| e.max((v - 1.0).abs()));
    println!("big_arena: arena {} B, stack mapping {before} KiB before, after {after} KiB, max |row sum - 1| {err:e}", big::ARENA_BYTES);
    Ok(())
}
"#;

/// `key value` after `key` in `line`'s words.
fn word_after<'a>(line: &'a str, key: &str) -> &'a str {
    let mut words = line.split_whitespace();
    words.find(|w| *w == key);
    words
        .next()
        .unwrap_or_else(|| panic!("no `{key}` in: {line}"))
}

/// The README's fenced blocks of kind `lang` in the section under `heading`, in order.
fn readme_blocks(readme: &str, heading: &str, lang: &str) -> Vec<String> {
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with(heading))
        .unwrap_or_else(|| panic!("README has no `## {heading}` section"));
    let fence = format!("```{lang}\n");
    section
        .split(&fence)
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .map(str::to_string)
        .collect()
}

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target>/tmp")
        .join("fresh-crate")
}

/// Runs `cargo run [extra]` in `dir` with a clean environment for a user's crate, and
/// returns its stdout.
fn cargo_run(dir: &Path, extra: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.arg("run")
        .args(extra)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        // Set for this workspace by its .cargo/config.toml, not a user's: verifying the IR
        // after every pass would slow the unoptimized macro down further.
        .env_remove("GE_VERIFY_IR")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    let out = cmd.output().expect("run cargo");
    assert!(
        out.status.success(),
        "`cargo run {}` of the README's example failed ({}):\n{}",
        extra.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn readme_example_builds_and_runs_in_debug_and_release() {
    let model = ge_tests::corpus("real").join("yolov8n_320/model.onnx");
    let root = ge_tests::workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = "Using ge in your crate";
    let toml = readme_blocks(&readme, section, "toml");
    let rust = readme_blocks(&readme, section, "rust");
    // The first of each: the crate's `Cargo.toml` and `src/main.rs` (the build-time
    // override after them is the user's choice, and left out).
    let (Some(toml), Some(main_rs)) = (toml.first(), rust.first()) else {
        panic!("the README's `{section}` section lost its Cargo.toml or main.rs block");
    };
    let ge_dir = root.join("ge");
    let manifest = toml.replace(
        "path = \"../ge\"",
        &format!("path = {:?}", ge_dir.to_str().unwrap()),
    );
    assert_ne!(
        &manifest, toml,
        "the README's dependency is `path = \"../ge\"`"
    );

    let dir = std::env::temp_dir().join(format!("ge-fresh-crate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("models")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), main_rs).unwrap();
    std::fs::copy(&model, dir.join("models/yolov8n_320.onnx")).unwrap();
    std::fs::create_dir_all(dir.join("examples")).unwrap();
    std::fs::write(dir.join("models/big_arena.onnx"), big_arena_model()).unwrap();
    std::fs::write(dir.join("examples/big_arena.rs"), BIG_ARENA_MAIN).unwrap();
    // The workspace's versions of every dependency: no resolution against the registry, and
    // a build tree shared across runs stays valid.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();

    for profile in [&[][..], &["--release"][..]] {
        let t = std::time::Instant::now();
        let out = cargo_run(&dir, profile);
        let secs = t.elapsed().as_secs_f64();
        println!("cargo run {profile:?}: {secs:.1} s; {}", out.trim());
        assert!(
            out.starts_with("yolov8n: best class score"),
            "{profile:?}: {out}"
        );

        // The big arena on the default main-thread stack.
        let out = cargo_run(&dir, &[profile, &["--example", "big_arena"]].concat());
        println!("cargo run {profile:?} --example big_arena: {}", out.trim());
        let arena: u64 = word_after(&out, "arena").parse().unwrap();
        assert!(arena > 16 << 20, "the arena ({arena} B) is not over 16 MiB");
        let err: f32 = word_after(&out, "1|").parse().unwrap();
        assert!(err < 1e-5, "a softmax row does not sum to 1 (error {err})");
        match word_after(&out, "after").parse::<u64>() {
            Ok(kib) => assert!(
                kib < STACK_BOUND_KIB,
                "{profile:?}: the main thread's stack mapping reached {kib} KiB (bound \
                 {STACK_BOUND_KIB})"
            ),
            Err(_) => println!("no /proc/self/status VmStk here: stack growth not measured"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
