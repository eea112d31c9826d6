//! The typed op set of the IR. Attributes are parsed and validated once, at import, into the
//! same parameter records the device reads (`ge_runtime::format`), so lowering a node to a
//! task is a copy, and the compiler and the device cannot disagree on a field.

use ge_runtime::format::{
    Activation, ArgReduceParams, AttentionParams, AxisParams, BinaryOp, BinaryParams, ConvParams,
    FusedParams, GemmParams, LayerNormParams, LrnParams, NoParams, NormParams, OpKind, PadParams,
    PoolParams, ReduceParams, ResizeParams, SliceParams, SoftmaxParams, TransposeParams, UnaryOp,
    UnaryParams,
};
use ge_sim::target::fusable_binary_task;

/// An IR operation with its typed attributes. Node inputs are exactly the kernel's inputs:
/// attribute-like constant inputs (shapes, axes, pads…) were folded into these fields.
// One `Op` per node: the fused-program variant's size (≈400 B) costs little, and keeping
// `Op: Copy` keeps pattern matching in the passes simple.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
pub enum Op {
    Unary(UnaryParams),
    Binary(BinaryParams),
    Variadic(BinaryParams),
    Where,
    Conv(ConvParams),
    ConvTranspose(ConvParams),
    Gemm(GemmParams),
    MatMul,
    Pool(PoolParams),
    GlobalPool(PoolParams),
    Lrn(LrnParams),
    BatchNorm(NormParams),
    InstanceNorm(NormParams),
    Softmax(SoftmaxParams),
    Reduce(ReduceParams),
    ArgReduce(ArgReduceParams),
    Transpose(TransposeParams),
    Slice(SliceParams),
    Concat(AxisParams),
    Split(AxisParams),
    Gather(AxisParams),
    Pad(PadParams),
    /// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout: same bytes, new shape; BitCast:
    /// same bytes, new dtype of the same width.
    Reshape,
    Expand,
    Tile,
    Resize(ResizeParams),
    Cast,
    /// An autofused elementwise chain (a vector program).
    Fused(FusedParams),
    /// Layer normalization over trailing axes (recognized from its decomposed form).
    LayerNorm(LayerNormParams),
    /// Fused attention (recognized from MatMul → scale → mask → Softmax → MatMul).
    Attention(AttentionParams),
    /// A whole RNN / GRU / LSTM layer (imported from the ONNX node).
    Recurrent(ge_runtime::format::RecurrentParams),
    GatherElements(AxisParams),
    ScatterElements(ge_runtime::format::ScatterParams),
    ScatterNd(ge_runtime::format::ScatterParams),
    GatherNd(AxisParams),
    TopK(ge_runtime::format::TopKParams),
    Cumulative(ge_runtime::format::CumulativeParams),
    GridSample(ge_runtime::format::GridSampleParams),
    /// An int8 matrix product on a constant packed int8 weight (MatMulInteger,
    /// QLinearMatMul).
    QGemm(ge_runtime::format::QGemmParams),
    /// A 2-D int8 convolution on a constant packed int8 weight (ConvInteger, QLinearConv).
    QConv(ge_runtime::format::QConvParams),
    /// A QConv with a vector-program epilogue (`passes::fuse_qconv_epilogue`).
    QConvFused(ge_runtime::format::QConvFusedParams),
    /// TFLite's int8 Add / Mul (inputs A, B).
    QBinary(ge_runtime::format::QBinaryParams),
    /// TFLite's int8 Softmax over innermost rows (input X).
    QSoftmax(ge_runtime::format::QSoftmaxParams),
    /// TFLite's int8 Mean over innermost rows (input X).
    QMean(ge_runtime::format::QMeanParams),
    /// A Gemm on a weight-only int8 constant B (inputs A, B, B's scales, optional C).
    GemmW8(GemmParams),
    /// The same tensor in the other channel layout (`passes::blocked_layout`).
    Reorder(ge_runtime::format::ReorderParams),
}

impl Op {
    /// A unary op with its `alpha` / `beta`.
    pub fn unary(op: UnaryOp, alpha: f32, beta: f32) -> Op {
        Op::Unary(UnaryParams {
            act: Activation {
                op: op as u32,
                alpha,
                beta,
            },
        })
    }

    /// A binary op without epilogue.
    pub fn binary(op: BinaryOp) -> Op {
        Op::Binary(BinaryParams {
            op: op as u32,
            act: Activation::default(),
        })
    }

    /// The task kind and parameter record this op lowers to.
    pub fn lower(&self) -> (OpKind, Vec<u8>) {
        fn b<T: bytemuck::Pod>(p: &T) -> Vec<u8> {
            bytemuck::bytes_of(p).to_vec()
        }
        let none = || b(&NoParams::default());
        match self {
            Op::Unary(p) => (OpKind::Unary, b(p)),
            Op::Binary(p) => (OpKind::Binary, b(p)),
            Op::Variadic(p) => (OpKind::Variadic, b(p)),
            Op::Where => (OpKind::Where, none()),
            Op::Conv(p) => (OpKind::Conv, b(p)),
            Op::ConvTranspose(p) => (OpKind::ConvTranspose, b(p)),
            // A pre-packed B (`pack_weights`) is read by its own kernel.
            Op::Gemm(p) if p.b_panels() => (OpKind::GemmPacked, b(p)),
            Op::Gemm(p) => (OpKind::Gemm, b(p)),
            Op::MatMul => (OpKind::MatMul, none()),
            Op::Pool(p) => (OpKind::Pool, b(p)),
            Op::GlobalPool(p) => (OpKind::GlobalPool, b(p)),
            Op::Lrn(p) => (OpKind::Lrn, b(p)),
            Op::BatchNorm(p) => (OpKind::BatchNorm, b(p)),
            Op::InstanceNorm(p) => (OpKind::InstanceNorm, b(p)),
            Op::Softmax(p) => (OpKind::Softmax, b(p)),
            Op::Reduce(p) => (OpKind::Reduce, b(p)),
            Op::ArgReduce(p) => (OpKind::ArgReduce, b(p)),
            Op::Transpose(p) => (OpKind::Transpose, b(p)),
            Op::Slice(p) => (OpKind::Slice, b(p)),
            Op::Concat(p) => (OpKind::Concat, b(p)),
            Op::Split(p) => (OpKind::Split, b(p)),
            Op::Gather(p) => (OpKind::Gather, b(p)),
            Op::Pad(p) => (OpKind::Pad, b(p)),
            Op::Reshape => (OpKind::Copy, none()),
            Op::Expand => (OpKind::Expand, none()),
            Op::Tile => (OpKind::Tile, none()),
            Op::Resize(p) => (OpKind::Resize, b(p)),
            Op::Cast => (OpKind::Cast, none()),
            Op::Fused(p) => (OpKind::Fused, b(p)),
            Op::LayerNorm(p) => (OpKind::LayerNorm, b(p)),
            Op::Attention(p) => (OpKind::Attention, b(p)),
            Op::Recurrent(p) => (OpKind::Recurrent, b(p)),
            Op::GatherElements(p) => (OpKind::GatherElements, b(p)),
            Op::ScatterElements(p) => (OpKind::ScatterElements, b(p)),
            Op::ScatterNd(p) => (OpKind::ScatterNd, b(p)),
            Op::GatherNd(p) => (OpKind::GatherNd, b(p)),
            Op::TopK(p) => (OpKind::TopK, b(p)),
            Op::Cumulative(p) => (OpKind::Cumulative, b(p)),
            Op::GridSample(p) => (OpKind::GridSample, b(p)),
            Op::QGemm(p) => (OpKind::QGemm, b(p)),
            Op::QConv(p) => (OpKind::QConv, b(p)),
            Op::QConvFused(p) => (OpKind::QConvFused, b(p)),
            Op::QBinary(p) => (OpKind::QBinary, b(p)),
            Op::QSoftmax(p) => (OpKind::QSoftmax, b(p)),
            Op::QMean(p) => (OpKind::QMean, b(p)),
            Op::GemmW8(p) => (OpKind::GemmW8, b(p)),
            Op::Reorder(p) => (OpKind::Reorder, b(p)),
        }
    }

    /// True for ops whose kernels compute in f32 (and f64 / integers) but not on halves, so
    /// f16/bf16 operands are cast up at import and results cast back. Exhaustive: a new op
    /// must say.
    pub fn computes_in_f32(&self) -> bool {
        match self {
            // Float arithmetic runs as a one-op half vector program.
            Op::Binary(p) => !fusable_binary_task(p),
            Op::Variadic(_)
            | Op::ConvTranspose(_)
            | Op::Lrn(_)
            | Op::BatchNorm(_)
            | Op::InstanceNorm(_)
            | Op::Reduce(_)
            | Op::ArgReduce(_)
            | Op::TopK(_)
            | Op::Cumulative(_)
            | Op::Recurrent(_)
            | Op::GridSample(_) => true,
            Op::ScatterElements(p) | Op::ScatterNd(p) => {
                p.reduction != ge_runtime::format::ScatterReduction::None as u32
            }
            // Read and write halves themselves (ge_sim's `halves`).
            Op::Conv(_)
            | Op::Gemm(_)
            | Op::GemmW8(_)
            | Op::MatMul
            | Op::Attention(_)
            | Op::Pool(_)
            | Op::GlobalPool(_)
            | Op::Softmax(_)
            | Op::LayerNorm(_)
            | Op::Resize(_)
            | Op::Fused(_) => false,
            Op::Unary(_)
            | Op::Where
            | Op::Transpose(_)
            | Op::Slice(_)
            | Op::Concat(_)
            | Op::Split(_)
            | Op::Gather(_)
            | Op::Pad(_)
            | Op::Reshape
            | Op::Expand
            | Op::Tile
            | Op::Cast
            | Op::GatherElements(_)
            | Op::GatherNd(_)
            | Op::QGemm(_)
            | Op::QConv(_)
            | Op::QConvFused(_)
            | Op::QBinary(_)
            | Op::QSoftmax(_)
            | Op::QMean(_)
            | Op::Reorder(_) => false,
        }
    }

    /// True for ops whose half kernels widen every operand to f32 themselves (ge_sim's
    /// `halves`), so they read an f32 activation as well as a 16-bit one: the precision pass
    /// feeds them f32 values without a Cast.
    pub fn widens_operands(&self) -> bool {
        if let Op::Binary(p) = self {
            return fusable_binary_task(p);
        }
        matches!(
            self,
            Op::Conv(_)
                | Op::Gemm(_)
                | Op::GemmW8(_)
                | Op::MatMul
                | Op::Attention(_)
                | Op::Pool(_)
                | Op::GlobalPool(_)
                | Op::Softmax(_)
                | Op::LayerNorm(_)
                | Op::Fused(_)
        )
    }

    /// True for the cube ops (matrix multiplies), which a precision mode may run in fp16
    /// with fp32 accumulation.
    pub fn is_cube(&self) -> bool {
        matches!(
            self,
            Op::Conv(_)
                | Op::ConvTranspose(_)
                | Op::Gemm(_)
                | Op::GemmW8(_)
                | Op::MatMul
                | Op::Attention(_)
        )
    }

    /// True for ops that only move or select elements: exact in any dtype, so the precision
    /// pass lets them follow their inputs' dtype.
    pub fn moves_elements(&self) -> bool {
        matches!(
            self,
            Op::Transpose(_)
                | Op::Slice(_)
                | Op::Concat(_)
                | Op::Split(_)
                | Op::Gather(_)
                | Op::Pad(_)
                | Op::Reshape
                | Op::Expand
                | Op::Tile
                | Op::Where
                | Op::GatherElements(_)
                | Op::GatherNd(_)
        )
    }

    /// True for ops whose output is the input's bytes under a new shape.
    pub fn is_reshape(&self) -> bool {
        matches!(self, Op::Reshape)
    }
}
