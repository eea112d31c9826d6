//! Every kind's entry: how it runs (decoding its parameter record), the workspace it plans,
//! the work the cost model charges, its element types, in-place inputs and epilogue.

use super::*;

/// For kernels that need no scratch space.
pub(super) fn no_workspace(_: &[u8], _: &[Option<Shape>], _: &[Shape]) -> usize {
    0
}

/// The activations offered to epilogue fusion: the common network activations. The kernels
/// apply them to an f32 result with [`unary::apply_activation`], exactly as a separate Unary
/// task would (Conv and Gemm apply Relu, Clip and LeakyRelu inside their output tiles).
pub fn epilogue_activation(op: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(
        op,
        Relu | LeakyRelu
            | Clip
            | Sigmoid
            | Silu
            | HardSigmoid
            | HardSwish
            | Tanh
            | Elu
            | Selu
            | Gelu
            | Softplus
            | Mish
    )
}

/// The epilogue of the kinds the compiler folds activations into.
pub(super) const EPILOGUE: Option<Epilogue> = Some(Epilogue {
    dtypes: DTypes::F32,
    activation: epilogue_activation,
});

// Elementwise.

pub(super) const UNARY: Kernel = Kernel {
    kind: OpKind::Unary,
    run: |p, ins, outs, _, _| unary::run_unary(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    // Identity on any type; IsNaN/IsInf to bool; halves computed in f32.
    dtypes: DTypes::ANY,
    in_place: Some(InPlace {
        inputs: |_, n| if n == 1 { &[0] } else { &[] },
        dtypes: DTypes::F32,
        run: |p, k, _, outs| in_place::unary(&read_params(p)?, k, outs),
    }),
    epilogue: None,
};

/// Inputs 0 and 1 of a two-input Binary task whose op the in-place kernel implements.
pub(super) fn binary_in_place_inputs(params: &[u8], n: usize) -> &'static [usize] {
    let op = read_params::<BinaryParams>(params)
        .ok()
        .and_then(|p| BinaryOp::from_u32(p.op));
    match op.and_then(in_place::binary_op) {
        Some(_) if n == 2 => &[0, 1],
        _ => &[],
    }
}

pub(super) const BINARY: Kernel = Kernel {
    kind: OpKind::Binary,
    run: |p, ins, outs, _, _| binary::run_binary(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    // Comparisons and logic yield bool.
    dtypes: DTypes::NUMERIC
        .with(DTypes::of(&[DType::Bool]))
        .with(DTypes::F32_HALVES),
    in_place: Some(InPlace {
        inputs: binary_in_place_inputs,
        dtypes: DTypes::F32,
        run: |p, k, ins, outs| in_place::binary(&read_params(p)?, k, ins, outs),
    }),
    epilogue: EPILOGUE,
};

pub(super) const VARIADIC: Kernel = Kernel {
    kind: OpKind::Variadic,
    run: |p, ins, outs, _, _| binary::run_variadic(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output_per_input,
    dtypes: DTypes::NUMERIC,
    in_place: None,
    epilogue: EPILOGUE,
};

pub(super) const WHERE: Kernel = Kernel {
    kind: OpKind::Where,
    run: |_, ins, outs, _, _| binary::run_where(ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const FUSED: Kernel = Kernel {
    kind: OpKind::Fused,
    run: |p, ins, outs, _, _| fused::run_fused(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::fused,
    // int8 / uint8 when a QuantizeLinear's final Cast is folded in.
    dtypes: DTypes::F32_HALVES.with(DTypes::of(&[DType::I8, DType::U8])),
    in_place: None,
    epilogue: None,
};

pub(super) const CAST: Kernel = Kernel {
    kind: OpKind::Cast,
    run: |_, ins, outs, _, _| cast::run_cast(ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

// Cube: convolution and matrix products.

/// Conv and ConvTranspose scratch (im2col columns and GEMM packing); 0 for a malformed
/// record (execution then fails with a parameter error).
pub(super) fn conv_workspace(
    transpose: bool,
    params: &[u8],
    ins: &[Option<Shape>],
    outs: &[Shape],
) -> usize {
    read_params::<ConvParams>(params)
        .map_or(0, |p| conv::conv_workspace_bytes(&p, transpose, ins, outs))
}

pub(super) const CONV: Kernel = Kernel {
    kind: OpKind::Conv,
    run: |p, ins, outs, ws, par| conv::run_conv_on(&read_params(p)?, ins, outs, ws, par),
    workspace: |p, ins, outs| conv_workspace(false, p, ins, outs),
    work: cost::conv,
    dtypes: DTypes::F32_HALVES,
    in_place: None,
    epilogue: EPILOGUE,
};

pub(super) const CONV_TRANSPOSE: Kernel = Kernel {
    kind: OpKind::ConvTranspose,
    run: |p, ins, outs, ws, _| conv::run_conv_transpose(&read_params(p)?, ins, outs, ws),
    workspace: |p, ins, outs| conv_workspace(true, p, ins, outs),
    work: cost::conv_transpose,
    dtypes: DTypes::F32,
    in_place: None,
    epilogue: EPILOGUE,
};

pub(super) const GEMM: Kernel = Kernel {
    kind: OpKind::Gemm,
    run: |p, ins, outs, ws, par| gemm::run_gemm(&read_params(p)?, ins, outs, ws, par),
    workspace: |_, ins, outs| gemm::gemm_workspace_bytes(ins, outs),
    work: cost::gemm,
    dtypes: DTypes::F32_HALVES,
    in_place: None,
    epilogue: EPILOGUE,
};

pub(super) const GEMM_W8: Kernel = Kernel {
    kind: OpKind::GemmW8,
    run: |p, ins, outs, ws, par| gemm::run_gemm_w8(&read_params(p)?, ins, outs, ws, par),
    workspace: |_, ins, outs| gemm::gemm_w8_workspace_bytes(ins, outs),
    work: cost::gemm_w8,
    dtypes: DTypes::F32_HALVES,
    in_place: None,
    epilogue: EPILOGUE,
};

pub(super) const GEMM_PACKED: Kernel = Kernel {
    kind: OpKind::GemmPacked,
    run: |p, ins, outs, ws, par| gemm::run_gemm_packed(&read_params(p)?, ins, outs, ws, par),
    workspace: |_, ins, outs| gemm::gemm_kn_workspace_bytes(ins, outs),
    work: cost::gemm,
    // The compiler packs f32 B only (the half kernels read ONNX order).
    dtypes: DTypes::F32,
    in_place: None,
    epilogue: EPILOGUE,
};

pub(super) const QGEMM: Kernel = Kernel {
    kind: OpKind::QGemm,
    run: |p, ins, outs, ws, _| gemm_i8::task::run_qgemm(&read_params(p)?, ins, outs, ws),
    workspace: |p, ins, _| {
        read_params::<QGemmParams>(p).map_or(0, |p| gemm_i8::task::workspace_bytes(&p, ins))
    },
    work: cost::qgemm,
    dtypes: DTypes::of(&[DType::I32, DType::U8, DType::I8]),
    in_place: None,
    epilogue: None,
};

pub(super) const QCONV: Kernel = Kernel {
    kind: OpKind::QConv,
    run: |p, ins, outs, ws, _| gemm_i8::conv::run_qconv(&read_params(p)?, ins, outs, ws),
    workspace: |p, ins, outs| {
        read_params::<QConvParams>(p).map_or(0, |p| gemm_i8::conv::workspace_bytes(&p, ins, outs))
    },
    work: cost::qconv,
    dtypes: DTypes::of(&[DType::I32, DType::U8, DType::I8]),
    in_place: None,
    epilogue: None,
};

pub(super) const QCONV_FUSED: Kernel = Kernel {
    kind: OpKind::QConvFused,
    run: |p, ins, outs, ws, _| {
        gemm_i8::conv_epilogue::run_qconv_fused(&read_params(p)?, ins, outs, ws)
    },
    workspace: |p, ins, outs| {
        read_params::<QConvFusedParams>(p)
            .map_or(0, |p| gemm_i8::conv_epilogue::workspace(&p, ins, outs))
    },
    work: cost::qconv_fused,
    // The program stores the conv's own 8-bit type.
    dtypes: DTypes::of(&[DType::U8, DType::I8]),
    in_place: None,
    epilogue: None,
};

pub(super) const QBINARY: Kernel = Kernel {
    kind: OpKind::QBinary,
    run: |p, ins, outs, _, _| tflite::binary::run_qbinary(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::of(&[DType::U8, DType::I8]),
    in_place: None,
    epilogue: None,
};

pub(super) const QMEAN: Kernel = Kernel {
    kind: OpKind::QMean,
    run: |p, ins, outs, _, _| tflite::mean::run_qmean(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_input,
    dtypes: DTypes::of(&[DType::U8, DType::I8]),
    in_place: None,
    epilogue: None,
};

pub(super) const QSOFTMAX: Kernel = Kernel {
    kind: OpKind::QSoftmax,
    run: |p, ins, outs, _, _| tflite::softmax::run_qsoftmax(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    // Max, two exponentials and a product per element, and a reciprocal per row.
    work: cost::four_per_input,
    dtypes: DTypes::of(&[DType::U8, DType::I8]),
    in_place: None,
    epilogue: None,
};

pub(super) const MATMUL: Kernel = Kernel {
    kind: OpKind::MatMul,
    run: |_, ins, outs, ws, par| gemm::run_matmul(ins, outs, ws, par),
    workspace: |_, ins, outs| gemm::gemm_workspace_bytes(ins, outs),
    work: cost::matmul,
    dtypes: DTypes::of(&[DType::F64, DType::I32, DType::I64]).with(DTypes::F32_HALVES),
    in_place: None,
    epilogue: None,
};

pub(super) const ATTENTION: Kernel = Kernel {
    kind: OpKind::Attention,
    run: |p, ins, outs, ws, _| attention::run_attention(&read_params(p)?, ins, outs, ws),
    workspace: |_, ins, _| attention::attention_workspace_bytes(ins),
    work: cost::attention,
    dtypes: DTypes::F32_HALVES,
    in_place: None,
    epilogue: None,
};

pub(super) const RECURRENT: Kernel = Kernel {
    kind: OpKind::Recurrent,
    run: |p, ins, outs, ws, par| recurrent::run_recurrent(&read_params(p)?, ins, outs, ws, par),
    workspace: recurrent::recurrent_workspace_bytes,
    work: cost::recurrent,
    dtypes: DTypes::F32,
    in_place: None,
    epilogue: None,
};

// Pooling and normalization.

pub(super) const POOL: Kernel = Kernel {
    kind: OpKind::Pool,
    run: |p, ins, outs, _, _| pool::run_pool(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::pool,
    // Max pooling also on int8 / uint8.
    dtypes: DTypes::F32_HALVES.with(DTypes::of(&[DType::I8, DType::U8])),
    in_place: None,
    epilogue: None,
};

pub(super) const GLOBAL_POOL: Kernel = Kernel {
    kind: OpKind::GlobalPool,
    run: |p, ins, outs, _, _| pool::run_global_pool(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_input,
    dtypes: DTypes::F32_HALVES,
    in_place: None,
    epilogue: None,
};

pub(super) const LRN: Kernel = Kernel {
    kind: OpKind::Lrn,
    run: |p, ins, outs, _, _| norm::run_lrn(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::lrn,
    dtypes: DTypes::FLOAT,
    in_place: None,
    epilogue: None,
};

pub(super) const BATCH_NORM: Kernel = Kernel {
    kind: OpKind::BatchNorm,
    run: |p, ins, outs, _, _| norm::run_batch_norm(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::FLOAT,
    in_place: None,
    epilogue: EPILOGUE,
};

pub(super) const INSTANCE_NORM: Kernel = Kernel {
    kind: OpKind::InstanceNorm,
    run: |p, ins, outs, _, _| norm::run_instance_norm(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::four_per_input,
    dtypes: DTypes::FLOAT,
    in_place: None,
    // The kernel applies `act` too, but epilogue fusion has never targeted it.
    epilogue: None,
};

pub(super) const LAYER_NORM: Kernel = Kernel {
    kind: OpKind::LayerNorm,
    run: |p, ins, outs, _, _| layer_norm::run_layer_norm(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::six_per_input,
    dtypes: DTypes::F32_HALVES,
    in_place: None,
    // The kernel applies `act` too, but epilogue fusion has never targeted it.
    epilogue: None,
};

pub(super) const SOFTMAX: Kernel = Kernel {
    kind: OpKind::Softmax,
    run: |p, ins, outs, _, _| softmax::run_softmax(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::four_per_input,
    // With `std`, fp16/bf16 too (the `halves` kernel).
    dtypes: DTypes::FLOAT.with(DTypes::F32_HALVES),
    in_place: None,
    epilogue: None,
};

// Reductions and ordering.

pub(super) const REDUCE: Kernel = Kernel {
    kind: OpKind::Reduce,
    run: |p, ins, outs, _, _| reduce::run_reduce(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_input,
    // ReduceMax / ReduceMin also on bool.
    dtypes: DTypes::NUMERIC.with(DTypes::of(&[DType::Bool])),
    in_place: None,
    epilogue: None,
};

pub(super) const ARG_REDUCE: Kernel = Kernel {
    kind: OpKind::ArgReduce,
    run: |p, ins, outs, _, _| reduce::run_arg_reduce(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_input,
    // The output is the indices.
    dtypes: DTypes::of(&[DType::I64]),
    in_place: None,
    epilogue: None,
};

pub(super) const TOP_K: Kernel = Kernel {
    kind: OpKind::TopK,
    run: |p, ins, outs, _, _| ordered::run_top_k(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::top_k,
    // Output 0 is the values (output 1 the i64 indices).
    dtypes: DTypes::NUMERIC,
    in_place: None,
    epilogue: None,
};

pub(super) const CUMULATIVE: Kernel = Kernel {
    kind: OpKind::Cumulative,
    run: |p, ins, outs, _, _| ordered::run_cumulative(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::input_and_output,
    dtypes: DTypes::NUMERIC,
    in_place: None,
    epilogue: None,
};

// Data movement.

pub(super) const TRANSPOSE: Kernel = Kernel {
    kind: OpKind::Transpose,
    run: |p, ins, outs, _, _| transpose::run_transpose(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const REORDER: Kernel = Kernel {
    kind: OpKind::Reorder,
    run: |p, ins, outs, _, _| nchwc::run_reorder(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::F32,
    in_place: None,
    epilogue: None,
};

pub(super) const SLICE: Kernel = Kernel {
    kind: OpKind::Slice,
    run: |p, ins, outs, _, _| slice::run_slice(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::selection,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const CONCAT: Kernel = Kernel {
    kind: OpKind::Concat,
    run: |p, ins, outs, _, _| concat::run_concat(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const SPLIT: Kernel = Kernel {
    kind: OpKind::Split,
    run: |p, ins, outs, _, _| concat::run_split(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const GATHER: Kernel = Kernel {
    kind: OpKind::Gather,
    run: |p, ins, outs, _, _| gather::run_gather(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::selection,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const PAD: Kernel = Kernel {
    kind: OpKind::Pad,
    run: |p, ins, outs, _, _| pad::run_pad(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const COPY: Kernel = Kernel {
    kind: OpKind::Copy,
    run: |_, ins, outs, _, _| copy::run_copy(ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const EXPAND: Kernel = Kernel {
    kind: OpKind::Expand,
    run: |_, ins, outs, _, _| copy::run_expand(ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const TILE: Kernel = Kernel {
    kind: OpKind::Tile,
    run: |_, ins, outs, _, _| copy::run_tile(ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const GATHER_ELEMENTS: Kernel = Kernel {
    kind: OpKind::GatherElements,
    run: |p, ins, outs, _, _| indexing::run_gather_elements(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::selection,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const GATHER_ND: Kernel = Kernel {
    kind: OpKind::GatherNd,
    run: |p, ins, outs, _, _| indexing::run_gather_nd(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::selection,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const SCATTER_ELEMENTS: Kernel = Kernel {
    kind: OpKind::ScatterElements,
    run: |p, ins, outs, _, _| indexing::run_scatter_elements(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::input_and_output,
    // Any type without a reduction; Add/Mul/Max/Min on the numeric ones.
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const SCATTER_ND: Kernel = Kernel {
    kind: OpKind::ScatterNd,
    run: |p, ins, outs, _, _| indexing::run_scatter_nd(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::input_and_output,
    // Any type without a reduction; Add/Mul/Max/Min on the numeric ones.
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

// Resampling.

pub(super) const RESIZE: Kernel = Kernel {
    kind: OpKind::Resize,
    run: |p, ins, outs, ws, _| resize::run_resize_with(&read_params(p)?, ins, outs, ws),
    workspace: |p, _, outs| resize::resize_workspace_bytes(p, outs),
    work: cost::per_output,
    // Nearest on any type; linear and cubic on f32.
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

pub(super) const GRID_SAMPLE: Kernel = Kernel {
    kind: OpKind::GridSample,
    run: |p, ins, outs, _, _| grid_sample::run_grid_sample(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::FLOAT,
    in_place: None,
    epilogue: None,
};
