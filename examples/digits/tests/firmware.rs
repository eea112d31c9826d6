//! Builds the `#![no_std]`, `#![no_main]`, allocator-free firmware example (its own
//! workspace, `panic = "abort"`) with cargo, runs it on held-out images and compares its
//! exit status (the predicted class) with onnxruntime's predictions.

use std::path::{Path, PathBuf};
use std::process::Command;

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target>/tmp")
        .join("firmware")
}

#[test]
fn firmware_builds_without_std_and_classifies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = root.join("firmware/Cargo.toml");
    let target = target_dir();
    let out = Command::new(env!("CARGO"))
        .args(["build", "--release", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run cargo");
    // A failure here usually means std or the heap crept into ge, ge-runtime or ge-sim
    // (e.g. `f64::sqrt`, which needs std: use `libm`).
    assert!(
        out.status.success(),
        "building the no_std firmware failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exe = target.join("release/firmware");

    let expected = std::fs::read(root.join("digits/data/ort_pred.bin")).unwrap();
    for (i, &class) in expected.iter().enumerate().step_by(37) {
        let st = Command::new(&exe).arg(i.to_string()).status().unwrap();
        assert_eq!(st.code(), Some(i32::from(class)), "image {i}");
    }
    let st = Command::new(&exe).status().unwrap();
    assert_eq!(st.code(), Some(i32::from(expected[0])), "default image 0");
    // Out-of-range image and a bad argument: the documented error statuses.
    let st = Command::new(&exe).arg("100000").status().unwrap();
    assert_eq!(st.code(), Some(255));
    let st = Command::new(&exe).arg("x").status().unwrap();
    assert_eq!(st.code(), Some(254));
}
