//! Half vector programs (autofused elementwise chains): slices of the output along its
//! first non-unit axis, each input's matching slice (or, where it broadcasts along that
//! axis, the whole input) widened, the f32 interpreter run on the slice and its result
//! rounded back once. Inputs may mix f32 and 16-bit tensors.

use ge_runtime::format::{FusedParams, MAX_FUSED_REGS, MAX_RANK, Shape, TensorMut, TensorRef};

use super::super::fused::run_fused;
use super::super::{KernelError, KernelResult, output};
use super::{CAP, carve, convert, f32_mut, f32_ref, narrow_at, total_bytes, widen_at, with_dim};

/// Runs of workspace: the output's and one per input (at most the program's registers).
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

/// True when input `x` is sliced with the output along `s`'s axis; false when it broadcasts
/// along it (its dim there is 1, or it has fewer dims) and is read whole.
fn sliced(x: &Shape, y: &Shape, s: &Split) -> bool {
    let lead = y.rank() - x.rank().min(y.rank());
    s.extent > 1 && s.axis >= lead && x.dim(s.axis - lead) == s.extent
}

/// The slicing and the f32 elements of workspace it needs: the output's run first, then one
/// per input (0 for the runs no input takes).
fn plan(ins: &[Option<Shape>], y: &Shape) -> Option<(Split, [usize; N])> {
    let s = split(y);
    let mut runs = [0usize; N];
    if ins.len() >= N {
        return None;
    }
    runs[0] = s.chunk * s.block;
    for (l, x) in runs[1..].iter_mut().zip(ins) {
        let x = (*x)?;
        if x.rank() > y.rank() {
            return None;
        }
        *l = if sliced(&x, y, &s) {
            s.chunk * (x.numel() / s.extent)
        } else {
            x.numel()
        };
    }
    Some((s, runs))
}

/// Workspace bytes of a half vector program; 0 when the shapes do not make one.
pub(super) fn workspace(ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    outs.first()
        .and_then(|y| plan(ins, y))
        .map_or(0, |(_, runs)| total_bytes(0, &runs))
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
    let mut xs: [Option<&TensorRef<'_>>; N] = [None; N];
    for (x, t) in xs.iter_mut().zip(ins) {
        *x = Some(
            t.as_ref()
                .ok_or(KernelError::MissingTensor("fused input"))?,
        );
    }
    let shapes: [Option<Shape>; N] = core::array::from_fn(|k| xs[k].map(|t| t.shape));
    let n_in = ins.len();
    let (s, runs) = plan(
        shapes
            .get(..n_in)
            .ok_or(KernelError::Shape("fused inputs"))?,
        &yt.shape,
    )
    .ok_or(KernelError::Shape("fused shapes"))?;
    let (_, [yw, mut inputs @ ..]) = carve(ws, 0, runs)?;
    let fast = convert::fast();
    let (rank, extent) = (yt.shape.rank(), s.extent.max(1));
    // Inputs that broadcast along the axis are widened once, whole.
    for (t, buf) in xs[..n_in].iter().flatten().zip(inputs.iter_mut()) {
        if !sliced(&t.shape, &yt.shape, &s) {
            widen_at(t, 0, buf, fast)?;
        }
    }
    let mut i0 = 0;
    while i0 < extent {
        let pc = s.chunk.min(extent - i0);
        let mut views: [Option<TensorRef<'_>>; N] = [None; N];
        for ((t, buf), view) in xs[..n_in]
            .iter()
            .flatten()
            .zip(inputs.iter_mut())
            .zip(&mut views)
        {
            let r = t.shape.rank();
            let mut d = [0usize; MAX_RANK];
            d[..r].copy_from_slice(t.shape.dims());
            let len = if sliced(&t.shape, &yt.shape, &s) {
                let per = t.shape.numel() / s.extent;
                widen_at(t, i0 * per, &mut buf[..pc * per], fast)?;
                d[s.axis - (rank - r)] = pc;
                pc * per
            } else {
                t.shape.numel()
            };
            *view = Some(f32_ref(&buf[..len], &d[..r])?);
        }
        let (yd, _) = with_dim(&yt.shape, s.axis, pc);
        let len = pc * s.block;
        let mut y = [f32_mut(&mut yw[..len], &yd[..rank])?];
        run_fused(p, &views[..n_in], &mut y)?;
        narrow_at(&yw[..len], yt, i0 * s.block, fast)?;
        i0 += pc;
    }
    Ok(())
}
