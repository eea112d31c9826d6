//! Half vector programs (autofused elementwise chains): slices of the output along its
//! first non-unit axis, each input's matching slice (or, where it broadcasts along that
//! axis, the whole input) widened, the f32 interpreter run on the slice and its result
//! rounded back once. Inputs may mix f32 and 16-bit tensors.

use ge_runtime::format::{FusedParams, MAX_FUSED_REGS, MAX_RANK, Shape, TensorMut, TensorRef};

use super::super::fused::run_fused;
use super::super::{KernelError, KernelResult, output};
use super::{CAP, convert, f32_mut, f32_ref, inner_bytes, narrow_at, widen_at};

/// Runs of workspace: one per input (at most the program's registers) and the output's.
const N: usize = MAX_FUSED_REGS + 1;

/// The slicing of one program: the output's first non-unit axis, its extent, elements per
/// index of it and indices per slice.
struct Split {
    axis: usize,
    extent: usize,
    block: usize,
    chunk: usize,
}

fn split(y: &Shape) -> Split {
    let dims = y.dims();
    let axis = dims.iter().position(|&d| d > 1).unwrap_or(0);
    let extent = dims.get(axis).copied().unwrap_or(1);
    let block = dims
        .get(axis + 1..)
        .map_or(1, |d| d.iter().product::<usize>());
    let chunk = (CAP / block.max(1)).clamp(1, extent.max(1));
    Split {
        axis,
        extent,
        block,
        chunk,
    }
}

/// Input `x`'s dim along the output's axis (1 when `x` has fewer dims: it broadcasts).
fn dim_along(x: &Shape, y: &Shape, axis: usize) -> usize {
    let lead = y.rank() - x.rank().min(y.rank());
    if axis < lead { 1 } else { x.dim(axis - lead) }
}

/// f32 elements of workspace per input and for the output, in order.
fn lens(ins: &[Option<Shape>], y: &Shape) -> Option<([usize; N], usize)> {
    let s = split(y);
    let mut out = [0usize; N];
    if ins.len() + 1 > out.len() {
        return None;
    }
    for (l, x) in out.iter_mut().zip(ins) {
        let x = (*x)?;
        if x.rank() > y.rank() {
            return None;
        }
        *l = if dim_along(&x, y, s.axis) == s.extent && s.extent > 1 {
            s.chunk * (x.numel() / s.extent)
        } else {
            x.numel()
        };
    }
    out[ins.len()] = s.chunk * s.block;
    Some((out, ins.len() + 1))
}

/// Workspace bytes of a half vector program; 0 when the shapes do not make one.
pub(super) fn workspace(ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    outs.first().and_then(|y| lens(ins, y)).map_or(0, |(l, n)| {
        l[..n].iter().fold(0usize, |a, &r| {
            a.saturating_add(inner_bytes(r.saturating_mul(4)))
        })
    })
}

/// Runs the program of `p` on 16-bit (or f32) inputs into the 16-bit output.
pub(crate) fn run(
    p: &FusedParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let yt = output(outs, 0, "fused output")?;
    if yt.shape.numel() == 0 {
        return Ok(());
    }
    let shapes: [Option<Shape>; N] =
        core::array::from_fn(|k| ins.get(k).and_then(|t| t.as_ref().map(|t| t.shape)));
    let n_in = ins.len().min(shapes.len());
    let (runs, n) = lens(&shapes[..n_in], &yt.shape).ok_or(KernelError::Shape("fused shapes"))?;
    let s = split(&yt.shape);
    // Carve one f32 run per input and one for the output, each 64-byte aligned.
    let mut parts: [&mut [f32]; N] = core::array::from_fn(|_| <&mut [f32]>::default());
    let mut rest = ws;
    for (part, &len) in parts.iter_mut().zip(&runs[..n]) {
        let (r, tail) = core::mem::take(&mut rest)
            .split_at_mut_checked(inner_bytes(
                len.checked_mul(4).ok_or(KernelError::Workspace)?,
            ))
            .ok_or(KernelError::Workspace)?;
        *part =
            bytemuck::try_cast_slice_mut(&mut r[..len * 4]).map_err(|_| KernelError::Workspace)?;
        rest = tail;
    }
    let (inputs, out) = parts.split_at_mut(n - 1);
    let yw = &mut *out[0];
    let fast = convert::fast();
    let mut sliced = [false; N];
    for (k, t) in ins.iter().enumerate() {
        let t = t
            .as_ref()
            .ok_or(KernelError::MissingTensor("fused input"))?;
        sliced[k] = s.extent > 1 && dim_along(&t.shape, &yt.shape, s.axis) == s.extent;
        if !sliced[k] {
            widen_at(t, 0, &mut inputs[k][..t.shape.numel()], fast)?;
        }
    }
    let mut i0 = 0;
    while i0 < s.extent.max(1) {
        let pc = s.chunk.min(s.extent.max(1) - i0);
        let mut lens = [0usize; N];
        for (k, t) in ins.iter().enumerate() {
            let t = t
                .as_ref()
                .ok_or(KernelError::MissingTensor("fused input"))?;
            lens[k] = if sliced[k] {
                let per = t.shape.numel() / s.extent;
                widen_at(t, i0 * per, &mut inputs[k][..pc * per], fast)?;
                pc * per
            } else {
                t.shape.numel()
            };
        }
        let mut views: [Option<TensorRef<'_>>; N] = [None; N];
        for (k, t) in ins.iter().enumerate() {
            let t = t
                .as_ref()
                .ok_or(KernelError::MissingTensor("fused input"))?;
            let mut d = [0usize; MAX_RANK];
            let r = t.shape.rank();
            d[..r].copy_from_slice(t.shape.dims());
            if sliced[k] {
                d[s.axis - (yt.shape.rank() - r)] = pc;
            }
            views[k] = Some(f32_ref(&inputs[k][..lens[k]], &d[..r])?);
        }
        let mut yd = [0usize; MAX_RANK];
        let r = yt.shape.rank();
        yd[..r].copy_from_slice(yt.shape.dims());
        if r > 0 {
            yd[s.axis] = pc;
        }
        let len = pc * s.block;
        let mut y = [f32_mut(&mut yw[..len], &yd[..r])?];
        run_fused(p, &views[..ins.len()], &mut y)?;
        narrow_at(&yw[..len], yt, i0 * s.block, fast)?;
        i0 += pc;
    }
    Ok(())
}
