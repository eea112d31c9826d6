//! Rebuild behaviour of `ge_model!`, end to end through cargo and rustc, on a scratch crate
//! (in `<target>/firmware/rebuild-check/`, sharing the firmware test's target directory):
//!
//! - building again with nothing changed recompiles nothing (so the model is not compiled);
//! - touching the `.onnx` rebuilds the crate, and the macro's cache serves the same bytes
//!   (no model compile);
//! - changing the `.onnx` rebuilds the crate and recompiles the model (cache miss).
//!
//! Also prints the macro's own expansion times on the cache hit and miss
//! (`GE_MACRO_TIMING=1`), measured inside rustc.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

fn write_if_changed(path: &Path, text: &[u8]) {
    if std::fs::read(path).ok().as_deref() != Some(text) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// Runs `cargo build --release` in `dir`; returns stderr.
fn build(dir: &Path, target: &Path) -> String {
    let out = Command::new(env!("CARGO"))
        .args(["build", "--release"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env("GE_MACRO_TIMING", "1")
        .output()
        .expect("run cargo");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

fn compiled(stderr: &str) -> bool {
    stderr.contains("Compiling rebuild-check")
}

/// The macro's timing line of the build that just ran.
fn expansion(stderr: &str) -> &str {
    stderr
        .lines()
        .rfind(|l| l.starts_with("ge_model!"))
        .unwrap_or("")
}

#[test]
fn touching_the_model_rebuilds_and_nothing_else_does() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ge = here.join("../../ge").canonicalize().unwrap();
    let target: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("firmware");
    let dir = target.join("rebuild-check");
    write_if_changed(
        &dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"rebuild-check\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
             publish = false\n\n[workspace]\n\n[dependencies]\nge = {{ path = {:?} }}\n\n\
             [profile.release]\npanic = \"abort\"\n",
            ge.display().to_string()
        )
        .as_bytes(),
    );
    write_if_changed(
        &dir.join("src/main.rs"),
        b"ge::ge_model!(\"model/digits.onnx\", input_shape(x = [1, 1, 8, 8]));\n\n\
          fn main() {\n    println!(\"{}\", digits::ARENA_BYTES);\n}\n",
    );
    if !dir.join("Cargo.lock").exists() {
        // The firmware's lock file: the same dependencies at the same versions.
        std::fs::copy(here.join("../firmware/Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    }
    let model = dir.join("model/digits.onnx");
    let original = std::fs::read(here.join("models/digits.onnx")).unwrap();
    write_if_changed(&model, &original);

    // Whatever state the scratch crate was in, this leaves it built.
    build(&dir, &target);

    // Nothing changed: nothing is compiled.
    let s = build(&dir, &target);
    assert!(!compiled(&s), "a no-op build recompiled:\n{s}");

    // Touched: the crate is rebuilt, the model comes from the cache.
    let f = std::fs::File::options().append(true).open(&model).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(1))
        .unwrap();
    drop(f);
    let s = build(&dir, &target);
    assert!(compiled(&s), "touching the model did not rebuild:\n{s}");
    let hit = expansion(&s).to_string();
    assert!(hit.contains("cache hit"), "{s}");

    // Changed bytes (a doc_string field appended: still a valid model): recompiled.
    let mut changed = original.clone();
    let stamp = format!(
        "{}",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    changed.extend_from_slice(&[0x32, stamp.len() as u8]);
    changed.extend_from_slice(stamp.as_bytes());
    std::fs::write(&model, &changed).unwrap();
    let s = build(&dir, &target);
    assert!(compiled(&s), "changing the model did not rebuild:\n{s}");
    let miss = expansion(&s).to_string();
    assert!(miss.contains("cache miss"), "{s}");

    // And the result is stable again.
    let s = build(&dir, &target);
    assert!(
        !compiled(&s),
        "a no-op build after a change recompiled:\n{s}"
    );
    println!("hit:  {hit}\nmiss: {miss}");
    write_if_changed(&model, &original);
}
