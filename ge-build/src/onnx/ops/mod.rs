//! Op importers: one function per ONNX op type (grouped by family), each validating the
//! node's attributes for its opset, inferring output dtypes and shapes, and returning the
//! typed IR op. [`import`] dispatches on the op type; [`SUPPORTED`] lists what it knows.

mod attention;
mod batch_norm_train;
mod bits;
mod causal_conv;
mod col2im;
mod conv;
mod crop_pad;
mod decomp;
mod det;
mod dft;
mod einsum;
mod elementwise;
mod grid;
mod index;
mod linear_attn;
mod loops;
mod math;
mod norm;
mod onehot;
mod pool_indices;
mod qlinear;
mod quant;
mod recurrent;
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
mod window;

use ge_runtime::format::DType;

use super::ctx::{Imported, NodeCtx};
use crate::error::Result;

/// Every ONNX op type (default domain) the importer handles.
pub const SUPPORTED: &[&str] = &[
    "Abs",
    "Acos",
    "Acosh",
    "Add",
    "And",
    "ArgMax",
    "ArgMin",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "AveragePool",
    "BatchNormalization",
    "BitShift",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "Cast",
    "CastLike",
    "Ceil",
    "Celu",
    "Clip",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Conv",
    "ConvTranspose",
    "Cos",
    "Cosh",
    "Div",
    "Dropout",
    "Elu",
    "Equal",
    "Erf",
    "Exp",
    "Expand",
    "Flatten",
    "Floor",
    "Gather",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "GlobalLpPool",
    "GlobalMaxPool",
    "Greater",
    "GreaterOrEqual",
    "HardSigmoid",
    "HardSwish",
    "Hardmax",
    "Identity",
    "InstanceNormalization",
    "IsInf",
    "IsNaN",
    "LRN",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "Log",
    "LogSoftmax",
    "LpPool",
    "MatMul",
    "Max",
    "MaxPool",
    "Mean",
    "Min",
    "Mish",
    "Mod",
    "Mul",
    "Neg",
    "Not",
    "Or",
    "PRelu",
    "Pad",
    "Pow",
    "Range",
    "Reciprocal",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "Relu",
    "Reshape",
    "Resize",
    "Round",
    "Selu",
    "Shape",
    "Shrink",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Size",
    "Slice",
    "Softmax",
    "Softplus",
    "Softsign",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Sum",
    "Tan",
    "Tanh",
    "ThresholdedRelu",
    "Tile",
    "Transpose",
    "Unsqueeze",
    "Upsample",
    "Where",
    "Xor",
];

/// Imports one node.
pub fn import(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let t = ctx.node.op_type();
    if let Some(r) = decomp::import(t, ctx) {
        return r;
    }
    if let Some(r) = index::import(t, ctx) {
        return r;
    }
    if let Some(r) = elementwise::import(t, ctx) {
        return r;
    }
    if let Some(r) = attention::import(t, ctx)
        .or_else(|| recurrent::import(t, ctx))
        .or_else(|| grid::import(t, ctx))
        .or_else(|| scan::import(t, ctx))
        .or_else(|| loops::import(t, ctx))
        .or_else(|| linear_attn::import(t, ctx))
        .or_else(|| bits::import(t, ctx))
        .or_else(|| quant::import(t, ctx))
        .or_else(|| qlinear::import(t, ctx))
        .or_else(|| einsum::import(t, ctx))
        .or_else(|| det::import(t, ctx))
        .or_else(|| onehot::import(t, ctx))
        .or_else(|| window::import(t, ctx))
        .or_else(|| unpool::import(t, ctx))
        .or_else(|| select::import(t, ctx))
        .or_else(|| reverse::import(t, ctx))
        .or_else(|| causal_conv::import(t, ctx))
        .or_else(|| dft::import(t, ctx))
        .or_else(|| rotary::import(t, ctx))
        .or_else(|| tensor_scatter::import(t, ctx))
        .or_else(|| col2im::import(t, ctx))
        .or_else(|| crop_pad::import(t, ctx))
        .or_else(|| training::import(t, ctx))
    {
        return r;
    }
    match t {
        "Conv" => conv::conv(ctx),
        "ConvTranspose" => conv::conv_transpose(ctx),
        "MaxPool" if pool_indices::wants_indices(ctx) => pool_indices::max_pool_with_indices(ctx),
        "MaxPool" | "AveragePool" | "LpPool" => conv::pool(ctx),
        "GlobalAveragePool" | "GlobalMaxPool" | "GlobalLpPool" => conv::global_pool(ctx),
        "BatchNormalization" if batch_norm_train::is_training(ctx) => {
            batch_norm_train::batch_norm_train(ctx)
        }
        "BatchNormalization" => norm::batch_norm(ctx),
        "InstanceNormalization" => norm::instance_norm(ctx),
        "LRN" => norm::lrn(ctx),
        "Gemm" => math::gemm(ctx),
        "MatMul" => math::matmul(ctx),
        "Softmax" | "LogSoftmax" | "Hardmax" => math::softmax(ctx),
        "ArgMax" | "ArgMin" => math::arg_reduce(ctx),
        r if r.starts_with("Reduce") => math::reduce(ctx),
        "Resize" | "Upsample" => resize::resize(ctx),
        _ => shape::import(t, ctx).unwrap_or_else(|| {
            Err(ctx.unsupported("no importer for this op type; see docs for the supported list"))
        }),
    }
}

/// True when ge imports `op_type` of `domain`: the default domain's ops, and the training
/// optimizers of `ai.onnx.preview.training`.
pub fn domain_supported(domain: &str, op_type: &str) -> bool {
    matches!(domain, "" | "ai.onnx")
        || (domain == training::DOMAIN && training::OPS.contains(&op_type))
}

/// The default-domain opset a node of `domain` is imported at: the model's, except for the
/// training domain, whose models import none (its decompositions use the newest opset).
pub fn opset_for(domain: &str, opset: i64) -> i64 {
    if domain == training::DOMAIN {
        table::MAX_OPSET
    } else {
        opset
    }
}

/// The training-domain ops (not in the default-domain table).
pub const TRAINING_OPS: &[&str] = training::OPS;

/// True for the ops added after the base set whose kernels compute in f32 (so f16/bf16
/// operands are cast up at import).
pub fn computes_in_f32(op: &crate::ir::Op) -> bool {
    index::computes_in_f32(op) || grid::computes_in_f32(op)
}

/// The op lists of the decomposing importers beyond `decomp` (lowered as decompositions).
pub const DECOMPOSED: &[&[&str]] = &[
    quant::OPS,
    qlinear::OPS,
    einsum::OPS,
    det::OPS,
    onehot::OPS,
    unpool::OPS,
    select::OPS,
    reverse::OPS,
    causal_conv::OPS,
    dft::OPS,
    rotary::OPS,
    tensor_scatter::OPS,
    col2im::OPS,
    crop_pad::OPS,
    attention::OPS,
    recurrent::OPS,
    scan::OPS,
    loops::OPS,
    linear_attn::OPS,
];

/// Every supported op type: the direct importers' and the decomposed ones.
pub fn supported() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = SUPPORTED
        .iter()
        .chain(decomp::OPS)
        .chain(index::OPS)
        .chain(window::OPS)
        .chain(grid::OPS)
        .chain(bits::OPS)
        .chain(DECOMPOSED.iter().flat_map(|l| l.iter()))
        .copied()
        .collect();
    v.sort_unstable();
    v.dedup();
    v
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
