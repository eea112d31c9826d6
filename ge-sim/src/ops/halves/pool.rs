//! Half pooling: slices of channel planes through the f32 Pool / GlobalPool (every plane
//! pools on its own), each slice widened, pooled and rounded back.

use ge_runtime::format::{PoolParams, Shape, TensorMut, TensorRef};

use super::super::pool::{run_global_pool, run_pool_f32};
use super::super::{KernelError, KernelResult, input, read_params};
use super::{CAP, carve, convert, f32_mut, f32_ref, narrow_at, total_bytes, widen_at, with_dim};

/// Planes, their input and output sizes, and planes per slice.
fn split(x: &Shape, y: &Shape) -> Option<[usize; 4]> {
    if x.rank() < 3 || y.rank() != x.rank() {
        return None;
    }
    let planes = x.dim(0) * x.dim(1);
    if planes == 0 || y.dim(0) * y.dim(1) != planes {
        return None;
    }
    let (xp, yp) = (x.numel() / planes, y.numel() / planes);
    let chunk = (CAP / xp.saturating_add(yp).max(1)).clamp(1, planes);
    Some([planes, xp, yp, chunk])
}

/// Workspace bytes of a half pool; 0 when the shapes do not make one.
pub(super) fn workspace(_: bool, _: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    match (ins.first(), outs.first()) {
        (Some(Some(x)), Some(y)) => split(x, y).map_or(0, |[_, xp, yp, chunk]| {
            total_bytes(0, &[chunk * xp, chunk * yp])
        }),
        _ => 0,
    }
}

/// Pools 16-bit (or f32) `x` into the 16-bit output (`global`: GlobalPool).
pub(crate) fn run(
    global: bool,
    params: &[u8],
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let p: PoolParams = read_params(params)?;
    let xt = input(ins, 0, "pool input")?;
    let [yt] = outs else {
        return Err(KernelError::MissingTensor("pool output"));
    };
    let [planes, xp, yp, chunk] =
        split(&xt.shape, &yt.shape).ok_or(KernelError::Shape("pool shapes"))?;
    let (_, [xw, yw]) = carve(ws, 0, [chunk * xp, chunk * yp])?;
    let fast = convert::fast();
    let mut p0 = 0;
    while p0 < planes {
        let pc = chunk.min(planes - p0);
        widen_at(xt, p0 * xp, &mut xw[..pc * xp], fast)?;
        let (mut xd, xr) = with_dim(&xt.shape, 1, pc);
        let (mut yd, yr) = with_dim(&yt.shape, 1, pc);
        (xd[0], yd[0]) = (1, 1);
        let sub = [Some(f32_ref(&xw[..pc * xp], &xd[..xr])?)];
        let mut y = [f32_mut(&mut yw[..pc * yp], &yd[..yr])?];
        if global {
            run_global_pool(&p, &sub, &mut y)?;
        } else {
            run_pool_f32(&p, &sub, &mut y)?;
        }
        narrow_at(&yw[..pc * yp], yt, p0 * yp, fast)?;
        p0 += pc;
    }
    Ok(())
}
