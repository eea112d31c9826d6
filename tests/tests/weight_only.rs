//! Weight-only int8 (`tools/gen_weight_only_cases.py`, `tests/data/weight_only`):
//! `Gather(Cast(W) · s, ids)` as exporters write it must match onnxruntime exactly at every
//! opt level (each element is `float(w) · s` either way), `MatMul(A, Cast(W) · s)` (with
//! bias, residual, Relu) within the default float tolerance (its sums run in another
//! order), and each blob must store W as int8 — its f32 widening nowhere among the weights.

use ge_build::check::{Tolerance, suite_cases};
use ge_build::{CompileOptions, compile_bytes};
use ge_runtime::format::{DType, Location};
use ge_runtime::{AlignedBlob, Model};

fn cases() -> Vec<std::path::PathBuf> {
    let cases = suite_cases(&ge_tests::workspace_root().join("tests/data/weight_only"));
    assert_eq!(cases.len(), 7, "tests/data/weight_only: expected 7 cases");
    cases
}

#[test]
fn weight_only_cases_match_onnxruntime() {
    let exact = Tolerance {
        rtol: 0.0,
        atol: 0.0,
    };
    let tolerance = |name: &str| {
        if name.starts_with("gather") {
            exact
        } else {
            Tolerance::default()
        }
    };
    let failures = ge_tests::check_all_levels(&cases(), tolerance);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn weight_only_weights_stay_int8_in_the_blob() {
    for c in cases() {
        let bytes = std::fs::read(c.join("model.onnx")).unwrap();
        let table = ge_build::onnx::decode_model(&bytes)
            .unwrap()
            .graph
            .unwrap()
            .initializer
            .into_iter()
            .find(|t| t.name() == "w")
            .unwrap();
        let elems: u64 = table.dims.iter().product::<i64>() as u64;
        let compiled = compile_bytes(&bytes, None, &CompileOptions::default()).unwrap();
        let blob = AlignedBlob::from_bytes(&compiled.blob);
        let model = Model::from_bytes(blob.as_bytes()).unwrap();
        let weights: Vec<(Option<DType>, u64)> = model
            .tensors()
            .iter()
            .filter(|t| t.location == Location::Weight as u8)
            .map(|t| (DType::from_u8(t.dtype), t.bytes))
            .collect();
        let int8 = weights
            .iter()
            .any(|&(d, b)| matches!(d, Some(DType::I8 | DType::U8)) && b == elems);
        assert!(int8, "{}: no int8 table among {weights:?}", c.display());
        assert!(
            weights.iter().all(|&(_, b)| b < elems * 4),
            "{}: a widened table among {weights:?}",
            c.display()
        );
        assert!(
            (compiled.blob.len() as u64) < elems * 4,
            "{}: blob {} bytes for a {elems}-element table",
            c.display(),
            compiled.blob.len()
        );
    }
}
