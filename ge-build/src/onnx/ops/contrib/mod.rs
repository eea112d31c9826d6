//! onnxruntime's contrib ops (`com.microsoft`, opset 1), which real models carry because
//! onnxruntime's optimizer and quantizer wrote them. Each is lowered at import onto ops ge
//! already compiles, the way their onnxruntime CPU kernels compute them:
//! - [`fused`]: FusedConv/FusedGemm/FusedMatMul, NhwcConv, the GELU family, BiasAdd;
//! - [`norm`]: SkipLayerNormalization, (Skip)SimplifiedLayerNormalization;
//! - [`attention`]: Attention, MultiHeadAttention, GroupQueryAttention, through the ONNX
//!   Attention decomposition with onnxruntime's masks as an additive bias;
//! - [`qlinear`]: the QOperator ops (QLinearAdd/Mul/…/QGemm) in f32 arithmetic between an
//!   exact dequantization and a round-half-even requantization; [`qlinear_softmax`] as
//!   onnxruntime's table-driven kernel;
//! - [`integer`]: DynamicQuantizeMatMul, MatMulIntegerToFloat and MatMulNBits (int32
//!   products, weights unpacked at compile time); DynamicQuantizeLSTM is in `recurrent`.
//!
//! The int8 ops run on float/int32 kernels until ge has native int8 ones.

mod attention;
mod fused;
mod integer;
mod norm;
mod qlinear;
mod qlinear_softmax;
pub(crate) mod tflite;

use ge_runtime::format::DType;

use super::recurrent::dynamic_quantize_lstm;
use super::registry::dtypes::{FLOAT, QUANT8};
use super::registry::{MICROSOFT, MIN_OPSET, OpEntry};
use crate::error::Result;
use crate::onnx::ctx::{Imported, NodeCtx};
use attention::group_query_attention;
use integer::{dynamic_quantize_matmul, matmul_integer_to_float};
use qlinear::pool;
pub(crate) use qlinear::{YRounding, integer_gemm};

/// Float32 only (their run-time quantization or dequantized weights are f32).
const F32: &[DType] = &[DType::F32];

/// A `com.microsoft` op decomposed at import (the domain has one opset; its nodes import at
/// the model's default-domain opset, so no range applies).
const fn ms(
    op: &'static str,
    dtypes: &'static [DType],
    import: fn(&NodeCtx<'_>) -> Result<Imported>,
) -> OpEntry {
    OpEntry::decomposed(op, MIN_OPSET, dtypes, import).in_domain(MICROSOFT)
}

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    ms("Attention", FLOAT, attention::attention)
        .note("no past/present state, rotary or 4-D Megatron mask"),
    ms("BiasAdd", FLOAT, fused::bias_add),
    ms("BiasGelu", FLOAT, fused::bias_gelu),
    ms("DynamicQuantizeLSTM", F32, dynamic_quantize_lstm)
        .note("X and H quantized to uint8 per GEMM at run time, as onnxruntime does"),
    ms("DynamicQuantizeMatMul", F32, dynamic_quantize_matmul),
    ms("FastGelu", FLOAT, fused::fast_gelu),
    ms("FusedConv", FLOAT, fused::fused_conv),
    ms("FusedGemm", FLOAT, fused::fused_gemm),
    ms("FusedMatMul", FLOAT, fused::fused_matmul).note("no transBatchA/transBatchB"),
    ms("GroupQueryAttention", FLOAT, group_query_attention)
        .note("prompt form: no past, constant full-length seqlens_k, no rotary"),
    ms("MatMulIntegerToFloat", QUANT8, matmul_integer_to_float),
    ms("MatMulNBits", F32, integer::matmul_nbits)
        .note("constant weights unpacked at compile time; 2/4/8 bits; no g_idx"),
    ms("MultiHeadAttention", FLOAT, attention::multi_head_attention)
        .note("separate Q/K/V; no packed QKV, past state or cache indirection"),
    ms("NhwcConv", FLOAT, fused::nhwc_conv),
    ms("QGemm", QUANT8, qlinear::qgemm),
    ms("QLinearAdd", QUANT8, |c| qlinear::binary(c, "Add")),
    ms("QLinearAveragePool", QUANT8, |c| pool(c, false)).note("NCHW"),
    ms("QLinearConcat", QUANT8, qlinear::concat),
    ms("QLinearGlobalAveragePool", QUANT8, |c| pool(c, true)).note("NCHW"),
    ms("QLinearLeakyRelu", QUANT8, |c| {
        qlinear::unary(c, "LeakyRelu")
    }),
    ms("QLinearMul", QUANT8, |c| qlinear::binary(c, "Mul")),
    ms("QLinearSigmoid", QUANT8, |c| qlinear::unary(c, "Sigmoid")),
    ms("QLinearSoftmax", QUANT8, qlinear_softmax::qlinear_softmax)
        .note("onnxruntime's exponential table and rounding; constant X_scale"),
    ms("QuickGelu", FLOAT, fused::quick_gelu),
    ms("SkipLayerNormalization", FLOAT, |c| {
        norm::skip_norm(c, false)
    }),
    ms("SkipSimplifiedLayerNormalization", FLOAT, |c| {
        norm::skip_norm(c, true)
    }),
    // onnxruntime defines this one in the default domain (opset 1) and writes it there.
    OpEntry::decomposed(
        "SimplifiedLayerNormalization",
        MIN_OPSET,
        FLOAT,
        norm::simplified,
    )
    .note("onnxruntime's contrib op (RMS normalization)"),
];
