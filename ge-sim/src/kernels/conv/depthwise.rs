//! Depthwise 2-D convolution (group == C == M) with the outputs in registers.
//!
//! Per channel, a band of input rows is copied once into the slot's workspace, zero-padded
//! and split by horizontal stride phase (`buf[(row·s + phase)·pw + j] = x[row][j·s + phase]`),
//! so every tap of every output reads a contiguous run of the band whatever the stride, and
//! no tap needs a bounds test. Each output row is then computed in blocks of 32 / 8 columns
//! (then one at a time) held in registers across all `kh × kw` taps, and stored once: the
//! previous loop read-modify-wrote the row once per tap and gathered strided columns one by
//! one. The sum per output is the bias, then the taps in row-major order, each a multiply
//! then an add (no FMA): the same value as the loop it replaces, on every ISA.
//!
//! Cost: one copy of the input (plus padding) per channel, and `kh·kw` multiply-adds per
//! output; workspace [`Layout::ws_len`] (a band per thread slot).

use super::Geo;
use crate::kernels::gemm::WS_SLOTS;

/// Target f32 size of one band (input rows × phases × phase width): well inside L2.
const BAND_CAP: usize = 1 << 14;
/// Most taps (`kh · kw`) the banded path takes; bigger kernels keep the row loop.
const MAX_TAPS: usize = 128;
/// f32 past a band's rows, read (never stored) by the last partial 8-column block.
const SLACK: usize = 8;

/// A depthwise conv's band geometry (2-D: the leading spatial axis is a unit axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// Width of one stride phase of a padded input row, with room for every tap's run.
    pw: usize,
    /// Output rows per band.
    band_out: usize,
    /// f32 of one band.
    band_len: usize,
}

impl Layout {
    /// f32 of workspace: one band per thread slot.
    pub(super) fn ws_len(&self) -> usize {
        WS_SLOTS * self.band_len
    }
}

/// Input rows (padded grid) a band of `out_rows` output rows reads.
fn in_rows(geo: &Geo, out_rows: usize) -> usize {
    (out_rows - 1) * geo.s[1] + (geo.k[1] - 1) * geo.d[1] + 1
}

/// The layout for `geo`, or `None` when the conv is not 2-D (a 3-D depthwise conv keeps the
/// row loop) or has no output.
pub(super) fn layout(geo: &Geo) -> Option<Layout> {
    if geo.big[0] != 1 || geo.small[0] != 1 || geo.k[0] != 1 || geo.small_plane == 0 {
        return None;
    }
    if geo.k[1].checked_mul(geo.k[2])? > MAX_TAPS {
        return None;
    }
    let (ow, st) = (geo.small[2], geo.s[2]);
    // Tap t2 reads phase (t2·d) % s from column (t2·d) / s on: a run of ow columns.
    let pw = ow.checked_add((geo.k[2] - 1).checked_mul(geo.d[2])? / st)?;
    let row = st.checked_mul(pw)?;
    let oh = geo.small[1];
    let mut band_out = oh;
    while band_out > 1 && in_rows(geo, band_out).checked_mul(row)? > BAND_CAP {
        band_out = band_out.div_ceil(2);
    }
    let band_len = in_rows(geo, band_out)
        .checked_mul(row)?
        .checked_add(SLACK)?;
    band_len.checked_mul(WS_SLOTS)?;
    Some(Layout {
        pw,
        band_out,
        band_len,
    })
}

/// One channel: `y` (holding the bias) `+= w ⋆ x`. `buf` holds [`Layout`]`::band_len` f32.
// Inlined into `isa::with_simd`'s closure, so it compiles for the chosen ISA.
#[inline(always)]
pub(super) fn plane(geo: &Geo, lay: &Layout, x: &[f32], w: &[f32], y: &mut [f32], buf: &mut [f32]) {
    let (oh, ow, st) = (geo.small[1], geo.small[2], geo.s[2]);
    // Each tap's offset in the band (from an output row's first input row) and weight.
    let mut table = [(0usize, 0f32); MAX_TAPS];
    let taps = &mut table[..geo.k[1] * geo.k[2]];
    for (t, tap) in taps.iter_mut().enumerate() {
        let (t1, c) = (t / geo.k[2], (t % geo.k[2]) * geo.d[2]);
        *tap = ((t1 * geo.d[1] * st + c % st) * lay.pw + c / st, w[t]);
    }
    let mut o0 = 0;
    while o0 < oh {
        let o1 = (o0 + lay.band_out).min(oh);
        let rows = in_rows(geo, o1 - o0);
        let band = &mut buf[..rows * st * lay.pw + SLACK];
        let (grid, slack) = band.split_at_mut(rows * st * lay.pw);
        fill(geo, lay, x, o0 * geo.s[1], grid);
        slack.fill(0.0);
        for o in o0..o1 {
            let base = (o - o0) * geo.s[1] * st * lay.pw;
            row(band, base, taps, &mut y[o * ow..(o + 1) * ow]);
        }
        o0 = o1;
    }
}

/// Copies padded-grid rows `r0..` of the channel into `band`, split by stride phase, zeros
/// where the padded grid lies outside the input.
#[inline(always)]
fn fill(geo: &Geo, lay: &Layout, x: &[f32], r0: usize, band: &mut [f32]) {
    let (ih, iw, st) = (geo.big[1], geo.big[2], geo.s[2]);
    let (pt, pl) = (geo.pb[1], geo.pb[2]);
    for (i, dst) in band.chunks_exact_mut(st * lay.pw).enumerate() {
        let src_row = (r0 + i).checked_sub(pt).filter(|&r| r < ih);
        let Some(r) = src_row else {
            dst.fill(0.0);
            continue;
        };
        let xrow = &x[r * iw..(r + 1) * iw];
        for (p, ph) in dst.chunks_exact_mut(lay.pw).enumerate() {
            // Column j of phase p is padded column j·s + p, input column j·s + p − pl.
            // Valid j: pl ≤ j·s + p < pl + iw.
            let lo = pl.saturating_sub(p).div_ceil(st).min(lay.pw);
            let hi = (pl + iw).saturating_sub(p).div_ceil(st).clamp(lo, lay.pw);
            ph[..lo].fill(0.0);
            ph[hi..].fill(0.0);
            if st == 1 {
                ph[lo..hi].copy_from_slice(&xrow[lo + p - pl..hi + p - pl]);
            } else {
                for (j, d) in ph[lo..hi].iter_mut().enumerate() {
                    *d = xrow[(lo + j) * st + p - pl];
                }
            }
        }
    }
}

/// One output row from band rows `r0..`: blocks of 32, then 8 (the last one partial: the
/// band has [`SLACK`] f32 past its end for it).
#[inline(always)]
fn row(band: &[f32], base: usize, taps: &[(usize, f32)], y: &mut [f32]) {
    let mut o = 0;
    while o + 32 <= y.len() {
        block::<32>(band, base + o, taps, &mut y[o..o + 32]);
        o += 32;
    }
    while o < y.len() {
        let end = (o + 8).min(y.len());
        block::<8>(band, base + o, taps, &mut y[o..end]);
        o = end;
    }
}

/// `out` (at most `N` columns) `+=` every tap's run from `band[base + offset..]`, in
/// registers: `N` columns are computed, `out.len()` stored.
#[inline(always)]
fn block<const N: usize>(band: &[f32], base: usize, taps: &[(usize, f32)], out: &mut [f32]) {
    let mut acc = [0f32; N];
    acc[..out.len()].copy_from_slice(out);
    for &(off, wv) in taps {
        // In range by construction: `pw`, the band's rows and its slack cover every run.
        let xs: &[f32; N] = band[base + off..base + off + N]
            .try_into()
            .unwrap_or_else(|_| unreachable!());
        for (a, &v) in acc.iter_mut().zip(xs) {
            *a += wv * v;
        }
    }
    let n = out.len();
    out.copy_from_slice(&acc[..n]);
}
