//! Runs the batching example (`cargo run --release -p batching`): one blob with batch gears
//! 1, 4 and 8 classifies the digits split with onnxruntime's accuracy and predictions at
//! every batch (3 included, padded onto gear 4), and the simulated time per image falls as
//! the gear grows (one launch and the weights' traffic shared by more images).

use std::process::Command;

#[test]
fn every_gear_matches_onnxruntime_and_batches_amortize() {
    let out = Command::new(env!("CARGO_BIN_EXE_batching"))
        .arg("1")
        .output()
        .expect("run the batching example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    assert!(
        out.status.success(),
        "batching failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("every batch equal, with the same prediction for every image"));
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("batch  gear"))
        .skip(1)
        .take(4)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let batches: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(batches, ["1", "4", "8", "3"], "{stdout}");
    let per_image: Vec<f64> = rows.iter().map(|r| r[7].parse().unwrap()).collect();
    assert!(
        per_image[0] > per_image[1] && per_image[1] > per_image[2],
        "simulated us per image at batches 1, 4, 8: {per_image:?}"
    );
    let per_batch: Vec<f64> = rows.iter().map(|r| r[6].parse().unwrap()).collect();
    assert_eq!(per_batch[3], per_batch[1], "batch 3 runs gear 4's plan");
}
