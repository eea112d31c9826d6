//! Half MatMul. `[…, M, K] · [K, N]` (a shared 2-D B: projections, classifier heads) is the
//! half Gemm's column slicing with the leading axes folded into M. Batched products
//! (attention's `Q·Kᵀ` and `P·V`, broadcast batches, 1-D operands) run one output matrix at a
//! time: its A and B matrices widened (a matrix the previous batch already widened, as a
//! broadcast one, is kept), the f32 GEMM, the result rounded once.

use ge_runtime::format::{Shape, TensorMut, TensorRef};

use super::super::gemm::{self, MatMulDims, batch_offsets, matmul_dims, sgemm_on, sgemm_ws_len};
use super::super::{KernelResult, broadcast::broadcast_strides, input, output};
use super::{carve, convert, narrow_at, total_bytes, widen_at};
use crate::threads::Parallel;

/// True when the product is the Gemm `[…, M, K] · [K, N]`.
fn is_gemm(a: &Shape, b: &Shape) -> bool {
    a.rank() >= 2 && b.rank() == 2
}

/// f32 run lengths of a batched product: one A, B and Y matrix.
fn runs(d: &MatMulDims) -> [usize; 3] {
    [d.m * d.k, d.k * d.n, d.m * d.n]
}

/// Workspace bytes of a half MatMul; 0 when the shapes do not make one.
pub(super) fn workspace(ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    let (Some(Some(a)), Some(Some(b)), Some(y)) = (ins.first(), ins.get(1), outs.first()) else {
        return 0;
    };
    if is_gemm(a, b) {
        return super::gemm::workspace(&gemm::PLAIN_GEMM, ins, outs);
    }
    let Ok(d) = matmul_dims(a, b, y) else {
        return 0;
    };
    total_bytes(sgemm_ws_len(d.m, d.n, d.k) * 4, &runs(&d))
}

/// `Y = A·B` with numpy semantics on 16-bit (or f32) operands into a 16-bit output.
pub(crate) fn run(
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    let at = input(ins, 0, "matmul A")?;
    let bt = input(ins, 1, "matmul B")?;
    if is_gemm(&at.shape, &bt.shape) {
        return super::gemm::run(&gemm::PLAIN_GEMM, &ins[..2], outs, ws, par);
    }
    let yt = output(outs, 0, "matmul output")?;
    let d = matmul_dims(&at.shape, &bt.shape, &yt.shape)?;
    if yt.shape.numel() == 0 {
        return Ok(());
    }
    let sa = broadcast_strides(&d.a_batch, &d.y_batch)?;
    let sb = broadcast_strides(&d.b_batch, &d.y_batch)?;
    let (m, n, k) = (d.m, d.n, d.k);
    let inner = sgemm_ws_len(m, n, k) * 4;
    let (inner, [aw, bw, yw]) = carve(ws, inner, runs(&d))?;
    let wsf = gemm::ws_f32(inner, sgemm_ws_len(m, n, k))?;
    let fast = convert::fast();
    let mut widened: (Option<usize>, Option<usize>) = (None, None);
    for i in 0..d.y_batch.numel() {
        let (oa, ob) = batch_offsets(&d, &sa, &sb, i);
        if widened.0 != Some(oa) {
            widen_at(at, oa * m * k, aw, fast)?;
        }
        if widened.1 != Some(ob) {
            widen_at(bt, ob * k * n, bw, fast)?;
        }
        widened = (Some(oa), Some(ob));
        sgemm_on(
            m, n, k, 1.0, aw, k, false, bw, n, false, false, yw, n, wsf, par,
        )?;
        narrow_at(yw, yt, i * m * n, fast)?;
    }
    Ok(())
}
