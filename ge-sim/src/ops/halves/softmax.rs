//! Half Softmax, LogSoftmax and Hardmax: slices of whole normalized blocks (the indices
//! before the axis, each normalizing its own contiguous block, also under opset < 13's 2-D
//! view) widened, run through the f32 kernel and rounded back once.

use ge_runtime::format::{Shape, SoftmaxParams, TensorMut, TensorRef};

use super::super::softmax::run_softmax_of;
use super::super::{KernelError, KernelResult, input, output, read_params};
use super::{
    block_dims, blocks, blocks_workspace, carve, convert, f32_mut, f32_ref, narrow_at, widen_at,
};

/// Blocks, elements per block and blocks per slice.
fn split(p: &SoftmaxParams, x: &Shape, y: &Shape) -> Option<[usize; 3]> {
    blocks(p.axis as usize, x, y)
}

/// Workspace bytes of a half softmax; 0 when the shapes do not make one.
pub(super) fn workspace(params: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    let axis = read_params::<SoftmaxParams>(params)
        .ok()
        .map(|p| p.axis as usize);
    blocks_workspace(axis, ins, outs, &[])
}

/// Normalizes 16-bit (or f32) `x` into the 16-bit output.
pub(crate) fn run(
    params: &[u8],
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let p: SoftmaxParams = read_params(params)?;
    let xt = input(ins, 0, "softmax input")?;
    let yt = output(outs, 0, "softmax output")?;
    let [outer, block, chunk] =
        split(&p, &xt.shape, &yt.shape).ok_or(KernelError::Shape("softmax shapes"))?;
    let (_, [xw, yw]) = carve(ws, 0, [chunk * block, chunk * block])?;
    let fast = convert::fast();
    let axis = p.axis as usize;
    let mut o0 = 0;
    while o0 < outer {
        let pc = chunk.min(outer - o0);
        let len = pc * block;
        widen_at(xt, o0 * block, &mut xw[..len], fast)?;
        let (dims, r) = block_dims(&xt.shape, axis, pc);
        let sub = [Some(f32_ref(&xw[..len], &dims[..r])?)];
        let mut y = [f32_mut(&mut yw[..len], &dims[..r])?];
        run_softmax_of::<f32>(&p, &sub, &mut y)?;
        narrow_at(&yw[..len], yt, o0 * block, fast)?;
        o0 += pc;
    }
    Ok(())
}
