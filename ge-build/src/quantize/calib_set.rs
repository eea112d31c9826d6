//! The calibration samples of `ge quantize --calib DIR`, in one of two layouts:
//!
//! * **one file per input**: `DIR/<input name>.npy` (or `.pb`) holding many samples stacked
//!   along dim 0 — `[S·B, …]` for an input of shape `[B, …]` gives S samples (the digits
//!   training split is `x.npy` of shape `[1437, 1, 8, 8]`);
//! * **one folder per sample** (taken in name order): `DIR/<sample>/<input name>.npy` (or
//!   `.pb`), or the ONNX test layout `DIR/test_data_set_N/input_<i>.pb`.
//!
//! Input names with `/` or `:` are looked up with those replaced by `_`, as `ge run` names
//! its files. O(bytes read).

use std::path::{Path, PathBuf};

use crate::error::{CompileError, Result};
use crate::tensor::{TensorData, file_stem, read_tensor_file};

/// One model input as the compiled model takes it.
#[derive(Clone, Debug)]
pub struct InputSpec {
    pub name: String,
    pub dims: Vec<usize>,
}

/// The samples, each one tensor per model input (in the model's input order).
#[derive(Clone, Debug)]
pub struct CalibSet {
    pub samples: Vec<Vec<TensorData>>,
    /// Which layout was read (for the report).
    pub layout: &'static str,
}

fn err(dir: &Path, reason: impl std::fmt::Display) -> CompileError {
    CompileError::Option(format!("--calib {}: {reason}", dir.display()))
}

/// The file holding input `i` (`spec`) in `dir`, if any.
fn find(dir: &Path, i: usize, spec: &InputSpec, test_layout: bool) -> Option<PathBuf> {
    let stem = file_stem(&spec.name);
    let mut names = vec![format!("{stem}.npy"), format!("{stem}.pb")];
    if test_layout {
        names.push(format!("input_{i}.pb"));
    }
    names.into_iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

fn read(dir: &Path, path: &Path) -> Result<TensorData> {
    read_tensor_file(path).map_err(|e| err(dir, e))
}

/// Reads the samples for `inputs` from `dir`, at most `limit` of them.
pub fn load(dir: &Path, inputs: &[InputSpec], limit: Option<usize>) -> Result<CalibSet> {
    let entries = std::fs::read_dir(dir).map_err(|e| err(dir, e))?;
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    let limit = limit.unwrap_or(usize::MAX);
    let set = if inputs
        .iter()
        .enumerate()
        .all(|(i, s)| find(dir, i, s, false).is_some())
    {
        stacked(dir, inputs, limit)?
    } else if !subdirs.is_empty() {
        let mut samples = Vec::new();
        for sub in subdirs.iter().take(limit) {
            let mut sample = Vec::with_capacity(inputs.len());
            for (i, spec) in inputs.iter().enumerate() {
                let p = find(sub, i, spec, true).ok_or_else(|| {
                    err(
                        dir,
                        format!(
                            "{} has no {}.npy (nor .pb, nor input_{i}.pb) for input '{}'",
                            sub.display(),
                            file_stem(&spec.name),
                            spec.name
                        ),
                    )
                })?;
                sample.push(read(dir, &p)?);
            }
            samples.push(sample);
        }
        CalibSet {
            samples,
            layout: "one folder per sample",
        }
    } else {
        let missing: Vec<String> = inputs
            .iter()
            .enumerate()
            .filter(|(i, s)| find(dir, *i, s, false).is_none())
            .map(|(_, s)| format!("{}.npy", file_stem(&s.name)))
            .collect();
        return Err(err(
            dir,
            format!(
                "no {} (samples stacked along dim 0) and no sample folders",
                missing.join(", ")
            ),
        ));
    };
    if set.samples.is_empty() {
        return Err(err(dir, "no calibration samples"));
    }
    Ok(set)
}

/// The one-file-per-input layout: each file split along dim 0 into the input's batch size.
fn stacked(dir: &Path, inputs: &[InputSpec], limit: usize) -> Result<CalibSet> {
    let mut per_input: Vec<Vec<TensorData>> = Vec::with_capacity(inputs.len());
    for (i, spec) in inputs.iter().enumerate() {
        let Some(p) = find(dir, i, spec, false) else {
            return Err(err(dir, format!("no file for input '{}'", spec.name)));
        };
        let t = read(dir, &p)?;
        per_input.push(split(dir, &p, t, spec)?);
    }
    let count = per_input.iter().map(Vec::len).min().unwrap_or(0);
    if per_input.iter().any(|v| v.len() != count) {
        return Err(err(
            dir,
            "the input files hold different numbers of samples along dim 0",
        ));
    }
    let samples = (0..count.min(limit))
        .map(|k| per_input.iter().map(|v| v[k].clone()).collect())
        .collect();
    Ok(CalibSet {
        samples,
        layout: "one file per input, samples along dim 0",
    })
}

/// Splits `t` (`[S·B, …]`) into S tensors of the input's shape `[B, …]`.
fn split(dir: &Path, path: &Path, t: TensorData, spec: &InputSpec) -> Result<Vec<TensorData>> {
    let bad = || {
        err(
            dir,
            format!(
                "{} has shape {:?}; input '{}' takes {:?}, so the file must be [S·{}, {}]",
                path.display(),
                t.dims,
                spec.name,
                spec.dims,
                spec.dims.first().copied().unwrap_or(1),
                spec.dims
                    .iter()
                    .skip(1)
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    };
    let (Some(&b), Some(&n)) = (spec.dims.first(), t.dims.first()) else {
        return Err(bad());
    };
    if t.dims.len() != spec.dims.len() || t.dims[1..] != spec.dims[1..] || b == 0 || n % b != 0 {
        return Err(bad());
    }
    let chunk = t.bytes.len() / (n / b).max(1);
    Ok(t.bytes
        .chunks_exact(chunk.max(1))
        .map(|c| TensorData {
            dtype: t.dtype,
            dims: spec.dims.clone(),
            bytes: c.to_vec(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ge_runtime::format::DType;

    #[test]
    fn stacked_file_splits_along_dim0_and_bad_shapes_are_named() {
        let dir = std::env::temp_dir().join(format!("ge-calib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let v: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let t = TensorData::from_elements(DType::F32, vec![6, 2], &v).unwrap();
        crate::tensor::write_npy(&dir.join("a_b.npy"), &t).unwrap();
        let spec = |dims: Vec<usize>| InputSpec {
            name: "a/b".into(),
            dims,
        };
        let set = load(&dir, &[spec(vec![2, 2])], None).unwrap();
        assert_eq!(set.samples.len(), 3);
        assert_eq!(set.samples[1][0].to_f32_vec(), vec![4.0, 5.0, 6.0, 7.0]);
        assert_eq!(
            load(&dir, &[spec(vec![2, 2])], Some(2))
                .unwrap()
                .samples
                .len(),
            2
        );
        let e = load(&dir, &[spec(vec![4, 2])], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("input 'a/b' takes [4, 2]"), "{e}");
        let e = load(
            &dir,
            &[InputSpec {
                name: "c".into(),
                dims: vec![1],
            }],
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no c.npy"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
