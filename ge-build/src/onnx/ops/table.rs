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
        "Compress" => 9,
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
        "IsInf" | "Mod" | "Resize" | "ReverseSequence" | "ThresholdedRelu" => 10,
        "BitShift" | "CumSum" | "GatherElements" | "GatherND" | "Range" | "Round"
        | "ScatterElements" | "ScatterND" => 11,
        "Celu"
        | "GreaterOrEqual"
        | "LessOrEqual"
        | "NegativeLogLikelihoodLoss"
        | "SoftmaxCrossEntropyLoss" => 12,
        "HardSwish" | "Trilu" => 14,
        "DFT" | "STFT" => 17,
        "GridSample" => 16,
        "CastLike" => 15,
        "LayerNormalization" => 17,
        "BitwiseAnd" | "BitwiseNot" | "BitwiseOr" | "BitwiseXor" | "CenterCropPad" | "Col2Im"
        | "GroupNormalization" | "Mish" => 18,
        "AffineGrid" | "Gelu" => 20,
        "Attention" | "RMSNormalization" | "RotaryEmbedding" => 23,
        "Swish" => 24,
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
        "Range" => cat(&[&[DType::F32, DType::F64], INT]),
        "Equal" | "Cast" | "CastLike" | "Concat" | "Constant" | "ConstantOfShape" | "Dropout"
        | "Expand" | "Flatten" | "Gather" | "GatherElements" | "GatherND" | "Identity" | "Pad"
        | "Reshape" | "Scatter" | "ScatterElements" | "ScatterND" | "Shape" | "Size" | "Slice"
        | "Split" | "Squeeze" | "Tile" | "Transpose" | "Unsqueeze" | "Where" | "Trilu"
        | "DepthToSpace" | "SpaceToDepth" | "EyeLike" | "If" | "Loop" | "Scan" | "BitCast"
        | "Compress" | "ReverseSequence" | "CenterCropPad" => any(),
        _ => float(),
    }
}

fn lowering(op: &str) -> (Lowering, &'static str) {
    match op {
        "Constant" | "ConstantOfShape" | "Shape" | "Size" | "EyeLike" => (Lowering::Constant, ""),
        "If" => (
            Lowering::Decomposed,
            "condition known at compile time; the taken branch is inlined",
        ),
        "DFT" | "STFT" => (
            Lowering::Decomposed,
            "a MatMul by a constant DFT matrix; lengths, axis and frame step known at compile time",
        ),
        "BitCast" => (Lowering::Kernel, "a byte view (free unless copied)"),
        "Compress" => (Lowering::Decomposed, "condition known at compile time"),
        "ReverseSequence" => (Lowering::Decomposed, "sequence_lens known at compile time"),
        "Loop" => (
            Lowering::Decomposed,
            "trip count and condition known at compile time, condition passed through; unrolled",
        ),
        "Scan" => (
            Lowering::Decomposed,
            "unrolled over the static sequence axis; opset 8 sequence_lens must be full",
        ),
        "Dropout" => (Lowering::Kernel, "inference only (training_mode = 0)"),
        "Range" => (
            Lowering::Constant,
            "start, limit and delta known at compile time",
        ),
        "Clip" => (
            Lowering::Kernel,
            "run-time min/max or integer inputs are decomposed into Max/Min",
        ),
        _ if super::is_decomposed(op) => (Lowering::Decomposed, ""),
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
