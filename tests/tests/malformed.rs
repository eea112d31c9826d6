//! Truncated, garbage and wrong-version `.onnx` and `.om` inputs give errors, never panics.

use ge_build::{CompileOptions, compile_bytes, compile_file};
use ge_runtime::{AlignedBlob, Error, Model};

fn small_model() -> Vec<u8> {
    let p = ge_tests::corpus("light")
        .join("squeezenet")
        .join("model.onnx");
    std::fs::read(p).expect("squeezenet model")
}

fn compiled() -> Vec<u8> {
    let p = ge_tests::corpus("light")
        .join("squeezenet")
        .join("model.onnx");
    compile_file(&p, &CompileOptions::default())
        .expect("compiles")
        .blob
}

#[test]
fn truncated_and_garbage_onnx_are_errors() {
    let bytes = small_model();
    for cut in [
        0,
        1,
        7,
        100,
        bytes.len() / 3,
        bytes.len() / 2,
        bytes.len() - 1,
    ] {
        let r = std::panic::catch_unwind(|| {
            compile_bytes(&bytes[..cut], None, &CompileOptions::default())
        });
        match r {
            Ok(res) => assert!(res.is_err() || cut == 0, "truncation at {cut} compiled"),
            Err(_) => panic!("truncation at {cut} panicked"),
        }
    }
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    assert!(compile_bytes(&garbage, None, &CompileOptions::default()).is_err());
}

#[test]
fn truncated_om_is_an_error() {
    let blob = compiled();
    for cut in [0, 10, 63, 64, 200, blob.len() / 2, blob.len() - 1] {
        let a = AlignedBlob::from_bytes(&blob[..cut]);
        assert!(
            Model::from_bytes(a.as_bytes()).is_err(),
            "truncation at {cut} loaded"
        );
    }
}

#[test]
fn wrong_version_om_is_a_version_error() {
    let mut blob = compiled();
    blob[8] = 99; // the version field follows the 8-byte magic
    let a = AlignedBlob::from_bytes(&blob);
    assert_eq!(
        Model::from_bytes(a.as_bytes()).err(),
        Some(Error::Version {
            found: 99,
            supported: ge_runtime::format::FORMAT_VERSION
        })
    );
}

#[test]
fn corrupted_om_fails_its_checksum() {
    let blob = compiled();
    for at in [blob.len() / 2, blob.len() - 100, 300] {
        let mut b = blob.clone();
        b[at] ^= 0x5a;
        let a = AlignedBlob::from_bytes(&b);
        assert!(
            Model::from_bytes(a.as_bytes()).is_err(),
            "flip at {at} loaded"
        );
    }
}

#[test]
fn garbage_om_is_an_error() {
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    let a = AlignedBlob::from_bytes(&garbage);
    assert!(Model::from_bytes(a.as_bytes()).is_err());
}

/// A control-flow model from the checked-in cases, decoded for editing.
fn control_flow_model(case: &str) -> ge_build::onnx::proto::ModelProto {
    let p = ge_tests::workspace_root()
        .join("tests/data/decomposed")
        .join(case)
        .join("model.onnx");
    let bytes = std::fs::read(p).expect("checked-in model");
    <ge_build::onnx::proto::ModelProto as prost::Message>::decode(bytes.as_slice())
        .expect("decodes")
}

#[test]
fn malformed_scan_and_loop_bodies_are_errors_naming_the_op() {
    use prost::Message;
    type Edit = fn(&mut ge_build::onnx::proto::NodeProto);
    let edits: [(&str, &str, Edit); 5] = [
        ("scan_nested_if", "Scan", |n| {
            n.attribute.retain(|a| a.name() != "body")
        }),
        ("scan_nested_if", "Scan", |n| {
            for a in &mut n.attribute {
                if a.name() == "num_scan_inputs" {
                    a.i = Some(7);
                }
            }
        }),
        ("scan_nested_if", "Scan", |n| {
            for a in &mut n.attribute {
                if let Some(g) = a.g.as_mut() {
                    g.input.pop();
                }
            }
        }),
        ("loop_scan_output", "Loop", |n| {
            for a in &mut n.attribute {
                if let Some(g) = a.g.as_mut() {
                    g.output.truncate(0);
                }
            }
        }),
        ("loop_scan_output", "Loop", |n| {
            // The body now computes its condition: not unrollable.
            for a in &mut n.attribute {
                if let Some(g) = a.g.as_mut() {
                    for x in &mut g.node {
                        if x.op_type() == "Identity" {
                            x.op_type = Some("Not".into());
                        }
                    }
                }
            }
        }),
    ];
    for (i, (case, op, edit)) in edits.iter().enumerate() {
        let mut m = control_flow_model(case);
        let g = m.graph.as_mut().expect("graph");
        edit(&mut g.node[0]);
        let bytes = m.encode_to_vec();
        let r =
            std::panic::catch_unwind(|| compile_bytes(&bytes, None, &CompileOptions::default()));
        match r {
            Ok(Err(e)) => assert!(e.to_string().contains(op), "edit {i}: {e}"),
            Ok(Ok(_)) => panic!("edit {i} of {case} compiled"),
            Err(_) => panic!("edit {i} of {case} panicked"),
        }
    }
}

/// A ConstantOfShape of a hostile shape is refused from its shape, before anything is
/// allocated (it aborted the compiler with a 40 GB allocation), and a shape whose element
/// count overflows is refused too (issue 59).
#[test]
fn hostile_constant_of_shape_is_an_error_not_an_abort() {
    use ge_tests::onnx_builder::ModelBuilder;
    for (dims, want) in [
        (&[100_000i64, 100_000][..], "over the limit"),
        (&[1 << 40, 1 << 40, 1 << 40], "overflows"),
    ] {
        let mut b = ModelBuilder::new(17);
        b.ints("s", dims)
            .output("y", &[1])
            .node("ConstantOfShape", &["s"], &["y"], &[]);
        let err = match ge_build::compile_bytes(&b.build(), None, &Default::default()) {
            Ok(_) => panic!("{dims:?}: compiled"),
            Err(e) => e.to_string(),
        };
        assert!(
            err.contains("ConstantOfShape") && err.contains(want),
            "{dims:?}: {err}"
        );
    }
}

/// Constant folding keeps to its budget (`max_fold_bytes`, issue 59): a ConstantOfShape of
/// 1.6 GB (under the tensor limit) no longer makes the compiler build, hold and store it
/// (it took 6 GB and 21 s and wrote a 1.6 GB blob) but runs as an Expand of its one value;
/// and below the budget and above it, a folded ConstantOfShape and Tile give the outputs the
/// run-time tasks give.
#[test]
fn constant_folding_keeps_to_its_budget() {
    use ge_build::tensor::TensorData;
    use ge_runtime::format::DType;
    use ge_tests::onnx_builder::{Attr, ModelBuilder};
    let f32s = |dims: &[usize], v: &[f32]| TensorData {
        dtype: DType::F32,
        dims: dims.to_vec(),
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    };
    let mut big = ModelBuilder::new(17);
    big.ints("s", &[20_000, 20_000])
        .output("y", &[20_000, 20_000])
        .node("ConstantOfShape", &["s"], &["a"], &[])
        .node("Relu", &["a"], &["y"], &[]);
    let t = std::time::Instant::now();
    let c = compile_bytes(&big.build(), None, &CompileOptions::default()).expect("compiles");
    assert!(c.blob.len() < 64 << 10, "blob of {} bytes", c.blob.len());
    assert!(t.elapsed().as_secs() < 10, "compile took {:?}", t.elapsed());

    let mut m = ModelBuilder::new(17);
    m.input("x", &[3, 4, 5])
        .ints("s", &[3, 4, 5])
        .tensor("p", f32s(&[1, 4, 1], &[0.5, -1.25, 3.0, 7.5]))
        .ints("r", &[3, 1, 5])
        .output("y", &[3, 4, 5])
        .node(
            "ConstantOfShape",
            &["s"],
            &["c"],
            &[("value", Attr::T(f32s(&[1], &[2.5])))],
        )
        .node("Tile", &["p", "r"], &["t"], &[])
        .node("Add", &["x", "c"], &["u"], &[])
        .node("Mul", &["u", "t"], &["y"], &[]);
    let model = m.build();
    let folded = compile_bytes(&model, None, &CompileOptions::default()).expect("folds");
    let mut small = CompileOptions::default();
    small.limits.set("max_fold_bytes", "64").expect("limit");
    let tasks = compile_bytes(&model, None, &small).expect("compiles with tasks");
    let kinds = |c: &ge_build::Compiled| c.report.tasks;
    assert!(
        kinds(&tasks) >= kinds(&folded) + 2,
        "an Expand and a Tile run: {} tasks folded, {} not",
        kinds(&folded),
        kinds(&tasks)
    );
    let x = ge_tests::random_inputs(&folded, 7);
    let (a, b) = (ge_tests::run(&folded, &x), ge_tests::run(&tasks, &x));
    assert_eq!(a[0].bytes, b[0].bytes, "folded and run-time values differ");
    let xs: &[f32] = bytemuck::cast_slice(&x[0].bytes);
    let ys: Vec<f32> = a[0]
        .bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    for (i, (&xv, &yv)) in xs.iter().zip(&ys).enumerate() {
        let p = [0.5, -1.25, 3.0, 7.5][(i / 5) % 4];
        assert_eq!(yv, (xv + 2.5) * p, "at {i}");
    }
}
