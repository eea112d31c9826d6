//! Which ops `ge quantize` quantizes: Conv, Gemm and MatMul whose weight is an f32
//! initializer (a product of two activations stays float), minus `--exclude`. Every other op,
//! and every one of those that does not qualify, stays float and is listed with the reason.
//! O(nodes).

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;

use super::graph::{consumers, ctx, initializers, outputs};
use crate::error::{CompileError, Result};
use crate::onnx::proto::GraphProto;
use crate::tensor::decode_tensor;

/// One op to quantize.
#[derive(Clone, Debug)]
pub struct Target {
    /// Index in the graph's nodes.
    pub node: usize,
    /// The activation input (input 0).
    pub input: String,
    /// The weight initializer (input 1).
    pub weight: String,
    /// The weight's output-channel axis (per-channel scales run along it).
    pub axis: usize,
    /// A 1-D f32 bias initializer read only by this op, stored as int32.
    pub bias: Option<String>,
    /// The value whose Q/DQ follows the op: its output, or the output of a Relu that is its
    /// only consumer (the Relu then folds into the quantized range); `None` for a graph
    /// output (outputs stay float).
    pub output: Option<String>,
}

/// An op left in float, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub node: String,
    pub op_type: String,
    pub reason: String,
}

/// The ops to quantize and the ones left in float.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub targets: Vec<Target>,
    pub skipped: Vec<Skipped>,
}

impl Selection {
    /// The activations to calibrate: every target's input and output, in first-use order.
    pub fn activations(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.targets
            .iter()
            .flat_map(|t| std::iter::once(&t.input).chain(&t.output))
            .filter(|v| seen.insert(v.as_str()))
            .cloned()
            .collect()
    }
}

/// Chooses the targets of `g`. Errors when an `exclude` name matches no node.
pub fn select(
    g: &GraphProto,
    model_dir: Option<&Path>,
    opset: i64,
    exclude: &[String],
) -> Result<Selection> {
    let keep = crate::accuracy::probe::keep_name;
    for name in exclude {
        if !g.node.iter().any(|n| keep(n) == name) {
            return Err(CompileError::Option(format!(
                "--exclude '{name}': no node has that name (names are the ONNX node names, or \
                 the first output's for an unnamed node, as `ge compile --accuracy-report` \
                 lists them)"
            )));
        }
    }
    let inits = initializers(g);
    let users = consumers(g);
    let graph_outputs = outputs(g);
    let mut sel = Selection::default();
    for (i, n) in g.node.iter().enumerate() {
        let op = n.op_type();
        if !matches!(n.domain(), "" | "ai.onnx") || !matches!(op, "Conv" | "Gemm" | "MatMul") {
            continue;
        }
        let skip = |reason: &str| Skipped {
            node: keep(n).to_string(),
            op_type: op.to_string(),
            reason: reason.to_string(),
        };
        if exclude.iter().any(|e| e == keep(n)) {
            sel.skipped.push(skip("excluded (--exclude)"));
            continue;
        }
        let c = ctx(n, opset);
        let weight = n.input.get(1).cloned().unwrap_or_default();
        let Some(&wi) = inits.get(&weight) else {
            sel.skipped.push(skip(
                "its weight is not a constant (a product of two activations)",
            ));
            continue;
        };
        let w = decode_tensor(&g.initializer[wi], model_dir)
            .map_err(|e| c.err(format!("weight '{weight}': {e}")))?;
        if w.dtype != ge_runtime::format::DType::F32 {
            sel.skipped.push(skip(&format!(
                "its weight is {}, not float32",
                w.dtype.name()
            )));
            continue;
        }
        if inits.contains_key(&n.input[0]) {
            sel.skipped.push(skip("its input 0 is a constant"));
            continue;
        }
        let axis = match op {
            "Conv" if w.dims.len() >= 3 => 0,
            "Gemm" if w.dims.len() == 2 => {
                let alpha_beta_one =
                    c.attr_f_or("alpha", 1.0) == 1.0 && c.attr_f_or("beta", 1.0) == 1.0;
                if c.attr_i_or("transA", 0) != 0 || !alpha_beta_one {
                    sel.skipped
                        .push(skip("transA, alpha or beta differ from 0, 1, 1"));
                    continue;
                }
                if c.attr_i_or("transB", 0) != 0 { 0 } else { 1 }
            }
            "MatMul" if w.dims.len() == 2 => 1,
            _ => {
                sel.skipped.push(skip(&format!(
                    "its weight has rank {} (Conv takes ≥ 3, Gemm and MatMul 2)",
                    w.dims.len()
                )));
                continue;
            }
        };
        let channels = w.dims[axis];
        let bias = n.input.get(2).filter(|b| {
            op != "MatMul"
                && users.get(*b).is_some_and(|u| u.len() == 1)
                && inits.get(*b).is_some_and(|&bi| {
                    decode_tensor(&g.initializer[bi], model_dir).is_ok_and(|t| {
                        t.dtype == ge_runtime::format::DType::F32 && t.dims == [channels]
                    })
                })
        });
        let out = n.output.first().cloned().unwrap_or_default();
        let after = match users.get(&out).map(Vec::as_slice) {
            Some(&[r]) if g.node[r].op_type() == "Relu" && !graph_outputs.contains(&out) => {
                g.node[r].output[0].clone()
            }
            _ => out,
        };
        sel.targets.push(Target {
            node: i,
            input: n.input[0].clone(),
            weight,
            axis,
            bias: bias.cloned(),
            output: (!graph_outputs.contains(&after)).then_some(after),
        });
    }
    Ok(sel)
}
