//! Task kinds and their parameter records. Each record is `Pod` and stored verbatim in the
//! params section, so the compiler and the device share one definition and cannot drift.
//! Shapes are not repeated here: kernels read them from the tensor table.

use bytemuck::{Pod, Zeroable};

use super::blocked::ChannelLayout;
use super::gemm_b::GEMM_B_PANELS;
use super::shape::MAX_RANK;

macro_rules! op_kinds {
    ($($(#[$doc:meta])* $name:ident = $num:literal => $params:ty,)*) => {
        /// What a task computes.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u16)]
        pub enum OpKind { $($(#[$doc])* $name = $num,)* }

        impl OpKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [OpKind] = &[$(OpKind::$name,)*];
            /// Decodes the on-disk number.
            pub const fn from_u16(v: u16) -> Option<OpKind> {
                match v { $($num => Some(OpKind::$name),)* _ => None }
            }
            /// Size of this kind's parameter record.
            pub const fn params_len(self) -> usize {
                match self { $(OpKind::$name => core::mem::size_of::<$params>(),)* }
            }
            /// Kind name for profiles and messages.
            pub const fn name(self) -> &'static str {
                match self { $(OpKind::$name => stringify!($name),)* }
            }
            /// True for the kinds whose tasks may carry `TaskDesc::in_place` (elementwise:
            /// each output element depends only on the input elements at its own index).
            /// The loader checks this; which params and dtypes the simulator actually runs
            /// in place is its kernel registry's (`ge_sim::ops::registry`), which fails
            /// to compile if its in-place kinds are not exactly these.
            pub const fn runs_in_place(self) -> bool {
                matches!(self, OpKind::Unary | OpKind::Binary)
            }
            /// The first format version whose blobs may hold tasks of this kind: the writer
            /// stamps a blob with the largest over its tasks, and the reader refuses a task
            /// whose kind is newer than its blob's version.
            pub const fn since_version(self) -> u32 {
                match self {
                    OpKind::Recurrent => 2,
                    OpKind::QGemm | OpKind::QConv => 4,
                    OpKind::GemmW8 => 6,
                    OpKind::QConvFused => 7,
                    OpKind::Reorder => 9,
                    OpKind::GemmPacked => 11,
                    OpKind::QBinary | OpKind::QSoftmax | OpKind::QMean => 12,
                    _ => 1,
                }
            }
        }
    };
}

op_kinds! {
    /// Elementwise unary math, f32 (some ops also on integers).
    Unary = 1 => UnaryParams,
    /// Elementwise binary op with numpy broadcasting.
    Binary = 2 => BinaryParams,
    /// Sum/Max/Min/Mean over any number of broadcast inputs.
    Variadic = 3 => BinaryParams,
    /// `cond ? x : y` with broadcasting.
    Where = 4 => NoParams,
    /// N-d convolution (1 to 3 spatial dims): inputs x, w, optional bias.
    Conv = 5 => ConvParams,
    /// N-d transposed convolution: inputs x, w, optional bias.
    ConvTranspose = 6 => ConvParams,
    /// `alpha * op(A) * op(B) + beta * C`: inputs A, B, optional C.
    Gemm = 7 => GemmParams,
    /// Batched matrix product with broadcasting of batch dims.
    MatMul = 8 => NoParams,
    /// Max / average / Lp pooling.
    Pool = 9 => PoolParams,
    /// Global max / average / Lp pooling over all spatial dims.
    GlobalPool = 10 => PoolParams,
    /// Local response normalization across channels.
    Lrn = 11 => LrnParams,
    /// Inference batch norm: inputs x, scale, bias, mean, var.
    BatchNorm = 12 => NormParams,
    /// Softmax / LogSoftmax / Hardmax.
    Softmax = 13 => SoftmaxParams,
    /// Reductions over a set of axes.
    Reduce = 14 => ReduceParams,
    /// Axis permutation.
    Transpose = 15 => TransposeParams,
    /// Strided window: `out[i] = in[start + i * step]` per axis.
    Slice = 16 => SliceParams,
    /// Concatenation along an axis.
    Concat = 17 => AxisParams,
    /// Split along an axis into the outputs' sizes.
    Split = 18 => AxisParams,
    /// Gather along an axis with (possibly negative) i64/i32 indices.
    Gather = 19 => AxisParams,
    /// Constant / reflect / edge / wrap padding.
    Pad = 20 => PadParams,
    /// Byte copy (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout).
    Copy = 21 => NoParams,
    /// Broadcast the input to the output shape.
    Expand = 22 => NoParams,
    /// Repeat the input along each axis.
    Tile = 23 => NoParams,
    /// Nearest / linear / cubic resampling.
    Resize = 24 => ResizeParams,
    /// Element type conversion to the output's dtype.
    Cast = 25 => NoParams,
    /// Instance normalization: inputs x, scale, bias.
    InstanceNorm = 26 => NormParams,
    /// Arg max / arg min along an axis.
    ArgReduce = 27 => ArgReduceParams,
    /// An autofused chain of elementwise ops: a vector program over broadcast f32 inputs.
    Fused = 100 => FusedParams,
    /// Layer normalization over the trailing axes from `axis`: inputs x, optional scale,
    /// optional bias (both broadcast to the normalized shape).
    LayerNorm = 101 => LayerNormParams,
    /// Fused attention `softmax(Q·Kt·scale + mask)·V`: inputs Q [b…, S, D], Kt [b…, D, T],
    /// V [b…, T, E], optional additive mask broadcasting to [b…, S, T].
    Attention = 102 => AttentionParams,
    /// A whole RNN / GRU / LSTM layer (every direction): inputs X, W, R and the optional B,
    /// sequence_lens, initial_h, initial_c, P as ONNX orders them; outputs Y, Y_h (and Y_c
    /// for LSTM). New in format version 2.
    Recurrent = 103 => RecurrentParams,
    /// An int8 matrix product with constant weights ([`QGemmParams`]). New in format
    /// version 4.
    QGemm = 104 => QGemmParams,
    /// A 2-D int8 convolution with a constant weight, as im2col on the int8 GEMM
    /// ([`QConvParams`]). New in format version 4.
    QConv = 105 => QConvParams,
    /// `Y = alpha · op(A) · op(B_int8 · scales) + beta · C` then the activation: a Gemm whose
    /// constant B is weight-only int8/uint8, dequantized while it is packed. Inputs A (f32),
    /// B (int8/uint8), B's scales (f32: one, or one per column), optional C, optional
    /// residual R shaped like Y ([`GemmParams`]).
    /// New in format version 6.
    GemmW8 = 106 => GemmParams,
    /// A `QConv` whose 8-bit result a vector program finishes before anything else reads
    /// it (a residual Add, an activation between a DequantizeLinear and a QuantizeLinear):
    /// inputs 0–7 the QConv's (absent ones marked), then the program's registers 1.., its
    /// register 0 being the conv's result; output as the program's, the conv's 8-bit type
    /// ([`QConvFusedParams`]). New in format version 7.
    QConvFused = 107 => QConvFusedParams,
    /// A `Gemm` whose constant f32 B is stored in the host GEMM's panel order
    /// ([`super::pack_gemm_b`], [`GEMM_B_PANELS`] set in `trans_b`, B's dims `[K, N]`): the
    /// kernel reads B's whole panels where they lie instead of packing B on every run.
    /// Inputs as Gemm's: A, B, optional C, optional residual R shaped like Y
    /// ([`GemmParams`]). Its own kind so that a device linking only Gemm links none of it.
    /// New in format version 11.
    GemmPacked = 108 => GemmParams,
    /// `out[.., i, ..] = data[.., indices[.., i, ..], ..]` along an axis (GatherElements).
    GatherElements = 40 => AxisParams,
    /// Copy of data with updates written at per-element indices along an axis.
    ScatterElements = 41 => ScatterParams,
    /// Copy of data with update slices written at index tuples (ScatterND).
    ScatterNd = 42 => ScatterParams,
    /// Slices gathered at index tuples; `axis` holds `batch_dims` (GatherND).
    GatherNd = 43 => AxisParams,
    /// The k largest / smallest along an axis: outputs values and i64 indices.
    TopK = 44 => TopKParams,
    /// Cumulative sum or product along an axis.
    Cumulative = 45 => CumulativeParams,
    /// Between plain and blocked channels ([`super::ChannelLayout`], GE's TransData): the
    /// same logical tensor in the other layout ([`ReorderParams`]). New in format version 9.
    Reorder = 28 => ReorderParams,
    /// Samples X [N, C, d…] at the normalized coordinates of grid [N, o…, rank − 2]
    /// (innermost axis first): nearest, linear or cubic with a padding mode.
    GridSample = 46 => GridSampleParams,
    /// `A + B` or `A · B` of two int8 (uint8) tensors with numpy broadcasting, in TFLite
    /// Micro's fixed-point arithmetic (`--int8-rounding tflite`: its multipliers, shifts and
    /// double rounding) into the output's 8-bit type ([`QBinaryParams`]). New in format
    /// version 12.
    QBinary = 109 => QBinaryParams,
    /// Softmax of int8 (uint8) rows into int8 (uint8) on the scale 1/256, in TFLite Micro's
    /// fixed-point arithmetic (gemmlowp's exponential and reciprocal) ([`QSoftmaxParams`]).
    /// New in format version 12.
    QSoftmax = 110 => QSoftmaxParams,
    /// The mean of int8 (uint8) rows in TFLite Micro's arithmetic (its Mean kernel: the raw
    /// sum requantized once, `1/n` folded into the multiplier) into the same type
    /// ([`QMeanParams`]). New in format version 12.
    QMean = 111 => QMeanParams,
}

macro_rules! numbered {
    ($(#[$doc:meta])* $enum:ident { $($(#[$vdoc:meta])* $name:ident = $num:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum $enum { $($(#[$vdoc])* $name = $num,)* }
        impl $enum {
            /// Decodes the on-disk number.
            pub const fn from_u32(v: u32) -> Option<$enum> {
                match v { $($num => Some($enum::$name),)* _ => None }
            }
            /// Name for messages.
            pub const fn name(self) -> &'static str {
                match self { $($enum::$name => stringify!($name),)* }
            }
        }
    };
}

mod panels;
mod params;
mod version;

pub use panels::*;
pub use params::*;
pub use version::*;
