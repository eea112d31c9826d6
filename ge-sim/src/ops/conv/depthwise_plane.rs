//! A depthwise convolution one channel plane at a time, in the row loop (3-D, or no workspace
//! for the banded kernel).

use super::*;

/// One depthwise channel: `y += w ⋆ x` (y holds the bias). Output row by output row, so the
/// row stays in L1 while every tap adds into it; each element still sums its taps in
/// (t0, t1, t2) order. O(output · taps).
#[inline(always)]
pub(super) fn depthwise_plane(geo: &Geo, x: &[f32], w: &[f32], y: &mut [f32]) {
    let [k0, k1, k2] = geo.k;
    let [s0, s1, s2] = geo.small;
    let st = geo.s[2];
    // Per innermost tap: the valid output columns and the input offset of the first one.
    let mut cols = [(0usize, 0usize, 0usize); TAP_TABLE];
    let col_range = |t2: usize| {
        let off = (t2 * geo.d[2]) as i64 - geo.pb[2] as i64;
        let (lo, hi) = valid_range(0, s2, st, off, geo.big[2]);
        let start = if hi > lo {
            (lo as i64 * st as i64 + off) as usize
        } else {
            0
        };
        (lo, hi, start)
    };
    for (t2, c) in cols.iter_mut().enumerate().take(k2) {
        *c = col_range(t2);
    }
    for o0 in 0..s0 {
        for o1 in 0..s1 {
            let yrow = &mut y[(o0 * s1 + o1) * s2..][..s2];
            for t0 in 0..k0 {
                let Some(b0) = big_index(geo, 0, o0, t0) else {
                    continue;
                };
                for t1 in 0..k1 {
                    let Some(b1) = big_index(geo, 1, o1, t1) else {
                        continue;
                    };
                    let xrow = &x[(b0 * geo.big[1] + b1) * geo.big[2]..][..geo.big[2]];
                    let wrow = &w[(t0 * k1 + t1) * k2..][..k2];
                    for (t2, &wv) in wrow.iter().enumerate() {
                        let (lo, hi, start) = if t2 < TAP_TABLE {
                            cols[t2]
                        } else {
                            col_range(t2)
                        };
                        if hi <= lo {
                            continue;
                        }
                        let yr = &mut yrow[lo..hi];
                        if st == 1 {
                            for (d, s) in yr.iter_mut().zip(&xrow[start..]) {
                                *d += wv * *s;
                            }
                        } else {
                            for (j, d) in yr.iter_mut().enumerate() {
                                *d += wv * xrow[start + j * st];
                            }
                        }
                    }
                }
            }
        }
    }
}
