//! 2-D f32 max pooling in AVX-512 registers: the host path for the pools every CNN stem
//! and stage boundary has (3 × 3 stride 2, 2 × 2 stride 2). Per output row the window's
//! input rows are folded column by column into a stack row, then each tap's columns (for
//! stride 2, the even lanes of two registers, one permute) fold into 16 outputs at a time.
//! The generic separable path did the same work through closures that compiled to masked
//! stack stores and a library copy per output row (a 64 × 112 × 112 pool: 2.6 ns per
//! output; onnxruntime's NCHW kernel 2.1).
//!
//! Values equal [`super::fold_windows`]'s bitwise: interior outputs fold rows then taps in
//! its separable order, border outputs take its per-tap order, with the same NaN-keeping
//! [`max_step`]. O(output rows · (window rows · columns + outputs · k)).

use core::arch::x86_64::*;

use super::{Axis, max_step};

/// Stack row of folded columns (f32), slack for the last register's reads included.
const ROW: usize = 1024;
/// Columns read past a chunk's last needed one (a stride-2 tap reads two registers).
const SLACK: usize = 32;
/// Stack of folded chunks awaiting their taps (f32; at least `ROW`).
const STACK: usize = 4096;
/// Chunks awaiting their taps at most.
const PENDING: usize = 64;
/// Window rows at most (taller windows take the generic path).
const WINDOW_ROWS: usize = 32;

/// Max pooling of 2-D planes (`ax[0]` a unit axis) with horizontal stride 1 or 2; `false`
/// (nothing written) for other shapes, which the generic path takes.
///
/// # Safety
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn max_pool_2d(x: &[f32], y: &mut [f32], ax: &[Axis; 3]) -> bool {
    let [a0, a1, a2] = ax;
    if (a0.inp, a0.out, a0.k) != (1, 1, 1)
        || !(1..=2).contains(&a2.s)
        || a2.d == 0
        || a1.k > WINDOW_ROWS
    {
        return false;
    }
    let span = (a2.k - 1) * a2.d;
    let (c_lo, c_hi) = a2.interior();
    // Outputs per chunk whose columns fit the stack row.
    let Some(chunk) = (ROW - SLACK).checked_sub(span + 1).map(|r| r / a2.s + 1) else {
        return false;
    };
    let (xp, yp) = (a1.inp * a2.inp, a1.out * a2.out);
    if c_hi == c_lo || chunk < 16 || xp == 0 || yp == 0 {
        return false;
    }
    // Folded columns of several chunks (rows) wait in `stack` before their taps fold, so a
    // chunk's stores have retired when its taps load them: on narrow planes (13 outputs a
    // row) folding one row then loading it at once stalled on store forwarding every row.
    let mut stack = [f32::NEG_INFINITY; STACK];
    // (slot start, output row, first output, outputs) of the chunks folded into `stack`.
    let mut pending = [(0usize, 0usize, 0usize, 0usize); PENDING];
    for (xpl, ypl) in x.chunks_exact(xp).zip(y.chunks_exact_mut(yp)) {
        let (mut used, mut np) = (0, 0);
        for o1 in 0..a1.out {
            let (l1, h1, _) = a1.taps(o1);
            let row = |t1: usize| {
                let r = a1.index(o1, t1);
                &xpl[r * a2.inp..(r + 1) * a2.inp]
            };
            let yrow = &mut ypl[o1 * a2.out..(o1 + 1) * a2.out];
            // Border outputs: the generic path's per-tap loop.
            for o2 in (0..c_lo).chain(c_hi..a2.out) {
                let (l2, h2, _) = a2.taps(o2);
                let mut acc = f32::NEG_INFINITY;
                for t1 in l1..h1 {
                    let r = row(t1);
                    for t2 in l2..h2 {
                        acc = max_step(acc, r[a2.index(o2, t2)]);
                    }
                }
                yrow[o2] = if (h1 - l1) * (h2 - l2) == 0 { 0.0 } else { acc };
            }
            if h1 == l1 {
                yrow[c_lo..c_hi].fill(0.0);
                continue;
            }
            let mut o = c_lo;
            while o < c_hi {
                let n = chunk.min(c_hi - o);
                let base = o * a2.s - a2.pb;
                let need = (n - 1) * a2.s + span + 1;
                if used + need + SLACK > STACK || np == PENDING {
                    // SAFETY: AVX-512F is enabled here.
                    unsafe { fold_pending(&stack, &pending[..np], a2, span, ypl) };
                    (used, np) = (0, 0);
                }
                // The window's rows (`h1 − l1 ≤ k ≤ WINDOW_ROWS`), each `need` columns.
                let mut rows: [&[f32]; WINDOW_ROWS] = [&[]; WINDOW_ROWS];
                for (r, t1) in rows.iter_mut().zip(l1..h1) {
                    *r = &row(t1)[base..base + need];
                }
                // SAFETY: AVX-512F is enabled here; at least one row (`h1 > l1`), all `need`
                // long, and the slot holds `need + SLACK`.
                unsafe { fold_rows(&rows[..h1 - l1], &mut stack[used..used + need + SLACK]) };
                pending[np] = (used, o1, o, n);
                np += 1;
                used += need + SLACK;
                o += n;
            }
        }
        // SAFETY: AVX-512F is enabled here.
        unsafe { fold_pending(&stack, &pending[..np], a2, span, ypl) };
    }
    true
}

/// `a` where `v` is not larger (or NaN), else `v`: [`max_step`]'s choice per lane.
#[inline(always)]
unsafe fn keep_max(a: __m512, v: __m512) -> __m512 {
    // SAFETY: register-only AVX-512F operations.
    unsafe {
        let take =
            _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, a) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        _mm512_mask_mov_ps(a, take, v)
    }
}

/// Folds the taps of the chunks in `pending` (slot start, output row, first output,
/// outputs) from their folded columns in `stack` into the plane `ypl`.
///
/// # Safety
/// AVX-512F; each chunk's slot holds its folded columns and `SLACK` more within `stack`.
#[inline(always)]
unsafe fn fold_pending(
    stack: &[f32; STACK],
    pending: &[(usize, usize, usize, usize)],
    a2: &Axis,
    span: usize,
    ypl: &mut [f32],
) {
    for &(slot, o1, o, n) in pending {
        let len = (n - 1) * a2.s + span + 1 + SLACK;
        let y = &mut ypl[o1 * a2.out + o..][..n];
        // SAFETY: forwarded contract; the slot is `len` long.
        unsafe { fold_taps(&stack[slot..slot + len], a2, n, y) };
    }
}

/// Folds the window's input rows (each `need` columns) into `cols[..need]`: per register
/// of columns, the rows in order, in registers (folding a row at a time into `cols` read
/// each register back right after its masked store, a store-forwarding stall per row on
/// narrow planes).
///
/// # Safety
/// AVX-512F; at least one row, every row as long as the first, `need ≤ cols.len()`.
#[inline(always)]
unsafe fn fold_rows(rows: &[&[f32]], cols: &mut [f32]) {
    let need = rows[0].len();
    assert!(need <= cols.len() && rows.iter().all(|r| r.len() == need));
    let mut c = 0;
    // SAFETY: full registers cover `c + 16 ≤ need`, the tail is masked to `need − c` lanes.
    unsafe {
        while c + 16 <= need {
            _mm512_storeu_ps(cols.as_mut_ptr().add(c), fold_column(rows, c, !0));
            c += 16;
        }
        if c < need {
            let k: __mmask16 = (1u16 << (need - c)) - 1;
            _mm512_mask_storeu_ps(cols.as_mut_ptr().add(c), k, fold_column(rows, c, k));
        }
    }
}

/// Lanes `k` of columns `c..c + 16` folded over `rows` in order.
///
/// # Safety
/// AVX-512F; the lanes of `k` lie inside every row.
#[inline(always)]
unsafe fn fold_column(rows: &[&[f32]], c: usize, k: __mmask16) -> __m512 {
    // SAFETY: forwarded contract.
    unsafe {
        let mut acc = _mm512_maskz_loadu_ps(k, rows[0].as_ptr().add(c));
        for r in &rows[1..] {
            acc = keep_max(acc, _mm512_maskz_loadu_ps(k, r.as_ptr().add(c)));
        }
        acc
    }
}

/// `y[j] = max over taps t (in order) of cols[j·s + t·d]`, 16 outputs per register.
///
/// # Safety
/// AVX-512F; `cols` holds the `(n − 1)·s + span + 1` folded columns and `SLACK` more.
#[inline(always)]
unsafe fn fold_taps(cols: &[f32], a2: &Axis, n: usize, y: &mut [f32]) {
    debug_assert!(cols.len() >= (n - 1) * a2.s + (a2.k - 1) * a2.d + 1 + SLACK);
    // Even lanes of two registers: output j of 16 reads lane 2j.
    // SAFETY: register-only.
    let evens =
        unsafe { _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) };
    let mut j = 0;
    while j < n {
        let lanes = (n - j).min(16);
        // SAFETY: reads stay below `(j + 15)·s + span + 17 ≤ need + SLACK ≤ ROW`.
        unsafe {
            let tap = |t: usize| {
                let at = cols.as_ptr().add(j * a2.s + t * a2.d);
                if a2.s == 1 {
                    _mm512_loadu_ps(at)
                } else {
                    let (lo, hi) = (_mm512_loadu_ps(at), _mm512_loadu_ps(at.add(16)));
                    _mm512_permutex2var_ps(lo, evens, hi)
                }
            };
            let mut acc = tap(0);
            for t in 1..a2.k {
                acc = keep_max(acc, tap(t));
            }
            let k: __mmask16 = if lanes == 16 { !0 } else { (1u16 << lanes) - 1 };
            _mm512_mask_storeu_ps(y.as_mut_ptr().add(j), k, acc);
        }
        j += 16;
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Axis, WINDOWS, fold_windows, max_fin, max_step, separable};
    use crate::kernels::isa::Isa;

    /// A row axis of `inp` inputs: window `k`, stride `s`, dilation `d`, pads `pb`/`pe`
    /// (floor-mode output size).
    fn axis(inp: usize, k: usize, s: usize, d: usize, pb: usize, pe: usize) -> Axis {
        let out = (inp + pb + pe - (k - 1) * d - 1) / s + 1;
        Axis {
            inp,
            out,
            k,
            s,
            d,
            pb,
            pe,
        }
    }

    /// Bitwise the generic path's values (its separable interior, its per-tap borders) on
    /// planes with NaNs, signed zeros and infinities, several chunks per row, strides 1
    /// and 2, dilation and asymmetric pads (the windows of the pool tests).
    #[test]
    fn avx512_max_pool_is_bitwise_the_generic_path() {
        if !Isa::Avx512.supported() {
            std::println!("skipping the AVX-512 max pool: this CPU lacks AVX-512");
            return;
        }
        let special = [f32::NAN, -0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY];
        // Narrow rows (fewer than 16 interior outputs), more rows than `PENDING`, rows past
        // `STACK` in chunks.
        for (h, w) in [
            (9, 37),
            (5, 64),
            (3, 200),
            (4, 1700),
            (27, 27),
            (13, 13),
            (150, 9),
        ] {
            let x: std::vec::Vec<f32> = (0..2 * h * w)
                .map(|i| match i % 97 {
                    3 | 40 | 41 | 77 | 90 => special[(i / 97) % special.len()],
                    _ => ((i * 7919) % 211) as f32 - 100.0,
                })
                .collect();
            for (k, s, d, pb, pe) in WINDOWS {
                let unit = axis(1, 1, 1, 1, 0, 0);
                let ax = [
                    unit,
                    axis(h, k[0], s[0], d[0], pb[0], pe[0]),
                    axis(w, k[1], s[1], d[1], pb[1], pe[1]),
                ];
                let n = 2 * ax[1].out * ax[2].out;
                let (mut got, mut want) = (std::vec![7.0f32; n], std::vec![7.0f32; n]);
                // SAFETY: AVX-512 is supported (checked above).
                let ran = unsafe { super::max_pool_2d(&x, &mut got, &ax) };
                if !ran {
                    // No interior output in a row, or stride 3: the generic path's.
                    assert!(
                        s[1] > 2 || ax[2].interior().0 == ax[2].interior().1,
                        "{h}x{w} k {k:?} s {s:?}: not taken"
                    );
                    continue;
                }
                fold_windows(
                    &x,
                    &mut want,
                    &ax,
                    f32::NEG_INFINITY,
                    max_step,
                    separable(max_step),
                    max_fin,
                );
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<std::vec::Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{h}x{w} k {k:?} s {s:?} d {d:?}");
            }
        }
    }
}
