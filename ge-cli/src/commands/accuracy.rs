//! `ge compile --precision MODE --accuracy-report FILE.json [--calib DIR]`: runs the fp32
//! compile and the reduced-precision one of the same model on the same inputs (the given
//! ones, else seeded random) and writes how far apart their outputs are.

use std::path::Path;

use ge_build::accuracy::{AccuracyReport, compare};
use ge_build::run::Runner;
use ge_build::tensor::{TensorData, read_tensor_file};
use ge_build::{CompileOptions, Compiled, Precision};
use ge_runtime::{AlignedBlob, Model};

use super::Res;
use super::bench::{integer_bounds, random_input};
use super::run::sanitize;

/// Inputs for `model`: `DIR/<input name>.npy` from `calib`, else seeded random ones.
fn inputs(model: &Model<'_>, calib: Option<&Path>) -> Res<Vec<TensorData>> {
    let bounds = integer_bounds(model);
    (0..model.input_count())
        .filter_map(|i| model.input(i))
        .enumerate()
        .map(|(i, io)| match calib {
            Some(dir) => {
                let p = dir.join(format!("{}.npy", sanitize(io.name)));
                read_tensor_file(&p).map_err(|e| format!("--calib: {}: {e}", p.display()))
            }
            None => Ok(random_input(
                io.dtype,
                io.shape.dims(),
                42 + i as u64,
                bounds[i],
            )),
        })
        .collect()
}

/// Runs `blob` on `ins`, converted to its input dtypes (an `--io-dtype fp16` model takes
/// halves).
fn run(blob: &[u8], ins: &[TensorData], opts: &CompileOptions) -> Res<Vec<TensorData>> {
    let mut r = Runner::new(AlignedBlob::from_bytes(blob)).map_err(|e| e.to_string())?;
    let model = r.model().map_err(|e| e.to_string())?;
    let ins: Vec<TensorData> = ins
        .iter()
        .zip((0..model.input_count()).filter_map(|i| model.input(i)))
        .map(|(t, io)| {
            if t.dtype == io.dtype {
                Ok(t.clone())
            } else {
                ge_build::onnx::cast_data(t, io.dtype).map_err(|e| e.to_string())
            }
        })
        .collect::<Res<_>>()?;
    let out = r.run(&ins, ge_sim::SimDevice::new(opts.device));
    out.map(|(o, _)| o).map_err(|e| e.to_string())
}

/// Compiles `model` in fp32 beside `reduced`, runs both and writes the report to `out`.
pub(super) fn accuracy_report(
    model: &Path,
    reduced: &Compiled,
    opts: &CompileOptions,
    calib: Option<&Path>,
    out: &Path,
) -> Res {
    let fp32_opts = CompileOptions {
        precision: Precision::ForceFp32,
        io_dtype: None,
        keep_dtype: None,
        modify_mixlist: None,
        ..opts.clone()
    };
    let fp32 = ge_build::compile_file(model, &fp32_opts).map_err(|e| e.to_string())?;
    let aligned = AlignedBlob::from_bytes(&fp32.blob);
    let m = Model::from_bytes(aligned.as_bytes()).map_err(|e| e.to_string())?;
    let ins = inputs(&m, calib)?;
    let names: Vec<String> = (0..m.output_count())
        .filter_map(|i| m.output(i))
        .map(|o| o.name.to_string())
        .collect();
    let want = run(&fp32.blob, &ins, opts)?;
    let got = run(&reduced.blob, &ins, opts)?;
    let report = AccuracyReport {
        precision: opts.precision.name().to_string(),
        inputs: calib.map_or_else(
            || "random (seed 42)".to_string(),
            |d| d.display().to_string(),
        ),
        outputs: names
            .iter()
            .zip(got.iter().zip(&want))
            .map(|(n, (g, w))| compare(n, g, w))
            .collect(),
    };
    for o in &report.outputs {
        eprintln!(
            "accuracy of '{}' against fp32: cosine {:.6}, max |err| {:.3e}, mean |err| {:.3e}{}",
            o.name,
            o.cosine,
            o.max_abs,
            o.mean_abs,
            o.top1_agreement.map_or_else(String::new, |t| format!(
                ", top-1 agreement {:.0}%",
                t * 100.0
            ))
        );
    }
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))
}
