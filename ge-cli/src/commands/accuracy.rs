//! `ge compile --precision MODE --accuracy-report FILE.json [--calib DIR]`: runs the fp32
//! compile and the reduced-precision one of the same model on the same inputs (the given
//! ones, else seeded random) and writes how far apart their outputs are, and which ops add
//! the most error. `--auto-mixed-precision KEEP_FILE --rtol R` searches the nodes that must
//! stay in fp32 on the same inputs.

use std::path::{Path, PathBuf};

use ge_build::accuracy::auto_mixed::search;
use ge_build::accuracy::probe::{fp32_options, op_deviations, run_converted};
use ge_build::accuracy::{AccuracyReport, compare};
use ge_build::tensor::{TensorData, read_tensor_file};
use ge_build::{CompileOptions, Compiled};
use ge_runtime::{AlignedBlob, Model};

use super::Res;
use super::bench::{integer_bounds, random_input};

/// The accuracy flags of `ge compile`.
pub(super) struct AccuracyFlags {
    pub report: Option<PathBuf>,
    pub calib: Option<PathBuf>,
    pub auto_mixed: Option<PathBuf>,
    pub rtol: f64,
}

/// Inputs for `model`: `DIR/<input name>.npy` from `calib`, else seeded random ones.
fn inputs(model: &Model<'_>, calib: Option<&Path>) -> Res<Vec<TensorData>> {
    let bounds = integer_bounds(model);
    (0..model.input_count())
        .filter_map(|i| model.input(i))
        .enumerate()
        .map(|(i, io)| match calib {
            Some(dir) => {
                let p = dir.join(format!("{}.npy", ge_build::tensor::file_stem(io.name)));
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

/// The fp32 compile of `model` and the sample inputs for it.
fn fp32_and_inputs(
    model: &Path,
    opts: &CompileOptions,
    calib: Option<&Path>,
) -> Res<(Compiled, Vec<TensorData>)> {
    let fp32 = ge_build::compile_file(model, &fp32_options(opts)).map_err(|e| e.to_string())?;
    let aligned = AlignedBlob::from_bytes(&fp32.blob);
    let m = Model::from_bytes(aligned.as_bytes()).map_err(|e| e.to_string())?;
    let ins = inputs(&m, calib)?;
    Ok((fp32, ins))
}

fn read_model(model: &Path) -> Res<Vec<u8>> {
    std::fs::read(model).map_err(|e| format!("cannot read {}: {e}", model.display()))
}

/// Compiles `model` in fp32 beside `reduced`, runs both and writes the report to `out`.
pub(super) fn accuracy_report(
    model: &Path,
    reduced: &Compiled,
    opts: &CompileOptions,
    calib: Option<&Path>,
    out: &Path,
) -> Res {
    let (fp32, ins) = fp32_and_inputs(model, opts, calib)?;
    let want = run_converted(&fp32.blob, &ins, opts).map_err(|e| e.to_string())?;
    let got = run_converted(&reduced.blob, &ins, opts).map_err(|e| e.to_string())?;
    let ops = match op_deviations(&read_model(model)?, model.parent(), opts, &ins) {
        Ok(mut d) => {
            d.truncate(10);
            d
        }
        Err(e) => {
            eprintln!("warning: no per-op deviations (every value exposed as an output): {e}");
            Vec::new()
        }
    };
    let report = AccuracyReport {
        precision: opts.precision.name().to_string(),
        inputs: calib.map_or_else(
            || "random (seed 42)".to_string(),
            |d| d.display().to_string(),
        ),
        outputs: fp32
            .graph
            .output_names
            .iter()
            .zip(got.iter().zip(&want))
            .map(|(n, (g, w))| compare(n, g, w))
            .collect(),
        ops,
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
    for d in report.ops.iter().take(3) {
        eprintln!(
            "  deviates: node '{}' ({}) adds {:.3e} (output '{}' at {:.3e} of its scale)",
            d.node, d.op_type, d.added, d.output, d.error
        );
    }
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))
}

/// Runs the `--auto-mixed-precision` search and writes the keep-dtype file `keep`.
pub(super) fn auto_mixed(
    model: &Path,
    opts: &CompileOptions,
    calib: Option<&Path>,
    rtol: f64,
    keep: &Path,
) -> Res {
    let (fp32, ins) = fp32_and_inputs(model, opts, calib)?;
    let found = search(
        &read_model(model)?,
        model.parent(),
        opts,
        &fp32.blob,
        &ins,
        rtol,
    )
    .map_err(|e| e.to_string())?;
    eprintln!(
        "auto-mixed precision: {} node(s) kept in fp32 ({}), output error {:.3e} → {:.3e} \
         (--rtol {rtol}), {} compile-and-run rounds",
        found.keep.len(),
        found.keep.join(", "),
        found.error_without,
        found.error_with,
        found.rounds
    );
    std::fs::write(keep, &found.file).map_err(|e| format!("cannot write {}: {e}", keep.display()))
}
