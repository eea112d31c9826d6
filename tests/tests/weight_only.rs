//! Weight-only int8 (`tools/gen_weight_only_cases.py`, `tests/data/weight_only`):
//! `Gather(Cast(W) · s, ids)` as exporters write it must match onnxruntime exactly at every
//! opt level (each element is `float(w) · s` either way), `MatMul(A, Cast(W) · s)` (with
//! bias, residual, Relu) within the default float tolerance (its sums run in another
//! order), and each blob must store W as int8 — its f32 widening nowhere among the weights;
//! from O1 on a MatMul's W is stored in the GEMM's panel order (format version 10).

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

/// From O1 on, a GemmW8 whose A has several rows reads its B in pre-packed panels (format
/// 10); one with a single row keeps B as ONNX stores it (its GEMV reads rows in place).
#[test]
fn matmul_weights_are_packed_from_o1_on() {
    use ge_build::OptLevel;
    use ge_build::ir::Op;
    use ge_runtime::format::{GEMM_B_PANELS, pack_gemm_b};
    let version = |c: &ge_build::Compiled| {
        let blob = AlignedBlob::from_bytes(&c.blob);
        Model::from_bytes(blob.as_bytes()).unwrap().version()
    };
    let mut seen = 0;
    for c in cases() {
        let bytes = std::fs::read(c.join("model.onnx")).unwrap();
        let (o0, o2) = (
            ge_tests::compile_at(&bytes, OptLevel::O0),
            ge_tests::compile_at(&bytes, OptLevel::O2),
        );
        // Each GemmW8's B (its ONNX bytes at O0), trans_b, and whether A has one row.
        let gemms = |g: &ge_build::ir::Graph| -> Vec<(Vec<usize>, Vec<u8>, u32, bool)> {
            g.topo_order()
                .into_iter()
                .filter_map(|n| match g.g[n].op {
                    Op::GemmW8(p) => {
                        let b = g.g[n].inputs[1].unwrap();
                        let d = g.constant(b).unwrap();
                        let a = g.value(g.g[n].inputs[0].unwrap());
                        let one_row = a.numel() <= *a.shape.last().unwrap_or(&0);
                        Some((d.dims.clone(), d.bytes.clone(), p.trans_b, one_row))
                    }
                    _ => None,
                })
                .collect()
        };
        let (before, after) = (gemms(&o0.graph), gemms(&o2.graph));
        assert_eq!(before.len(), after.len(), "{}", c.display());
        for ((dims, onnx, t0, _), (dims2, packed, t2, one_row)) in before.iter().zip(&after) {
            // One row runs the GEMV on B as ONNX stores it: left row-major.
            let (want_t, want) = if *one_row {
                (0, onnx.clone())
            } else {
                let mut want = vec![0u8; onnx.len()];
                pack_gemm_b(onnx, dims[0], dims[1], false, &mut want);
                (GEMM_B_PANELS, want)
            };
            assert_eq!((*t0, *t2, dims), (0, want_t, dims2), "{}", c.display());
            assert_eq!(packed, &want, "{}", c.display());
            seen += 1;
        }
        // Packed B panels (several rows) need format 10.
        if after.iter().any(|g| !g.3) {
            assert!(
                version(&o0) < 10,
                "{}: O0 needs no newer format",
                c.display()
            );
            assert_eq!(version(&o2), 10, "{}", c.display());
        }
    }
    assert!(seen >= 4, "{seen} weight-only MatMuls among the cases");
}
