//! Runs the build-script example (`cargo run --release -p build-script`) and checks it
//! matches onnxruntime's accuracy.

use std::process::Command;

#[test]
fn build_script_example_runs() {
    let out = Command::new(env!("CARGO_BIN_EXE_build-script"))
        .output()
        .expect("run the build-script example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("(onnxruntime: "), "{stdout}");
    // The build script wrote the report next to the bindings.
    let report = std::fs::read_to_string(concat!(env!("OUT_DIR"), "/digits.report.json")).unwrap();
    assert!(report.contains("\"arena_bytes\""), "{report}");
}
