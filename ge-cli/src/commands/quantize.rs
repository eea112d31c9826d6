//! `ge quantize MODEL.onnx --calib DIR -o OUT.onnx|OUT.om`: post-training static
//! quantization (see `ge_build::quantize`). `.onnx` writes the QDQ model (onnxruntime runs it
//! too), `.om` compiles it with the compile flags.

use std::path::Path;

use ge_build::quantize::{Method, QuantizeOptions, quantize as quantize_model};

use super::{Res, options};
use crate::cli::{CompileFlags, QuantizeFlags};

/// Runs `ge quantize`.
pub(super) fn quantize(
    model: &Path,
    output: &Path,
    q: &QuantizeFlags,
    flags: &CompileFlags,
) -> Res {
    let ext = output.extension().and_then(|e| e.to_str());
    if !matches!(ext, Some("onnx" | "om")) {
        return Err(format!(
            "{}: the output must end in .onnx (QDQ model) or .om (compiled blob)",
            output.display()
        ));
    }
    let opts = options(flags)?;
    let qopts = QuantizeOptions {
        method: q.method.parse::<Method>().map_err(|e| e.to_string())?,
        percentile: q.percentile,
        per_channel: q.per_channel,
        symmetric_activations: q.symmetric_activations,
        exclude: q
            .exclude
            .iter()
            .flat_map(|s| s.split(','))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        max_samples: q.max_samples,
        equalize: q.equalize,
    };
    let bytes =
        std::fs::read(model).map_err(|e| format!("cannot read {}: {e}", model.display()))?;
    let out = quantize_model(&bytes, model.parent(), &q.calib, &qopts, &opts)
        .map_err(|e| e.to_string())?;
    let r = &out.report;
    let written = if ext == Some("om") {
        let c =
            ge_build::compile_bytes(&out.onnx, model.parent(), &opts).map_err(|e| e.to_string())?;
        c.blob
    } else {
        out.onnx.clone()
    };
    std::fs::write(output, &written)
        .map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    if let Some(p) = &q.report {
        let text = serde_json::to_string_pretty(r).map_err(|e| e.to_string())?;
        std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    eprintln!(
        "quantized {} → {} ({} bytes): {} ops int8 (weights {}, activations {}), {} left float, \
         {} batch norms folded, {} activations equalized; {} activations calibrated ({}) on {} samples",
        model.display(),
        output.display(),
        written.len(),
        r.layers.len(),
        if r.per_channel {
            "per channel"
        } else {
            "per tensor"
        },
        if r.symmetric_activations {
            "int8"
        } else {
            "uint8"
        },
        r.float_ops.len(),
        r.batch_norms_folded,
        r.equalized,
        r.activations.len(),
        r.method,
        r.samples
    );
    for o in &r.outputs {
        eprintln!(
            "  '{}' against fp32 on the calibration set: cosine {:.6}, max |err| {:.3e}, mean \
             |err| {:.3e}{}",
            o.name,
            o.cosine,
            o.max_abs,
            o.mean_abs,
            o.top1_agreement.map_or_else(String::new, |t| format!(
                ", top-1 agreement {:.2}%",
                t * 100.0
            ))
        );
    }
    Ok(())
}
