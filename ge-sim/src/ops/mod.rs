//! Kernels: real results on the host. One file per family; every kind's kernel, workspace
//! size, cost estimate and capabilities are its entry in the [`registry`], through which
//! [`execute`] dispatches (the entry decodes the parameter record). Kernels never allocate:
//! scratch space comes from the planned workspace tensor (size from [`workspace_bytes`]).

pub mod attention;
pub mod binary;
pub mod broadcast;
pub mod cast;
pub mod concat;
pub mod conv;
pub mod copy;
pub mod fused;
pub mod gather;
pub mod gemm;
pub mod gemm_i8;
pub mod grid_sample;
#[cfg(feature = "std")]
pub mod halves;
pub mod in_place;
pub mod indexing;
pub mod layer_norm;
pub(crate) mod logistic;
pub mod nchwc;
pub mod norm;
pub mod ordered;
pub mod pad;
pub mod pool;
pub mod qlinear_add;
pub mod real;
pub mod recurrent;
pub mod reduce;
pub mod registry;
pub mod resize;
pub mod set;
pub mod slice;
pub mod softmax;
#[cfg(test)]
pub(crate) mod test_util;
pub mod tflite;
pub mod transpose;
pub mod unary;
pub mod vmath;

use ge_runtime::format::{DType, KernelId, KernelVariant, OpKind, Shape, TensorMut, TensorRef};

pub use ge_runtime::KernelError;

/// Result of a kernel. Kernels report no work: what a task costs comes from its shapes alone
/// ([`registry::estimate_work`]), so the compiler's prediction and the device's charge
/// are the same figure.
pub type KernelResult = Result<(), KernelError>;

pub use ge_runtime::format::read_params;

/// Input `i`, which must be present.
pub fn input<'a, 'b>(
    ins: &'b [Option<TensorRef<'a>>],
    i: usize,
    what: &'static str,
) -> Result<&'b TensorRef<'a>, KernelError> {
    ins.get(i)
        .and_then(|t| t.as_ref())
        .ok_or(KernelError::MissingTensor(what))
}

/// Output `i`, which must be present.
pub fn output<'a, 'b>(
    outs: &'b mut [TensorMut<'a>],
    i: usize,
    what: &'static str,
) -> Result<&'b mut TensorMut<'a>, KernelError> {
    outs.get_mut(i).ok_or(KernelError::MissingTensor(what))
}

/// Runs one task's kernel on the calling thread.
pub fn execute(
    kind: OpKind,
    params: &[u8],
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    execute_on(kind, params, ins, outs, ws, &crate::threads::Serial)
}

/// Runs one task's kernel, splitting the kernels that can be split between the slots of
/// `par` (results are bitwise the same whatever `par`). Dispatches through the kind's
/// [`registry`] entry on output 0's element type, which first rejects an element type the
/// kernel never takes.
pub fn execute_on(
    kind: OpKind,
    params: &[u8],
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn crate::threads::Parallel,
) -> KernelResult {
    let dtype = outs.first().map_or(DType::U8, |y| y.dtype);
    let id = KernelId::new(kind, dtype, KernelVariant::Plain);
    let entry = set::registry_entry(id).ok_or(KernelError::BadParams("unknown op kind"))?;
    run_entry(&entry, params, None, ins, outs, ws, par)
}

/// Runs a task through a kernel-set entry: out of place, or (`in_place = Some(k)`) with
/// input `k` updated in place as output 0. Rejects first an output element type the
/// kernel never takes, and a task whose variant is not the entry's.
pub fn run_entry(
    entry: &set::KernelEntry,
    params: &[u8],
    in_place: Option<usize>,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn crate::threads::Parallel,
) -> KernelResult {
    if outs
        .first()
        .is_some_and(|y| !entry.dtypes.contains(y.dtype))
    {
        return Err(KernelError::UnsupportedDType(
            "the kernel does not produce this element type",
        ));
    }
    // Outputs of no elements: nothing to compute. Kernels walk their outer axes before the
    // inner ones, so an LRN of shape [65536, 2^31 − 1, 0, 3] looped 1.4·10^14 times.
    if in_place.is_none() && !outs.is_empty() && outs.iter().all(|y| y.shape.numel() == 0) {
        return Ok(());
    }
    match (entry.run, in_place) {
        (set::KernelFn::Run(run), None) => run(params, ins, outs, ws, par),
        (set::KernelFn::InPlace(run), Some(k)) => run(params, k, ins, outs),
        _ => Err(KernelError::BadParams(
            "the task's in-place flag differs from its kernel's",
        )),
    }
}

/// Whether a task's outputs hold no elements, so it computes nothing: [`run_entry`] skips
/// its kernel and it needs no workspace (a row buffer sized by the other axes planned 8 GB
/// for an fp16 `[0, 1, 8, 2^31 − 1]`).
fn no_elements(outs: &[Shape]) -> bool {
    !outs.is_empty() && outs.iter().all(|s| s.numel() == 0)
}

/// Scratch bytes a task needs, decided at compile time from its kind, params and shapes
/// (the kind's [`registry`] entry). Kinds that need none return 0; a malformed record also
/// returns 0 (execution then fails with a parameter error instead).
pub fn workspace_bytes(
    kind: OpKind,
    params: &[u8],
    in_shapes: &[Option<Shape>],
    out_shapes: &[Shape],
) -> usize {
    (registry::kernel(kind).workspace)(params, in_shapes, out_shapes)
}

/// Workspace sizes a kernel may be planned with ([`workspace_levels_for`]).
pub const WORKSPACE_LEVELS: usize = 6;

/// The workspace sizes a task's kernel can run with, largest (its preferred,
/// [`workspace_bytes_for`]) first. A kernel with one size repeats it; an elastic one (the
/// half conv: slices of output channels) takes the largest of its sizes that fits the
/// workspace it is given, so the planner may give it less where the arena peaks (the half
/// conv: slices of output channels; the int8 conv: blocks of positions, depthwise bands;
/// the f32 conv: bands of rows, packing slots).
pub fn workspace_levels_for(
    kind: OpKind,
    params: &[u8],
    in_shapes: &[Option<Shape>],
    out_shapes: &[Shape],
    dtype: DType,
) -> [usize; WORKSPACE_LEVELS] {
    if no_elements(out_shapes) {
        return [0; WORKSPACE_LEVELS];
    }
    #[cfg(feature = "std")]
    if matches!(dtype, DType::F16 | DType::Bf16)
        && let Some(levels) = halves::workspace_levels(kind, params, in_shapes, out_shapes)
    {
        return levels;
    }
    if let Some(levels) =
        gemm_i8::conv_epilogue::workspace_levels_of(kind, params, in_shapes, out_shapes)
    {
        return levels;
    }
    if kind == OpKind::Conv
        && dtype == DType::F32
        && let Ok(p) = ge_runtime::format::read_params::<ge_runtime::format::ConvParams>(params)
        && let Some(levels) = conv::conv_workspace_levels(&p, in_shapes, out_shapes)
    {
        return levels;
    }
    [workspace_bytes_for(kind, params, in_shapes, out_shapes, dtype); WORKSPACE_LEVELS]
}

/// [`workspace_bytes`] of a task whose output 0 is of `dtype`: the [`halves`] kernels plan
/// their own (std only; without it no half task runs).
pub fn workspace_bytes_for(
    kind: OpKind,
    params: &[u8],
    in_shapes: &[Option<Shape>],
    out_shapes: &[Shape],
    dtype: DType,
) -> usize {
    if no_elements(out_shapes) {
        return 0;
    }
    #[cfg(feature = "std")]
    if matches!(dtype, DType::F16 | DType::Bf16)
        && let Some(bytes) = halves::workspace_bytes(kind, params, in_shapes, out_shapes)
    {
        return bytes;
    }
    let _ = dtype;
    workspace_bytes(kind, params, in_shapes, out_shapes)
}
