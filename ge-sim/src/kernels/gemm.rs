//! Gemm and batched MatMul on a shared f32 GEMM core.
//!
//! [`sgemm`] is a BLIS-style cache-blocked GEMM: op(B) is packed in `KC × NC` blocks into
//! `NR`-column panels, op(A) (times alpha) in `MC × KC` blocks into `MR`-row panels, both in the
//! caller's workspace, and a `MR × NR` register tile is accumulated over `k` in plain Rust that
//! LLVM vectorizes (12 SSE registers on the baseline target, 12 ymm with AVX).

use ge_runtime::format::{DType, GemmParams, MAX_RANK, Shape, TensorMut, TensorRef};

use super::broadcast::{broadcast_strides, for_each_row};
use super::copy::{checked_len, f32_in, f32_out};
use super::{KernelError, KernelResult, Work, input, output};

/// Rows of the register tile.
pub const MR: usize = 6;
/// Columns of the register tile.
#[cfg(target_feature = "avx")]
pub const NR: usize = 16;
/// Columns of the register tile.
#[cfg(not(target_feature = "avx"))]
pub const NR: usize = 8;
const KC: usize = 256;
const MC: usize = 96;
const NC: usize = 2048;

/// f32 scratch elements [`sgemm`] needs for an `m × n × k` product (0 when `m ≤ 1`, which
/// takes an unpacked matrix-vector path). Monotone in each argument.
pub fn sgemm_ws_len(m: usize, n: usize, k: usize) -> usize {
    if m <= 1 || n == 0 || k == 0 {
        return 0;
    }
    let kc = k.min(KC);
    m.min(MC).next_multiple_of(MR) * kc + kc * n.min(NC).next_multiple_of(NR)
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

fn check_operand(len: usize, rows: usize, cols: usize, ld: usize) -> Result<(), KernelError> {
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

/// `C = alpha · op(A) · op(B) (+ C if accumulate)`, row-major with leading dimensions.
/// `op(A)` is `m × k` (A stored `k × m` when `trans_a`), `op(B)` is `k × n`.
/// `ws` needs [`sgemm_ws_len`]`(m, n, k)` elements. Operand extents are validated.
#[allow(clippy::too_many_arguments)]
pub fn sgemm(
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    lda: usize,
    trans_a: bool,
    b: &[f32],
    ldb: usize,
    trans_b: bool,
    accumulate: bool,
    c: &mut [f32],
    ldc: usize,
    ws: &mut [f32],
) -> Result<(), KernelError> {
    if trans_a {
        check_operand(a.len(), k, m, lda)?
    } else {
        check_operand(a.len(), m, k, lda)?
    }
    if trans_b {
        check_operand(b.len(), n, k, ldb)?
    } else {
        check_operand(b.len(), k, n, ldb)?
    }
    check_operand(c.len(), m, n, ldc)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                c[i * ldc..i * ldc + n].fill(0.0);
            }
        }
        return Ok(());
    }
    if m == 1 {
        let inc_a = if trans_a { lda } else { 1 };
        gemv_row(
            n,
            k,
            alpha,
            a,
            inc_a,
            b,
            ldb,
            trans_b,
            accumulate,
            &mut c[..n],
        );
        return Ok(());
    }
    let need = sgemm_ws_len(m, n, k);
    if ws.len() < need {
        return Err(KernelError::Workspace);
    }
    let kc_max = k.min(KC);
    let (apack, rest) = ws.split_at_mut(m.min(MC).next_multiple_of(MR) * kc_max);
    let bpack = &mut rest[..kc_max * n.min(NC).next_multiple_of(NR)];
    for jc in (0..n).step_by(NC) {
        let nc = (n - jc).min(NC);
        for pc in (0..k).step_by(KC) {
            let kc = (k - pc).min(KC);
            let add = accumulate || pc > 0;
            pack_b(kc, nc, b, ldb, trans_b, pc, jc, bpack);
            for ic in (0..m).step_by(MC) {
                let mc = (m - ic).min(MC);
                pack_a(mc, kc, alpha, a, lda, trans_a, ic, pc, apack);
                for jr in (0..nc).step_by(NR) {
                    let nr = (nc - jr).min(NR);
                    let bp = &bpack[jr * kc..(jr + NR) * kc];
                    for ir in (0..mc).step_by(MR) {
                        let mr = (mc - ir).min(MR);
                        let acc = micro(&apack[ir * kc..(ir + MR) * kc], bp);
                        let c0 = (ic + ir) * ldc + jc + jr;
                        for (i, row) in acc.iter().enumerate().take(mr) {
                            let dst = &mut c[c0 + i * ldc..c0 + i * ldc + nr];
                            if add {
                                for (d, s) in dst.iter_mut().zip(row) {
                                    *d += *s;
                                }
                            } else {
                                dst.copy_from_slice(&row[..nr]);
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// The register tile: `acc[i][j] = Σ_p ap[p][i] · bp[p][j]` over packed panels. Kept out of line
/// and written with one named accumulator row per tile row so LLVM keeps the tile in registers
/// and vectorizes along `j` (an inlined, indexed version gets vectorized along `i` with
/// gathers on AVX-512 targets).
#[inline(never)]
fn micro(ap: &[f32], bp: &[f32]) -> [[f32; NR]; MR] {
    let (ac, _) = ap.as_chunks::<MR>();
    let (bc, _) = bp.as_chunks::<NR>();
    let z = [0.0f32; NR];
    let (mut c0, mut c1, mut c2, mut c3, mut c4, mut c5) = (z, z, z, z, z, z);
    for (a, b) in ac.iter().zip(bc) {
        let b: [f32; NR] = *b;
        c0 = madd(c0, a[0], b);
        c1 = madd(c1, a[1], b);
        c2 = madd(c2, a[2], b);
        c3 = madd(c3, a[3], b);
        c4 = madd(c4, a[4], b);
        c5 = madd(c5, a[5], b);
    }
    [c0, c1, c2, c3, c4, c5]
}

#[inline(always)]
fn madd(acc: [f32; NR], a: f32, b: [f32; NR]) -> [f32; NR] {
    core::array::from_fn(|j| acc[j] + a * b[j])
}

/// Packs rows `ic..ic+mc`, columns `pc..pc+kc` of op(A), times alpha, into MR-row panels
/// (zero rows past `mc`).
#[allow(clippy::too_many_arguments)]
fn pack_a(
    mc: usize,
    kc: usize,
    alpha: f32,
    a: &[f32],
    lda: usize,
    trans: bool,
    ic: usize,
    pc: usize,
    out: &mut [f32],
) {
    for ir in (0..mc).step_by(MR) {
        let mr = (mc - ir).min(MR);
        let (panel, _) = out[ir * kc..(ir + MR) * kc].as_chunks_mut::<MR>();
        if trans {
            for (p, dst) in panel.iter_mut().enumerate() {
                let src = &a[(pc + p) * lda + ic + ir..][..mr];
                for i in 0..MR {
                    dst[i] = if i < mr { alpha * src[i] } else { 0.0 };
                }
            }
        } else {
            if mr < MR {
                panel.fill([0.0; MR]);
            }
            for i in 0..mr {
                let row = ic + ir + i;
                let src = &a[row * lda + pc..row * lda + pc + kc];
                for (dst, v) in panel.iter_mut().zip(src) {
                    dst[i] = alpha * *v;
                }
            }
        }
    }
}

/// Packs rows `pc..pc+kc`, columns `jc..jc+nc` of op(B) into NR-column panels (zero columns
/// past `nc`).
#[allow(clippy::too_many_arguments)]
fn pack_b(
    kc: usize,
    nc: usize,
    b: &[f32],
    ldb: usize,
    trans: bool,
    pc: usize,
    jc: usize,
    out: &mut [f32],
) {
    for jr in (0..nc).step_by(NR) {
        let nr = (nc - jr).min(NR);
        let (panel, _) = out[jr * kc..(jr + NR) * kc].as_chunks_mut::<NR>();
        if trans {
            if nr < NR {
                panel.fill([0.0; NR]);
            }
            for j in 0..nr {
                let col = jc + jr + j;
                let src = &b[col * ldb + pc..col * ldb + pc + kc];
                for (dst, v) in panel.iter_mut().zip(src) {
                    dst[j] = *v;
                }
            }
        } else {
            for (p, dst) in panel.iter_mut().enumerate() {
                let row = (pc + p) * ldb + jc + jr;
                dst[..nr].copy_from_slice(&b[row..row + nr]);
                dst[nr..].fill(0.0);
            }
        }
    }
}

/// `c (+)= alpha · a · op(B)` for a single row `a` with element stride `inc_a`.
#[allow(clippy::too_many_arguments)]
fn gemv_row(
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    inc_a: usize,
    b: &[f32],
    ldb: usize,
    trans_b: bool,
    accumulate: bool,
    c: &mut [f32],
) {
    if trans_b {
        for (j, cj) in c.iter_mut().enumerate() {
            let row = &b[j * ldb..j * ldb + k];
            let d = if inc_a == 1 {
                dot(&a[..k], row)
            } else {
                row.iter().enumerate().map(|(p, v)| a[p * inc_a] * v).sum()
            };
            *cj = if accumulate {
                *cj + alpha * d
            } else {
                alpha * d
            };
        }
    } else {
        if !accumulate {
            c.fill(0.0);
        }
        for p in 0..k {
            let s = alpha * a[p * inc_a];
            let row = &b[p * ldb..p * ldb + n];
            for (cj, bj) in c.iter_mut().zip(row) {
                *cj += s * *bj;
            }
        }
    }
}

/// Dot product with independent partial sums so it vectorizes.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    const L: usize = 16;
    let mut acc = [0.0f32; L];
    let (ac, ar) = a.as_chunks::<L>();
    let (bc, br) = b.as_chunks::<L>();
    for (x, y) in ac.iter().zip(bc) {
        for l in 0..L {
            acc[l] += x[l] * y[l];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ar.iter().zip(br) {
        s += x * y;
    }
    s
}

/// Gemm: `Y = alpha · op(A) · op(B) + beta · C`, C unidirectionally broadcast to `[M, N]`,
/// then the fused activation.
pub fn run_gemm(
    p: &GemmParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let at = input(ins, 0, "gemm A")?;
    let bt = input(ins, 1, "gemm B")?;
    let ct = ins.get(2).and_then(|t| t.as_ref());
    let yt = output(outs, 0, "gemm output")?;
    let (a, b) = (f32_in(at)?, f32_in(bt)?);
    if at.shape.rank() != 2 || bt.shape.rank() != 2 || yt.shape.rank() != 2 {
        return Err(KernelError::Shape("gemm operands must be 2-D"));
    }
    let (ta, tb) = (p.trans_a != 0, p.trans_b != 0);
    let (ad, bd) = (at.shape.dims(), bt.shape.dims());
    let (m, k) = if ta { (ad[1], ad[0]) } else { (ad[0], ad[1]) };
    let (k2, n) = if tb { (bd[1], bd[0]) } else { (bd[0], bd[1]) };
    if k != k2 || yt.shape.dims() != [m, n] {
        return Err(KernelError::Shape("gemm operand shapes do not agree"));
    }
    let yshape = yt.shape;
    let y = f32_out(yt)?;
    let mut vector_ops = 0u64;
    let accumulate = match ct {
        Some(ct) if p.beta != 0.0 => {
            let c = f32_in(ct)?;
            let beta = p.beta;
            for_each_row(&yshape, [&ct.shape], |start, [off], [inc], len| {
                let dst = &mut y[start..start + len];
                if inc == 0 {
                    dst.fill(beta * c[off]);
                } else {
                    for (d, s) in dst.iter_mut().zip(&c[off..off + len]) {
                        *d = beta * *s;
                    }
                }
            })?;
            vector_ops += (m * n) as u64;
            true
        }
        _ => false,
    };
    let wsf = ws_f32(ws, sgemm_ws_len(m, n, k))?;
    sgemm(
        m, n, k, p.alpha, a, ad[1], ta, b, bd[1], tb, accumulate, y, n, wsf,
    )?;
    if p.act.op != 0 {
        super::unary::apply_activation(&p.act, y)?;
        vector_ops += (m * n) as u64;
    }
    Ok(Work {
        cube_macs: (m * n * k) as u64,
        vector_ops,
    })
}

/// MatMul geometry: batch shapes (as [`Shape`]s) and the matrix sizes.
struct MatMulDims {
    a_batch: Shape,
    b_batch: Shape,
    y_batch: Shape,
    m: usize,
    n: usize,
    k: usize,
}

fn matmul_dims(a: &Shape, b: &Shape, y: &Shape) -> Result<MatMulDims, KernelError> {
    let (ad, bd, yd) = (a.dims(), b.dims(), y.dims());
    if ad.is_empty() || bd.is_empty() {
        return Err(KernelError::Shape("matmul operands must have rank >= 1"));
    }
    let (m, k, ab) = if ad.len() == 1 {
        (1, ad[0], &ad[..0])
    } else {
        (ad[ad.len() - 2], ad[ad.len() - 1], &ad[..ad.len() - 2])
    };
    let (k2, n, bb) = if bd.len() == 1 {
        (bd[0], 1, &bd[..0])
    } else {
        (bd[bd.len() - 2], bd[bd.len() - 1], &bd[..bd.len() - 2])
    };
    if k != k2 {
        return Err(KernelError::Shape("matmul inner dimensions differ"));
    }
    let nb = ab.len().max(bb.len());
    let tail = usize::from(ad.len() > 1) + usize::from(bd.len() > 1);
    if yd.len() != nb + tail {
        return Err(KernelError::Shape("matmul output rank is wrong"));
    }
    let yb = &yd[..nb];
    let mut expect = [m, n];
    let want: &[usize] = match (ad.len() > 1, bd.len() > 1) {
        (true, true) => &expect[..],
        (true, false) => &expect[..1],
        (false, true) => {
            expect[0] = n;
            &expect[..1]
        }
        (false, false) => &expect[..0],
    };
    if &yd[nb..] != want {
        return Err(KernelError::Shape("matmul output matrix shape is wrong"));
    }
    let bad = || KernelError::Shape("matmul batch shape too large");
    let (a_batch, b_batch, y_batch) = (
        Shape::new(ab).ok_or_else(bad)?,
        Shape::new(bb).ok_or_else(bad)?,
        Shape::new(yb).ok_or_else(bad)?,
    );
    // Batch dims must broadcast exactly to the output's.
    broadcast_strides(&a_batch, &y_batch)?;
    broadcast_strides(&b_batch, &y_batch)?;
    for i in 0..nb {
        let da = if i + ab.len() >= nb {
            ab[i + ab.len() - nb]
        } else {
            1
        };
        let db = if i + bb.len() >= nb {
            bb[i + bb.len() - nb]
        } else {
            1
        };
        if yb[i] != if da == 1 { db } else { da } {
            return Err(KernelError::Shape(
                "matmul batch dims do not broadcast to the output",
            ));
        }
    }
    Ok(MatMulDims {
        a_batch,
        b_batch,
        y_batch,
        m,
        n,
        k,
    })
}

/// Element offsets (in matrices) of A and B for output batch `i`.
fn batch_offsets(
    d: &MatMulDims,
    sa: &[usize; MAX_RANK],
    sb: &[usize; MAX_RANK],
    mut i: usize,
) -> (usize, usize) {
    let (mut oa, mut ob) = (0, 0);
    for ax in (0..d.y_batch.rank()).rev() {
        let dim = d.y_batch.dims()[ax];
        let idx = i % dim;
        i /= dim;
        oa += idx * sa[ax];
        ob += idx * sb[ax];
    }
    (oa, ob)
}

/// MatMul with numpy semantics (1-D operands, broadcast batch dims). f32 through [`sgemm`];
/// f64, i32 and i64 with a plain loop (integers wrap).
pub fn run_matmul(
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let at = input(ins, 0, "matmul A")?;
    let bt = input(ins, 1, "matmul B")?;
    let yt = output(outs, 0, "matmul output")?;
    if at.dtype != bt.dtype || at.dtype != yt.dtype {
        return Err(KernelError::Shape("matmul operands differ in dtype"));
    }
    let d = matmul_dims(&at.shape, &bt.shape, &yt.shape)?;
    checked_len(&at.shape, at.dtype, at.data.len())?;
    checked_len(&bt.shape, bt.dtype, bt.data.len())?;
    let ny = checked_len(&yt.shape, yt.dtype, yt.data.len())?;
    let (m, n, k) = (d.m, d.n, d.k);
    let batches = d.y_batch.numel();
    if ny == 0 {
        return Ok(Work::default());
    }
    let sa = broadcast_strides(&d.a_batch, &d.y_batch)?;
    let sb = broadcast_strides(&d.b_batch, &d.y_batch)?;
    let work = Work {
        cube_macs: (batches * m * n * k) as u64,
        vector_ops: 0,
    };
    let (amat, bmat, ymat) = (m * k, k * n, m * n);
    match at.dtype {
        DType::F32 => {
            let (a, b) = (at.as_slice::<f32>()?, bt.as_slice::<f32>()?);
            let y = yt.as_slice_mut::<f32>()?;
            if d.b_batch.numel() == 1 && d.a_batch.numel() == batches && m > 0 {
                // B shared by every batch and A's batches contiguous: one tall GEMM.
                let mm = batches * m;
                let wsf = ws_f32(ws, sgemm_ws_len(mm, n, k))?;
                sgemm(mm, n, k, 1.0, a, k, false, b, n, false, false, y, n, wsf)?;
                return Ok(work);
            }
            let wsf = ws_f32(ws, sgemm_ws_len(m, n, k))?;
            for i in 0..batches {
                let (oa, ob) = batch_offsets(&d, &sa, &sb, i);
                let a = &a[oa * amat..(oa + 1) * amat];
                let b = &b[ob * bmat..(ob + 1) * bmat];
                let y = &mut y[i * ymat..(i + 1) * ymat];
                sgemm(m, n, k, 1.0, a, k, false, b, n, false, false, y, n, wsf)?;
            }
        }
        DType::F64 => naive_batches::<f64>(&d, &sa, &sb, at, bt, yt, |x, y| x * y, |x, y| x + y)?,
        DType::I32 => naive_batches::<i32>(
            &d,
            &sa,
            &sb,
            at,
            bt,
            yt,
            i32::wrapping_mul,
            i32::wrapping_add,
        )?,
        DType::I64 => naive_batches::<i64>(
            &d,
            &sa,
            &sb,
            at,
            bt,
            yt,
            i64::wrapping_mul,
            i64::wrapping_add,
        )?,
        _ => {
            return Err(KernelError::UnsupportedDType(
                "matmul supports float32, float64, int32, int64",
            ));
        }
    }
    Ok(work)
}

#[allow(clippy::too_many_arguments)]
fn naive_batches<T: ge_runtime::format::Element + Default>(
    d: &MatMulDims,
    sa: &[usize; MAX_RANK],
    sb: &[usize; MAX_RANK],
    at: &TensorRef<'_>,
    bt: &TensorRef<'_>,
    yt: &mut TensorMut<'_>,
    mul: impl Fn(T, T) -> T,
    add: impl Fn(T, T) -> T,
) -> Result<(), KernelError> {
    let (a, b) = (at.as_slice::<T>()?, bt.as_slice::<T>()?);
    let y = yt.as_slice_mut::<T>()?;
    let (m, n, k) = (d.m, d.n, d.k);
    for i in 0..d.y_batch.numel() {
        let (oa, ob) = batch_offsets(d, sa, sb, i);
        let a = &a[oa * m * k..(oa + 1) * m * k];
        let b = &b[ob * k * n..(ob + 1) * k * n];
        let y = &mut y[i * m * n..(i + 1) * m * n];
        for r in 0..m {
            let yr = &mut y[r * n..(r + 1) * n];
            yr.fill(T::default());
            for p in 0..k {
                let av = a[r * k + p];
                for (yv, bv) in yr.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                    *yv = add(*yv, mul(av, *bv));
                }
            }
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use ge_runtime::format::Activation;
    use std::vec::Vec;

    fn lcg(seed: &mut u32) -> f32 {
        *seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        (*seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
    }

    fn rand_vec(n: usize, seed: &mut u32) -> Vec<f32> {
        (0..n).map(|_| lcg(seed)).collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn naive(
        m: usize,
        n: usize,
        k: usize,
        alpha: f32,
        a: &[f32],
        ta: bool,
        b: &[f32],
        tb: bool,
        c: &mut [f32],
    ) {
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0f64;
                for p in 0..k {
                    let av = if ta { a[p * m + i] } else { a[i * k + p] };
                    let bv = if tb { b[j * k + p] } else { b[p * n + j] };
                    s += av as f64 * bv as f64;
                }
                c[i * n + j] += alpha * s as f32;
            }
        }
    }

    fn max_err(x: &[f32], y: &[f32]) -> f32 {
        assert_eq!(x.len(), y.len());
        x.iter()
            .zip(y)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max)
    }

    #[test]
    fn sgemm_matches_naive_odd_sizes() {
        let mut seed = 7;
        for &(m, n, k) in &[
            (1, 7, 5),
            (2, 1, 3),
            (7, 13, 9),
            (37, 41, 300),
            (100, 2100, 20),
            (5, 3, 1),
            (97, 17, 513),
            (13, 2049, 3),
        ] {
            for ta in [false, true] {
                for tb in [false, true] {
                    for acc in [false, true] {
                        let a = rand_vec(m * k, &mut seed);
                        let b = rand_vec(k * n, &mut seed);
                        let c0 = rand_vec(m * n, &mut seed);
                        let mut c1 = c0.clone();
                        let mut c2 = if acc {
                            c0.clone()
                        } else {
                            std::vec![0.0; m * n]
                        };
                        let mut ws = std::vec![0.0; sgemm_ws_len(m, n, k)];
                        let (lda, ldb) = (if ta { m } else { k }, if tb { k } else { n });
                        sgemm(
                            m, n, k, 1.5, &a, lda, ta, &b, ldb, tb, acc, &mut c1, n, &mut ws,
                        )
                        .unwrap();
                        naive(m, n, k, 1.5, &a, ta, &b, tb, &mut c2);
                        let e = max_err(&c1, &c2);
                        assert!(e < 1e-3, "m{m} n{n} k{k} ta{ta} tb{tb} acc{acc}: err {e}");
                    }
                }
            }
        }
    }

    #[test]
    fn sgemm_leading_dims_and_errors() {
        // 2x2 block of a 3x4 A times 2x3 block of B (ld 5), into C with ldc 4.
        let a: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let b: Vec<f32> = (0..10).map(|v| v as f32).collect();
        let mut c = std::vec![0.0f32; 8];
        sgemm(
            2,
            3,
            2,
            1.0,
            &a,
            4,
            false,
            &b,
            5,
            false,
            false,
            &mut c,
            4,
            &mut [0.0; 64],
        )
        .unwrap();
        // A = [[0,1],[4,5]], B = [[0,1,2],[5,6,7]]
        assert_eq!(c, [5., 6., 7., 0., 25., 34., 43., 0.]);
        assert!(
            sgemm(
                2,
                3,
                2,
                1.0,
                &a[..4],
                4,
                false,
                &b,
                5,
                false,
                false,
                &mut c,
                4,
                &mut [0.0; 64]
            )
            .is_err()
        );
        assert_eq!(
            sgemm(
                2,
                3,
                2,
                1.0,
                &a,
                4,
                false,
                &b,
                5,
                false,
                false,
                &mut c,
                4,
                &mut []
            ),
            Err(KernelError::Workspace)
        );
    }

    fn tref<'a>(d: &[usize], v: &'a [f32]) -> Option<TensorRef<'a>> {
        Some(TensorRef {
            dtype: DType::F32,
            shape: Shape::new(d).unwrap(),
            data: bytemuck::cast_slice(v),
        })
    }

    #[test]
    fn gemm_op_with_bias_broadcast() {
        // A [2,3] transposed in storage ([3,2]), B [3,2], C [2] broadcast as a row; alpha 2, beta 0.5
        let a_t = [1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0]; // A = [[1,2,3],[4,5,6]]
        let b = [1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0];
        let c = [10.0f32, 20.0];
        let mut y = [0.0f32; 4];
        let p = GemmParams {
            trans_a: 1,
            trans_b: 0,
            alpha: 2.0,
            beta: 0.5,
            act: Activation::default(),
        };
        let ins = [tref(&[3, 2], &a_t), tref(&[3, 2], &b), tref(&[2], &c)];
        let shapes: Vec<Option<Shape>> = ins.iter().map(|t| t.map(|t| t.shape)).collect();
        let mut ws = std::vec![0u8; gemm_workspace_bytes(&shapes, &[Shape::new(&[2, 2]).unwrap()])];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        let w = run_gemm(&p, &ins, &mut outs, &mut ws).unwrap();
        // A·B = [[4,5],[10,11]] -> 2x + [5,10]
        assert_eq!(y, [13., 20., 25., 32.]);
        assert_eq!(w.cube_macs, 12);
        // C as a column [2,1], no C
        let c = [1.0f32, 2.0];
        let ins = [tref(&[3, 2], &a_t), tref(&[3, 2], &b), tref(&[2, 1], &c)];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_gemm(&p, &ins, &mut outs, &mut ws).unwrap();
        assert_eq!(y, [8.5, 10.5, 21., 23.]);
        let ins = [tref(&[3, 2], &a_t), tref(&[3, 2], &b), None];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_gemm(&p, &ins, &mut outs, &mut ws).unwrap();
        assert_eq!(y, [8., 10., 20., 22.]);
        // bad C
        let c3 = [1.0f32, 2.0, 3.0];
        let ins = [tref(&[3, 2], &a_t), tref(&[3, 2], &b), tref(&[3], &c3)];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_gemm(&p, &ins, &mut outs, &mut ws).is_err());
        // shape mismatch
        let ins = [tref(&[2, 3], &a_t), tref(&[3, 2], &b), None];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_gemm(&p, &ins, &mut outs, &mut ws).is_err());
    }

    fn matmul(
        ad: &[usize],
        a: &[f32],
        bd: &[usize],
        b: &[f32],
        yd: &[usize],
    ) -> Result<Vec<f32>, KernelError> {
        let mut y = std::vec![0.0f32; yd.iter().product()];
        let ins = [tref(ad, a), tref(bd, b)];
        let ys = Shape::new(yd).unwrap();
        let mut ws = std::vec![0u8; gemm_workspace_bytes(&[Some(Shape::new(ad).unwrap()), Some(Shape::new(bd).unwrap())], &[ys])];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: ys,
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_matmul(&ins, &mut outs, &mut ws)?;
        Ok(y)
    }

    #[test]
    fn matmul_numpy_semantics() {
        let a: Vec<f32> = (0..6).map(|v| v as f32).collect(); // [2,3]
        let b: Vec<f32> = (0..6).map(|v| v as f32).collect(); // [3,2]
        // np.arange(6).reshape(2,3) @ np.arange(6).reshape(3,2) = [[10,13],[28,40]]
        assert_eq!(
            matmul(&[2, 3], &a, &[3, 2], &b, &[2, 2]).unwrap(),
            [10., 13., 28., 40.]
        );
        // 1-D @ 2-D: [0,1,2] @ B = [10,13]
        assert_eq!(
            matmul(&[3], &a[..3], &[3, 2], &b, &[2]).unwrap(),
            [10., 13.]
        );
        // 2-D @ 1-D: A @ [0,1,2] = [5,14]
        assert_eq!(matmul(&[2, 3], &a, &[3], &b[..3], &[2]).unwrap(), [5., 14.]);
        // 1-D @ 1-D
        assert_eq!(matmul(&[3], &a[..3], &[3], &b[..3], &[]).unwrap(), [5.]);
        assert!(matmul(&[2, 3], &a, &[2, 3], &b, &[2, 3]).is_err());
    }

    #[test]
    fn matmul_broadcast_batches() {
        let mut seed = 3;
        // [2,1,4,5] @ [3,5,6] -> [2,3,4,6]; and [2,3,4,5] @ [5,6] (folded path)
        for (ad, bd, yd) in [
            (
                std::vec![2usize, 1, 4, 5],
                std::vec![3usize, 5, 6],
                std::vec![2usize, 3, 4, 6],
            ),
            (
                std::vec![2, 3, 4, 5],
                std::vec![5, 6],
                std::vec![2, 3, 4, 6],
            ),
            (
                std::vec![3, 1, 5],
                std::vec![2, 1, 5, 7],
                std::vec![2, 3, 1, 7],
            ),
        ] {
            let a = rand_vec(ad.iter().product(), &mut seed);
            let b = rand_vec(bd.iter().product(), &mut seed);
            let y = matmul(&ad, &a, &bd, &b, &yd).unwrap();
            let (m, k, n) = (ad[ad.len() - 2], ad[ad.len() - 1], bd[bd.len() - 1]);
            let nb = yd.len() - 2;
            let batches: usize = yd[..nb].iter().product();
            for i in 0..batches {
                // decompose i over yd[..nb] and map into a/b batch indices
                let mut idx = std::vec![0usize; nb];
                let mut r = i;
                for ax in (0..nb).rev() {
                    idx[ax] = r % yd[ax];
                    r /= yd[ax];
                }
                let off = |d: &[usize]| {
                    let db = &d[..d.len() - 2];
                    let mut o = 0;
                    for (j, &dim) in db.iter().enumerate() {
                        let ix = idx[nb - db.len() + j];
                        o = o * dim + if dim == 1 { 0 } else { ix };
                    }
                    o
                };
                let (oa, ob) = (off(&ad), off(&bd));
                let mut want = std::vec![0.0f32; m * n];
                naive(
                    m,
                    n,
                    k,
                    1.0,
                    &a[oa * m * k..][..m * k],
                    false,
                    &b[ob * k * n..][..k * n],
                    false,
                    &mut want,
                );
                assert!(max_err(&y[i * m * n..][..m * n], &want) < 1e-5);
            }
        }
    }

    #[test]
    fn matmul_integers() {
        let a = [1i64, 2, 3, 4];
        let b = [5i64, 6, 7, 8];
        let mut y = [0i64; 4];
        let ins = [
            Some(TensorRef {
                dtype: DType::I64,
                shape: Shape::new(&[2, 2]).unwrap(),
                data: bytemuck::cast_slice(&a),
            }),
            Some(TensorRef {
                dtype: DType::I64,
                shape: Shape::new(&[2, 2]).unwrap(),
                data: bytemuck::cast_slice(&b),
            }),
        ];
        let mut outs = [TensorMut {
            dtype: DType::I64,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_matmul(&ins, &mut outs, &mut []).unwrap();
        assert_eq!(y, [19, 22, 43, 50]);
    }

    /// Random MatMul / Gemm shapes must give a result or an error, never a panic.
    #[test]
    fn malformed_never_panics() {
        let mut seed = 9u32;
        let mut r = |n: u32| {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            ((seed >> 8) % n.max(1)) as usize
        };
        let mut oks = 0;
        for _ in 0..3000 {
            let (ra, rb) = (1 + r(4), 1 + r(4));
            let k = r(4);
            let mut ad: Vec<usize> = (0..ra).map(|_| r(3)).collect();
            let mut bd: Vec<usize> = (0..rb).map(|_| r(3)).collect();
            if r(4) != 0 {
                *ad.last_mut().unwrap() = k;
                let i = if rb == 1 { 0 } else { rb - 2 };
                bd[i] = k;
            }
            // numpy result shape, sometimes perturbed
            let (ab, bb) = (&ad[..ra.saturating_sub(2)], &bd[..rb.saturating_sub(2)]);
            let nb = ab.len().max(bb.len());
            let mut yd: Vec<usize> = (0..nb)
                .map(|i| {
                    let da = if i + ab.len() >= nb {
                        ab[i + ab.len() - nb]
                    } else {
                        1
                    };
                    let db = if i + bb.len() >= nb {
                        bb[i + bb.len() - nb]
                    } else {
                        1
                    };
                    if da == 1 { db } else { da }
                })
                .collect();
            if ra > 1 {
                yd.push(ad[ra - 2]);
            }
            if rb > 1 {
                yd.push(bd[rb - 1]);
            }
            if r(8) == 0 && !yd.is_empty() {
                yd[0] += 1;
            }
            let (sa, sb, sy) = (
                Shape::new(&ad).unwrap(),
                Shape::new(&bd).unwrap(),
                Shape::new(&yd).unwrap(),
            );
            let a = std::vec![1.0f32; sa.numel()];
            let b = std::vec![1.0f32; sb.numel()];
            let mut y = std::vec![0.0f32; sy.numel()];
            let mut ws = std::vec![0u32; gemm_workspace_bytes(&[Some(sa), Some(sb)], &[sy]) / 4];
            let c = std::vec![1.0f32; yd.last().copied().unwrap_or(1)];
            let ins = [
                tref(&ad, &a),
                tref(&bd, &b),
                if r(2) == 0 {
                    tref(&yd[yd.len().saturating_sub(1)..], &c)
                } else {
                    None
                },
            ];
            let mut outs = [TensorMut {
                dtype: DType::F32,
                shape: sy,
                data: bytemuck::cast_slice_mut(&mut y),
            }];
            let ok = run_matmul(&ins[..2], &mut outs, bytemuck::cast_slice_mut(&mut ws)).is_ok();
            oks += usize::from(ok);
            let p = GemmParams {
                trans_a: r(2) as u32,
                trans_b: r(2) as u32,
                alpha: 1.0,
                beta: 1.0,
                act: Activation::default(),
            };
            let _ = run_gemm(&p, &ins, &mut outs, bytemuck::cast_slice_mut(&mut ws));
        }
        assert!(oks > 1000, "only {oks} well-formed cases ran");
    }

    /// `cargo test -p ge-sim --release --lib gemm_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn gemm_speed() {
        let mut seed = 1;
        for s in [256usize, 512, 1024] {
            let a = rand_vec(s * s, &mut seed);
            let b = rand_vec(s * s, &mut seed);
            let mut c = std::vec![0.0f32; s * s];
            let mut ws = std::vec![0.0; sgemm_ws_len(s, s, s)];
            sgemm(
                s, s, s, 1.0, &a, s, false, &b, s, false, false, &mut c, s, &mut ws,
            )
            .unwrap();
            let reps = if s <= 512 { 10 } else { 3 };
            let t = std::time::Instant::now();
            for _ in 0..reps {
                sgemm(
                    s, s, s, 1.0, &a, s, false, &b, s, false, false, &mut c, s, &mut ws,
                )
                .unwrap();
            }
            let dt = t.elapsed().as_secs_f64() / reps as f64;
            std::println!(
                "sgemm {s}^3: {:.1} GFLOP/s",
                2.0 * (s * s * s) as f64 / dt / 1e9
            );
        }
    }
}
