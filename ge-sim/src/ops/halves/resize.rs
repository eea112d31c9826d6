//! Half Resize. Nearest moves elements: the kernel runs on the 16-bit values themselves.
//! Linear and cubic go by slices of the leading axes the resize leaves alone (batch and
//! channels, scale 1): each slice of planes widened, the f32 kernel, the result rounded once.
//! A resize of every axis is one slice.

use ge_runtime::format::{ResizeMode, ResizeParams, Shape, TensorMut, TensorRef};

use super::super::resize::{leaves_axis, resize_workspace_bytes, run_resize, run_resize_with};
use super::super::{KernelError, KernelResult, input, output, read_params};
use super::{CAP, block_dims, carve, convert, f32_mut, f32_ref, narrow_at, total_bytes, widen_at};

/// The slicing: leading untouched axes, their folded extent, elements per index of them in
/// the input and the output, indices per slice.
struct Split {
    lead: usize,
    outer: usize,
    block_in: usize,
    block_out: usize,
    chunk: usize,
}

fn split(p: &ResizeParams, x: &Shape, y: &Shape) -> Option<Split> {
    if x.rank() != y.rank() || x.rank() == 0 {
        return None;
    }
    let r = x.rank();
    let lead = (0..r - 1)
        .take_while(|&a| leaves_axis(p, a, x.dim(a), y.dim(a)))
        .count();
    let outer = x.dims()[..lead].iter().product::<usize>();
    let block_in = x.dims()[lead..].iter().product::<usize>();
    let block_out = y.dims()[lead..].iter().product::<usize>();
    let per = block_in.saturating_add(block_out).max(1);
    Some(Split {
        lead,
        outer,
        block_in,
        block_out,
        chunk: (CAP / per).clamp(1, outer.max(1)),
    })
}

fn linear(p: &ResizeParams) -> bool {
    p.mode != ResizeMode::Nearest as u32
}

/// Workspace bytes of a half Resize (none for nearest); 0 when the shapes do not make one.
pub(super) fn workspace(params: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    let p: Option<ResizeParams> = read_params(params).ok();
    match (p, ins.first(), outs.first()) {
        (Some(p), Some(Some(x)), Some(y)) if linear(&p) => split(&p, x, y).map_or(0, |s| {
            let inner = resize_workspace_bytes(params, &[*y]);
            total_bytes(inner, &[s.chunk * s.block_in, s.chunk * s.block_out])
        }),
        _ => 0,
    }
}

/// Resizes 16-bit `x` into the 16-bit output.
pub(crate) fn run(
    params: &[u8],
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let p: ResizeParams = read_params(params)?;
    if !linear(&p) {
        return run_resize(&p, ins, outs);
    }
    let xt = input(ins, 0, "resize input")?;
    let yt = output(outs, 0, "resize output")?;
    let s = split(&p, &xt.shape, &yt.shape).ok_or(KernelError::Shape("resize shapes"))?;
    let inner = resize_workspace_bytes(params, &[yt.shape]);
    let (cache, [xw, yw]) = carve(ws, inner, [s.chunk * s.block_in, s.chunk * s.block_out])?;
    let fast = convert::fast();
    let mut o0 = 0;
    while o0 < s.outer {
        let pc = s.chunk.min(s.outer - o0);
        let (li, lo) = (pc * s.block_in, pc * s.block_out);
        widen_at(xt, o0 * s.block_in, &mut xw[..li], fast)?;
        let (xd, r) = block_dims(&xt.shape, s.lead, pc);
        let (yd, _) = block_dims(&yt.shape, s.lead, pc);
        let sub = [Some(f32_ref(&xw[..li], &xd[..r])?)];
        let mut y = [f32_mut(&mut yw[..lo], &yd[..r])?];
        run_resize_with(&p, &sub, &mut y, cache)?;
        narrow_at(&yw[..lo], yt, o0 * s.block_out, fast)?;
        o0 += pc;
    }
    Ok(())
}
