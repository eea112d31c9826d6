//! Half fused attention: one batch (head) at a time, its Q, Kᵀ and V matrices widened, the
//! f32 attention's score rows and softmax, the `[s, e]` result rounded once. The mask (small:
//! it broadcasts over heads, usually over query rows too) is widened whole, once.

use ge_runtime::format::{AttentionParams, Shape, TensorMut, TensorRef};

use super::super::attention::{Geometry, attention_workspace_bytes};
use super::super::{KernelError, KernelResult, input, output};
use super::{carve, convert, narrow_at, total_bytes, widen_at};
use crate::arch::isa;

/// f32 run lengths: one batch's Q, Kᵀ, V and Y, and the whole mask.
fn runs(g: &Geometry, mask: usize) -> [usize; 5] {
    [g.s * g.d, g.d * g.t, g.t * g.e, g.s * g.e, mask]
}

/// Workspace bytes of a half attention; 0 when the shapes do not make one.
pub(super) fn workspace(ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    let (Some(Some(q)), Some(Some(k)), Some(Some(v)), Some(y)) =
        (ins.first(), ins.get(1), ins.get(2), outs.first())
    else {
        return 0;
    };
    let mask = ins.get(3).copied().flatten();
    // The geometry reads shapes only: views over no data.
    let view = |s: Shape| {
        Some(TensorRef {
            dtype: ge_runtime::format::DType::F32,
            shape: s,
            data: &[],
        })
    };
    let views = [view(*q), view(*k), view(*v), mask.and_then(view)];
    let Ok(g) = Geometry::new(&views, y) else {
        return 0;
    };
    let inner = attention_workspace_bytes(ins);
    total_bytes(inner, &runs(&g, mask.map_or(0, |m| m.numel())))
}

/// `softmax(Q·Kᵀ·scale + mask)·V` on 16-bit (or f32) operands into a 16-bit output.
pub(crate) fn run(
    p: &AttentionParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let yt = output(outs, 0, "Y")?;
    let g = Geometry::new(ins, &yt.shape)?;
    let (q, k, v) = (
        input(ins, 0, "Q")?,
        input(ins, 1, "Kt")?,
        input(ins, 2, "V")?,
    );
    let mask = ins.get(3).and_then(Option::as_ref);
    let shapes = [Some(q.shape), Some(k.shape)];
    let inner = attention_workspace_bytes(&shapes);
    let runs = runs(&g, mask.map_or(0, |m| m.shape.numel()));
    let (row, [qw, kw, vw, yw, mw]) = carve(ws, inner, runs)?;
    let row: &mut [f32] = bytemuck::try_cast_slice_mut(row).map_err(|_| KernelError::Workspace)?;
    let row = row.get_mut(..g.t).ok_or(KernelError::Workspace)?;
    let fast = convert::fast();
    if let Some(m) = mask {
        widen_at(m, 0, mw, fast)?;
    }
    let mask = mask.map(|_| &*mw);
    let (qn, kn, vn, yn) = (g.s * g.d, g.d * g.t, g.t * g.e, g.s * g.e);
    for b in 0..g.batch {
        widen_at(q, b * qn, qw, fast)?;
        widen_at(k, b * kn, kw, fast)?;
        widen_at(v, b * vn, vw, fast)?;
        isa::with_simd(
            #[inline(always)]
            || g.attend(p, b, (qw, kw, vw), mask, yw, row),
        )?;
        narrow_at(yw, yt, b * yn, fast)?;
    }
    Ok(())
}
