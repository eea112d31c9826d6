//! Each kind's parameter record: `Pod`, stored verbatim in the params section, so the compiler
//! and the device share one definition and cannot drift.

use super::*;

/// Reads a task's `Pod` parameter record from its bytes in the params section (the device's
/// kernels and its cost model decode them with it).
pub fn read_params<P: Pod>(bytes: &[u8]) -> Result<P, crate::KernelError> {
    if bytes.len() != core::mem::size_of::<P>() {
        return Err(crate::KernelError::BadParams(
            "parameter record has the wrong length",
        ));
    }
    Ok(bytemuck::pod_read_unaligned(bytes))
}

/// Parameters of `Reorder`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct ReorderParams {
    /// A [`crate::format::ChannelLayout`]: `Blocked` (plain in, blocked out) or `BlockedToPlain`.
    pub to: u32,
}

/// For kinds without parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct NoParams {
    pub reserved: u32,
}

/// An activation applied to a task's result (fused epilogue), or none.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable, PartialEq)]
pub struct Activation {
    /// A [`UnaryOp`] number, or 0 for none.
    pub op: u32,
    pub alpha: f32,
    pub beta: f32,
}

numbered! {
    /// Unary elementwise functions. `alpha`/`beta` are as ONNX names them for the op.
    UnaryOp {
        Relu = 1, LeakyRelu = 2, Elu = 3, Selu = 4, Sigmoid = 5, Tanh = 6, HardSigmoid = 7,
        Softplus = 8, Softsign = 9,
        /// `alpha` = min, `beta` = max.
        Clip = 10,
        Sqrt = 11, Exp = 12, Log = 13, Neg = 14, Abs = 15, Reciprocal = 16, Erf = 17,
        Floor = 18, Ceil = 19, Round = 20, Sign = 21, Sin = 22, Cos = 23, Tan = 24, Asin = 25,
        Acos = 26, Atan = 27, Sinh = 28, Cosh = 29, Asinh = 30, Acosh = 31, Atanh = 32,
        HardSwish = 33, Mish = 34,
        /// Gelu with `alpha` = 0 (erf form) or 1 (tanh approximation).
        Gelu = 35,
        Celu = 36, ThresholdedRelu = 37,
        /// Shrink: `alpha` = bias, `beta` = lambd.
        Shrink = 38,
        Not = 39, IsNaN = 40, IsInf = 41, Identity = 42,
        /// SiLU / Swish, `x · σ(x)` (format version 8).
        Silu = 43,
    }
}

numbered! {
    /// Binary elementwise functions.
    BinaryOp {
        Add = 1, Sub = 2, Mul = 3, Div = 4, Pow = 5, Max = 6, Min = 7, Mean = 8,
        Equal = 9, Less = 10, Greater = 11, LessOrEqual = 12, GreaterOrEqual = 13,
        And = 14, Or = 15, Xor = 16,
        /// Integer-style modulo (sign of divisor), ONNX `fmod = 0`.
        Mod = 17,
        /// C-style remainder (sign of dividend), ONNX `fmod = 1`.
        Fmod = 18,
        /// `x * slope` where `x < 0` (PRelu: inputs x, slope).
        PRelu = 19,
        BitShiftLeft = 20, BitShiftRight = 21, BitAnd = 22, BitOr = 23, BitXor = 24,
    }
}

/// Parameters of `Binary` and `Variadic`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct BinaryParams {
    /// A [`BinaryOp`] number.
    pub op: u32,
    /// Applied to the result (fused epilogue).
    pub act: Activation,
}

/// Parameters of `Unary`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct UnaryParams {
    /// A [`UnaryOp`] number with its `alpha`/`beta`.
    pub act: Activation,
}

numbered! {
    /// The order of a Conv's weight values (bits 8..16 of [`ConvParams::spatial`]).
    WeightLayout {
        /// ONNX's `[M, C/g, k…]`: filter by filter.
        Oihw = 0,
        /// Pre-packed at compile time in the order the convolution tiles read (format ≥ 5):
        /// per group, panels of [`PANEL_ROWS`] filters stored tap by tap (`[K][PANEL_ROWS]`,
        /// `K = C/g·Πk`), the group's last `M/g mod PANEL_ROWS` filters as one narrower
        /// panel (`[K][rest]`), so the tensor keeps its shape and byte count. Every host ISA
        /// path (AVX2, portable) reads 6-row panels, so the layout names no ISA class.
        Panels = 1,
        /// A blocked conv's order (format ≥ 9, [`blocked_weight_index`](crate::format::blocked_weight_index)): per group of 64
        /// filters, each input channel's taps as contiguous runs of the group's filters.
        Blocked = 2,
    }
}

/// Parameters of `Conv` and `ConvTranspose`. Spatial arrays use the first [`Self::rank`]
/// entries.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ConvParams {
    /// Bits 0..8: the spatial rank (1–3); bits 8..16: the [`WeightLayout`] (Conv only, 0 in
    /// blobs before format 5). Read it through [`Self::rank`] and [`Self::weight_layout`].
    pub spatial: u32,
    pub group: u32,
    pub kernel: [u32; 3],
    pub stride: [u32; 3],
    pub dilation: [u32; 3],
    pub pad_begin: [u32; 3],
    pub pad_end: [u32; 3],
    /// ConvTranspose only.
    pub output_padding: [u32; 3],
    pub act: Activation,
    /// Conv only, with inputs 4 and 5 (per-input-channel scale and shift): the input is read
    /// as `prologue(x·scale[c] + shift[c])` — a preceding BatchNorm(+activation) applied
    /// while packing, so its output tensor never exists. Unpadded, ungrouped convs only.
    pub prologue: Activation,
}

impl ConvParams {
    /// Spatial rank.
    pub const fn rank(&self) -> usize {
        (self.spatial & 0xff) as usize
    }

    /// The weights' order; `None` for a code this reader does not know.
    pub const fn weight_layout(&self) -> Option<WeightLayout> {
        WeightLayout::from_u32((self.spatial >> 8) & 0xff)
    }

    /// These parameters with weights in `layout`.
    pub const fn with_weight_layout(mut self, layout: WeightLayout) -> Self {
        self.spatial = (self.spatial & !0xff00) | (layout as u32) << 8;
        self
    }

    /// Where the input and output are blocked (bits 16..24; format ≥ 9); `None` for a code
    /// this reader does not know.
    pub const fn channel_layout(&self) -> Option<ChannelLayout> {
        ChannelLayout::from_u32(self.spatial >> 16)
    }

    /// These parameters with activations in `layout`.
    pub const fn with_channel_layout(mut self, layout: ChannelLayout) -> Self {
        self.spatial = (self.spatial & 0xffff) | (layout as u32) << 16;
        self
    }
}

/// Parameters of `Gemm` (and `GemmW8`, `GemmPacked`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct GemmParams {
    pub trans_a: u32,
    /// Bit 0: ONNX's `transB`; [`GEMM_B_PANELS`]: B is pre-packed (GemmW8, format ≥ 10;
    /// GemmPacked, format ≥ 11).
    pub trans_b: u32,
    pub alpha: f32,
    pub beta: f32,
    pub act: Activation,
}

impl GemmParams {
    /// Whether B is stored transposed (`[N, K]`); a pre-packed B never is.
    pub const fn b_transposed(&self) -> bool {
        self.trans_b & 1 != 0
    }

    /// Whether B is in the pre-packed order of [`crate::format::pack_gemm_b`].
    pub const fn b_panels(&self) -> bool {
        self.trans_b & GEMM_B_PANELS != 0
    }
}

numbered! {
    /// Pooling flavour.
    PoolKind { Max = 1, Average = 2, Lp = 3, }
}

/// Parameters of `Pool` and `GlobalPool`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct PoolParams {
    /// A [`PoolKind`] number.
    pub kind: u32,
    pub spatial: u32,
    pub kernel: [u32; 3],
    pub stride: [u32; 3],
    pub dilation: [u32; 3],
    pub pad_begin: [u32; 3],
    pub pad_end: [u32; 3],
    /// Average pooling: divide by the full window including padding.
    pub count_include_pad: u32,
    /// Lp pooling exponent.
    pub p: f32,
}

impl PoolParams {
    /// An average over whole planes of `spatial` (1 to 3) axes of sizes `kernel` (unused
    /// axes 1): stride and dilation 1, no padding, plain layout.
    pub const fn whole_plane_average(spatial: u32, kernel: [u32; 3]) -> PoolParams {
        PoolParams {
            kind: PoolKind::Average as u32,
            spatial,
            kernel,
            stride: [1; 3],
            dilation: [1; 3],
            pad_begin: [0; 3],
            pad_end: [0; 3],
            count_include_pad: 0,
            p: 0.0,
        }
    }

    /// Spatial rank (bits 0..8 of `spatial`).
    pub const fn rank(&self) -> usize {
        (self.spatial & 0xff) as usize
    }

    /// Where the input and output are blocked (bits 16..24 of `spatial`; format ≥ 9);
    /// `None` for a code this reader does not know.
    pub const fn channel_layout(&self) -> Option<ChannelLayout> {
        ChannelLayout::from_u32(self.spatial >> 16)
    }

    /// These parameters with activations in `layout`.
    pub const fn with_channel_layout(mut self, layout: ChannelLayout) -> Self {
        self.spatial = (self.spatial & 0xffff) | (layout as u32) << 16;
        self
    }
}

/// Parameters of `Lrn`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct LrnParams {
    pub size: u32,
    pub alpha: f32,
    pub beta: f32,
    pub bias: f32,
}

/// Parameters of `BatchNorm` and `InstanceNorm`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct NormParams {
    pub epsilon: f32,
    pub act: Activation,
}

numbered! {
    /// Softmax flavour.
    SoftmaxKind { Softmax = 1, LogSoftmax = 2, Hardmax = 3, }
}

/// Parameters of `Softmax`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct SoftmaxParams {
    /// A [`SoftmaxKind`] number.
    pub kind: u32,
    /// Normalized (non-negative) axis.
    pub axis: u32,
    /// Opset < 13 semantics: the input is viewed as 2-D `[prod(d[..axis]), prod(d[axis..])]`.
    pub coerce_2d: u32,
}

numbered! {
    /// Reduction functions.
    ReduceOp {
        Sum = 1, Mean = 2, Max = 3, Min = 4, Prod = 5, L1 = 6, L2 = 7, LogSum = 8,
        LogSumExp = 9, SumSquare = 10,
    }
}

/// Parameters of `Reduce`. The output shape (keepdims or not) comes from the tensor table.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ReduceParams {
    /// A [`ReduceOp`] number.
    pub op: u32,
    /// Bit `i` set: axis `i` of the input is reduced.
    pub axes_mask: u32,
}

/// Parameters of `ArgReduce`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ArgReduceParams {
    /// 1 = argmax, 2 = argmin.
    pub kind: u32,
    pub axis: u32,
    pub select_last_index: u32,
}

/// Parameters of `Transpose`: output axis `i` is input axis `perm[i]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct TransposeParams {
    pub perm: [u32; MAX_RANK],
}

/// Parameters of `Slice`, already clamped by the compiler.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct SliceParams {
    pub starts: [i64; MAX_RANK],
    pub steps: [i64; MAX_RANK],
}

/// Parameters of `Concat`, `Split`, `Gather`: a normalized axis.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct AxisParams {
    pub axis: u32,
}

numbered! {
    /// Padding modes.
    PadMode { Constant = 1, Reflect = 2, Edge = 3, Wrap = 4, }
}

/// Parameters of `Pad`. Negative pads crop.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct PadParams {
    /// A [`PadMode`] number.
    pub mode: u32,
    pub reserved: u32,
    pub begin: [i64; MAX_RANK],
    pub end: [i64; MAX_RANK],
    /// Constant fill, as f64 (exact for every supported dtype's common values).
    pub value: f64,
}

numbered! {
    /// Resize interpolation modes.
    ResizeMode { Nearest = 1, Linear = 2, Cubic = 3, }
}

numbered! {
    /// How output coordinates map to input coordinates.
    CoordTransform {
        HalfPixel = 1, PytorchHalfPixel = 2, AlignCorners = 3, Asymmetric = 4,
        TfCropAndResize = 5, HalfPixelSymmetric = 6,
    }
}

numbered! {
    /// How `Nearest` rounds.
    NearestMode { RoundPreferFloor = 1, RoundPreferCeil = 2, Floor = 3, Ceil = 4, }
}

/// Parameters of `Resize`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ResizeParams {
    pub mode: u32,
    pub coord: u32,
    pub nearest: u32,
    pub exclude_outside: u32,
    pub cubic_coeff: f32,
    pub extrapolation: f32,
    /// Per-axis scale (output / input) used by the coordinate transform.
    pub scales: [f32; MAX_RANK],
    /// TfCropAndResize region of interest: starts then ends per axis.
    pub roi: [f32; 2 * MAX_RANK],
}

numbered! {
    /// Where GridSample reads outside the input.
    GridPadding { Zeros = 1, Border = 2, Reflection = 3, }
}

/// Parameters of `GridSample`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct GridSampleParams {
    /// A [`ResizeMode`].
    pub mode: u32,
    /// A [`GridPadding`].
    pub padding: u32,
    /// 1: -1 and 1 are the centres of the corner elements; 0: their outer edges.
    pub align_corners: u32,
    pub reserved: u32,
}

/// Most instructions in one fused vector program.
pub const MAX_FUSED_INSTRS: usize = 24;
/// Most registers (inputs first, then temporaries) a vector program may use.
pub const MAX_FUSED_REGS: usize = 16;

/// One vector-program instruction: `dst = op(a, b)` over a tile of elements.
/// `op` 1..=63 is a [`UnaryOp`] on `a` with `alpha`/`beta`; `op` 64 + n is [`BinaryOp`] n.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable, PartialEq)]
pub struct VInstr {
    pub op: u16,
    pub dst: u8,
    pub a: u8,
    pub b: u8,
    pub reserved: [u8; 3],
    pub alpha: f32,
    pub beta: f32,
}

/// Offset of binary op numbers in [`VInstr::op`].
pub const VOP_BINARY: u16 = 64;

/// [`FusedParams::reserved`]'s mark of a program with int8/uint8 inputs or output: its
/// blob needs format version 7, so a runtime without those loads refuses it at load.
pub const FUSED_8BIT_IO: u32 = 1;

/// Parameters of `Fused`: registers `0..input_count` hold the task's inputs broadcast to the
/// output shape; the program runs in order; register `out` is written to the output.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct FusedParams {
    pub instr_count: u32,
    pub input_count: u32,
    pub out: u32,
    /// [`FUSED_8BIT_IO`] when the program loads or stores int8/uint8 (format version 7;
    /// 0 otherwise).
    pub reserved: u32,
    pub instrs: [VInstr; MAX_FUSED_INSTRS],
}

numbered! {
    /// How scatter combines an update with the existing element.
    ScatterReduction { None = 1, Add = 2, Mul = 3, Max = 4, Min = 5, }
}

/// Parameters of `ScatterElements` and `ScatterNd`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ScatterParams {
    /// Normalized axis (ScatterElements only).
    pub axis: u32,
    /// A [`ScatterReduction`] number.
    pub reduction: u32,
}

/// Parameters of `TopK`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct TopKParams {
    pub axis: u32,
    pub k: u32,
    /// 1: largest first; 0: smallest first.
    pub largest: u32,
    pub reserved: u32,
}

/// Parameters of `Cumulative`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CumulativeParams {
    pub axis: u32,
    /// 1: each output excludes its own element.
    pub exclusive: u32,
    /// 1: accumulate from the end.
    pub reverse: u32,
    /// 1: product; 0: sum.
    pub product: u32,
}

/// Parameters of `LayerNorm`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct LayerNormParams {
    pub axis: u32,
    pub epsilon: f32,
    pub act: Activation,
}

/// Parameters of `Attention`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct AttentionParams {
    /// Multiplies Q·Kt before the mask is added.
    pub scale: f32,
    pub reserved: u32,
}

numbered! {
    /// The cell of a [`RecurrentParams`] layer.
    RecurrentCell { Rnn = 1, Gru = 2, Lstm = 3, }
}

numbered! {
    /// ONNX's recurrent activation functions (`activations`), with their `alpha`/`beta`.
    RecurrentAct {
        Sigmoid = 1, Tanh = 2, Relu = 3, LeakyRelu = 4, ThresholdedRelu = 5, Elu = 6,
        HardSigmoid = 7, Softsign = 8, Softplus = 9,
        /// `alpha · x + beta`.
        Affine = 10,
        /// `alpha · tanh(beta · x)`.
        ScaledTanh = 11,
    }
}

/// One activation function of a recurrent cell.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable, PartialEq)]
pub struct RecurrentActivation {
    /// A [`RecurrentAct`] number.
    pub func: u32,
    pub alpha: f32,
    pub beta: f32,
}

/// `direction` of a [`RecurrentParams`] layer.
pub const RECURRENT_FORWARD: u32 = 1;
/// Walks time backwards.
pub const RECURRENT_REVERSE: u32 = 2;
/// A forward then a reverse direction (weights, states and Y carry both).
pub const RECURRENT_BIDIRECTIONAL: u32 = 3;
/// `weights` bit: W is stored `[dirs, input, gates·H]` (transposed at compile time) instead
/// of ONNX's `[dirs, gates·H, input]`.
pub const RECURRENT_W_TRANSPOSED: u32 = 1;
/// `weights` bit: R is stored `[dirs, H, gates·H]` instead of `[dirs, gates·H, H]`.
pub const RECURRENT_R_TRANSPOSED: u32 = 2;

/// Parameters of `Recurrent`: one ONNX RNN, GRU or LSTM node. Gates are in ONNX order
/// (GRU z, r, h; LSTM i, o, f, c).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct RecurrentParams {
    /// A [`RecurrentCell`] number.
    pub cell: u32,
    /// H.
    pub hidden: u32,
    /// [`RECURRENT_FORWARD`], [`RECURRENT_REVERSE`] or [`RECURRENT_BIDIRECTIONAL`].
    pub direction: u32,
    /// 1: X, Y, the states batch-major (ONNX `layout = 1`).
    pub layout: u32,
    /// GRU: apply the reset gate after the recurrent product.
    pub linear_before_reset: u32,
    /// LSTM: couple the input and forget gates (`f = 1 − i`).
    pub input_forget: u32,
    /// [`RECURRENT_W_TRANSPOSED`] | [`RECURRENT_R_TRANSPOSED`].
    pub weights: u32,
    /// Nonzero: pre-activations are clipped to `[-clip, clip]`.
    pub has_clip: u32,
    pub clip: f32,
    pub reserved: u32,
    /// Per direction (forward first): the cell's activations f, g, h (RNN uses f, GRU f and
    /// g).
    pub acts: [RecurrentActivation; 6],
}

/// [`QGemmParams::out`]: the exact i32 accumulator (MatMulInteger).
pub const QGEMM_OUT_I32: u32 = 1;
/// [`QGemmParams::out`]: requantized to the output's u8/i8 (QLinearMatMul, QDQ).
pub const QGEMM_OUT_Q8: u32 = 2;
/// [`QGemmParams::out`]: requantized to u8/i8 as onnxruntime does, `f32(acc)·scale` rounded
/// (each requantization record holds the f32 scale's bits and a shift of 0). New in format
/// version 5 ([`task_since_version`]).
pub const QGEMM_OUT_Q8_F32: u32 = 3;
/// [`QGemmParams::out`]: requantized to u8/i8 as TFLite Micro and CMSIS-NN do (each record a
/// Q31 multiplier and TFLite's shift, in `ge_sim`'s `Requant` TFLite form: gemmlowp's
/// saturating rounding doubling high multiply, then a rounding right shift). New in format
/// version 12 ([`task_since_version`]).
pub const QGEMM_OUT_Q8_TFLITE: u32 = 4;
/// [`QConvParams::out`]'s weight layout bits (the low byte keeps the output kind,
/// [`QConvParams::kind`]); zero: GEMM panels (or compact depthwise taps).
pub const QCONV_LAYOUT_MASK: u32 = 0xff << 8;
/// [`QCONV_LAYOUT_MASK`] layout: the weight in kernel-row quads (an output channel's four
/// consecutive taps of one kernel row, the row padded with zeros to a multiple of four),
/// which the kernel multiplies straight from a padded copy of the input rows instead of an
/// im2col block (`ge_sim`'s `quads`). New in format version 13 ([`task_since_version`]).
pub const QCONV_ROW_QUADS: u32 = 1 << 8;
/// [`QCONV_LAYOUT_MASK`] layout: the weight in channel quads (an output channel's four
/// consecutive input channels at one tap), read against a copy that interleaves four
/// channels a column. New in format version 13.
pub const QCONV_CHANNEL_QUADS: u32 = 2 << 8;

/// [`QBinaryParams::op`]: `A + B`.
pub const QBINARY_ADD: u32 = 0;
/// [`QBinaryParams::op`]: `A · B`.
pub const QBINARY_MUL: u32 = 1;
/// [`QBinaryParams::op`]: onnxruntime's QLinearAdd, in its MLAS kernel's f32 arithmetic
/// (format version 14). `a_mult`, `b_mult` and `out_mult` hold the bits of the f32 values
/// `ra = sa / sy`, `rb = sb / sy` and `fixed = zy − fma(ra, za, rb·zb)` (the zero points
/// folded in before rounding); `y = round_half_even(fma(a, ra, fma(b, rb, fixed)))`, or with
/// A a single value `fma(b, rb, fma(a, ra, fixed))` (B likewise), clamped to
/// `[act_min, act_max]`.
/// The other fields are 0.
pub const QBINARY_ADD_F32: u32 = 2;

/// Parameters of `QBinary`: TFLite Micro's int8 Add and Mul (and onnxruntime's Add,
/// [`QBINARY_ADD_F32`]) (`reference_integer_ops::Add`,
/// `MulElementwise`). Multipliers are Q31 with TFLite's shifts (positive: left).
/// Add: `a' = mbqm((a − a_zp)·2^left_shift, a_mult, a_shift)`, `b'` likewise,
/// `y = mbqm(a' + b', out_mult, out_shift) + out_zp`; Mul:
/// `y = mbqm((a − a_zp)·(b − b_zp), out_mult, out_shift) + out_zp`; then clamped to
/// `[act_min, act_max]`. Inputs A, B (one 8-bit type); output 0 that type, the broadcast
/// shape.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, PartialEq, Eq)]
pub struct QBinaryParams {
    /// [`QBINARY_ADD`] or [`QBINARY_MUL`].
    pub op: u32,
    pub a_zp: i32,
    pub b_zp: i32,
    pub out_zp: i32,
    /// Add's headroom shift (20 for 8-bit operands).
    pub left_shift: i32,
    pub a_mult: i32,
    pub a_shift: i32,
    pub b_mult: i32,
    pub b_shift: i32,
    pub out_mult: i32,
    pub out_shift: i32,
    pub act_min: i32,
    pub act_max: i32,
}

/// Parameters of `QMean`: TFLite Micro's int8 Mean over rows of `n` contiguous elements:
/// `y = mbqm(Σx − n·in_zp, mult, shift) + out_zp`, saturated (`mult`, `shift` hold
/// `s_in / (n · s_out)` as TFLite folds it). Input 0 `[.., n]`-rowed int8/uint8; output 0
/// one value per row, that type.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, PartialEq, Eq)]
pub struct QMeanParams {
    /// Elements per row (the reduced axes, innermost).
    pub n: u32,
    pub mult: i32,
    /// TFLite's shift (positive: left).
    pub shift: i32,
    pub in_zp: i32,
    pub out_zp: i32,
}

/// Parameters of `QSoftmax`: TFLite Micro's int8 Softmax (`reference_ops::Softmax` on int8,
/// `beta · x_scale` folded into `in_mult·2^in_lshift` in Q5.26) over rows of `n` contiguous
/// elements. Input 0 int8/uint8; output 0 of its shape and type, on the scale 1/256 with
/// zero point −128 (int8) or 0 (uint8).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, PartialEq, Eq)]
pub struct QSoftmaxParams {
    /// Elements per row (the softmax axes, innermost).
    pub n: u32,
    pub in_mult: i32,
    pub in_lshift: i32,
    /// Differences from the row's maximum below this give 0.
    pub diff_min: i32,
}

/// Parameters of `QGemm`: `Y[.., i, j] = out(Σ_k A[.., i, k]·B[k, j] + corr[j]
/// − zb[j]·Σ_k A[.., i, k] − za·adj[j])`, the zero points folded at compile time.
///
/// Inputs: 0 A `[.., M, k]` u8/i8 (run time); 1 B int8, packed by
/// `ge_sim::ops::gemm_i8::pack_b` (`[packed_len(k, n)]`); 2 corr i32 `[n]`
/// (`bias − za·Σ_k B + k·za·zb`); 3 zb i32 `[1 | n]`, absent when every weight zero point
/// is 0; 4 requantization i32 `[1 | n, 2]` (multiplier, shift) for [`QGEMM_OUT_Q8`] /
/// [`QGEMM_OUT_Q8_F32`];
/// 5 a run-time activation zero point (u8/i8, one element) and 6 adj i32 `[n]`
/// (`Σ_k B − k·zb`), both absent when za is a constant (then folded into corr).
/// Output 0 `[.., M, n]`: i32 or the u8/i8 of the requantized result.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, PartialEq, Eq)]
pub struct QGemmParams {
    /// [`QGEMM_OUT_I32`] or [`QGEMM_OUT_Q8`].
    pub out: u32,
    /// The output zero point ([`QGEMM_OUT_Q8`]).
    pub out_zp: i32,
    /// The reduced dimension.
    pub k: u32,
    /// Columns of B and of the output.
    pub n: u32,
}

/// Parameters of `QConvFused`: the convolution, then the program run over its result.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct QConvFusedParams {
    pub conv: QConvParams,
    pub program: FusedParams,
}

/// Input slots of a `QConvFused` task before the program's: the QConv's eight.
pub const QCONV_INPUTS: usize = 8;
/// The QConv input slot of the corrections for i8 activations read flipped to `a + 128`
/// (those of zero point `za + 128`, i32 `[M]`); absent in older blobs (the kernel then
/// computes them on every run).
pub const QCONV_FLIPPED: usize = 7;

/// Parameters of `QConv`: a 2-D integer convolution (ConvInteger, QLinearConv). Inputs as
/// [`QGemmParams`]'s with x `[N, C, H, W]` for A, the weight packed per group (group `g` at
/// `g·packed_len(k, M/group)`, `k = C/group·kh·kw`) and the per-channel lists over the M
/// output channels, plus 7 ([`QCONV_FLIPPED`]) for i8 activations. Output
/// `[N, M, H_out, W_out]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, PartialEq, Eq)]
pub struct QConvParams {
    /// The output kind ([`QGEMM_OUT_I32`], [`QGEMM_OUT_Q8`], …) in the low byte, the
    /// weight layout in [`QCONV_LAYOUT_MASK`].
    pub out: u32,
    /// The output zero point ([`QGEMM_OUT_Q8`]).
    pub out_zp: i32,
    /// The constant activation zero point: the padding value (a run-time one is input 5).
    pub a_zp: i32,
    pub group: u32,
    pub kernel: [u32; 2],
    pub stride: [u32; 2],
    pub dilation: [u32; 2],
    pub pad_begin: [u32; 2],
    pub pad_end: [u32; 2],
}

impl QConvParams {
    /// The output kind, without the layout bits.
    pub fn kind(&self) -> u32 {
        self.out & 0xff
    }

    /// The weight layout bits ([`QCONV_LAYOUT_MASK`]).
    pub fn layout(&self) -> u32 {
        self.out & QCONV_LAYOUT_MASK
    }
}
