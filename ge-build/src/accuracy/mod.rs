//! Accuracy of a reduced-precision compile against the fp32 one (`ge compile
//! --accuracy-report`, and the precision tests): per output, the largest and mean absolute
//! and relative errors, the cosine similarity and, for classifier-shaped outputs, top-1
//! agreement; [`probe`] ranks the ops that deviate most and [`auto_mixed`] searches the
//! nodes that must stay in fp32.

pub mod auto_mixed;
pub mod probe;

use serde::Serialize;

use crate::tensor::TensorData;

/// How one output of the reduced model compares with the fp32 model's.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OutputAccuracy {
    pub name: String,
    pub max_abs: f64,
    pub mean_abs: f64,
    /// |got − want| / max(|want|, 1e-6), largest and mean.
    pub max_rel: f64,
    pub mean_rel: f64,
    pub cosine: f64,
    /// Fraction of rows whose largest element is at the same index, for outputs shaped
    /// `[N, C]` (unit dims ignored, C ≥ 2); `None` for other shapes.
    pub top1_agreement: Option<f64>,
    /// Non-finite elements in the reduced output (fp16 overflow).
    pub non_finite: usize,
}

/// Cosine similarity of two vectors (0 when either is all zeros).
pub fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let d = n(a) * n(b);
    if d > 0.0 { dot / d } else { 0.0 }
}

/// Index of the largest element (the first on ties; NaN never wins).
pub fn argmax(v: &[f64]) -> usize {
    (0..v.len()).fold(0, |m, i| if v[i] > v[m] || v[m].is_nan() { i } else { m })
}

/// Compares `got` (the reduced model's output `name`) with `want` (fp32's). O(elements).
pub fn compare(name: &str, got: &TensorData, want: &TensorData) -> OutputAccuracy {
    let g: Vec<f64> = got.to_f32_vec().into_iter().map(f64::from).collect();
    let w: Vec<f64> = want.to_f32_vec().into_iter().map(f64::from).collect();
    let n = g.len().min(w.len()).max(1) as f64;
    let mut a = OutputAccuracy {
        name: name.to_string(),
        cosine: cosine(&g, &w),
        ..OutputAccuracy::default()
    };
    for (x, y) in g.iter().zip(&w) {
        if !x.is_finite() {
            a.non_finite += 1;
            continue;
        }
        let abs = (x - y).abs();
        let rel = abs / y.abs().max(1e-6);
        a.max_abs = a.max_abs.max(abs);
        a.max_rel = a.max_rel.max(rel);
        a.mean_abs += abs / n;
        a.mean_rel += rel / n;
    }
    let dims: Vec<usize> = want.dims.iter().copied().filter(|&d| d != 1).collect();
    let classes = match dims[..] {
        [c] | [_, c] if c >= 2 => Some(c),
        _ => None,
    };
    a.top1_agreement = classes.filter(|_| g.len() == w.len()).map(|c| {
        let rows = w.len() / c;
        let same = (0..rows)
            .filter(|r| argmax(&g[r * c..(r + 1) * c]) == argmax(&w[r * c..(r + 1) * c]))
            .count();
        same as f64 / rows.max(1) as f64
    });
    a
}

/// The `--accuracy-report` file.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AccuracyReport {
    pub precision: String,
    /// Where the inputs came from (`random (seed 42)` or the calibration directory).
    pub inputs: String,
    pub outputs: Vec<OutputAccuracy>,
    /// The ten ops that add the most error (see [`probe::op_deviations`]).
    pub ops: Vec<probe::OpDeviation>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ge_runtime::format::DType;

    fn t(dims: &[usize], v: &[f32]) -> TensorData {
        TensorData::from_elements(DType::F32, dims.to_vec(), v).expect("tensor")
    }

    #[test]
    fn metrics() {
        let want = t(&[2, 3], &[1.0, 2.0, 3.0, 3.0, 2.0, 1.0]);
        let got = t(&[2, 3], &[1.0, 2.0, 3.5, 3.0, 3.5, 1.0]);
        let a = compare("y", &got, &want);
        assert_eq!(a.max_abs, 1.5);
        assert_eq!(a.mean_abs, 2.0 / 6.0);
        assert_eq!(a.max_rel, 0.75);
        assert_eq!(a.top1_agreement, Some(0.5));
        assert!(a.cosine > 0.9 && a.cosine < 1.0);
        assert!((compare("y", &want, &want).cosine - 1.0).abs() < 1e-12);
        assert_eq!(
            compare("s", &t(&[1, 1], &[2.0]), &t(&[1, 1], &[2.0])).top1_agreement,
            None
        );
        assert_eq!(cosine(&[0.0], &[1.0]), 0.0);
        assert_eq!(argmax(&[f64::NAN, 1.0, 3.0, 3.0]), 2);
    }
}
