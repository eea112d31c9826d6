//! Max / average / Lp pooling, windowed and global (f32).
//!
//! Windows are normalized to 3 spatial axes. A window's taps at `o·stride − pad_begin +
//! t·dilation` that fall outside the input are skipped (they are padding, or lie past the
//! padded input in ceil mode). Average divides by the number of in-input taps
//! (`count_include_pad = 0`) or by the number of taps inside the padded extent
//! `[−pad_begin, in + pad_end)` (`count_include_pad = 1`, as onnxruntime does). Lp is
//! `(Σ |x|^p)^(1/p)` over the in-input taps. An empty window yields 0.

use ge_runtime::format::{
    ChannelLayout, DType, Element, PoolKind, PoolParams, Shape, TensorMut, TensorRef,
};

use super::copy::{checked_len, f32_in, f32_out};
use super::{KernelError, KernelResult, input, output, vmath};
use crate::arch::isa;

#[cfg(feature = "std")]
mod blocked;
#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod max_planes;
#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod window2d;

/// Per-axis window geometry.
#[derive(Clone, Copy, Default)]
struct Axis {
    inp: usize,
    out: usize,
    k: usize,
    s: usize,
    d: usize,
    pb: usize,
    pe: usize,
}

impl Axis {
    /// Taps `t` of window `o` inside the input: `[lo, hi)`, and the count of taps inside the
    /// padded extent.
    fn taps(&self, o: usize) -> (usize, usize, usize) {
        let start = (o * self.s) as i64 - self.pb as i64;
        let d = self.d as i64;
        let k = self.k as i64;
        if cfg!(feature = "std") && d == 1 {
            // Undilated windows (nearly all): the same counts without the three divisions
            // (~100 cycles a call, once per output row and border output). Host builds
            // only: firmware keeps the one general form (its flash budget).
            let inside = |limit: i64| (limit - start).clamp(0, k);
            let lo = (-start).clamp(0, k) as usize;
            let hi = inside(self.inp as i64) as usize;
            let padded = inside(self.inp as i64 + self.pe as i64) as usize;
            return (lo, hi.max(lo), padded);
        }
        // first t with start + t·d >= 0
        let lo = if start >= 0 { 0 } else { (-start + d - 1) / d };
        // taps with start + t·d < limit
        let below = |limit: i64| {
            if limit <= start {
                0
            } else {
                ((limit - start + d - 1) / d).min(k)
            }
        };
        let hi = below(self.inp as i64);
        let padded = below(self.inp as i64 + self.pe as i64);
        let lo = lo.min(k) as usize;
        (lo, (hi as usize).max(lo), padded as usize)
    }

    /// The interior outputs `[lo, hi)`: windows whose first tap is at or after 0 and last
    /// tap before `inp`.
    fn interior(&self) -> (usize, usize) {
        let span = (self.k - 1) * self.d;
        let lo = self.pb.div_ceil(self.s).min(self.out);
        let hi = if self.inp + self.pb > span {
            ((self.inp + self.pb - span - 1) / self.s + 1).min(self.out)
        } else {
            0
        };
        (lo, hi.max(lo))
    }

    fn index(&self, o: usize, t: usize) -> usize {
        o * self.s + t * self.d - self.pb
    }
}

/// Whether the pool reads blocked channels; an error for a layout this build cannot run
/// (firmware runs plain layouts only: the compiler blocks for host builds).
/// `blocked` is the one blocked layout the pool kind takes (windowed: `Blocked`; global:
/// `BlockedToPlain`).
fn blocked(p: &PoolParams, blocked: ChannelLayout) -> Result<bool, KernelError> {
    if !cfg!(feature = "std") {
        // Firmware's flash budget: its blobs are compiled with the binary, plain.
        return Ok(false);
    }
    match p.channel_layout() {
        Some(ChannelLayout::Plain) => Ok(false),
        Some(l) if l == blocked && cfg!(feature = "std") => Ok(true),
        _ => Err(KernelError::BadParams("pool: unsupported channel layout")),
    }
}

fn pool_kind(p: &PoolParams) -> Result<PoolKind, KernelError> {
    let kind = PoolKind::from_u32(p.kind).ok_or(KernelError::BadParams("unknown pool kind"))?;
    if kind == PoolKind::Lp && !(p.p.is_finite() && p.p > 0.0) {
        return Err(KernelError::BadParams("Lp pool exponent must be positive"));
    }
    Ok(kind)
}

#[inline]
fn lp_term(v: f32, p: f32) -> f32 {
    if p == 2.0 {
        v * v
    } else if p == 1.0 {
        v.abs()
    } else {
        pow(v.abs(), p)
    }
}

/// `x^y` for `x ≥ 0`: libm's `powf` with `std`; without it (firmware, where flash counts)
/// `exp(y·ln x)`, about 1.7 KB less code, within a few ulp·|y·ln x| of `powf` (only Lp
/// pooling with p ∉ {1, 2} comes here).
#[inline]
fn pow(x: f32, y: f32) -> f32 {
    if cfg!(feature = "std") {
        libm::powf(x, y)
    } else if x == 0.0 {
        0.0
    } else {
        libm::expf(y * libm::logf(x))
    }
}

#[inline]
fn lp_root(s: f32, p: f32) -> f32 {
    if p == 2.0 {
        libm::sqrtf(s)
    } else if p == 1.0 {
        s
    } else {
        pow(s, 1.0 / p)
    }
}

/// 2-D windows the tests run on wide rows: (kernel, stride, dilation, pads begin, end).
#[cfg(test)]
type Window = ([usize; 2], [usize; 2], [usize; 2], [usize; 2], [usize; 2]);
#[cfg(test)]
const WINDOWS: [Window; 7] = [
    ([1, 3], [1, 3], [1, 1], [0, 1], [0, 1]),
    ([3, 3], [1, 1], [1, 1], [1, 1], [1, 1]),
    ([3, 3], [2, 2], [1, 1], [0, 0], [1, 1]),
    ([3, 3], [2, 2], [1, 1], [1, 1], [1, 1]),
    ([2, 2], [2, 2], [1, 1], [0, 0], [0, 0]),
    ([1, 5], [1, 3], [1, 2], [0, 3], [0, 2]),
    ([3, 4], [1, 1], [2, 1], [2, 0], [0, 3]),
];

/// A max pool's fold: the larger value, and a NaN (from either side) once seen.
#[inline(always)]
fn max_step(a: f32, v: f32) -> f32 {
    if v > a || v.is_nan() { v } else { a }
}

/// A max pool's output from its fold over `n` in-input taps (0 for a window of padding).
#[inline(always)]
fn max_fin(a: f32, n: usize, _padded: usize) -> f32 {
    if n == 0 { 0.0 } else { a }
}

/// Validates the window parameters against the shapes; returns the axes normalized to 3.
fn geometry(p: &PoolParams, xs: &Shape, ys: &Shape) -> Result<[Axis; 3], KernelError> {
    let sp = p.rank();
    if !(1..=3).contains(&sp) {
        return Err(KernelError::BadParams(
            "pool spatial rank must be 1, 2 or 3",
        ));
    }
    if xs.rank() != sp + 2 || ys.rank() != sp + 2 || xs.dims()[..2] != ys.dims()[..2] {
        return Err(KernelError::Shape("pool input/output shapes disagree"));
    }
    let unit = Axis {
        inp: 1,
        out: 1,
        k: 1,
        s: 1,
        d: 1,
        pb: 0,
        pe: 0,
    };
    let mut ax = [unit; 3];
    for i in 0..sp {
        let a = Axis {
            inp: xs.dims()[2 + i],
            out: ys.dims()[2 + i],
            k: p.kernel[i] as usize,
            s: p.stride[i] as usize,
            d: p.dilation[i] as usize,
            pb: p.pad_begin[i] as usize,
            pe: p.pad_end[i] as usize,
        };
        if a.k == 0 || a.s == 0 || a.d == 0 {
            return Err(KernelError::BadParams(
                "pool kernel, stride and dilation must be positive",
            ));
        }
        // The output size must be the floor- or ceil-mode size.
        let total = a.inp as u128 + a.pb as u128 + a.pe as u128;
        let span = a.d as u128 * (a.k as u128 - 1) + 1;
        if total < span {
            return Err(KernelError::Shape(
                "pool window larger than the padded input",
            ));
        }
        let floor = (total - span) / a.s as u128 + 1;
        let mut ceil = (total - span).div_ceil(a.s as u128) + 1;
        if (ceil - 1) * a.s as u128 >= a.inp as u128 + a.pb as u128 {
            ceil -= 1;
        }
        let o = a.out as u128;
        if o != floor && o != ceil {
            return Err(KernelError::Shape(
                "pool output size does not match the parameters",
            ));
        }
        ax[3 - sp + i] = a;
    }
    Ok(ax)
}

/// Neighbouring outputs folded together in the interior loop (one AVX2 register of f32).
const LANES: usize = 8;

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
fn fold_windows<T: Copy, A: Copy>(
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
const PLANES: usize = 8;

/// Windows that cover each whole, unpadded plane once (ResNet's 7 × 7 average pool on
/// 7 × 7 planes): [`fold_planes`]. `false` (nothing written) for other windows. O(input).
#[inline(always)]
fn whole_planes<T: Copy, A: Copy>(
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
fn whole_plane(ax: &[Axis; 3]) -> Option<usize> {
    let whole = |a: &Axis| a.out == 1 && a.pb == 0 && a.pe == 0 && a.d == 1 && a.k == a.inp;
    let plane = ax[0].inp * ax[1].inp * ax[2].inp;
    (ax.iter().all(whole) && plane > 0).then_some(plane)
}

/// `y[p] = max of plane p` as [`fold_planes`] computes it: in AVX2 registers where the CPU
/// has them ([`max_planes`]). O(input).
fn max_of_planes(x: &[f32], y: &mut [f32], plane: usize) {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if isa::isa() != isa::Isa::Portable {
        // SAFETY: every x86 class above portable includes AVX2 (`isa()` only returns
        // classes the CPU has).
        unsafe { max_planes::max_planes(x, y, plane) };
        return;
    }
    fold_planes(x, y, plane, f32::NEG_INFINITY, &max_step, &max_fin);
}

/// One output per `plane` consecutive inputs, folded in memory order (the taps' order of
/// the general path, so the values are the same). Each plane is one chain of dependent
/// folds (an add or a compare-and-select per value, several cycles apiece), so
/// [`PLANES`] planes' chains run interleaved. O(input).
#[inline(always)]
fn fold_planes<T: Copy, A: Copy>(
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
fn separable<F>(combine: F) -> Option<F> {
    cfg!(feature = "std").then_some(combine)
}

/// No separable path (sums keep the tap order of the border windows).
const NOT_SEPARABLE: Option<fn(f32, f32) -> f32> = None;

/// Stack scratch (accumulators) of the separable interior path, per row buffer.
const SEP_BUF: usize = 768;

/// The separable interior path of [`fold_windows`] along the innermost axis: three stack
/// rows of [`SEP_BUF`] accumulators (column folds, their stride phases, tap folds).
struct Interior<A> {
    ax: Axis,
    init: A,
    /// Outputs per chunk: the columns they read fit one buffer.
    chunk: usize,
    cols: [A; SEP_BUF],
    phases: [A; SEP_BUF],
    acc: [A; SEP_BUF],
}

impl<A: Copy> Interior<A> {
    /// `None` when a window is too wide (or the stride too large) for chunks of at least
    /// [`LANES`] outputs.
    #[inline(always)]
    fn new(ax: &Axis, init: A) -> Option<Self> {
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
    fn fold<'r, T: Copy + 'r>(
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
fn fold_lanes<T: Copy, A: Copy>(
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
fn max_int<T: Element + Ord + Default>(
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

/// The pool kind, input, output and window geometry of a windowed pooling task.
type Prepared<'x, 'y, 'i, 'o> = (
    PoolKind,
    &'x TensorRef<'i>,
    &'y mut TensorMut<'o>,
    [Axis; 3],
);

fn prepare<'x, 'y, 'i, 'o>(
    p: &PoolParams,
    ins: &'x [Option<TensorRef<'i>>],
    outs: &'y mut [TensorMut<'o>],
) -> Result<Prepared<'x, 'y, 'i, 'o>, KernelError> {
    let kind = pool_kind(p)?;
    let xt = input(ins, 0, "pool input")?;
    let yt = output(outs, 0, "pool output")?;
    let ax = geometry(p, &xt.shape, &yt.shape)?;
    if xt.dtype != yt.dtype {
        return Err(KernelError::Shape("pool changes the dtype"));
    }
    Ok((kind, xt, yt, ax))
}

const POOL_DTYPES: KernelError =
    KernelError::UnsupportedDType("pooling is float32 (max pooling also int8/uint8)");

/// Windowed pooling over 1 to 3 spatial axes: f32, and Max also on int8 / uint8.
pub fn run_pool(
    p: &PoolParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    match ins.first().and_then(Option::as_ref).map(|x| x.dtype) {
        Some(DType::U8 | DType::I8) => run_pool_int(p, ins, outs),
        _ => run_pool_f32(p, ins, outs),
    }
}

/// [`run_pool`] on int8 / uint8 (Max only).
fn run_pool_int(
    p: &PoolParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let (kind, xt, yt, ax) = prepare(p, ins, outs)?;
    if blocked(p, ChannelLayout::Blocked)? {
        return Err(POOL_DTYPES);
    }
    match (xt.dtype, kind) {
        (DType::U8, PoolKind::Max) => max_int::<u8>(xt, yt, &ax, u8::MIN),
        (DType::I8, PoolKind::Max) => max_int::<i8>(xt, yt, &ax, i8::MIN),
        _ => Err(POOL_DTYPES),
    }
}

/// [`run_pool`] on f32 only, so that a binary pooling f32 alone links no integer code.
pub fn run_pool_f32(
    p: &PoolParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let (kind, xt, yt, ax) = prepare(p, ins, outs)?;
    if xt.dtype != DType::F32 {
        return Err(POOL_DTYPES);
    }
    let x = f32_in(xt)?;
    let y = f32_out(yt)?;
    if blocked(p, ChannelLayout::Blocked)? {
        #[cfg(feature = "std")]
        return isa::with_simd(
            #[inline(always)]
            || blocked::pool(x, y, &ax, kind, p.count_include_pad != 0),
        );
    }
    isa::with_simd(
        #[inline(always)]
        || match kind {
            PoolKind::Max => {
                let step = max_step;
                if cfg!(feature = "std")
                    && let Some(plane) = whole_plane(&ax)
                {
                    max_of_planes(x, y, plane);
                    return;
                }
                if cfg!(feature = "std") && max_small_planes(x, y, &ax, step) {
                    return;
                }
                #[cfg(all(feature = "std", target_arch = "x86_64"))]
                if window2d::max_pool(x, y, &ax) {
                    return;
                }
                fold_windows(x, y, &ax, f32::NEG_INFINITY, step, separable(step), max_fin)
            }
            PoolKind::Average => {
                let include_pad = p.count_include_pad != 0;
                let fin = |a: f32, n: usize, padded: usize| {
                    let n = if include_pad { padded } else { n };
                    if n == 0 { 0.0 } else { a / n as f32 }
                };
                // Whole planes keep `fold_windows`' interleaved fold (the same sums).
                #[cfg(all(feature = "std", target_arch = "x86_64"))]
                if whole_plane(&ax).is_none() && window2d::avg_pool(x, y, &ax, include_pad) {
                    return;
                }
                fold_windows(x, y, &ax, 0.0, |a, v| a + v, NOT_SEPARABLE, fin)
            }
            PoolKind::Lp => {
                let e = p.p;
                fold_windows(
                    x,
                    y,
                    &ax,
                    0.0,
                    |a, v| a + lp_term(v, e),
                    NOT_SEPARABLE,
                    |a, _, _| lp_root(a, e),
                )
            }
        },
    );
    Ok(())
}

/// f32 of the padded plane [`max_small_planes`] takes (and of its flat outputs).
const SMALL_PLANE: usize = 2048;
/// Flat outputs per chunk of [`max_small_planes`].
const SMALL_CHUNK: usize = 16;

/// Max pooling of small 2-D planes at stride 1 (YOLO's SPPF: three 5 × 5 pools on a 10 × 10
/// plane, where rows are too short for the separable path and every window but the centre
/// 6 × 6 would take the per-tap border loop). Each plane is copied with −∞ padding into a
/// stack buffer of pitch `pw`; output `(o1, o2)` is then the max over taps of
/// `padded[o1·pw + o2 + t1·pw + t2]`, a 1-D pool over the flat index taken 16 lanes at a
/// time (the `pw − ow` columns past each row are computed and dropped). −∞ never wins a
/// max, so the values are those of skipping the padding; taps run in the same order.
/// `false` (nothing written) when the pool is not of that shape. O(planes · padded plane ·
/// taps).
#[inline(always)]
fn max_small_planes(
    x: &[f32],
    y: &mut [f32],
    ax: &[Axis; 3],
    step: impl Fn(f32, f32) -> f32,
) -> bool {
    let [a0, a1, a2] = ax;
    let plain = |a: &Axis| {
        a.s == 1
            && a.d == 1
            && a.k >= 1
            && a.pb < a.k
            && a.pe < a.k
            && a.inp + a.pb + a.pe + 1 == a.out + a.k
    };
    if (a0.inp, a0.out, a0.k) != (1, 1, 1) || !plain(a1) || !plain(a2) {
        return false;
    }
    let (ph, pw) = (a1.inp + a1.pb + a1.pe, a2.inp + a2.pb + a2.pe);
    let flat_len = (a1.out * pw).next_multiple_of(SMALL_CHUNK);
    // The last chunk reads its taps up to `pw + SMALL_CHUNK` past the grid.
    let reach = (a1.k - 1) * pw + a2.k - 1;
    if ph * pw + SMALL_CHUNK + pw > SMALL_PLANE || flat_len + reach > SMALL_PLANE {
        return false;
    }
    let (xp, yp) = (a1.inp * a2.inp, a1.out * a2.out);
    if xp == 0 || yp == 0 {
        return false;
    }
    let mut offs = [0usize; 64];
    let taps = a1.k * a2.k;
    if taps > offs.len() {
        return false;
    }
    for (t, off) in offs.iter_mut().enumerate().take(taps) {
        *off = (t / a2.k) * pw + t % a2.k;
    }
    let offs = &offs[..taps];
    let mut buf = [f32::NEG_INFINITY; SMALL_PLANE];
    let mut flat = [0f32; SMALL_PLANE];
    for (xpl, ypl) in x.chunks_exact(xp).zip(y.chunks_exact_mut(yp)) {
        for (r, xrow) in xpl.chunks_exact(a2.inp).enumerate() {
            buf[(r + a1.pb) * pw + a2.pb..][..a2.inp].copy_from_slice(xrow);
        }
        for (q, out) in flat[..flat_len].chunks_exact_mut(SMALL_CHUNK).enumerate() {
            let mut acc = [f32::NEG_INFINITY; SMALL_CHUNK];
            for &off in offs {
                let at = q * SMALL_CHUNK + off;
                let v: &[f32; SMALL_CHUNK] = buf[at..at + SMALL_CHUNK]
                    .try_into()
                    .unwrap_or_else(|_| unreachable!());
                for (a, &v) in acc.iter_mut().zip(v) {
                    *a = step(*a, v);
                }
            }
            out.copy_from_slice(&acc);
        }
        for (o1, yrow) in ypl.chunks_exact_mut(a2.out).enumerate() {
            yrow.copy_from_slice(&flat[o1 * pw..][..a2.out]);
        }
    }
    true
}

/// Global pooling: one value per (batch, channel) over all spatial axes.
pub fn run_global_pool(
    p: &PoolParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let kind = pool_kind(p)?;
    let xt = input(ins, 0, "global pool input")?;
    let x = f32_in(xt)?;
    let xs = xt.shape;
    let yt = output(outs, 0, "global pool output")?;
    let ys = yt.shape;
    let y = f32_out(yt)?;
    if xs.rank() < 2
        || ys.rank() != xs.rank()
        || xs.dims()[..2] != ys.dims()[..2]
        || ys.dims()[2..].iter().any(|&d| d != 1)
    {
        return Err(KernelError::Shape(
            "global pool output must be [N, C, 1, ...]",
        ));
    }
    let plane = xs.dims()[2..].iter().product::<usize>();
    if blocked(p, ChannelLayout::BlockedToPlain)? {
        #[cfg(feature = "std")]
        return isa::with_simd(
            #[inline(always)]
            || blocked::global(x, y, plane, kind),
        );
    }
    if plane == 0 {
        y.fill(0.0);
        return Ok(());
    }
    let planes = y.iter_mut().zip(x.chunks_exact(plane));
    match kind {
        // Planes interleaved: as one dependent chain per plane, Magika's 512 × 508 global
        // max ran 10× onnxruntime's time.
        PoolKind::Max => max_of_planes(x, y, plane),
        PoolKind::Average => {
            planes.for_each(|(v, xpl)| *v = vmath::sum_by(xpl, |v| v) / plane as f32)
        }
        PoolKind::Lp => planes
            .for_each(|(v, xpl)| *v = lp_root(xpl.iter().map(|&v| lp_term(v, p.p)).sum(), p.p)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    #[allow(clippy::too_many_arguments)]
    fn pool(
        kind: PoolKind,
        x: &[f32],
        xd: &[usize],
        yd: &[usize],
        k: &[u32],
        s: &[u32],
        d: &[u32],
        pb: &[u32],
        pe: &[u32],
        cip: u32,
        pw: f32,
    ) -> Result<Vec<f32>, KernelError> {
        let sp = k.len();
        let mut p = PoolParams {
            kind: kind as u32,
            spatial: sp as u32,
            kernel: [1; 3],
            stride: [1; 3],
            dilation: [1; 3],
            pad_begin: [0; 3],
            pad_end: [0; 3],
            count_include_pad: cip,
            p: pw,
        };
        p.kernel[..sp].copy_from_slice(k);
        p.stride[..sp].copy_from_slice(s);
        p.dilation[..sp].copy_from_slice(d);
        p.pad_begin[..sp].copy_from_slice(pb);
        p.pad_end[..sp].copy_from_slice(pe);
        let mut y = std::vec![0.0f32; yd.iter().product()];
        let ins = [Some(TensorRef {
            dtype: DType::F32,
            shape: Shape::new(xd).unwrap(),
            data: bytemuck::cast_slice(x),
        })];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(yd).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_pool(&p, &ins, &mut outs)?;
        Ok(y)
    }

    fn close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{a:?} vs {b:?}");
        }
    }

    fn arange(n: usize) -> Vec<f32> {
        (0..n).map(|v| v as f32).collect()
    }

    /// Direct per-output evaluation, for the vectorized interior path.
    #[allow(clippy::too_many_arguments)]
    fn reference(
        max: bool,
        x: &[f32],
        (h, w): (usize, usize),
        (oh, ow): (usize, usize),
        k: [usize; 2],
        s: [usize; 2],
        d: [usize; 2],
        pb: [usize; 2],
        include_pad: bool,
        pe: [usize; 2],
    ) -> Vec<f32> {
        let mut y = Vec::new();
        for plane in x.chunks(h * w) {
            for i in 0..oh {
                for j in 0..ow {
                    let (mut acc, mut n, mut padded) = (if max { f32::MIN } else { 0.0 }, 0, 0);
                    for a in 0..k[0] {
                        for b in 0..k[1] {
                            let r = (i * s[0] + a * d[0]) as i64 - pb[0] as i64;
                            let c = (j * s[1] + b * d[1]) as i64 - pb[1] as i64;
                            let inside = |v: i64, lim: usize, e: usize| v < (lim + e) as i64;
                            if inside(r, h, pe[0]) && inside(c, w, pe[1]) {
                                padded += 1;
                            }
                            if r < 0 || c < 0 || r >= h as i64 || c >= w as i64 {
                                continue;
                            }
                            let v = plane[r as usize * w + c as usize];
                            acc = if max { acc.max(v) } else { acc + v };
                            n += 1;
                        }
                    }
                    let n = if include_pad { padded } else { n };
                    y.push(if max { acc } else { acc / n as f32 });
                }
            }
        }
        y
    }

    #[test]
    fn wide_rows_match_direct_evaluation() {
        // 1,700 columns: the separable interior path runs in several chunks; 27 and 13
        // (SqueezeNet's stages): a row's last register of columns reads on into the next
        // rows, the plane's last rows take masked loads.
        for (h, w) in [(9, 37), (4, 1700), (27, 27), (13, 13)] {
            wide_rows(h, w);
        }
    }

    /// Small stride-1 planes (YOLO's SPPF 5 × 5 on 10 × 10, asymmetric pads, 1-wide
    /// planes): the padded flat path with `std`, the tap loop without; exactly the reference.
    #[test]
    fn small_planes_match_direct_evaluation() {
        for (h, w, k, pb, pe) in [
            (10, 10, [5, 5], [2, 2], [2, 2]),
            (7, 3, [3, 2], [0, 1], [2, 0]),
            (1, 9, [1, 4], [0, 3], [0, 0]),
            (20, 20, [5, 5], [2, 2], [2, 2]),
            (40, 40, [5, 5], [2, 2], [2, 2]),
        ] {
            let x: Vec<f32> = (0..3 * h * w)
                .map(|i| ((i * 7919) % 211) as f32 - 100.0)
                .collect();
            let out = |i: usize| [h, w][i] + pb[i] + pe[i] + 1 - k[i];
            let (oh, ow) = (out(0), out(1));
            let u = |a: [usize; 2]| a.map(|v| v as u32);
            let got = pool(
                PoolKind::Max,
                &x,
                &[3, 1, h, w],
                &[3, 1, oh, ow],
                &u(k),
                &[1, 1],
                &[1, 1],
                &u(pb),
                &u(pe),
                0,
                0.0,
            )
            .unwrap();
            let want = reference(true, &x, (h, w), (oh, ow), k, [1, 1], [1, 1], pb, false, pe);
            assert_eq!(got, want, "{h}x{w} k {k:?}");
        }
    }

    fn wide_rows(h: usize, w: usize) {
        let x: Vec<f32> = (0..2 * h * w)
            .map(|i| ((i * 7919) % 211) as f32 - 100.0)
            .collect();
        for (k, s, d, pb, pe) in WINDOWS {
            let out = |i: usize| (([h, w][i] + pb[i] + pe[i] - (k[i] - 1) * d[i] - 1) / s[i]) + 1;
            let (oh, ow) = (out(0), out(1));
            let u = |a: [usize; 2]| a.map(|v| v as u32);
            for (kind, max, cip) in [
                (PoolKind::Max, true, 0),
                (PoolKind::Average, false, 0),
                (PoolKind::Average, false, 1),
            ] {
                let got = pool(
                    kind,
                    &x,
                    &[1, 2, h, w],
                    &[1, 2, oh, ow],
                    &u(k),
                    &u(s),
                    &u(d),
                    &u(pb),
                    &u(pe),
                    cip,
                    0.0,
                )
                .unwrap();
                let want = reference(max, &x, (h, w), (oh, ow), k, s, d, pb, cip == 1, pe);
                close(&got, &want);
            }
        }
    }

    /// Windows covering whole unpadded planes (1-D to 3-D, channel counts not a multiple of
    /// the interleave) give each plane's fold in memory order, bitwise: max with NaN and
    /// signed zeros, average, Lp.
    #[test]
    fn whole_plane_windows_fold_each_plane_in_order() {
        for dims in [
            &[1, 11, 7, 7][..],
            &[2, 9, 3, 5],
            &[1, 10, 13],
            &[1, 9, 2, 3, 4],
        ] {
            let plane: usize = dims[2..].iter().product();
            let n: usize = dims.iter().product();
            let mut x: Vec<f32> = (0..n)
                .map(|i| ((i * 7919) % 211) as f32 / 7.0 - 15.0)
                .collect();
            x[3] = f32::NAN;
            x[plane + 1] = -0.0;
            let sp = dims.len() - 2;
            let k: Vec<u32> = dims[2..].iter().map(|&d| d as u32).collect();
            let yd: Vec<usize> = dims[..2]
                .iter()
                .copied()
                .chain(core::iter::repeat_n(1, sp))
                .collect();
            let ones = std::vec![1u32; sp];
            let zeros = std::vec![0u32; sp];
            for (kind, e) in [
                (PoolKind::Max, 0.0),
                (PoolKind::Average, 0.0),
                (PoolKind::Lp, 3.0),
            ] {
                let got =
                    pool(kind, &x, dims, &yd, &k, &ones, &ones, &zeros, &zeros, 0, e).unwrap();
                let want: Vec<f32> = x
                    .chunks_exact(plane)
                    .map(|p| match kind {
                        PoolKind::Max => p.iter().fold(f32::NEG_INFINITY, |a, &v| max_step(a, v)),
                        PoolKind::Average => p.iter().fold(0.0, |a, &v| a + v) / plane as f32,
                        PoolKind::Lp => lp_root(p.iter().fold(0.0, |a, &v| a + lp_term(v, e)), e),
                    })
                    .collect();
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{kind:?} {dims:?}");
            }
        }
    }

    #[test]
    fn max_pool_ceil_mode_and_dilation() {
        // onnx.reference MaxPool(x=arange(16).reshape(1,1,4,4), kernel 3x3, strides 2, ceil_mode 1)
        let x = arange(16);
        close(
            &pool(
                PoolKind::Max,
                &x,
                &[1, 1, 4, 4],
                &[1, 1, 2, 2],
                &[3, 3],
                &[2, 2],
                &[1, 1],
                &[0, 0],
                &[0, 0],
                0,
                0.0,
            )
            .unwrap(),
            &[10., 11., 14., 15.],
        );
        // dilation 2, kernel 2, strides 2, pads 1: onnx.reference [5, 7, 13, 15]
        close(
            &pool(
                PoolKind::Max,
                &x,
                &[1, 1, 4, 4],
                &[1, 1, 2, 2],
                &[2, 2],
                &[2, 2],
                &[2, 2],
                &[1, 1],
                &[1, 1],
                0,
                0.0,
            )
            .unwrap(),
            &[5., 7., 13., 15.],
        );
    }

    #[test]
    fn average_pool_pads_and_ceil() {
        // onnx.reference AveragePool x=arange(16) [1,1,4,4], k 3, s 2, pads 1, ceil_mode 0
        let x = arange(16);
        // count_include_pad = 0: [2.5, 4, 8.5, 10]
        close(
            &pool(
                PoolKind::Average,
                &x,
                &[1, 1, 4, 4],
                &[1, 1, 2, 2],
                &[3, 3],
                &[2, 2],
                &[1, 1],
                &[1, 1],
                &[1, 1],
                0,
                0.0,
            )
            .unwrap(),
            &[2.5, 4., 8.5, 10.],
        );
        // count_include_pad = 1: [10, 24, 51, 90] / 9
        let y = pool(
            PoolKind::Average,
            &x,
            &[1, 1, 4, 4],
            &[1, 1, 2, 2],
            &[3, 3],
            &[2, 2],
            &[1, 1],
            &[1, 1],
            &[1, 1],
            1,
            0.0,
        )
        .unwrap();
        close(&y, &[10.0 / 9.0, 24.0 / 9.0, 51.0 / 9.0, 90.0 / 9.0]);
        // ceil mode 1-D: x=[0..5], k 2, s 2, no pads -> out 3 (last window clipped)
        let x = arange(5);
        close(
            &pool(
                PoolKind::Average,
                &x,
                &[1, 1, 5],
                &[1, 1, 3],
                &[2],
                &[2],
                &[1],
                &[0],
                &[0],
                0,
                0.0,
            )
            .unwrap(),
            &[0.5, 2.5, 4.0],
        );
        // count_include_pad with ceil: last window past the padded extent counts only 1 tap
        close(
            &pool(
                PoolKind::Average,
                &x,
                &[1, 1, 5],
                &[1, 1, 3],
                &[2],
                &[2],
                &[1],
                &[0],
                &[0],
                1,
                0.0,
            )
            .unwrap(),
            &[0.5, 2.5, 4.0],
        );
        // 1 end pad + ceil: x=[0..5], k 3, s 2, pe 1: windows [0,3),[2,5),[4,7) -> include_pad
        // counts 3,3,2; onnx.reference (ceil_mode 1) gives [1, 3, 2] and [1, 3, 4]
        close(
            &pool(
                PoolKind::Average,
                &x,
                &[1, 1, 5],
                &[1, 1, 3],
                &[3],
                &[2],
                &[1],
                &[0],
                &[1],
                1,
                0.0,
            )
            .unwrap(),
            &[1.0, 3.0, 2.0],
        );
        close(
            &pool(
                PoolKind::Average,
                &x,
                &[1, 1, 5],
                &[1, 1, 3],
                &[3],
                &[2],
                &[1],
                &[0],
                &[1],
                0,
                0.0,
            )
            .unwrap(),
            &[1.0, 3.0, 4.0],
        );
        // pads 1/1, ceil: x=[0..6], k 3, s 2 -> onnx.reference [1/3, 2, 4, 2.5] and [0.5, 2, 4, 5]
        let x6 = arange(6);
        close(
            &pool(
                PoolKind::Average,
                &x6,
                &[1, 1, 6],
                &[1, 1, 4],
                &[3],
                &[2],
                &[1],
                &[1],
                &[1],
                1,
                0.0,
            )
            .unwrap(),
            &[1.0 / 3.0, 2.0, 4.0, 2.5],
        );
        close(
            &pool(
                PoolKind::Average,
                &x6,
                &[1, 1, 6],
                &[1, 1, 4],
                &[3],
                &[2],
                &[1],
                &[1],
                &[1],
                0,
                0.0,
            )
            .unwrap(),
            &[0.5, 2.0, 4.0, 5.0],
        );
        // wrong output size
        assert!(
            pool(
                PoolKind::Average,
                &x,
                &[1, 1, 5],
                &[1, 1, 4],
                &[3],
                &[2],
                &[1],
                &[0],
                &[1],
                0,
                0.0
            )
            .is_err()
        );
    }

    #[test]
    fn lp_and_3d() {
        let x = [3.0f32, -4.0, 1.0, 2.0, -2.0, 0.5];
        // p=2 over windows of 2 (stride 2): [5, sqrt(5), sqrt(4.25)]
        close(
            &pool(
                PoolKind::Lp,
                &x,
                &[1, 1, 6],
                &[1, 1, 3],
                &[2],
                &[2],
                &[1],
                &[0],
                &[0],
                0,
                2.0,
            )
            .unwrap(),
            &[5.0, 5f32.sqrt(), 4.25f32.sqrt()],
        );
        // p=3: (27+64)^(1/3)
        let y = pool(
            PoolKind::Lp,
            &x[..2],
            &[1, 1, 2],
            &[1, 1, 1],
            &[2],
            &[1],
            &[1],
            &[0],
            &[0],
            0,
            3.0,
        )
        .unwrap();
        close(&y, &[91f32.powf(1.0 / 3.0)]);
        // 3-D max over 2x2x2 cubes of arange(64) [4,4,4] stride 2 -> max is the +21 corner
        let x = arange(64);
        let y = pool(
            PoolKind::Max,
            &x,
            &[1, 1, 4, 4, 4],
            &[1, 1, 2, 2, 2],
            &[2, 2, 2],
            &[2, 2, 2],
            &[1, 1, 1],
            &[0, 0, 0],
            &[0, 0, 0],
            0,
            0.0,
        )
        .unwrap();
        close(&y, &[21., 23., 29., 31., 53., 55., 61., 63.]);
    }

    #[test]
    fn max_pool_uint8() {
        let x: Vec<u8> = (0..16).map(|v| (v * 37 % 251) as u8).collect();
        let mut y = [0u8; 4];
        let p = PoolParams {
            kind: PoolKind::Max as u32,
            spatial: 2,
            kernel: [2, 2, 1],
            stride: [2, 2, 1],
            dilation: [1; 3],
            pad_begin: [0; 3],
            pad_end: [0; 3],
            count_include_pad: 0,
            p: 0.0,
        };
        let ins = [Some(TensorRef {
            dtype: DType::U8,
            shape: Shape::new(&[1, 1, 4, 4]).unwrap(),
            data: &x,
        })];
        let mut outs = [TensorMut {
            dtype: DType::U8,
            shape: Shape::new(&[1, 1, 2, 2]).unwrap(),
            data: &mut y,
        }];
        run_pool(&p, &ins, &mut outs).unwrap();
        // x = [0,37,74,111, 148,185,222,8, 45,82,119,156, 193,230,16,53]
        assert_eq!(y, [185, 222, 230, 156]);
    }

    #[test]
    fn global_pools() {
        let x = [1.0f32, 2.0, 3.0, 4.0, -1.0, -2.0, 5.0, 0.0];
        let mut y = [0.0f32; 2];
        let ins = [Some(TensorRef {
            dtype: DType::F32,
            shape: Shape::new(&[1, 2, 2, 2]).unwrap(),
            data: bytemuck::cast_slice(&x),
        })];
        for (kind, p, want) in [
            (PoolKind::Average, 0.0, [2.5, 0.5]),
            (PoolKind::Max, 0.0, [4.0, 5.0]),
            (PoolKind::Lp, 1.0, [10.0, 8.0]),
        ] {
            let pp = PoolParams {
                kind: kind as u32,
                spatial: 2,
                kernel: [0; 3],
                stride: [0; 3],
                dilation: [0; 3],
                pad_begin: [0; 3],
                pad_end: [0; 3],
                count_include_pad: 0,
                p,
            };
            let mut outs = [TensorMut {
                dtype: DType::F32,
                shape: Shape::new(&[1, 2, 1, 1]).unwrap(),
                data: bytemuck::cast_slice_mut(&mut y),
            }];
            run_global_pool(&pp, &ins, &mut outs).unwrap();
            close(&y, &want);
        }
    }

    /// Random descriptions must give a result or an error, never a panic.
    #[test]
    fn malformed_never_panics() {
        let mut seed = 9u32;
        let mut r = |n: u32| {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            ((seed >> 8) % n.max(1)) as usize
        };
        let mut oks = 0;
        for _ in 0..3000 {
            let sp = 1 + r(3);
            let mut p = PoolParams {
                kind: r(4) as u32,
                spatial: if r(10) == 0 { r(5) as u32 } else { sp as u32 },
                kernel: [0; 3],
                stride: [0; 3],
                dilation: [0; 3],
                pad_begin: [0; 3],
                pad_end: [0; 3],
                count_include_pad: r(2) as u32,
                p: [0.0, 1.0, 2.0, 3.0, -1.0][r(5)],
            };
            let mut xd = std::vec![r(3), r(3)];
            let mut yd = xd.clone();
            for i in 0..3 {
                p.kernel[i] = (r(4) + usize::from(r(6) != 0)) as u32;
                p.stride[i] = (r(3) + usize::from(r(6) != 0)) as u32;
                p.dilation[i] = (r(2) + usize::from(r(6) != 0)) as u32;
                p.pad_begin[i] = r(3) as u32;
                p.pad_end[i] = r(3) as u32;
            }
            let big = u32::MAX - r(2) as u32;
            match r(40) {
                0 => p.pad_begin[r(3)] = big,
                1 => p.pad_end[r(3)] = big,
                2 => p.stride[r(3)] = big,
                3 => p.dilation[r(3)] = big,
                4 => p.kernel[r(3)] = big,
                _ => {}
            }
            for i in 0..sp {
                let x = r(7);
                xd.push(x);
                let (k, s, d) = (
                    p.kernel[i] as i64,
                    p.stride[i].max(1) as i64,
                    p.dilation[i] as i64,
                );
                let num =
                    x as i64 + p.pad_begin[i] as i64 + p.pad_end[i] as i64 - (d * (k - 1) + 1);
                let o = if r(2) == 0 {
                    num / s + 1
                } else {
                    (num + s - 1).div_euclid(s) + 1
                };
                yd.push(if r(8) == 0 || !(0..64).contains(&o) {
                    r(5)
                } else {
                    o as usize
                });
            }
            let (xs, ys) = (Shape::new(&xd).unwrap(), Shape::new(&yd).unwrap());
            let x = std::vec![1.5f32; xs.numel()];
            let mut y = std::vec![0.0f32; ys.numel()];
            let ins = [Some(TensorRef {
                dtype: DType::F32,
                shape: xs,
                data: bytemuck::cast_slice(&x),
            })];
            let mut outs = [TensorMut {
                dtype: DType::F32,
                shape: ys,
                data: bytemuck::cast_slice_mut(&mut y),
            }];
            oks += usize::from(run_pool(&p, &ins, &mut outs).is_ok());
            let _ = run_global_pool(&p, &ins, &mut outs);
        }
        assert!(oks > 300, "only {oks} well-formed cases ran");
    }
}
