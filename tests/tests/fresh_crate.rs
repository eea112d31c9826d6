//! The newcomer's path, as the README tells it: a crate outside this workspace, written to a
//! temporary directory from the README's "Using ge in your crate" `Cargo.toml` and
//! `src/main.rs` (only the path to `ge/` replaced), with the real-model corpus's
//! YOLOv8n (12 MB of weights, a 7 MB arena, 1.2 MB of input) as its model, builds and runs
//! with plain `cargo run` in the debug profile — where a by-value `Arena::new()` overflows
//! the main thread's stack — and in release.
//!
//! Its build tree is `<target>/fresh-crate` (kept, like the firmware's, so a second run
//! only rebuilds the ge crates that changed). Cold, this builds every dependency twice
//! (debug and release); see `docs/BENCHMARKS.md` for what it costs.

use std::path::{Path, PathBuf};
use std::process::Command;

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
    }
    let _ = std::fs::remove_dir_all(&dir);
}
