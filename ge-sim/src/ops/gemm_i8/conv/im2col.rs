//! Columns for the int8 GEMM: im2col (padding filled with the activation zero point), by
//! taps, the flipped-weight zero-point corrections, and 16 × 16 byte transposes.

use super::*;

/// The corrections for activations read as `a + 128`: the tile then sums
/// `Σ(a + 128)·b = Σa·b + 128·Σb` and the row sums grow by `128·k`, so
/// `corr'_j = corr_j − 128·Σ_k B[k][j] + 128·k·zb_j` (wrapping, as every i32 here) gives the
/// same result. `Σ_k B` comes from the packed panels (their padding is zero). O(m·k).
pub(super) fn flipped_corrections(s: &Slices<'_>, out: &mut [i32]) {
    use crate::ops::gemm_i8::NR;
    let g = &s.g;
    let mg = g.m / g.group;
    let kp = g.k.div_ceil(2) * 2;
    for gi in 0..g.group {
        for p in 0..mg.div_ceil(NR) {
            // One pass over the panel sums its sixteen columns (pair rows
            // `[B[2q][j], B[2q+1][j]]`; the padding is zero).
            let panel = &s.b[gi * s.plen + p * NR * kp..][..NR * kp];
            let mut sums = [0i32; NR];
            for pair in panel.chunks_exact(2 * NR) {
                for (c, sum) in sums.iter_mut().enumerate() {
                    *sum += i32::from(pair[2 * c]) + i32::from(pair[2 * c + 1]);
                }
            }
            for (t, &sum) in sums.iter().enumerate().take(mg - p * NR) {
                let j = gi * mg + p * NR + t;
                if let Some(o) = out.get_mut(j) {
                    *o = flipped_correction(s, j, sum);
                }
            }
        }
    }
}

/// Channel `j`'s correction for flipped activations, from its column sum.
pub(super) fn flipped_correction(s: &Slices<'_>, j: usize, colsum: i32) -> i32 {
    let zb = pick(s.zb, j).unwrap_or(0);
    s.corr[j]
        .wrapping_sub(colsum.wrapping_mul(128))
        .wrapping_add((s.g.k as i32).wrapping_mul(128).wrapping_mul(zb))
}

/// im2col through a tap-major block: for each tap (input channel, kernel row, kernel
/// column) the block's `rows` positions read runs of one input row (column stride 1), copied
/// whole into `t[tap][r]` with the padding filled around them; one byte transpose then gives
/// `cols[r][tap]`. Same bytes as [`im2col`], without its per-position, per-row small copies
/// (most of a 3×3 int8 conv's time after the VNNI tile). O(rows·k).
#[allow(clippy::too_many_arguments)]
pub(super) fn im2col_by_taps(
    p: &QConvParams,
    g: &Geom,
    x: &[u8],
    pad: u8,
    p0: usize,
    rows: usize,
    t: &mut [u8],
    cols: &mut [u8],
) {
    let (sh, dh, dw) = (
        p.stride[0] as usize,
        p.dilation[0] as isize,
        p.dilation[1] as isize,
    );
    let (pt, pl) = (p.pad_begin[0] as isize, p.pad_begin[1] as isize);
    let (hw, win) = (g.h * g.w, g.kh * g.kw);
    for (tap, trow) in t.chunks_exact_mut(rows).enumerate().take(g.k) {
        let (c, i, j) = (tap / win, (tap / g.kw) % g.kh, tap % g.kw);
        let plane = &x[c * hw..(c + 1) * hw];
        let mut r = 0;
        while r < rows {
            let pos = p0 + r;
            let (oy, ox0) = (pos / g.ow, pos % g.ow);
            let n = (g.ow - ox0).min(rows - r);
            let dst = &mut trow[r..r + n];
            let iy = (oy * sh) as isize - pt + i as isize * dh;
            if iy < 0 || iy as usize >= g.h {
                dst.fill(pad);
            } else {
                let line = &plane[iy as usize * g.w..][..g.w];
                let start = ox0 as isize - pl + j as isize * dw;
                let lo = (-start).clamp(0, n as isize) as usize;
                let hi = (g.w as isize - start).clamp(lo as isize, n as isize) as usize;
                dst[..lo].fill(pad);
                dst[hi..].fill(pad);
                let from = (start + lo as isize) as usize;
                crate::ops::copy::copy_short(&mut dst[lo..hi], &line[from..from + (hi - lo)]);
            }
            r += n;
        }
    }
    transpose_bytes(t, rows, g.k, rows, cols, g.k);
}

/// `dst[j·ldd + i] = src[i·lds + j]` for `i < rows`, `j < cols`: whole 16 × 16 blocks by
/// SSE2 byte unpacks (four rounds), the edges element by element. The 1×1 conv's im2col and
/// the block-to-planes copy are such transposes; element by element they cost as much as a
/// small conv's GEMM. O(rows·cols).
pub(in crate::ops::gemm_i8) fn transpose_bytes(
    src: &[u8],
    lds: usize,
    rows: usize,
    cols: usize,
    dst: &mut [u8],
    ldd: usize,
) {
    if rows == 0 || cols == 0 {
        return;
    }
    // Every read and write below stays inside these.
    let (need_src, need_dst) = ((rows - 1) * lds + cols, (cols - 1) * ldd + rows);
    let (src, dst) = (&src[..need_src], &mut dst[..need_dst]);
    // The 16×16 SIMD blocks cover `full_r × full_c`; the scalar loop below the rest.
    let (full_r, full_c) = crate::arch::kernels::transpose_blocks16(src, lds, dst, ldd, rows, cols);
    for i in 0..rows {
        // Columns the blocks did not cover: all of them in rows past the blocks.
        let from = if i < full_r { full_c } else { 0 };
        for j in from..cols {
            dst[j * ldd + i] = src[i * lds + j];
        }
    }
}

/// `dst[j·ld + r] = src[r·cols + j]` for `r < rows`, `j < cols`: a row-major block written
/// column by column (the GEMM's position-major block into channel planes). O(rows·cols).
pub(super) fn scatter_columns<T: Copy>(
    src: &[T],
    cols: usize,
    rows: usize,
    dst: &mut [T],
    ld: usize,
) {
    for j in 0..cols {
        let out = &mut dst[j * ld..][..rows];
        for (r, d) in out.iter_mut().enumerate() {
            *d = src[r * cols + j];
        }
    }
}

/// Columns of output positions `p0..p0 + rows` of one group: row `r`, column
/// `(c·kh + i)·kw + j` is `x[c, oh·sh − pt + i·dh, ow·sw − pl + j·dw]`, `pad` outside.
/// A 1×1 stride-1 unpadded conv is a transpose of the input block, done channel by channel
/// (contiguous reads into a block that stays in L1); otherwise each position's window rows
/// are copied whole when they lie inside the input, element by element only at the borders.
pub(super) fn im2col<A: Act + bytemuck::Pod>(
    p: &QConvParams,
    g: &Geom,
    xg: &[A],
    pad: u8,
    p0: usize,
    rows: usize,
    cols: &mut [u8],
) {
    let x: &[u8] = bytemuck::cast_slice(xg);
    let (sh, sw) = (p.stride[0] as isize, p.stride[1] as isize);
    let (dh, dw) = (p.dilation[0] as isize, p.dilation[1] as isize);
    let (pt, pl) = (p.pad_begin[0] as isize, p.pad_begin[1] as isize);
    let cg = g.c / g.group;
    let hw = g.h * g.w;
    if g.kh == 1 && g.kw == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0 && hw == g.oh * g.ow {
        transpose_bytes(&x[p0..], hw, cg, rows, cols, g.k);
        return;
    }
    let span = (g.kw as isize - 1) * dw;
    for r in 0..rows {
        let pos = p0 + r;
        let (oy, ox) = ((pos / g.ow) as isize, (pos % g.ow) as isize);
        let ix0 = ox * sw - pl;
        let whole = dw == 1 && ix0 >= 0 && ix0 + span < g.w as isize;
        let row = &mut cols[r * g.k..(r + 1) * g.k];
        for (c, chan) in row.chunks_exact_mut(g.kh * g.kw).enumerate().take(cg) {
            let plane = &x[c * hw..(c + 1) * hw];
            for (i, dst) in chan.chunks_exact_mut(g.kw).enumerate() {
                let iy = oy * sh - pt + i as isize * dh;
                if iy < 0 || iy as usize >= g.h {
                    dst.fill(pad);
                } else if whole {
                    let src = &plane[iy as usize * g.w + ix0 as usize..][..g.kw];
                    crate::ops::copy::copy_short(dst, src);
                } else {
                    let line = &plane[iy as usize * g.w..][..g.w];
                    for (j, d) in dst.iter_mut().enumerate() {
                        let ix = ix0 + j as isize * dw;
                        *d = if ix >= 0 && (ix as usize) < g.w {
                            line[ix as usize]
                        } else {
                            pad
                        };
                    }
                }
            }
        }
    }
}
