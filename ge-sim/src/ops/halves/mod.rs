//! fp16 / bf16 tasks of the kinds whose kernels compute in f32 — Conv, Gemm, GemmW8, MatMul,
//! Attention, Pool, GlobalPool, Softmax, LayerNorm, linear/cubic Resize, vector programs
//! (Fused) and the float arithmetic Binary ops (as one-op vector programs); std only:
//! firmware links none of it. Each task reads its 16-bit (or f32) operands (activations and
//! the weights the blob stores in fp16/bf16) and writes a 16-bit result, accumulating in
//! f32: it widens one slice of its operands at a time into its workspace ([`convert`]: F16C
//! on x86-64), runs the kind's f32 kernel on the slice and rounds the slice's result back to
//! nearest even. Slices are output channels by bands of output rows (Conv; whole groups when
//! grouped), output columns (Gemm, MatMul with a 2-D B), output matrices (batched MatMul),
//! heads (Attention), channel planes (pooling, Resize), normalized blocks (Softmax,
//! LayerNorm) or indices of the output's first non-unit axis (Fused), so scratch is bounded:
//! one slice (Gemm: plus the f32 copy of A; GemmW8: its activations whole) plus the f32
//! kernel's own workspace for a slice. Results are exactly the f32 kernel's on the widened
//! operands, rounded once.

pub(crate) mod attention;
pub(crate) mod binary;
pub(crate) mod conv;
pub(crate) mod convert;
pub(crate) mod fused;
pub(crate) mod gemm;
pub(crate) mod gemm_w8;
pub(crate) mod layer_norm;
pub(crate) mod matmul;
pub(crate) mod pool;
pub(crate) mod resize;
pub(crate) mod softmax;
#[cfg(test)]
mod tests;

use ge_runtime::format::{DType, OpKind, Shape, TensorMut, TensorRef};

use super::{KernelError, KernelResult, read_params};

/// f32 elements a slice aims at (1 MiB) where no kind says otherwise: large enough to keep
/// the f32 kernels' tiles full.
const CAP: usize = 1 << 18;

/// Scratch bytes a half task of `kind` needs, `None` for kinds without a half kernel (0 for
/// a malformed record: execution then fails with a parameter error).
pub fn workspace_bytes(
    kind: OpKind,
    params: &[u8],
    ins: &[Option<Shape>],
    outs: &[Shape],
) -> Option<usize> {
    workspace_levels(kind, params, ins, outs)
        .map(|levels| levels[0])
        .or_else(|| fixed_workspace_bytes(kind, params, ins, outs))
}

/// The workspace sizes a half task of `kind` can run with, largest first, for the kinds
/// whose kernel adapts to the workspace it is given (Conv); `None` for the others.
pub fn workspace_levels(
    kind: OpKind,
    params: &[u8],
    ins: &[Option<Shape>],
    outs: &[Shape],
) -> Option<[usize; super::WORKSPACE_LEVELS]> {
    match kind {
        OpKind::Conv => Some(
            read_params(params).map_or([0; super::WORKSPACE_LEVELS], |p| {
                conv::workspace_levels(&p, ins, outs)
            }),
        ),
        _ => None,
    }
}

/// Scratch bytes of the half kinds with one workspace size.
fn fixed_workspace_bytes(
    kind: OpKind,
    params: &[u8],
    ins: &[Option<Shape>],
    outs: &[Shape],
) -> Option<usize> {
    Some(match kind {
        OpKind::Gemm => read_params(params).map_or(0, |p| gemm::workspace(&p, ins, outs)),
        OpKind::MatMul => matmul::workspace(ins, outs),
        OpKind::GemmW8 => gemm_w8::workspace(ins, outs),
        OpKind::Attention => attention::workspace(ins, outs),
        OpKind::LayerNorm => layer_norm::workspace(params, ins, outs),
        OpKind::Resize => resize::workspace(params, ins, outs),
        OpKind::Pool => pool::workspace(false, params, ins, outs),
        OpKind::GlobalPool => pool::workspace(true, params, ins, outs),
        OpKind::Softmax => softmax::workspace(params, ins, outs),
        OpKind::Fused | OpKind::Binary => fused::workspace(ins, outs),
        _ => return None,
    })
}

/// Bytes of the inner kernel's workspace, rounded so the f32 runs after it stay 64-byte
/// aligned.
fn inner_bytes(bytes: usize) -> usize {
    bytes.next_multiple_of(64)
}

/// Total workspace bytes: the inner kernel's, then `runs` f32 runs.
fn total_bytes(inner: usize, runs: &[usize]) -> usize {
    runs.iter().fold(inner_bytes(inner), |a, &r| {
        a.saturating_add(r.saturating_mul(4))
    })
}

/// Splits `ws` into the inner kernel's `inner` bytes and `N` f32 runs of `lens`.
fn carve<const N: usize>(
    ws: &mut [u8],
    inner: usize,
    lens: [usize; N],
) -> Result<(&mut [u8], [&mut [f32]; N]), KernelError> {
    let (head, mut rest) = ws
        .split_at_mut_checked(inner_bytes(inner))
        .ok_or(KernelError::Workspace)?;
    let mut runs: [&mut [f32]; N] = core::array::from_fn(|_| <&mut [f32]>::default());
    for (run, len) in runs.iter_mut().zip(lens) {
        let bytes = len.checked_mul(4).ok_or(KernelError::Workspace)?;
        let (r, tail) = core::mem::take(&mut rest)
            .split_at_mut_checked(bytes)
            .ok_or(KernelError::Workspace)?;
        *run = bytemuck::try_cast_slice_mut(r).map_err(|_| KernelError::Workspace)?;
        rest = tail;
    }
    Ok((head, runs))
}

/// Widens `dst.len()` elements of `t` from element `start`.
fn widen_at(t: &TensorRef<'_>, start: usize, dst: &mut [f32], fast: bool) -> KernelResult {
    let size = t.dtype.size();
    let src = start
        .checked_mul(size)
        .and_then(|a| Some((a, a.checked_add(dst.len().checked_mul(size)?)?)))
        .and_then(|(a, b)| t.data.get(a..b))
        .ok_or(KernelError::Shape("tensor data shorter than its shape"))?;
    convert::widen(t.dtype, src, dst, fast)
}

/// Narrows `src` into `y` from element `start`.
fn narrow_at(src: &[f32], y: &mut TensorMut<'_>, start: usize, fast: bool) -> KernelResult {
    let size = y.dtype.size();
    let dtype = y.dtype;
    let dst = start
        .checked_mul(size)
        .and_then(|a| Some((a, a.checked_add(src.len().checked_mul(size)?)?)))
        .and_then(|(a, b)| y.data.get_mut(a..b))
        .ok_or(KernelError::Shape("tensor data shorter than its shape"))?;
    convert::narrow(dtype, src, dst, fast)
}

/// An f32 view of `data` shaped `dims`.
fn f32_ref<'a>(data: &'a [f32], dims: &[usize]) -> Result<TensorRef<'a>, KernelError> {
    Ok(TensorRef {
        dtype: DType::F32,
        shape: Shape::new(dims).ok_or(KernelError::Shape("rank"))?,
        data: bytemuck::cast_slice(data),
    })
}

/// A writable f32 view of `data` shaped `dims`.
fn f32_mut<'a>(data: &'a mut [f32], dims: &[usize]) -> Result<TensorMut<'a>, KernelError> {
    Ok(TensorMut {
        dtype: DType::F32,
        shape: Shape::new(dims).ok_or(KernelError::Shape("rank"))?,
        data: bytemuck::cast_slice_mut(data),
    })
}

/// `dims` with dim `i` replaced by `v`, as a fixed array and its rank.
fn with_dim(s: &Shape, i: usize, v: usize) -> ([usize; ge_runtime::format::MAX_RANK], usize) {
    let mut d = [0usize; ge_runtime::format::MAX_RANK];
    let r = s.rank();
    d[..r].copy_from_slice(s.dims());
    if i < r {
        d[i] = v;
    }
    (d, r)
}

/// Workspace bytes of a kernel slicing blocks from `axis` on ([`blocks`]): the slice's
/// input and output, then the `extra` runs (whole).
fn blocks_workspace(
    axis: Option<usize>,
    ins: &[Option<Shape>],
    outs: &[Shape],
    extra: &[usize],
) -> usize {
    let (Some(axis), Some(Some(x)), Some(y)) = (axis, ins.first(), outs.first()) else {
        return 0;
    };
    blocks(axis, x, y).map_or(0, |[_, block, chunk]| {
        total_bytes(0, &[chunk * block, chunk * block]).saturating_add(total_bytes(0, extra))
    })
}

/// Blocks normalized from `axis` on (the indices before it, each its own contiguous block),
/// elements per block and blocks per slice; `None` when `x` and `y` differ or the axis is
/// out of range.
fn blocks(axis: usize, x: &Shape, y: &Shape) -> Option<[usize; 3]> {
    if axis >= x.rank().max(1) || x.dims() != y.dims() {
        return None;
    }
    let outer = x.dims()[..axis].iter().product::<usize>();
    if outer == 0 {
        return None;
    }
    let block = x.numel() / outer;
    let chunk = (CAP / block.saturating_mul(2).max(1)).clamp(1, outer);
    Some([outer, block, chunk])
}

/// The dims of a slice of `pc` indices of the axes before `axis` (blocks normalized from
/// it, planes a resize leaves alone): they fold into the first, so `axis` keeps its index.
fn block_dims(s: &Shape, axis: usize, pc: usize) -> ([usize; ge_runtime::format::MAX_RANK], usize) {
    let (mut dims, r) = with_dim(s, 0, s.dims().first().copied().unwrap_or(1));
    if axis > 0 {
        dims[0] = pc;
        dims[1..axis].fill(1);
    }
    (dims, r)
}
