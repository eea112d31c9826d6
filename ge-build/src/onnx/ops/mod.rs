//! Op importers: one function per ONNX op type (grouped by family), each validating the
//! node's attributes for its opset, inferring output dtypes and shapes, and returning the
//! typed IR op. Each family module registers its ops in [`registry`]; [`import`] dispatches
//! through it.

mod attention;
mod batch_norm_train;
mod bits;
mod causal_conv;
mod col2im;
mod contrib;
mod conv;
mod crop_pad;
mod decomp;
pub(crate) mod dequantized_pool;
mod det;
mod dft;
mod einsum;
mod elementwise;
mod fan_in;
mod grid;
mod index;
mod linear_attn;
mod loops;
mod math;
mod norm;
mod onehot;
mod pool_indices;
mod qconv;
mod qgemm;
mod qlinear;
mod qparams;
mod quant;
mod recurrent;
mod recurrent_task;
pub mod registry;
mod resize;
mod reverse;
mod rotary;
mod scan;
mod select;
mod shape;
mod sub;
pub mod table;
mod tensor_scatter;
mod training;
mod unpool;
pub(crate) mod weight_only;
mod window;

use ge_runtime::format::DType;

use super::ctx::{Imported, NodeCtx};
use crate::error::Result;

pub(crate) use quant::int_range;
pub use registry::supported;

/// Imports one node through its registry entry. A node of the model must use its op within
/// the op's opsets; nodes a decomposition wrote (`generated`) are exempt, since ge writes
/// them for the semantics of the opset at hand (a `Round` inside an opset-10 QLinearConv).
/// Top-level sequence ops are resolved by the caller (they need the graph's sequences).
pub fn import(ctx: &NodeCtx<'_>, generated: bool) -> Result<Imported> {
    let node = ctx.node;
    if node.domain() == weight_only::DOMAIN {
        return match node.op_type() {
            dequantized_pool::OP => dequantized_pool::import(ctx),
            crate::passes::qdq::dense::OP => qgemm::fully_connected(ctx),
            crate::passes::qdq::mean::OP => contrib::tflite::mean(ctx),
            _ => weight_only::import(ctx),
        };
    }
    let entry = registry::lookup(node.domain(), node.op_type()).ok_or_else(|| {
        ctx.unsupported(if matches!(node.domain(), "" | "ai.onnx") {
            "no importer for this op type; `ge ops` lists the supported ones".to_string()
        } else if node.domain() == "com.microsoft.nchwc" {
            "onnxruntime's NCHWc layout ops (its CPU kernels' blocked layout, written when a              model is saved at ORT_ENABLE_ALL) are not model ops: save the model at              ORT_ENABLE_EXTENDED instead"
                .to_string()
        } else {
            format!(
                "operator domain '{}' is not supported (the default ONNX domain and {} are)",
                node.domain(),
                registry::other_domains().join(", ")
            )
        })
    })?;
    if !generated && !entry.covers(ctx.opset) {
        return Err(ctx.unsupported(format!(
            "{} is defined from opset {} to {}; re-export the model at an opset in that range",
            entry.op, entry.since, entry.until
        )));
    }
    match entry.import {
        registry::Importer::Node(f) => f(ctx),
        registry::Importer::Sequence => Err(ctx.unsupported(
            "sequence ops are resolved only in the main graph, not inside an If/Loop/Scan body",
        )),
    }
}

/// The default-domain opset a node of `domain` is imported at: the model's, except for the
/// training domain, whose models import none (its decompositions use the newest opset).
pub fn opset_for(domain: &str, opset: i64) -> i64 {
    if domain == training::DOMAIN {
        registry::MAX_OPSET
    } else {
        opset
    }
}

/// Numpy broadcast of several shapes; None when they do not broadcast.
pub fn broadcast_shapes(shapes: &[&[usize]]) -> Option<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for s in shapes {
        let off = rank - s.len();
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[off + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return None;
            }
        }
    }
    Some(out)
}

/// True for floating-point dtypes.
pub fn is_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F64 | DType::F16 | DType::Bf16)
}
