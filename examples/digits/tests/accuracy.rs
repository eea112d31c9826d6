//! Runs the digits example (`cargo run --release -p digits`) and checks that ge's accuracy
//! on the held-out split equals onnxruntime's, recorded by tools/train_digits.py.

use std::path::Path;
use std::process::Command;

#[test]
fn digits_accuracy_equals_onnxruntime() {
    let out = Command::new(env!("CARGO_BIN_EXE_digits"))
        .output()
        .expect("run the digits example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    assert!(out.status.success(), "digits failed: {stderr}");

    let recorded = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data/ort_accuracy.txt"),
    )
    .unwrap();
    let mut f = recorded.split_whitespace();
    let (ort_correct, n) = (f.next().unwrap(), f.next().unwrap());
    let line = stdout
        .lines()
        .find(|l| l.starts_with("accuracy: "))
        .expect("an accuracy line");
    assert!(
        line.starts_with(&format!("accuracy: {ort_correct}/{n} = ")),
        "{line} vs onnxruntime {recorded}"
    );
    let acc: f64 = ort_correct.parse::<f64>().unwrap() / n.parse::<f64>().unwrap();
    assert!(acc >= 0.95, "accuracy {acc}");
    assert!(stdout.contains(&format!(
        "agreement with onnxruntime's predictions: {n}/{n}"
    )));
    assert!(stdout.contains("device profile, one inference:"));
    // Reduced precision: each mode's accuracy is printed and within one image of fp32's.
    let correct: i64 = ort_correct.parse().unwrap();
    for mode in [
        "allow_mix_precision",
        "force_fp16",
        "allow_mix_precision_bf16",
    ] {
        let prefix = format!("accuracy with precision = \"{mode}\": ");
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no {mode} line"));
        let c: i64 = line[prefix.len()..]
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((c - correct).abs() <= 1, "{line}");
    }
}
