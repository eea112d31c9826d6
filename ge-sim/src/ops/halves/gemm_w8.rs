//! Half GemmW8: the f32 GemmW8 (B stays int8, dequantized while packing) on 16-bit (or f32)
//! activations. A, B's scales, C and the residual are widened whole, the result rounded
//! once; scratch is those operands plus the f32 kernel's packing.

use ge_runtime::format::{GemmParams, Shape, TensorMut, TensorRef};

use super::super::gemm::{gemm_w8_workspace_bytes, run_gemm_w8};
use super::super::{KernelResult, input, output};
use super::{carve, convert, f32_mut, f32_ref, narrow_at, total_bytes, widen_at};
use crate::threads::Parallel;

/// Inputs widened: A, B's scales, C, the residual (by input index).
const WIDENED: [usize; 4] = [0, 2, 3, 4];

/// f32 run lengths: the widened inputs, then Y.
fn runs(ins: &[Option<Shape>], y: &Shape) -> [usize; 5] {
    let n = |i: usize| ins.get(i).copied().flatten().map_or(0, |s| s.numel());
    [n(0), n(2), n(3), n(4), y.numel()]
}

/// Workspace bytes of a half GemmW8; 0 when the shapes do not make one.
pub(super) fn workspace(ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    let Some(y) = outs.first() else {
        return 0;
    };
    total_bytes(gemm_w8_workspace_bytes(ins, outs), &runs(ins, y))
}

/// `act(alpha · A·(B·scales) + beta · C + R)` with 16-bit activations into a 16-bit output.
pub(crate) fn run(
    p: &GemmParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    let yt = output(outs, 0, "gemm output")?;
    let shapes: [Option<Shape>; 5] =
        core::array::from_fn(|i| ins.get(i).copied().flatten().map(|t| t.shape));
    let inner = gemm_w8_workspace_bytes(&shapes, &[yt.shape]);
    let (inner, [aw, sw, cw, rw, yw]) = carve(ws, inner, runs(&shapes, &yt.shape))?;
    let fast = convert::fast();
    let mut views: [Option<TensorRef<'_>>; 5] = [None; 5];
    views[1] = Some(*input(ins, 1, "gemm B")?);
    for (i, w) in WIDENED.into_iter().zip([aw, sw, cw, rw]) {
        if let Some(t) = ins.get(i).and_then(Option::as_ref) {
            widen_at(t, 0, w, fast)?;
            views[i] = Some(f32_ref(w, t.shape.dims())?);
        }
    }
    let n_in = ins.len().min(views.len());
    let yshape = yt.shape;
    let mut y = [f32_mut(yw, yshape.dims())?];
    run_gemm_w8(p, &views[..n_in], &mut y, inner, par)?;
    narrow_at(yw, yt, 0, fast)
}
