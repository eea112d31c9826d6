//! Workspace sizes: the packing slots a GEMM's task plans in the arena (one per host thread,
//! at most [`WS_SLOTS`]), and the views kernels take of them.

use super::*;

/// f32 elements of one packing slot for `n × k` op(B).
pub fn pack_slot_len(n: usize, k: usize) -> usize {
    k_block(k) * n.next_multiple_of(NR).min(NC)
}

/// f32 scratch elements [`gemm_packed`] needs for an `n × k` op(B) (all slots).
pub fn gemm_packed_ws_len(n: usize, k: usize) -> usize {
    WS_SLOTS * pack_slot_len(n, k)
}

/// f32 scratch elements [`sgemm`] needs for an `m × n × k` product (0 when `m ≤ 1`, which
/// takes an unpacked matrix-vector path). Monotone in each argument.
pub fn sgemm_ws_len(m: usize, n: usize, k: usize) -> usize {
    if m <= 1 || n == 0 || k == 0 {
        return 0;
    }
    gemm_packed_ws_len(n, k)
}

/// The first `len` f32 of a byte workspace (64-byte aligned by the planner).
pub fn ws_f32(ws: &mut [u8], len: usize) -> Result<&mut [f32], KernelError> {
    if len == 0 {
        return Ok(&mut []);
    }
    let bytes = len.checked_mul(4).ok_or(KernelError::Workspace)?;
    let ws = ws.get_mut(..bytes).ok_or(KernelError::Workspace)?;
    bytemuck::try_cast_slice_mut(ws).map_err(|_| KernelError::Workspace)
}

pub(super) fn check_operand(
    len: usize,
    rows: usize,
    cols: usize,
    ld: usize,
) -> Result<(), KernelError> {
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    match (rows - 1).checked_mul(ld).and_then(|x| x.checked_add(cols)) {
        Some(need) if ld >= cols && need <= len => Ok(()),
        _ => Err(KernelError::Shape(
            "gemm operand smaller than its dimensions",
        )),
    }
}

/// Scratch bytes of a GemmW8 or GemmPacked: they always run packed, even for one row
/// (GemmPacked uses its slots for a block holding B's narrower last panel only).
pub fn gemm_kn_workspace_bytes(in_shapes: &[Option<Shape>], out_shapes: &[Shape]) -> usize {
    let base = gemm_workspace_bytes(in_shapes, out_shapes);
    match in_shapes.get(1) {
        // B is `[K, N]`: GemmW8 and GemmPacked refuse a transposed one.
        Some(Some(b)) if b.rank() == 2 => base.max(gemm_packed_ws_len(b.dim(1), b.dim(0)) * 4),
        _ => base,
    }
}

/// Scratch bytes of a GemmW8: none for one row (its GEMV reads the int8 weights in place),
/// else as [`gemm_kn_workspace_bytes`].
pub fn gemm_w8_workspace_bytes(in_shapes: &[Option<Shape>], out_shapes: &[Shape]) -> usize {
    match out_shapes.first() {
        Some(y) if y.rank() >= 1 && y.dim(y.rank() - 1) > 0 && y.numel() == y.dim(y.rank() - 1) => {
            0
        }
        _ => gemm_kn_workspace_bytes(in_shapes, out_shapes),
    }
}

/// Scratch bytes Gemm/MatMul need (packing), from the input shapes. The kind is not known
/// here, so this bounds both readings (Gemm with either transpose, MatMul with or without
/// folding the batch into M); [`sgemm_ws_len`] caps the result at one packed block pair.
pub fn gemm_workspace_bytes(in_shapes: &[Option<Shape>], out_shapes: &[Shape]) -> usize {
    let (Some(Some(a)), Some(Some(b)), Some(y)) =
        (in_shapes.first(), in_shapes.get(1), out_shapes.first())
    else {
        return 0;
    };
    let (ad, bd, yd) = (a.dims(), b.dims(), y.dims());
    let last = |d: &[usize], i: usize| if d.len() > i { d[d.len() - 1 - i] } else { 1 };
    let k = last(ad, 0).max(if ad.len() >= 2 { last(ad, 1) } else { 1 });
    let m_fold = if ad.len() >= 2 && last(ad, 0) > 0 {
        a.numel() / last(ad, 0)
    } else {
        1
    };
    let m = m_fold.max(if yd.len() >= 2 { last(yd, 1) } else { 1 });
    let n = last(yd, 0)
        .max(last(bd, 0))
        .max(if bd.len() >= 2 { last(bd, 1) } else { 1 });
    sgemm_ws_len(m, n, k) * 4
}
