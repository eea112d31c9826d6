//! The supported-operator table: per op type, the opsets and element types ge compiles.
//! `docs/OPERATORS.md` is generated from it (`ge ops --markdown`); a test keeps the checked-in
//! file current.

use ge_runtime::format::DType;

/// The newest default-domain opset the importers know (onnx 1.23).
pub const MAX_OPSET: i64 = 28;
/// The oldest opset ge imports.
pub const MIN_OPSET: i64 = 7;

const FLOAT: &[DType] = &[DType::F32, DType::F64, DType::F16, DType::Bf16];
const INT: &[DType] = &[
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::U16,
    DType::U32,
    DType::U64,
];

/// The integer types (de)quantization handles (int32 only dequantized).
const QUANT: &[DType] = &[DType::U8, DType::I8, DType::U16, DType::I16, DType::I32];

/// How an op is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lowering {
    /// A device kernel (task).
    Kernel,
    /// Rewritten into other supported ops at import.
    Decomposed,
    /// Evaluated while compiling (its outputs depend only on shapes or constants).
    Constant,
}

/// One row of the table.
#[derive(Clone, Debug)]
pub struct OpSupport {
    pub op: &'static str,
    pub first_opset: i64,
    pub last_opset: i64,
    pub dtypes: Vec<DType>,
    pub lowering: Lowering,
    pub note: &'static str,
}

fn since(op: &str) -> i64 {
    match op {
        "Expand" | "Scan" => 8,
        "Compress" | "MaxUnpool" | "NonZero" | "OneHot" => 9,
        "Acosh"
        | "Asinh"
        | "Atanh"
        | "ConstantOfShape"
        | "Cosh"
        | "Erf"
        | "EyeLike"
        | "IsNaN"
        | "MeanVarianceNormalization"
        | "Scatter"
        | "Shrink"
        | "Sign"
        | "Sinh"
        | "Where" => 9,
        "ConvInteger" | "DequantizeLinear" | "IsInf" | "MatMulInteger" | "Mod" | "QLinearConv"
        | "QLinearMatMul" | "QuantizeLinear" | "Resize" | "ReverseSequence" | "ThresholdedRelu" => {
            10
        }
        "BitShift"
        | "CumSum"
        | "DynamicQuantizeLinear"
        | "GatherElements"
        | "GatherND"
        | "Range"
        | "Round"
        | "ScatterElements"
        | "ScatterND" => 11,
        "Celu"
        | "Einsum"
        | "GreaterOrEqual"
        | "LessOrEqual"
        | "NegativeLogLikelihoodLoss"
        | "SoftmaxCrossEntropyLoss" => 12,
        "HardSwish" | "Trilu" => 14,
        "GridSample" => 16,
        "CastLike" => 15,
        "BlackmanWindow" | "DFT" | "HammingWindow" | "STFT" | "HannWindow"
        | "LayerNormalization" => 17,
        "BitwiseAnd" | "BitwiseNot" | "CenterCropPad" | "Col2Im" | "BitwiseOr" | "BitwiseXor"
        | "GroupNormalization" | "Mish" => 18,
        "AffineGrid" | "Gelu" => 20,
        "Attention" | "RMSNormalization" | "RotaryEmbedding" => 23,
        "Swish" | "TensorScatter" => 24,
        "BitCast" | "CumProd" => 26,
        "CausalConvWithState" | "LinearAttention" => 27,
        "SwiGLU" => 28,
        _ => MIN_OPSET,
    }
}

fn until(op: &str) -> i64 {
    match op {
        "Upsample" => 9,
        "Scatter" => 10,
        _ => MAX_OPSET,
    }
}

/// True for the integer dtypes (not bool).
pub fn is_int(d: DType) -> bool {
    INT.contains(&d)
}

fn cat(parts: &[&[DType]]) -> Vec<DType> {
    parts.iter().flat_map(|p| p.iter().copied()).collect()
}

fn dtypes(op: &str) -> Vec<DType> {
    let float = || FLOAT.to_vec();
    let num = || cat(&[FLOAT, INT]);
    let any = || cat(&[FLOAT, INT, &[DType::Bool]]);
    match op {
        "And" | "Or" | "Xor" | "Not" => vec![DType::Bool],
        "BitShift" => INT
            .iter()
            .copied()
            .filter(|d| matches!(d, DType::U8 | DType::U16 | DType::U32 | DType::U64))
            .collect(),
        "BitwiseAnd" | "BitwiseOr" | "BitwiseXor" => cat(&[INT, &[DType::Bool]]),
        "BitwiseNot" => INT.to_vec(),
        "Abs" | "Neg" | "Sign" | "Relu" | "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Max" | "Min"
        | "Mean" | "Sum" | "Mod" | "ReduceSum" | "ReduceMean" | "ReduceMax" | "ReduceMin"
        | "ReduceProd" | "ReduceSumSquare" | "ReduceL1" | "ReduceL2" | "ReduceLogSum"
        | "ReduceLogSumExp" | "ArgMax" | "ArgMin" | "TopK" | "CumSum" | "CumProd" | "Clip"
        | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" => num(),
        "Range" => cat(&[FLOAT, INT]),
        "QuantizeLinear" => cat(&[FLOAT, &QUANT[..4]]),
        "DequantizeLinear" => cat(&[FLOAT, QUANT]),
        "DynamicQuantizeLinear" => vec![DType::F32, DType::U8],
        "MatMulInteger" | "ConvInteger" | "QLinearMatMul" | "QLinearConv" => {
            vec![DType::U8, DType::I8]
        }
        "Equal" | "Cast" | "CastLike" | "Concat" | "Constant" | "ConstantOfShape" | "Dropout"
        | "Expand" | "Flatten" | "Gather" | "GatherElements" | "GatherND" | "Identity" | "Pad"
        | "Reshape" | "Scatter" | "ScatterElements" | "ScatterND" | "Shape" | "Size" | "Slice"
        | "Split" | "Squeeze" | "Tile" | "Transpose" | "Unsqueeze" | "Where" | "Trilu"
        | "DepthToSpace" | "SpaceToDepth" | "EyeLike" | "If" | "OneHot" | "Compress"
        | "NonZero" | "ReverseSequence" | "Loop" | "Scan" | "BitCast" => any(),
        _ => float(),
    }
}

fn lowering(op: &str) -> (Lowering, &'static str) {
    match op {
        "Constant" | "ConstantOfShape" | "Shape" | "Size" | "EyeLike" => (Lowering::Constant, ""),
        "HannWindow" | "HammingWindow" | "BlackmanWindow" => {
            (Lowering::Constant, "size known at compile time")
        }
        "OneHot" => (Lowering::Decomposed, "depth known at compile time"),
        "NonZero" => (Lowering::Constant, "input known at compile time"),
        "CenterCropPad" => (Lowering::Decomposed, "shape known at compile time"),
        "Col2Im" => (
            Lowering::Decomposed,
            "image_shape and block_shape known at compile time",
        ),
        "AffineGrid" => (Lowering::Decomposed, "size known at compile time"),
        "Compress" => (
            Lowering::Decomposed,
            "condition known at compile time (a Gather)",
        ),
        "BatchNormalization" => (
            Lowering::Kernel,
            "training_mode = 1 (opset 14+): decomposed, batch statistics",
        ),
        "LayerNormalization" => (
            Lowering::Kernel,
            "f64, f16/bf16, the Mean/InvStdDev outputs or a scale wider than the normalized shape: decomposed",
        ),
        "MaxPool" => (
            Lowering::Kernel,
            "with the Indices output: decomposed (Gather of windows, ReduceMax, ArgMax)",
        ),
        "MaxUnpool" => (
            Lowering::Decomposed,
            "ScatterElements into zeros; output_shape known at compile time",
        ),
        "If" => (
            Lowering::Decomposed,
            "condition known at compile time; the taken branch is inlined",
        ),
        "BitCast" => (Lowering::Kernel, "a byte view (free unless copied)"),
        "Loop" => (
            Lowering::Decomposed,
            "trip count and condition known at compile time, condition passed through; unrolled",
        ),
        "Scan" => (
            Lowering::Decomposed,
            "unrolled over the static sequence axis; opset 8 sequence_lens must be full",
        ),
        "Dropout" => (
            Lowering::Kernel,
            "inference only (training_mode = 0, or ratio 0)",
        ),
        "Range" => (
            Lowering::Constant,
            "start, limit and delta known at compile time",
        ),
        "Clip" => (
            Lowering::Kernel,
            "run-time min/max or integer inputs are decomposed into Max/Min",
        ),
        "QuantizeLinear" | "DequantizeLinear" => (
            Lowering::Decomposed,
            "per tensor, per axis, blocked; no float8/int4/int2/float4 element types",
        ),
        "Det" => (
            Lowering::Decomposed,
            "Leibniz formula (Gather, ReduceProd, ReduceSum), matrices up to 6x6",
        ),
        "ConvInteger" | "QLinearConv" => (
            Lowering::Decomposed,
            "f32 conv, exact while sums stay below 2^24 (checked at compile time)",
        ),
        _ if op == "AffineGrid"
            || super::decomp::OPS.contains(&op)
            || super::DECOMPOSED.iter().any(|l| l.contains(&op)) =>
        {
            (Lowering::Decomposed, "")
        }
        _ => (Lowering::Kernel, ""),
    }
}

/// The table, sorted by op type.
pub fn table() -> Vec<OpSupport> {
    super::supported()
        .into_iter()
        .map(|op| {
            let (lowering, note) = lowering(op);
            OpSupport {
                op,
                first_opset: since(op),
                last_opset: until(op),
                dtypes: dtypes(op),
                lowering,
                note,
            }
        })
        .collect()
}

fn short(d: DType) -> &'static str {
    match d {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::F16 => "f16",
        DType::Bf16 => "bf16",
        DType::I8 => "i8",
        DType::I16 => "i16",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::U8 => "u8",
        DType::U16 => "u16",
        DType::U32 => "u32",
        DType::U64 => "u64",
        DType::Bool => "bool",
    }
}

/// `docs/OPERATORS.md`.
pub fn markdown() -> String {
    let rows = table();
    let mut s = String::new();
    s.push_str("# Supported ONNX operators\n\n");
    s.push_str("Generated from the importers' table (`ge-build/src/onnx/ops/table.rs`) by\n");
    s.push_str(
        "`ge ops --markdown > docs/OPERATORS.md`; `cargo test` fails when this file is stale.\n\n",
    );
    s.push_str(&format!(
        "Default domain (`ai.onnx`), opsets {MIN_OPSET} to {MAX_OPSET}; {} op types. Shapes are static: inputs that\n",
        rows.len()
    ));
    s.push_str(
        "decide shapes (axes, pads, sizes, repeats…) must be constants or fixed at compile time.\n",
    );
    s.push_str("Anything else fails at compile time naming the node, op type, opset and reason.\n");
    s.push_str("f16/bf16 are computed in f32 and rounded per op.\n\n");
    s.push_str(&format!(
        "Also imported from `ai.onnx.preview.training` (decomposed, float32): {}.\n\n",
        super::TRAINING_OPS.join(", ")
    ));
    s.push_str("| op | opsets | dtypes | lowering | notes |\n|---|---|---|---|---|\n");
    for r in rows {
        let dts: Vec<&str> = r.dtypes.iter().map(|&d| short(d)).collect();
        let low = match r.lowering {
            Lowering::Kernel => "kernel",
            Lowering::Decomposed => "decomposed",
            Lowering::Constant => "compile time",
        };
        s.push_str(&format!(
            "| {} | {}–{} | {} | {} | {} |\n",
            r.op,
            r.first_opset,
            r.last_opset,
            dts.join(" "),
            low,
            r.note
        ));
    }
    s
}
