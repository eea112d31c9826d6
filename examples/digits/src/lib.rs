//! The held-out split of scikit-learn's 8×8 digits and onnxruntime's results on it
//! (`data/`, written by tools/train_digits.py), for the examples that classify it
//! (`digits`, `batching`).

use std::error::Error;
use std::path::{Path, PathBuf};

/// This crate's `data/` directory.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// The held-out split and onnxruntime's results on it (written by tools/train_digits.py).
pub struct TestSet {
    /// The images, pixels scaled as in training.
    pub images: Vec<[[f32; 8]; 8]>,
    /// The true digit of each image.
    pub labels: Vec<u8>,
    /// onnxruntime's predicted digit of each image.
    pub ort_predictions: Vec<u8>,
    /// How many of onnxruntime's predictions are right.
    pub ort_correct: usize,
}

/// Reads the split from `dir` (see [`data_dir`]).
pub fn load(dir: &Path) -> Result<TestSet, Box<dyn Error>> {
    let read = |name: &str| {
        std::fs::read(dir.join(name)).map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    let x = read("test_x.bin")?;
    let labels = read("test_y.bin")?;
    let ort_predictions = read("ort_pred.bin")?;
    let accuracy = String::from_utf8(read("ort_accuracy.txt")?)?;
    let ort_correct: usize = accuracy
        .split_whitespace()
        .next()
        .ok_or("ort_accuracy.txt is empty")?
        .parse()?;
    if x.len() != labels.len() * 64 * 4 || ort_predictions.len() != labels.len() {
        return Err("test_x.bin, test_y.bin and ort_pred.bin disagree on the sample count".into());
    }
    let images = x
        .chunks_exact(64 * 4)
        .map(|img| {
            let mut m = [[0f32; 8]; 8];
            for (k, px) in img.chunks_exact(4).enumerate() {
                m[k / 8][k % 8] = f32::from_le_bytes(px.try_into().unwrap());
            }
            m
        })
        .collect();
    Ok(TestSet {
        images,
        labels,
        ort_predictions,
        ort_correct,
    })
}

/// The index of the largest value (the first of equals).
pub fn argmax(v: &[f32]) -> usize {
    (0..v.len()).fold(0, |best, i| if v[i] > v[best] { i } else { best })
}
