//! The target as the compiler sees it: every fact about the simulated device's kernels that
//! `ge-build` plans, fuses, packs or folds by, in one place. The compiler asks these
//! questions and nothing else of [`crate::ops`] and [`crate::arch`] (the public run API —
//! [`crate::SimDevice`], [`crate::Profile`], [`crate::race`] — aside), so a kernel can move or
//! change inside `ops/` and `arch/` without the compiler following it, and the answers the
//! two sides act on cannot drift: each is the kernel's own rule, re-exported or asked of its
//! registry entry.

use ge_runtime::format::{Activation, DType, OpKind, ResizeParams, UnaryOp};

use crate::ops::registry::kernel;

// Planning: workspaces (the kernels' own sizing rules).
pub use crate::ops::{WORKSPACE_LEVELS, workspace_bytes_for, workspace_levels_for};

// Constant folding: a task run on the host exactly as the device runs it.
pub use crate::ops::execute;

// Parameter records the compiler writes as the kernels read them.
pub use crate::ops::gemm::PLAIN_GEMM;

// Fusion: what a vector program (the `Fused` kernel) can hold, and its tile.
pub use crate::ops::fused::{TILE as FUSED_TILE, fusable_binary_task, fusable_unary};

// Weight packing: the int8 GEMM's panel order and its compile-time folds.
pub use crate::ops::gemm_i8::conv::{
    QuadLayout, depthwise_on_plane, pack_quads, quad_layout, quads_len,
};
pub use crate::ops::gemm_i8::{Requant, fold_zero_points, pack_b, packed_len};
pub use crate::ops::tflite::params as tflite;

/// The inputs a task of `kind` (with `params`) may overwrite in place, when its output and
/// all `input_dtypes` are element types its in-place kernel takes (empty otherwise).
pub fn in_place_inputs(
    kind: OpKind,
    params: &[u8],
    input_dtypes: &[DType],
    output: DType,
) -> &'static [usize] {
    kernel(kind).in_place_inputs(params, input_dtypes, output)
}

/// Whether `kind` runs in place at all (before its inputs' types are known).
pub fn runs_in_place(kind: OpKind) -> bool {
    kernel(kind).in_place.is_some()
}

/// True when the kernel of `kind` applies `act` to a result of element type `dtype` in its
/// epilogue.
pub fn fuses_activation(kind: OpKind, act: UnaryOp, dtype: DType) -> bool {
    kernel(kind).fuses_activation(act, dtype)
}

/// True when the kernel of `kind` reads and writes `dtype` itself.
pub fn takes_dtype(kind: OpKind, dtype: DType) -> bool {
    kernel(kind).dtypes.contains(dtype)
}

/// True when the GEMM and convolution register tiles apply `act` in registers (so a Conv's
/// prologue or a blocked Conv's activation costs no pass of its own).
pub fn tile_applies(act: &Activation) -> bool {
    crate::ops::gemm::tile_act(act).is_some()
}

/// Whether Resize with `p` leaves axis `a` (of `inp` → `out` elements) as it is, so a
/// blocked layout can pass through it.
pub fn resize_leaves_axis(p: &ResizeParams, a: usize, inp: usize, out: usize) -> bool {
    crate::ops::resize::leaves_axis(p, a, inp, out)
}

/// True when the host kernels this process runs have the SIMD paths that make the blocked
/// channel layout pay (AVX2 or AVX-512; `GE_ISA` honoured).
pub fn host_has_blocked_kernels() -> bool {
    crate::arch::kernels::blocked_tile_ends(crate::arch::isa::isa())
}
