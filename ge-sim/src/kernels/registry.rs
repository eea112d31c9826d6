//! The kernel registry: one entry per [`OpKind`] holding everything the device and the
//! compiler need to know about that kind's kernel — how to run it, the scratch space it
//! needs, the work the cost model charges for it, and what it can do (element types, running
//! in place, fused epilogue activations).
//!
//! [`kernel`] matches every kind without a wildcard, so a kind added to
//! `ge_runtime::format::ops` does not compile until it has an entry here; nothing falls back
//! to a default cost, workspace or capability. The device dispatches through the entries
//! ([`super::execute_on`], [`super::workspace_bytes`], [`crate::cost::estimate_work`],
//! [`super::in_place::run_in_place`]) and the compiler asks them which tasks may run in place
//! and which activations a task may apply in its epilogue.

use core::fmt;

use ge_runtime::format::{
    BinaryOp, BinaryParams, ConvParams, DType, OpKind, QConvFusedParams, QConvParams, QGemmParams,
    Shape, TensorMut, TensorRef, UnaryOp,
};

use super::{
    KernelResult, attention, binary, cast, concat, conv, copy, fused, gather, gemm, gemm_i8,
    grid_sample, in_place, indexing, layer_norm, nchwc, norm, ordered, pad, pool, read_params,
    recurrent, reduce, resize, slice, softmax, transpose, unary,
};
use crate::cost::{self, Work};
use crate::threads::Parallel;

/// Runs a task: its parameter record, inputs, outputs, workspace and the host threads it may
/// split between.
pub type RunFn = fn(
    &[u8],
    &[Option<TensorRef<'_>>],
    &mut [TensorMut<'_>],
    &mut [u8],
    &dyn Parallel,
) -> KernelResult;

/// A figure decided from a task's parameter record and shapes alone (inputs, then outputs),
/// the same at compile time as on the device. A malformed record must not panic.
pub type ShapeFn<T> = fn(&[u8], &[Option<Shape>], &[Shape]) -> T;

/// Runs a task with its input `k` updated in place as output 0 (the memory views hand that
/// input only as output 0).
pub type InPlaceFn =
    fn(&[u8], usize, &[Option<TensorRef<'_>>], &mut [TensorMut<'_>]) -> KernelResult;

/// A set of element types.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DTypes(u32);

impl DTypes {
    /// No element type.
    pub const NONE: DTypes = DTypes(0);
    /// Every element type.
    pub const ANY: DTypes = DTypes::of(&DType::ALL);
    /// f32 only.
    pub const F32: DTypes = DTypes::of(&[DType::F32]);
    /// f32, and with `std` the 16-bit floats too (the [`super::halves`] kernels).
    pub const F32_HALVES: DTypes = if cfg!(feature = "std") {
        DTypes::of(&[DType::F32, DType::F16, DType::Bf16])
    } else {
        DTypes::F32
    };
    /// f32 and f64.
    pub const FLOAT: DTypes = DTypes::of(&[DType::F32, DType::F64]);
    /// f32, f64 and the eight integer types (not the halves, which the compiler widens, nor
    /// bool).
    pub const NUMERIC: DTypes = DTypes::of(&[
        DType::F32,
        DType::F64,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
    ]);

    /// The set of `list`.
    pub const fn of(list: &[DType]) -> DTypes {
        let mut bits = 0u32;
        let mut i = 0;
        while i < list.len() {
            bits |= 1 << list[i] as u8;
            i += 1;
        }
        DTypes(bits)
    }

    /// This set and `other`'s.
    pub const fn with(self, other: DTypes) -> DTypes {
        DTypes(self.0 | other.0)
    }

    /// True when `d` is in the set.
    pub const fn contains(self, d: DType) -> bool {
        self.0 & (1 << d as u8) != 0
    }

    /// True when every type of this set is in `other`.
    pub const fn is_subset(self, other: DTypes) -> bool {
        self.0 & !other.0 == 0
    }

    /// The types in the set, by number.
    pub fn iter(self) -> impl Iterator<Item = DType> {
        (0..u32::BITS as u8)
            .filter_map(DType::from_u8)
            .filter(move |&d| self.contains(d))
    }
}

impl fmt::Debug for DTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(DType::name)).finish()
    }
}

/// A kind whose kernel can overwrite one of its inputs with its output.
#[derive(Clone, Copy, Debug)]
pub struct InPlace {
    /// The inputs that may be updated in place for this parameter record and input count
    /// (empty: this task runs out of place).
    pub inputs: fn(&[u8], usize) -> &'static [usize],
    /// Element types the in-place kernel takes: every input and the output must be of one.
    pub dtypes: DTypes,
    /// The in-place kernel.
    pub run: InPlaceFn,
}

/// A kind whose kernel applies an activation (its parameter record's `act`) to its result
/// before writing it, so the compiler may fold a following activation task into it.
#[derive(Clone, Copy, Debug)]
pub struct Epilogue {
    /// Element types of the result the activation is applied to.
    pub dtypes: DTypes,
    /// The activations the kernel applies.
    pub activation: fn(UnaryOp) -> bool,
}

/// Everything about one kind's kernel.
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    /// The kind this entry is for.
    pub kind: OpKind,
    /// The kernel.
    pub run: RunFn,
    /// Scratch bytes a task needs (planned at compile time; 0 for none).
    pub workspace: ShapeFn<usize>,
    /// The work the cost model charges for a task (see [`crate::cost`]).
    pub work: ShapeFn<Work>,
    /// Element types output 0 may have, for at least some parameters; the dispatcher
    /// rejects the others, the kernel itself the combinations it does not implement.
    pub dtypes: DTypes,
    /// Whether and how the kernel runs in place.
    pub in_place: Option<InPlace>,
    /// Whether and which activations the kernel applies in its epilogue.
    pub epilogue: Option<Epilogue>,
}

impl Kernel {
    /// The inputs a task of this kind with this parameter record may overwrite, when the
    /// output and all `input_dtypes` are ones the in-place kernel takes (empty otherwise).
    pub fn in_place_inputs(
        &self,
        params: &[u8],
        input_dtypes: &[DType],
        output: DType,
    ) -> &'static [usize] {
        match self.in_place {
            Some(ip)
                if ip.dtypes.contains(output)
                    && input_dtypes.iter().all(|&d| ip.dtypes.contains(d)) =>
            {
                (ip.inputs)(params, input_dtypes.len())
            }
            _ => &[],
        }
    }

    /// True when the kernel applies `act` to a result of element type `dtype` in its
    /// epilogue.
    pub fn fuses_activation(&self, act: UnaryOp, dtype: DType) -> bool {
        self.epilogue
            .is_some_and(|e| e.dtypes.contains(dtype) && (e.activation)(act))
    }
}

/// The registry entry of `kind`.
pub const fn kernel(kind: OpKind) -> &'static Kernel {
    match kind {
        OpKind::Unary => &UNARY,
        OpKind::Binary => &BINARY,
        OpKind::Variadic => &VARIADIC,
        OpKind::Where => &WHERE,
        OpKind::Conv => &CONV,
        OpKind::ConvTranspose => &CONV_TRANSPOSE,
        OpKind::Gemm => &GEMM,
        OpKind::MatMul => &MATMUL,
        OpKind::Pool => &POOL,
        OpKind::GlobalPool => &GLOBAL_POOL,
        OpKind::Lrn => &LRN,
        OpKind::BatchNorm => &BATCH_NORM,
        OpKind::Softmax => &SOFTMAX,
        OpKind::Reduce => &REDUCE,
        OpKind::Transpose => &TRANSPOSE,
        OpKind::Slice => &SLICE,
        OpKind::Concat => &CONCAT,
        OpKind::Split => &SPLIT,
        OpKind::Gather => &GATHER,
        OpKind::Pad => &PAD,
        OpKind::Copy => &COPY,
        OpKind::Expand => &EXPAND,
        OpKind::Tile => &TILE,
        OpKind::Resize => &RESIZE,
        OpKind::Cast => &CAST,
        OpKind::InstanceNorm => &INSTANCE_NORM,
        OpKind::ArgReduce => &ARG_REDUCE,
        OpKind::Fused => &FUSED,
        OpKind::LayerNorm => &LAYER_NORM,
        OpKind::Attention => &ATTENTION,
        OpKind::Recurrent => &RECURRENT,
        OpKind::QGemm => &QGEMM,
        OpKind::GemmW8 => &GEMM_W8,
        OpKind::GemmPacked => &GEMM_PACKED,
        OpKind::QConv => &QCONV,
        OpKind::QConvFused => &QCONV_FUSED,
        OpKind::GatherElements => &GATHER_ELEMENTS,
        OpKind::ScatterElements => &SCATTER_ELEMENTS,
        OpKind::ScatterNd => &SCATTER_ND,
        OpKind::GatherNd => &GATHER_ND,
        OpKind::TopK => &TOP_K,
        OpKind::Cumulative => &CUMULATIVE,
        OpKind::GridSample => &GRID_SAMPLE,
        OpKind::Reorder => &REORDER,
    }
}

// Checked when the crate compiles: every entry is its own kind's, and the kinds that run in
// place are exactly those whose tasks the loader lets carry `TaskDesc::in_place`.
const _: () = {
    let mut i = 0;
    while i < OpKind::ALL.len() {
        let kind = OpKind::ALL[i];
        let k = kernel(kind);
        assert!(
            k.kind as u16 == kind as u16,
            "a kind has another kind's entry"
        );
        assert!(
            k.in_place.is_some() == kind.runs_in_place(),
            "in-place kernels differ from OpKind::runs_in_place"
        );
        i += 1;
    }
};

/// One more than the largest kind number.
const KIND_SLOTS: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < OpKind::ALL.len() {
        let k = OpKind::ALL[i] as usize;
        if k >= n {
            n = k + 1;
        }
        i += 1;
    }
    n
};

/// Every kind's [`Kernel::work`], by kind number. The cost model reads this table rather
/// than the entries, so that charging a task references no kernel function (a device with
/// a model's [`super::set::KernelSet`] links only that set's kernels).
pub static WORK: [Option<ShapeFn<Work>>; KIND_SLOTS] = {
    let mut t: [Option<ShapeFn<Work>>; KIND_SLOTS] = [None; KIND_SLOTS];
    let mut i = 0;
    while i < OpKind::ALL.len() {
        let kind = OpKind::ALL[i];
        t[kind as usize] = Some(kernel(kind).work);
        i += 1;
    }
    t
};

/// For kernels that need no scratch space.
fn no_workspace(_: &[u8], _: &[Option<Shape>], _: &[Shape]) -> usize {
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
const EPILOGUE: Option<Epilogue> = Some(Epilogue {
    dtypes: DTypes::F32,
    activation: epilogue_activation,
});

// Elementwise.

const UNARY: Kernel = Kernel {
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
fn binary_in_place_inputs(params: &[u8], n: usize) -> &'static [usize] {
    let op = read_params::<BinaryParams>(params)
        .ok()
        .and_then(|p| BinaryOp::from_u32(p.op));
    match op.and_then(in_place::binary_op) {
        Some(_) if n == 2 => &[0, 1],
        _ => &[],
    }
}

const BINARY: Kernel = Kernel {
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

const VARIADIC: Kernel = Kernel {
    kind: OpKind::Variadic,
    run: |p, ins, outs, _, _| binary::run_variadic(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output_per_input,
    dtypes: DTypes::NUMERIC,
    in_place: None,
    epilogue: EPILOGUE,
};

const WHERE: Kernel = Kernel {
    kind: OpKind::Where,
    run: |_, ins, outs, _, _| binary::run_where(ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const FUSED: Kernel = Kernel {
    kind: OpKind::Fused,
    run: |p, ins, outs, _, _| fused::run_fused(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::fused,
    // int8 / uint8 when a QuantizeLinear's final Cast is folded in.
    dtypes: DTypes::F32_HALVES.with(DTypes::of(&[DType::I8, DType::U8])),
    in_place: None,
    epilogue: None,
};

const CAST: Kernel = Kernel {
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
fn conv_workspace(transpose: bool, params: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    read_params::<ConvParams>(params)
        .map_or(0, |p| conv::conv_workspace_bytes(&p, transpose, ins, outs))
}

const CONV: Kernel = Kernel {
    kind: OpKind::Conv,
    run: |p, ins, outs, ws, par| conv::run_conv_on(&read_params(p)?, ins, outs, ws, par),
    workspace: |p, ins, outs| conv_workspace(false, p, ins, outs),
    work: cost::conv,
    dtypes: DTypes::F32_HALVES,
    in_place: None,
    epilogue: EPILOGUE,
};

const CONV_TRANSPOSE: Kernel = Kernel {
    kind: OpKind::ConvTranspose,
    run: |p, ins, outs, ws, _| conv::run_conv_transpose(&read_params(p)?, ins, outs, ws),
    workspace: |p, ins, outs| conv_workspace(true, p, ins, outs),
    work: cost::conv_transpose,
    dtypes: DTypes::F32,
    in_place: None,
    epilogue: EPILOGUE,
};

const GEMM: Kernel = Kernel {
    kind: OpKind::Gemm,
    run: |p, ins, outs, ws, par| gemm::run_gemm(&read_params(p)?, ins, outs, ws, par),
    workspace: |_, ins, outs| gemm::gemm_workspace_bytes(ins, outs),
    work: cost::gemm,
    dtypes: DTypes::F32_HALVES,
    in_place: None,
    epilogue: EPILOGUE,
};

const GEMM_W8: Kernel = Kernel {
    kind: OpKind::GemmW8,
    run: |p, ins, outs, ws, par| gemm::run_gemm_w8(&read_params(p)?, ins, outs, ws, par),
    workspace: |_, ins, outs| gemm::gemm_kn_workspace_bytes(ins, outs),
    work: cost::gemm_w8,
    dtypes: DTypes::F32_HALVES,
    in_place: None,
    epilogue: EPILOGUE,
};

const GEMM_PACKED: Kernel = Kernel {
    kind: OpKind::GemmPacked,
    run: |p, ins, outs, ws, par| gemm::run_gemm_packed(&read_params(p)?, ins, outs, ws, par),
    workspace: |_, ins, outs| gemm::gemm_kn_workspace_bytes(ins, outs),
    work: cost::gemm,
    // The compiler packs f32 B only (the half kernels read ONNX order).
    dtypes: DTypes::F32,
    in_place: None,
    epilogue: EPILOGUE,
};

const QGEMM: Kernel = Kernel {
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

const QCONV: Kernel = Kernel {
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

const QCONV_FUSED: Kernel = Kernel {
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

const MATMUL: Kernel = Kernel {
    kind: OpKind::MatMul,
    run: |_, ins, outs, ws, par| gemm::run_matmul(ins, outs, ws, par),
    workspace: |_, ins, outs| gemm::gemm_workspace_bytes(ins, outs),
    work: cost::matmul,
    dtypes: DTypes::of(&[DType::F64, DType::I32, DType::I64]).with(DTypes::F32_HALVES),
    in_place: None,
    epilogue: None,
};

const ATTENTION: Kernel = Kernel {
    kind: OpKind::Attention,
    run: |p, ins, outs, ws, _| attention::run_attention(&read_params(p)?, ins, outs, ws),
    workspace: |_, ins, _| attention::attention_workspace_bytes(ins),
    work: cost::attention,
    dtypes: DTypes::F32_HALVES,
    in_place: None,
    epilogue: None,
};

const RECURRENT: Kernel = Kernel {
    kind: OpKind::Recurrent,
    run: |p, ins, outs, ws, par| recurrent::run_recurrent(&read_params(p)?, ins, outs, ws, par),
    workspace: recurrent::recurrent_workspace_bytes,
    work: cost::recurrent,
    dtypes: DTypes::F32,
    in_place: None,
    epilogue: None,
};

// Pooling and normalization.

const POOL: Kernel = Kernel {
    kind: OpKind::Pool,
    run: |p, ins, outs, _, _| pool::run_pool(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::pool,
    // Max pooling also on int8 / uint8.
    dtypes: DTypes::F32_HALVES.with(DTypes::of(&[DType::I8, DType::U8])),
    in_place: None,
    epilogue: None,
};

const GLOBAL_POOL: Kernel = Kernel {
    kind: OpKind::GlobalPool,
    run: |p, ins, outs, _, _| pool::run_global_pool(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_input,
    dtypes: DTypes::F32_HALVES,
    in_place: None,
    epilogue: None,
};

const LRN: Kernel = Kernel {
    kind: OpKind::Lrn,
    run: |p, ins, outs, _, _| norm::run_lrn(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::four_per_input,
    dtypes: DTypes::FLOAT,
    in_place: None,
    epilogue: None,
};

const BATCH_NORM: Kernel = Kernel {
    kind: OpKind::BatchNorm,
    run: |p, ins, outs, _, _| norm::run_batch_norm(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::FLOAT,
    in_place: None,
    epilogue: EPILOGUE,
};

const INSTANCE_NORM: Kernel = Kernel {
    kind: OpKind::InstanceNorm,
    run: |p, ins, outs, _, _| norm::run_instance_norm(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::four_per_input,
    dtypes: DTypes::FLOAT,
    in_place: None,
    // The kernel applies `act` too, but epilogue fusion has never targeted it.
    epilogue: None,
};

const LAYER_NORM: Kernel = Kernel {
    kind: OpKind::LayerNorm,
    run: |p, ins, outs, _, _| layer_norm::run_layer_norm(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::six_per_input,
    dtypes: DTypes::F32_HALVES,
    in_place: None,
    // The kernel applies `act` too, but epilogue fusion has never targeted it.
    epilogue: None,
};

const SOFTMAX: Kernel = Kernel {
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

const REDUCE: Kernel = Kernel {
    kind: OpKind::Reduce,
    run: |p, ins, outs, _, _| reduce::run_reduce(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_input,
    // ReduceMax / ReduceMin also on bool.
    dtypes: DTypes::NUMERIC.with(DTypes::of(&[DType::Bool])),
    in_place: None,
    epilogue: None,
};

const ARG_REDUCE: Kernel = Kernel {
    kind: OpKind::ArgReduce,
    run: |p, ins, outs, _, _| reduce::run_arg_reduce(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_input,
    // The output is the indices.
    dtypes: DTypes::of(&[DType::I64]),
    in_place: None,
    epilogue: None,
};

const TOP_K: Kernel = Kernel {
    kind: OpKind::TopK,
    run: |p, ins, outs, _, _| ordered::run_top_k(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::top_k,
    // Output 0 is the values (output 1 the i64 indices).
    dtypes: DTypes::NUMERIC,
    in_place: None,
    epilogue: None,
};

const CUMULATIVE: Kernel = Kernel {
    kind: OpKind::Cumulative,
    run: |p, ins, outs, _, _| ordered::run_cumulative(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::input_and_output,
    dtypes: DTypes::NUMERIC,
    in_place: None,
    epilogue: None,
};

// Data movement.

const TRANSPOSE: Kernel = Kernel {
    kind: OpKind::Transpose,
    run: |p, ins, outs, _, _| transpose::run_transpose(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const REORDER: Kernel = Kernel {
    kind: OpKind::Reorder,
    run: |p, ins, outs, _, _| nchwc::run_reorder(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::F32,
    in_place: None,
    epilogue: None,
};

const SLICE: Kernel = Kernel {
    kind: OpKind::Slice,
    run: |p, ins, outs, _, _| slice::run_slice(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::selection,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const CONCAT: Kernel = Kernel {
    kind: OpKind::Concat,
    run: |p, ins, outs, _, _| concat::run_concat(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const SPLIT: Kernel = Kernel {
    kind: OpKind::Split,
    run: |p, ins, outs, _, _| concat::run_split(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const GATHER: Kernel = Kernel {
    kind: OpKind::Gather,
    run: |p, ins, outs, _, _| gather::run_gather(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::selection,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const PAD: Kernel = Kernel {
    kind: OpKind::Pad,
    run: |p, ins, outs, _, _| pad::run_pad(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const COPY: Kernel = Kernel {
    kind: OpKind::Copy,
    run: |_, ins, outs, _, _| copy::run_copy(ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const EXPAND: Kernel = Kernel {
    kind: OpKind::Expand,
    run: |_, ins, outs, _, _| copy::run_expand(ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const TILE: Kernel = Kernel {
    kind: OpKind::Tile,
    run: |_, ins, outs, _, _| copy::run_tile(ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const GATHER_ELEMENTS: Kernel = Kernel {
    kind: OpKind::GatherElements,
    run: |p, ins, outs, _, _| indexing::run_gather_elements(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::selection,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const GATHER_ND: Kernel = Kernel {
    kind: OpKind::GatherNd,
    run: |p, ins, outs, _, _| indexing::run_gather_nd(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::selection,
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const SCATTER_ELEMENTS: Kernel = Kernel {
    kind: OpKind::ScatterElements,
    run: |p, ins, outs, _, _| indexing::run_scatter_elements(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::input_and_output,
    // Any type without a reduction; Add/Mul/Max/Min on the numeric ones.
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const SCATTER_ND: Kernel = Kernel {
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

const RESIZE: Kernel = Kernel {
    kind: OpKind::Resize,
    run: |p, ins, outs, ws, _| resize::run_resize_with(&read_params(p)?, ins, outs, ws),
    workspace: |p, _, outs| resize::resize_workspace_bytes(p, outs),
    work: cost::per_output,
    // Nearest on any type; linear and cubic on f32.
    dtypes: DTypes::ANY,
    in_place: None,
    epilogue: None,
};

const GRID_SAMPLE: Kernel = Kernel {
    kind: OpKind::GridSample,
    run: |p, ins, outs, _, _| grid_sample::run_grid_sample(&read_params(p)?, ins, outs),
    workspace: no_workspace,
    work: cost::per_output,
    dtypes: DTypes::FLOAT,
    in_place: None,
    epilogue: None,
};

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use ge_runtime::format::{
        Activation, BinaryParams, ConvParams, Element, GemmParams, NormParams, UnaryParams,
    };

    use super::super::KernelError;
    use super::*;
    use crate::threads::Serial;

    fn shape(d: &[usize]) -> Shape {
        Shape::new(d).unwrap()
    }

    fn tref<'a, T: Element>(d: &[usize], v: &'a [T]) -> TensorRef<'a> {
        TensorRef {
            dtype: T::DTYPE,
            shape: shape(d),
            data: bytemuck::cast_slice(v),
        }
    }

    fn tmut<'a, T: Element>(d: &[usize], v: &'a mut [T]) -> TensorMut<'a> {
        TensorMut {
            dtype: T::DTYPE,
            shape: shape(d),
            data: bytemuck::cast_slice_mut(v),
        }
    }

    fn unary_ops() -> impl Iterator<Item = UnaryOp> {
        (0..=255).filter_map(UnaryOp::from_u32)
    }

    fn binary_ops() -> impl Iterator<Item = BinaryOp> {
        (0..=255).filter_map(BinaryOp::from_u32)
    }

    /// `alpha`/`beta` that make `op` a meaningful activation (Clip's bounds, …).
    fn activation(op: UnaryOp) -> Activation {
        let (alpha, beta) = match op {
            UnaryOp::Clip => (-0.5, 0.75),
            UnaryOp::HardSigmoid => (0.2, 0.5),
            UnaryOp::Selu => (1.67, 1.05),
            UnaryOp::Gelu => (0.0, 0.0),
            _ => (0.1, 0.0),
        };
        Activation {
            op: op as u32,
            alpha,
            beta,
        }
    }

    #[test]
    fn every_kind_has_its_entry() {
        let decoded: Vec<OpKind> = (0..=u16::MAX).filter_map(OpKind::from_u16).collect();
        assert_eq!(decoded.len(), OpKind::ALL.len());
        for &kind in &decoded {
            assert!(OpKind::ALL.contains(&kind));
            let k = kernel(kind);
            assert_eq!(k.kind, kind, "{} has another kind's entry", kind.name());
            assert_ne!(
                k.dtypes,
                DTypes::NONE,
                "{} takes no element type",
                kind.name()
            );
            if let Some(ip) = k.in_place {
                assert_ne!(ip.dtypes, DTypes::NONE);
                assert!(ip.dtypes.is_subset(k.dtypes), "{}", kind.name());
            }
            if let Some(e) = k.epilogue {
                assert_ne!(e.dtypes, DTypes::NONE);
                assert!(e.dtypes.is_subset(k.dtypes), "{}", kind.name());
                assert!(unary_ops().any(e.activation), "{}", kind.name());
            }
        }
    }

    #[test]
    fn in_place_kinds_are_the_ones_the_format_allows() {
        // The loader (`ge_runtime::Model`) accepts `TaskDesc::in_place` for the kinds of
        // `OpKind::runs_in_place` only: the registry must offer exactly those.
        for &kind in OpKind::ALL {
            assert_eq!(
                kernel(kind).in_place.is_some(),
                kind.runs_in_place(),
                "{}",
                kind.name()
            );
        }
    }

    #[test]
    fn in_place_inputs_are_the_ones_the_in_place_kernels_run() {
        let x = [-1.5f32, -0.25, 0.5, 2.0, 3.0, -4.0];
        let b = [2.0f32, -1.0, 0.5];
        let f32s = [DType::F32, DType::F32];
        // Unary: input 0 of a one-input task, for every op.
        let k = kernel(OpKind::Unary);
        for op in unary_ops() {
            let p = UnaryParams {
                act: activation(op),
            };
            let p = bytemuck::bytes_of(&p);
            assert_eq!(k.in_place_inputs(p, &f32s[..1], DType::F32), &[0]);
            assert!(k.in_place_inputs(p, &f32s, DType::F32).is_empty());
            assert!(k.in_place_inputs(p, &[DType::F64], DType::F64).is_empty());
            let mut y = x;
            let r = in_place::run_in_place(OpKind::Unary, p, 0, &[None], &mut [tmut(&[6], &mut y)]);
            assert_eq!(r, Ok(()), "{op:?}");
        }
        // Binary: inputs 0 and 1 exactly for the ops the in-place kernel runs.
        let k = kernel(OpKind::Binary);
        for op in binary_ops() {
            let p = BinaryParams {
                op: op as u32,
                act: Activation::default(),
            };
            let p = bytemuck::bytes_of(&p);
            let inputs = k.in_place_inputs(p, &f32s, DType::F32);
            assert!(inputs.is_empty() || inputs == [0, 1], "{op:?}");
            assert!(k.in_place_inputs(p, &f32s[..1], DType::F32).is_empty());
            assert!(
                k.in_place_inputs(p, &[DType::F32, DType::I32], DType::F32)
                    .is_empty()
            );
            for slot in 0..2 {
                let mut y = x;
                let ins = if slot == 0 {
                    [None, Some(tref(&[3], &b))]
                } else {
                    [Some(tref(&[3], &b)), None]
                };
                let r = in_place::run_in_place(
                    OpKind::Binary,
                    p,
                    slot,
                    &ins,
                    &mut [tmut(&[2, 3], &mut y)],
                );
                assert_eq!(r.is_ok(), inputs.contains(&slot), "{op:?} input {slot}");
            }
        }
    }

    /// Parameter record, f32 inputs (dims, values) and output dims.
    type SampleTask = (Vec<u8>, Vec<(Vec<usize>, Vec<f32>)>, Vec<usize>);

    /// A small task of an epilogue-capable kind with activation `act`: its parameter record,
    /// f32 inputs and output shape.
    fn epilogue_task(kind: OpKind, act: Activation) -> SampleTask {
        let ramp = |n: usize| -> Vec<f32> { (0..n).map(|i| i as f32 * 0.37 - 1.3).collect() };
        let conv = |transpose: bool| {
            let mut p: ConvParams = bytemuck::Zeroable::zeroed();
            p.spatial = 2;
            p.group = 1;
            p.kernel = [2, 2, 1];
            p.stride = [1, 1, 1];
            p.dilation = [1, 1, 1];
            p.act = act;
            let (x, y) = if transpose {
                (std::vec![1, 1, 2, 2], std::vec![1, 1, 3, 3])
            } else {
                (std::vec![1, 1, 3, 3], std::vec![1, 1, 2, 2])
            };
            let xn = x.iter().product();
            let inputs = std::vec![
                (x, ramp(xn)),
                (std::vec![1, 1, 2, 2], ramp(4)),
                (std::vec![1], std::vec![0.1])
            ];
            (bytemuck::bytes_of(&p).to_vec(), inputs, y)
        };
        match kind {
            OpKind::Conv => conv(false),
            OpKind::ConvTranspose => conv(true),
            OpKind::Gemm | OpKind::GemmPacked => {
                // A 3 × 2 B in panel order is row-major (one K block, one narrow panel).
                let p = GemmParams {
                    trans_a: 0,
                    trans_b: if kind == OpKind::GemmPacked {
                        ge_runtime::format::GEMM_B_PANELS
                    } else {
                        0
                    },
                    alpha: 1.0,
                    beta: 0.0,
                    act,
                };
                let inputs = std::vec![(std::vec![2, 3], ramp(6)), (std::vec![3, 2], ramp(6))];
                (bytemuck::bytes_of(&p).to_vec(), inputs, std::vec![2, 2])
            }
            OpKind::GemmW8 => {
                let p = GemmParams {
                    trans_a: 0,
                    trans_b: 0,
                    alpha: 1.0,
                    beta: 1.0,
                    act,
                };
                // B's values are whole numbers: run_f32 stores GemmW8's B as int8.
                let b: Vec<f32> = (0..6).map(|i| (i as f32 - 2.0) * 7.0).collect();
                let inputs = std::vec![
                    (std::vec![2, 3], ramp(6)),
                    (std::vec![3, 2], b),
                    (std::vec![2], std::vec![0.05, 0.125]),
                    (std::vec![2], std::vec![0.3, -0.2]),
                ];
                (bytemuck::bytes_of(&p).to_vec(), inputs, std::vec![2, 2])
            }
            OpKind::Binary | OpKind::Variadic => {
                let p = BinaryParams {
                    op: BinaryOp::Add as u32,
                    act,
                };
                let inputs = std::vec![(std::vec![2, 3], ramp(6)), (std::vec![2, 3], ramp(6))];
                (bytemuck::bytes_of(&p).to_vec(), inputs, std::vec![2, 3])
            }
            OpKind::BatchNorm => {
                let p = NormParams { epsilon: 1e-5, act };
                let c = |v: [f32; 2]| (std::vec![2], v.to_vec());
                let inputs = std::vec![
                    (std::vec![1, 2, 2, 1], ramp(4)),
                    c([1.5, 0.5]),
                    c([0.25, -0.5]),
                    c([0.1, -0.2]),
                    c([1.0, 2.0]),
                ];
                (
                    bytemuck::bytes_of(&p).to_vec(),
                    inputs,
                    std::vec![1, 2, 2, 1],
                )
            }
            _ => panic!(
                "{} offers an epilogue: give it a sample task here",
                kind.name()
            ),
        }
    }

    /// Runs `kind`'s kernel through its entry on f32 inputs; returns output 0.
    fn run_f32(
        kind: OpKind,
        params: &[u8],
        inputs: &[(Vec<usize>, Vec<f32>)],
        out: &[usize],
    ) -> Vec<f32> {
        let k = kernel(kind);
        // GemmW8's B (input 1) is int8.
        let int8: Vec<i8> = match (kind, inputs.get(1)) {
            (OpKind::GemmW8, Some((_, v))) => v.iter().map(|&x| x as i8).collect(),
            _ => Vec::new(),
        };
        let ins: Vec<Option<TensorRef<'_>>> = inputs
            .iter()
            .enumerate()
            .map(|(i, (d, v))| {
                Some(if i == 1 && !int8.is_empty() {
                    tref(d, &int8)
                } else {
                    tref(d, v)
                })
            })
            .collect();
        let in_shapes: Vec<Option<Shape>> = ins.iter().map(|t| t.map(|t| t.shape)).collect();
        let mut ws = std::vec![0u64; (k.workspace)(params, &in_shapes, &[shape(out)]).div_ceil(8)];
        let mut y = std::vec![0f32; out.iter().product()];
        let r = (k.run)(
            params,
            &ins,
            &mut [tmut(out, &mut y)],
            bytemuck::cast_slice_mut(&mut ws),
            &Serial,
        );
        assert_eq!(r, Ok(()), "{}", kind.name());
        y
    }

    #[test]
    fn epilogue_activations_match_a_separate_unary_task() {
        for &kind in OpKind::ALL {
            let Some(e) = kernel(kind).epilogue else {
                continue;
            };
            for op in unary_ops().filter(|&op| (e.activation)(op)) {
                let act = activation(op);
                let (plain, inputs, out) = epilogue_task(kind, Activation::default());
                let raw = run_f32(kind, &plain, &inputs, &out);
                let unary = UnaryParams { act };
                let want = run_f32(
                    OpKind::Unary,
                    bytemuck::bytes_of(&unary),
                    &[(out.clone(), raw)],
                    &out,
                );
                let (fused, _, _) = epilogue_task(kind, act);
                let got = run_f32(kind, &fused, &inputs, &out);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-6 * w.abs().max(1.0),
                        "{} + {op:?} at {i}: {g} vs {w}",
                        kind.name()
                    );
                }
            }
        }
    }

    #[test]
    fn malformed_tasks_fail_without_panicking() {
        for &kind in OpKind::ALL {
            let k = kernel(kind);
            let zeroed = std::vec![0u8; kind.params_len()];
            for params in [&[][..], &zeroed[..], &[0xff; 3][..]] {
                for (ins, outs) in [
                    (&[][..], &[][..]),
                    (&[None, Some(shape(&[0, 3]))][..], &[shape(&[2, 0, 7])][..]),
                ] {
                    (k.workspace)(params, ins, outs);
                    (k.work)(params, ins, outs);
                    assert_eq!(
                        (k.work)(params, ins, outs),
                        cost::estimate_work(kind, params, ins, outs)
                    );
                }
                let r = super::super::execute_on(kind, params, &[], &mut [], &mut [], &Serial);
                assert!(r.is_err(), "{} ran without tensors", kind.name());
            }
        }
    }

    #[test]
    fn dispatch_rejects_output_types_the_kernel_never_produces() {
        let x = [1.0f64; 4];
        let mut y = [0f64; 4];
        let p = UnaryParams {
            act: activation(UnaryOp::Relu),
        };
        // Unary takes f64; Fused (f32 only) does not.
        let ins = [Some(tref(&[4], &x))];
        let r = super::super::execute(
            OpKind::Unary,
            bytemuck::bytes_of(&p),
            &ins,
            &mut [tmut(&[4], &mut y)],
            &mut [],
        );
        assert_eq!(r, Ok(()));
        assert!(!kernel(OpKind::Fused).dtypes.contains(DType::F64));
        let zeroed = std::vec![0u8; OpKind::Fused.params_len()];
        let r = super::super::execute(
            OpKind::Fused,
            &zeroed,
            &ins,
            &mut [tmut(&[4], &mut y)],
            &mut [],
        );
        assert!(matches!(r, Err(KernelError::UnsupportedDType(_))), "{r:?}");
    }

    #[test]
    fn dtype_sets() {
        assert!(DTypes::F32.is_subset(DTypes::FLOAT));
        assert!(DTypes::FLOAT.is_subset(DTypes::NUMERIC));
        assert!(DTypes::NUMERIC.is_subset(DTypes::ANY));
        assert!(!DTypes::NUMERIC.contains(DType::F16));
        assert_eq!(DTypes::ANY.iter().count(), 13);
        assert_eq!(
            std::format!("{:?}", DTypes::FLOAT),
            r#"{"float32", "float64"}"#
        );
    }
}
