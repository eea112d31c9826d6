//! A padded input row split by horizontal stride phase: padded column `c·s + h` lands at
//! column `c` of phase `h`, so a strided conv's taps read consecutive values. The depthwise
//! bands and the direct path's bands (stride-2 rows: YOLO's downsampling convs spent a fifth
//! of their time copying value by value) fill their rows here. O(row) per row.

use super::Geo;
use crate::ops::copy::copy_short;

/// The valid columns `lo..hi` of horizontal phase `h` in a phase row of `pw`: padded column
/// `c·s + h` is input column `c·s + h − pl`, valid when `pl ≤ c·s + h < pl + iw`.
#[inline(always)]
pub(super) fn valid(geo: &Geo, h: usize, pw: usize) -> (usize, usize) {
    let (iw, sh, pl) = (geo.big[2], geo.s[2], geo.pb[2]);
    let lo = pl.saturating_sub(h).div_ceil(sh).min(pw);
    let hi = (pl + iw).saturating_sub(h).div_ceil(sh).clamp(lo, pw);
    (lo, hi)
}

/// Phase `h` of input row `xrow` into `dst`; its padding zeroed unless `zeroed` already.
#[inline(always)]
pub(super) fn phase_row(
    geo: &Geo,
    (lo, hi): (usize, usize),
    xrow: &[f32],
    h: usize,
    dst: &mut [f32],
    zeroed: bool,
) {
    let (sh, pl) = (geo.s[2], geo.pb[2]);
    if !zeroed {
        dst[..lo].fill(0.0);
        dst[hi..].fill(0.0);
    }
    let run = &mut dst[lo..hi];
    if sh == 1 {
        copy_short(run, &xrow[lo - pl..][..run.len()]);
    } else if !run.is_empty() {
        for (d, &s) in run
            .iter_mut()
            .zip(xrow[lo * sh + h - pl..].iter().step_by(sh))
        {
            *d = s;
        }
    }
}

/// Both phases of a stride-2 row in one pass over it (pairs of input columns split into
/// `p0` and `p1`, which the compiler turns into vector shuffles).
#[inline(always)]
pub(super) fn deinterleave(
    geo: &Geo,
    cols: &[(usize, usize); 2],
    xrow: &[f32],
    p0: &mut [f32],
    p1: &mut [f32],
    zeroed: bool,
) {
    let (iw, pl, pw) = (geo.big[2], geo.pb[2], p0.len());
    if !zeroed {
        for (dst, &(lo, hi)) in [&mut *p0, &mut *p1].into_iter().zip(cols) {
            dst[..lo].fill(0.0);
            dst[hi..].fill(0.0);
        }
    }
    // Input column i is padded column i + pl: phase (i + pl) % 2, column (i + pl) / 2.
    let i0 = pl & 1;
    if i0 == 1 && iw > 0 && pl / 2 < pw {
        p1[pl / 2] = xrow[0];
    }
    let c0 = (i0 + pl) / 2;
    let pairs = (iw.saturating_sub(i0) / 2).min(pw.saturating_sub(c0));
    split_pairs(
        &xrow[i0..i0 + 2 * pairs],
        &mut p0[c0..c0 + pairs],
        &mut p1[c0..c0 + pairs],
    );
    let i = i0 + 2 * pairs;
    if i < iw && (i + pl) / 2 < pw {
        p0[(i + pl) / 2] = xrow[i];
    }
}

/// `p0[j] = src[2j]`, `p1[j] = src[2j + 1]` (`src` holds `2·p0.len()`, `p1` as long as
/// `p0`): AVX2 shuffles where the CPU has them (a stride-2 depthwise conv spent half its
/// time here copying value by value), the rest one pair at a time. O(len).
#[inline(always)]
fn split_pairs(src: &[f32], p0: &mut [f32], p1: &mut [f32]) {
    let n = p0.len().min(p1.len()).min(src.len() / 2);
    let done = crate::arch::kernels::split_pairs(&src[..2 * n], &mut p0[..n], &mut p1[..n]);
    for ((a, b), s) in p0[done..n]
        .iter_mut()
        .zip(&mut p1[done..n])
        .zip(src[2 * done..2 * n].chunks_exact(2))
    {
        *a = s[0];
        *b = s[1];
    }
}
