//! The implicit im2col: a [`PackB`] source that packs the GEMM's B blocks straight from the
//! input (no column matrix), the explicit column walk, and col2im for ConvTranspose.

use super::*;

/// Output indices `o` in `[o0, o1)` whose big-grid index `o·s + off` lies in `[0, limit)`.
pub(super) fn valid_range(
    o0: usize,
    o1: usize,
    s: usize,
    off: i64,
    limit: usize,
) -> (usize, usize) {
    let s = s as i64;
    let lo = if off >= 0 { 0 } else { (-off + s - 1) / s };
    let top = limit as i64 - 1 - off;
    let hi = if top < 0 { 0 } else { top / s + 1 };
    let lo = (lo.max(0) as usize).clamp(o0, o1);
    let hi = (hi.max(0) as usize).clamp(lo, o1);
    (lo, hi)
}

/// Big-grid index of small index `o` on axis `a` at kernel tap `t`, if inside the grid.
#[inline]
pub(super) fn big_index(geo: &Geo, a: usize, o: usize, t: usize) -> Option<usize> {
    let v = (o * geo.s[a] + t * geo.d[a]) as i64 - geo.pb[a] as i64;
    if v >= 0 && (v as usize) < geo.big[a] {
        Some(v as usize)
    } else {
        None
    }
}

/// Walks the column rows `r` (channel, kd, kh, kw) and, for columns `[p0, p0 + cols)`, the
/// runs along the innermost axis, calling `f(r, t, len, big_row, lo, hi, off)` where
/// `t` is the column offset of the run, `big_row` the start of the big-grid row (or `None`
/// when the run's row is outside the grid), `[lo, hi)` the sub-run (relative indices) that
/// maps inside, and `off` the big index of the run's first element (may be negative).
pub(super) fn walk_columns(
    geo: &Geo,
    channels: usize,
    p0: usize,
    cols: usize,
    mut f: impl FnMut(usize, usize, usize, Option<usize>, usize, usize, i64),
) {
    let [k0, k1, k2] = geo.k;
    let [s0, s1, s2] = geo.small;
    let plane2 = s1 * s2;
    let mut r = 0;
    for ch in 0..channels {
        for t0 in 0..k0 {
            for t1 in 0..k1 {
                for t2 in 0..k2 {
                    let mut p = p0;
                    let mut t = 0;
                    while t < cols {
                        let (o0, o1, o2) = (p / plane2, (p / s2) % s1, p % s2);
                        let len = (s2 - o2).min(cols - t);
                        let row = match (
                            o0 < s0,
                            big_index(geo, 0, o0, t0),
                            big_index(geo, 1, o1, t1),
                        ) {
                            (true, Some(b0), Some(b1)) => {
                                Some((ch * geo.big[0] + b0) * geo.big[1] + b1)
                            }
                            _ => None,
                        };
                        let off = (o2 * geo.s[2] + t2 * geo.d[2]) as i64 - geo.pb[2] as i64;
                        let (lo, hi) = valid_range(
                            o2,
                            o2 + len,
                            geo.s[2],
                            t2 as i64 * geo.d[2] as i64 - geo.pb[2] as i64,
                            geo.big[2],
                        );
                        f(
                            r,
                            t,
                            len,
                            row.map(|r| r * geo.big[2]),
                            lo - o2,
                            hi - o2,
                            off,
                        );
                        p += len;
                        t += len;
                    }
                    r += 1;
                }
            }
        }
    }
}

/// Taps whose valid-output ranges are tabulated per pack call (larger kernels compute them).
pub(super) const TAP_TABLE: usize = 16;

/// The implicit im2col matrix of one group's input (`cg·Πk` rows × output-plane columns),
/// packed for the GEMM straight from the input: row `r` = (channel, t0, t1, t2), column
/// `j` = output position (o0, o1, o2); out-of-input taps are zero.
pub(super) struct Im2col<'a> {
    pub(super) geo: &'a Geo,
    pub(super) x: &'a [f32],
}

impl Im2col<'_> {
    /// Output indices on axis `a` whose input index at tap `t` lies inside the input.
    pub(super) fn tap_range(&self, a: usize, t: usize) -> (usize, usize) {
        let g = self.geo;
        valid_range(
            0,
            g.small[a],
            g.s[a],
            (t * g.d[a]) as i64 - g.pb[a] as i64,
            g.big[a],
        )
    }
}

/// Zeroes columns `col..col + len` of row `p` of NR-wide panels.
#[inline(always)]
pub(super) fn zero(out: &mut [f32], kc: usize, p: usize, mut col: usize, mut len: usize) {
    while len > 0 {
        let lane = col % NR;
        let take = (NR - lane).min(len);
        let at = (col / NR) * kc * NR + p * NR + lane;
        out[at..at + take].fill(0.0);
        len -= take;
        col += take;
    }
}

impl PackB for Im2col<'_> {
    fn pack(&self, pc: usize, kc: usize, jc: usize, nc: usize, out: &mut [f32]) {
        let g = self.geo;
        let [k0, k1, k2] = g.k;
        let [s0, s1, s2] = g.small;
        let plane2 = s1 * s2;
        let (st2, d2, pb2, big2) = (g.s[2], g.d[2], g.pb[2] as i64, g.big[2]);
        let mut r1 = [(0usize, 0usize); TAP_TABLE];
        let mut r2 = [(0usize, 0usize); TAP_TABLE];
        for (t, r) in r1.iter_mut().enumerate().take(k1) {
            *r = self.tap_range(1, t);
        }
        for (t, r) in r2.iter_mut().enumerate().take(k2) {
            *r = self.tap_range(2, t);
        }
        let range1 = |t: usize| {
            if t < TAP_TABLE {
                r1[t]
            } else {
                self.tap_range(1, t)
            }
        };
        let range2 = |t: usize| {
            if t < TAP_TABLE {
                r2[t]
            } else {
                self.tap_range(2, t)
            }
        };
        // Pieces: columns of one output row inside one panel (so each piece's destination
        // in a packed row is contiguous).
        let (big0, big1) = (g.big[0], g.big[1]);
        // Start of input row (ch, o0·s0 + t0·d0 − p0, o1·s1 + t1·d1 − p1), if inside.
        let row_base = |ch: usize, o0: usize, o1: usize, t0: usize, t1: usize| {
            let b0 = big_index(g, 0, o0, t0)?;
            let (lo, hi) = range1(t1);
            if o0 >= s0 || o1 < lo || o1 >= hi {
                return None;
            }
            let b1 = o1 * g.s[1] + t1 * g.d[1] - g.pb[1];
            Some(((ch * big0 + b0) * big1 + b1) * big2)
        };
        let mut j = jc;
        while j < jc + nc {
            let (o0, o1, o2) = (j / plane2, (j / s2) % s1, j % s2);
            let col = j - jc;
            let len = (s2 - o2).min(jc + nc - j).min(NR - col % NR);
            let at0 = (col / NR) * kc * NR + col % NR;
            // Decode row pc into (channel, t0, t1, t2) and walk the rows incrementally.
            let (mut ch, rem) = (pc / g.kprod, pc % g.kprod);
            let (mut t0, mut t1, mut t2) = (rem / (k1 * k2), (rem / k2) % k1, rem % k2);
            let mut base = row_base(ch, o0, o1, t0, t1);
            for p in 0..kc {
                let dst = &mut out[at0 + p * NR..at0 + p * NR + len];
                match base {
                    Some(row) => {
                        let (lo2, hi2) = range2(t2);
                        let lo = lo2.clamp(o2, o2 + len) - o2;
                        let hi = hi2.clamp(o2 + lo, o2 + len) - o2;
                        dst[..lo].fill(0.0);
                        dst[hi..].fill(0.0);
                        if hi > lo {
                            let start = row + (((o2 + lo) * st2 + t2 * d2) as i64 - pb2) as usize;
                            if st2 == 1 {
                                if hi - lo == NR {
                                    let d: &mut [f32; NR] =
                                        dst.try_into().unwrap_or_else(|_| unreachable!());
                                    let s: &[f32; NR] = self.x[start..start + NR]
                                        .try_into()
                                        .unwrap_or_else(|_| unreachable!());
                                    *d = *s;
                                } else {
                                    dst[lo..hi].copy_from_slice(&self.x[start..start + hi - lo]);
                                }
                            } else {
                                let src = &self.x[start..];
                                for (i, d) in dst[lo..hi].iter_mut().enumerate() {
                                    *d = src[i * st2];
                                }
                            }
                        }
                    }
                    None => dst.fill(0.0),
                }
                // next row
                t2 += 1;
                if t2 == k2 {
                    t2 = 0;
                    t1 += 1;
                    if t1 == k1 {
                        t1 = 0;
                        t0 += 1;
                        if t0 == k0 {
                            t0 = 0;
                            ch += 1;
                        }
                    }
                    if p + 1 < kc {
                        base = row_base(ch, o0, o1, t0, t1);
                    }
                }
            }
            j += len;
        }
        // Zero the columns of the last panel past `nc`.
        let tail = nc.next_multiple_of(NR) - nc;
        if tail > 0 {
            for p in 0..kc {
                zero(out, kc, p, nc, tail);
            }
        }
    }
}

/// Scatter-adds columns `[p0, p0 + cols)` into `y` (mg big planes).
pub(super) fn col2im(geo: &Geo, col: &[f32], p0: usize, cols: usize, y: &mut [f32]) {
    let st = geo.s[2];
    walk_columns(geo, geo.mg, p0, cols, |r, t, _len, row, lo, hi, off| {
        if let Some(base) = row
            && hi > lo
        {
            let src = &col[r * cols + t + lo..r * cols + t + hi];
            let start = base + (off + (lo * st) as i64) as usize;
            if st == 1 {
                for (d, s) in y[start..start + src.len()].iter_mut().zip(src) {
                    *d += *s;
                }
            } else {
                for (j, s) in src.iter().enumerate() {
                    y[start + j * st] += *s;
                }
            }
        }
    });
}
