//! The kernel registry: one entry per [`OpKind`] holding everything the device and the
//! compiler need to know about that kind's kernel — how to run it, the scratch space it
//! needs, the work the cost model charges for it, and what it can do (element types, running
//! in place, fused epilogue activations).
//!
//! [`kernel`] matches every kind without a wildcard, so a kind added to
//! `ge_runtime::format::ops` does not compile until it has an entry here; nothing falls back
//! to a default cost, workspace or capability. The device dispatches through the entries
//! ([`super::execute_on`], [`super::workspace_bytes`], [`estimate_work`],
//! [`super::in_place::run_in_place`]) and the compiler asks them which tasks may run in place
//! and which activations a task may apply in its epilogue.

mod entries;

pub use entries::*;

use core::fmt;

use ge_runtime::format::{
    BinaryOp, BinaryParams, ConvParams, DType, OpKind, QConvFusedParams, QConvParams, QGemmParams,
    Shape, TensorMut, TensorRef, UnaryOp,
};

use super::{
    KernelResult, attention, binary, cast, concat, conv, copy, fused, gather, gemm, gemm_i8,
    grid_sample, in_place, indexing, layer_norm, nchwc, norm, ordered, pad, pool, read_params,
    recurrent, reduce, resize, slice, softmax, tflite, transpose, unary,
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
        OpKind::QBinary => &QBINARY,
        OpKind::QSoftmax => &QSOFTMAX,
        OpKind::QMean => &QMEAN,
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

/// The work a task does, from its kind, parameters and shapes alone, so the compiler can
/// predict a run and the device charges exactly the same. O(rank). Kernels report no work
/// of their own: this is the only figure, taken from the kind's registry entry
/// ([`Kernel::work`], through [`WORK`]), which names one of [`crate::cost`]'s
/// estimators.
pub fn estimate_work(kind: OpKind, params: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> Work {
    match WORK.get(kind as usize) {
        Some(Some(work)) => work(params, ins, outs),
        _ => Work::default(),
    }
}

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

#[cfg(test)]
mod tests;
