//! Folding windows: the generic per-output loop, whole planes, separable rows through an
//! interior buffer, and lane-wise folds the element loops vectorize.

use super::*;

/// A max pool's fold: the larger value, and a NaN (from either side) once seen.
#[inline(always)]
pub(crate) fn max_step(a: f32, v: f32) -> f32 {
    if v > a || v.is_nan() { v } else { a }
}

/// A max pool's output from its fold over `n` in-input taps (0 for a window of padding).
#[inline(always)]
pub(crate) fn max_fin(a: f32, n: usize, _padded: usize) -> f32 {
    if n == 0 { 0.0 } else { a }
}

/// Neighbouring outputs folded together in the interior loop (one AVX2 register of f32).
pub(super) const LANES: usize = 8;

/// Folds every window: `step` over its in-input taps from `init`, then
/// `fin(acc, valid_taps, taps_in_padded_extent)`. Returns the number of taps read.
///
/// Along the innermost axis, the windows that lie wholly inside the input (all but a few at
/// the borders) are folded a tap at a time across [`LANES`] outputs, so the loop runs
/// over neighbouring outputs and vectorizes; the border windows take the general path.
///
/// Given `combine`, the interior takes a separable path instead ([`Interior`]): `step` folds
/// the window's rows column by column into a stack row, the row is split into its stride
/// phases, and `combine` folds the taps across it — every loop contiguous, so strided
/// windows vectorize too (a 3×3 stride-2 max pool was a scalar gather per tap).
/// `combine(a, b)` must fold two partial accumulators as `step` folds values, in any order
/// with the same result (max: the callers give it for max pooling only, so sums keep their
/// order and every build the same values). O(output · taps) either way.
#[inline(always)]
pub(crate) fn fold_windows<T: Copy, A: Copy>(
    x: &[T],
    y: &mut [T],
    ax: &[Axis; 3],
    init: A,
    step: impl Fn(A, T) -> A,
    combine: Option<impl Fn(A, A) -> A>,
    fin: impl Fn(A, usize, usize) -> T,
) {
    let xp = ax[0].inp * ax[1].inp * ax[2].inp;
    let yp = ax[0].out * ax[1].out * ax[2].out;
    if xp == 0 || yp == 0 {
        return;
    }
    // Host speed for the simulator; firmware keeps the loops below (the same values).
    if cfg!(feature = "std") && whole_planes(x, y, ax, init, &step, &fin) {
        return;
    }
    let a2 = &ax[2];
    let (c_lo, c_hi) = a2.interior();
    let mut sep = combine.as_ref().and_then(|_| Interior::new(a2, init));
    for (xpl, ypl) in x.chunks_exact(xp).zip(y.chunks_exact_mut(yp)) {
        let mut yi = 0;
        for o0 in 0..ax[0].out {
            let (l0, h0, p0) = ax[0].taps(o0);
            for o1 in 0..ax[1].out {
                let (l1, h1, p1) = ax[1].taps(o1);
                let rows = (h0 - l0) * (h1 - l1);
                let row_at = |t0: usize, t1: usize| {
                    let i0 = ax[0].index(o0, t0);
                    (i0 * ax[1].inp + ax[1].index(o1, t1)) * a2.inp
                };
                let yrow = &mut ypl[yi..yi + a2.out];
                let mut o2 = 0;
                while o2 < a2.out {
                    if o2 == c_lo
                        && c_hi - c_lo >= LANES
                        && let (Some(sep), Some(combine)) = (sep.as_mut(), combine.as_ref())
                    {
                        let taps = (l0..h0).flat_map(|t0| (l1..h1).map(move |t1| (t0, t1)));
                        let inputs = taps.map(|(t0, t1)| {
                            let r = row_at(t0, t1);
                            &xpl[r..r + a2.inp]
                        });
                        let (valid, padded) = (rows * a2.k, p0 * p1 * a2.k);
                        sep.fold(
                            inputs,
                            c_lo..c_hi,
                            &mut yrow[c_lo..c_hi],
                            &step,
                            combine,
                            |a| fin(a, valid, padded),
                        );
                        o2 = c_hi;
                        continue;
                    }
                    if o2 >= c_lo && o2 < c_hi && c_hi - c_lo >= LANES {
                        // The last block overlaps the one before rather than leave a tail.
                        let at = o2.min(c_hi - LANES);
                        let mut acc = [init; LANES];
                        for t0 in l0..h0 {
                            for t1 in l1..h1 {
                                let r = row_at(t0, t1);
                                let row = &xpl[r..r + a2.inp];
                                for t2 in 0..a2.k {
                                    let from = at * a2.s + t2 * a2.d - a2.pb;
                                    fold_lanes(&mut acc, &row[from..], a2.s, &step);
                                }
                            }
                        }
                        let valid = rows * a2.k;
                        for (o, &a) in yrow[at..at + LANES].iter_mut().zip(acc.iter()) {
                            *o = fin(a, valid, p0 * p1 * a2.k);
                        }
                        o2 = at + LANES;
                        continue;
                    }
                    let (l2, h2, p2) = a2.taps(o2);
                    let mut acc = init;
                    for t0 in l0..h0 {
                        for t1 in l1..h1 {
                            let r = row_at(t0, t1);
                            let row = &xpl[r..r + a2.inp];
                            for t2 in l2..h2 {
                                acc = step(acc, row[a2.index(o2, t2)]);
                            }
                        }
                    }
                    let valid = rows * (h2 - l2);
                    yrow[o2] = fin(acc, valid, p0 * p1 * p2);
                    o2 += 1;
                }
                yi += a2.out;
            }
        }
    }
}

/// Planes folded at once by [`whole_planes`].
pub(super) const PLANES: usize = 8;

/// Windows that cover each whole, unpadded plane once (ResNet's 7 × 7 average pool on
/// 7 × 7 planes): [`fold_planes`]. `false` (nothing written) for other windows. O(input).
#[inline(always)]
pub(super) fn whole_planes<T: Copy, A: Copy>(
    x: &[T],
    y: &mut [T],
    ax: &[Axis; 3],
    init: A,
    step: &impl Fn(A, T) -> A,
    fin: &impl Fn(A, usize, usize) -> T,
) -> bool {
    let Some(plane) = whole_plane(ax) else {
        return false;
    };
    fold_planes(x, y, plane, init, step, fin);
    true
}

/// The plane size when each window covers its whole, unpadded, non-empty plane once.
#[inline(always)]
pub(super) fn whole_plane(ax: &[Axis; 3]) -> Option<usize> {
    let whole = |a: &Axis| a.out == 1 && a.pb == 0 && a.pe == 0 && a.d == 1 && a.k == a.inp;
    let plane = ax[0].inp * ax[1].inp * ax[2].inp;
    (ax.iter().all(whole) && plane > 0).then_some(plane)
}

/// `y[p] = max of plane p` as [`fold_planes`] computes it: in AVX2 registers where the CPU
/// has them ([`max_planes`]). O(input).
pub(super) fn max_of_planes(x: &[f32], y: &mut [f32], plane: usize) {
    if crate::arch::kernels::max_planes(x, y, plane) {
        return;
    }
    fold_planes(x, y, plane, f32::NEG_INFINITY, &max_step, &max_fin);
}

/// One output per `plane` consecutive inputs, folded in memory order (the taps' order of
/// the general path, so the values are the same). Each plane is one chain of dependent
/// folds (an add or a compare-and-select per value, several cycles apiece), so
/// [`PLANES`] planes' chains run interleaved. O(input).
#[inline(always)]
pub(crate) fn fold_planes<T: Copy, A: Copy>(
    x: &[T],
    y: &mut [T],
    plane: usize,
    init: A,
    step: &impl Fn(A, T) -> A,
    fin: &impl Fn(A, usize, usize) -> T,
) {
    let mut groups = x
        .chunks_exact(PLANES * plane)
        .zip(y.chunks_exact_mut(PLANES));
    for (xs, ys) in groups.by_ref() {
        let rows: [&[T]; PLANES] = core::array::from_fn(|c| &xs[c * plane..(c + 1) * plane]);
        let mut acc = [init; PLANES];
        for i in 0..plane {
            for (a, row) in acc.iter_mut().zip(&rows) {
                *a = step(*a, row[i]);
            }
        }
        for (o, &a) in ys.iter_mut().zip(&acc) {
            *o = fin(a, plane, plane);
        }
    }
    let done = y.len() / PLANES * PLANES;
    for (o, xpl) in y[done..]
        .iter_mut()
        .zip(x[done * plane..].chunks_exact(plane))
    {
        *o = fin(xpl.iter().fold(init, |a, &v| step(a, v)), plane, plane);
    }
}

/// A max pool's `combine` for the separable interior path where it is host speed for the
/// simulator (with `std`); firmware keeps the one tap loop (about 7 KB less code).
pub(crate) fn separable<F>(combine: F) -> Option<F> {
    cfg!(feature = "std").then_some(combine)
}

/// No separable path (sums keep the tap order of the border windows).
pub(super) const NOT_SEPARABLE: Option<fn(f32, f32) -> f32> = None;

/// Stack scratch (accumulators) of the separable interior path, per row buffer.
pub(super) const SEP_BUF: usize = 768;

/// The separable interior path of [`fold_windows`] along the innermost axis: three stack
/// rows of [`SEP_BUF`] accumulators (column folds, their stride phases, tap folds).
pub(super) struct Interior<A> {
    pub(super) ax: Axis,
    pub(super) init: A,
    /// Outputs per chunk: the columns they read fit one buffer.
    pub(super) chunk: usize,
    pub(super) cols: [A; SEP_BUF],
    pub(super) phases: [A; SEP_BUF],
    pub(super) acc: [A; SEP_BUF],
}

impl<A: Copy> Interior<A> {
    /// `None` when a window is too wide (or the stride too large) for chunks of at least
    /// [`LANES`] outputs.
    #[inline(always)]
    pub(super) fn new(ax: &Axis, init: A) -> Option<Self> {
        let span = (ax.k - 1) * ax.d;
        let chunk = SEP_BUF.checked_sub(span + 1)? / ax.s.max(1) + 1;
        (ax.s >= 1 && chunk >= LANES).then_some(Interior {
            ax: *ax,
            init,
            chunk,
            cols: [init; SEP_BUF],
            phases: [init; SEP_BUF],
            acc: [init; SEP_BUF],
        })
    }

    /// Outputs `outs` (interior: every tap inside the row) of one output row from the
    /// window's input `rows`, into `y`. O(rows · columns + outputs · k).
    #[inline(always)]
    pub(super) fn fold<'r, T: Copy + 'r>(
        &mut self,
        rows: impl Iterator<Item = &'r [T]> + Clone,
        outs: core::ops::Range<usize>,
        y: &mut [T],
        step: &impl Fn(A, T) -> A,
        combine: &impl Fn(A, A) -> A,
        fin: impl Fn(A) -> T,
    ) {
        let Axis { k, s, d, pb, .. } = self.ax;
        let span = (k - 1) * d;
        let mut o = outs.start;
        while o < outs.end {
            let n = self.chunk.min(outs.end - o);
            let base = o * s - pb;
            let need = (n - 1) * s + span + 1;
            let cols = &mut self.cols[..need];
            cols.fill(self.init);
            for row in rows.clone() {
                for (c, &v) in cols.iter_mut().zip(&row[base..base + need]) {
                    *c = step(*c, v);
                }
            }
            // Phase `p` of the columns at `phases[p·w..]`: tap offset `t·d` reads phase
            // `t·d mod s` from `t·d / s` on, contiguously for consecutive outputs.
            let w = need.div_ceil(s);
            let phased: &[A] = match s {
                1 => cols,
                2 => {
                    let (even, odd) = self.phases[..2 * w].split_at_mut(w);
                    let (pairs, last) = cols.as_chunks::<2>();
                    for ((e, o), &[a, b]) in even.iter_mut().zip(odd.iter_mut()).zip(pairs) {
                        (*e, *o) = (a, b);
                    }
                    if let [v] = *last {
                        even[pairs.len()] = v;
                    }
                    &self.phases[..2 * w]
                }
                _ => {
                    for (c, &v) in cols.iter().enumerate() {
                        self.phases[(c % s) * w + c / s] = v;
                    }
                    &self.phases[..s * w]
                }
            };
            let acc = &mut self.acc[..n];
            acc.copy_from_slice(&phased[..n]);
            for t in 1..k {
                let off = t * d;
                let src = &phased[(off % s) * w + off / s..][..n];
                for (a, &v) in acc.iter_mut().zip(src) {
                    *a = combine(*a, v);
                }
            }
            for (yo, &a) in y[o - outs.start..][..n].iter_mut().zip(acc.iter()) {
                *yo = fin(a);
            }
            o += n;
        }
    }
}

/// `acc[j] = step(acc[j], src[j·s])`. Strides 1 and 2 read one fixed-size array (no bounds
/// checks), so the accumulators stay in one vector register.
#[inline(always)]
pub(super) fn fold_lanes<T: Copy, A: Copy>(
    acc: &mut [A; LANES],
    src: &[T],
    s: usize,
    step: &impl Fn(A, T) -> A,
) {
    if let (1, Some(w)) = (s, src.first_chunk::<LANES>()) {
        for (a, &v) in acc.iter_mut().zip(w) {
            *a = step(*a, v);
        }
    } else if let (2, Some(w)) = (s, src.first_chunk::<{ 2 * LANES - 1 }>()) {
        for (l, a) in acc.iter_mut().enumerate() {
            *a = step(*a, w[2 * l]);
        }
    } else {
        for (a, &v) in acc.iter_mut().zip(src.iter().step_by(s)) {
            *a = step(*a, v);
        }
    }
}

/// Max pooling of an integer tensor (ONNX allows int8 / uint8).
/// The type's least value is the max's identity (`lowest`), so the windows fold on plain
/// values the host's vector ISA takes; a window of padding only gives 0.
pub(super) fn max_int<T: Element + Ord + Default>(
    xt: &TensorRef<'_>,
    yt: &mut TensorMut<'_>,
    ax: &[Axis; 3],
    lowest: T,
) -> Result<(), KernelError> {
    checked_len(&xt.shape, xt.dtype, xt.data.len())?;
    checked_len(&yt.shape, yt.dtype, yt.data.len())?;
    let x = xt.as_slice::<T>()?;
    let y = yt.as_slice_mut::<T>()?;
    let step = |a: T, v: T| a.max(v);
    isa::with_simd(
        #[inline(always)]
        || {
            fold_windows(x, y, ax, lowest, step, separable(step), |a, n, _| {
                if n == 0 { T::default() } else { a }
            })
        },
    );
    Ok(())
}

/// TFLite's 8-bit average pool (`reference_integer_ops::AveragePool`; CMSIS-NN's
/// `arm_avgpool_s8` computes the same): the raw sum of the window's in-image values over
/// their count, rounded half away from zero — around raw 0, not the zero point, and with no
/// requantization (TFLite requires the input's scale and zero point on the output). A
/// window of padding only gives 0. `count_include_pad` must be 0 (the caller checks).
/// O(output · taps).
pub(super) fn average_int<T: Element + Into<i32>>(
    xt: &TensorRef<'_>,
    yt: &mut TensorMut<'_>,
    ax: &[Axis; 3],
    narrow: fn(i32) -> T,
) -> Result<(), KernelError> {
    checked_len(&xt.shape, xt.dtype, xt.data.len())?;
    checked_len(&yt.shape, yt.dtype, yt.data.len())?;
    let x = xt.as_slice::<T>()?;
    let y = yt.as_slice_mut::<T>()?;
    let step = |a: i32, v: T| a.wrapping_add(v.into());
    fold_windows(
        x,
        y,
        ax,
        0i32,
        step,
        None::<fn(i32, i32) -> i32>,
        |a, n, _| {
            let n = n as i32;
            narrow(match n {
                0 => 0,
                _ if a > 0 => (a + n / 2) / n,
                _ => (a - n / 2) / n,
            })
        },
    );
    Ok(())
}
