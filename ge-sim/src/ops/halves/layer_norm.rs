//! Half LayerNorm: slices of whole normalized blocks (the indices before the axis) widened,
//! the f32 kernel (f64 mean and variance) with scale and bias widened once, the result
//! rounded back once.

use ge_runtime::format::{LayerNormParams, Shape, TensorMut, TensorRef};

use super::super::layer_norm::run_layer_norm;
use super::super::{KernelError, KernelResult, input, output, read_params};
use super::{
    block_dims, blocks, blocks_workspace, carve, convert, f32_mut, f32_ref, narrow_at, widen_at,
};

fn numel(s: Option<&Option<Shape>>) -> usize {
    s.copied().flatten().map_or(0, |s| s.numel())
}

/// Workspace bytes of a half LayerNorm (the slice's input and output, then scale and bias
/// whole); 0 when the shapes do not make one.
pub(super) fn workspace(params: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    let axis = read_params::<LayerNormParams>(params)
        .ok()
        .map(|p| p.axis as usize);
    blocks_workspace(axis, ins, outs, &[numel(ins.get(1)), numel(ins.get(2))])
}

/// Normalizes 16-bit (or f32) `x` into the 16-bit output.
pub(crate) fn run(
    params: &[u8],
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let p: LayerNormParams = read_params(params)?;
    let xt = input(ins, 0, "x")?;
    let yt = output(outs, 0, "y")?;
    let axis = p.axis as usize;
    let [outer, block, chunk] =
        blocks(axis, &xt.shape, &yt.shape).ok_or(KernelError::Shape("layer norm shapes"))?;
    let opt = |i: usize| ins.get(i).and_then(Option::as_ref);
    let (st, bt) = (opt(1), opt(2));
    let len_of = |t: Option<&TensorRef<'_>>| t.map_or(0, |t| t.shape.numel());
    let lens = [chunk * block, chunk * block, len_of(st), len_of(bt)];
    let (_, [xw, yw, sw, bw]) = carve(ws, 0, lens)?;
    let fast = convert::fast();
    for (t, w) in [(st, &mut *sw), (bt, &mut *bw)] {
        if let Some(t) = t {
            widen_at(t, 0, w, fast)?;
        }
    }
    let scale = st.map(|t| f32_ref(sw, t.shape.dims())).transpose()?;
    let bias = bt.map(|t| f32_ref(bw, t.shape.dims())).transpose()?;
    let mut o0 = 0;
    while o0 < outer {
        let pc = chunk.min(outer - o0);
        let len = pc * block;
        widen_at(xt, o0 * block, &mut xw[..len], fast)?;
        let (dims, r) = block_dims(&xt.shape, axis, pc);
        let sub = [Some(f32_ref(&xw[..len], &dims[..r])?), scale, bias];
        let mut y = [f32_mut(&mut yw[..len], &dims[..r])?];
        run_layer_norm(&p, &sub, &mut y)?;
        narrow_at(&yw[..len], yt, o0 * block, fast)?;
        o0 += pc;
    }
    Ok(())
}
