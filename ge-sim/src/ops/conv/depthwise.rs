//! Depthwise 2-D convolution (group == C == M) as a 1-D convolution over a phase-split band.
//!
//! Per channel, a band of input rows is copied once into the slot's workspace, zero-padded
//! and split by vertical and horizontal stride phase: padded row `r0 + rr·s + v`, column
//! `c·s + h` lands at `band[((v·s + h)·rp + rr)·pw + c]`. Output `(o, j)`'s tap `(t1, t2)`
//! then reads `band[off(t1, t2) + o·pw + j]`, so with `q = o·pw + j` every output is
//! `Σ_t w_t · band[off_t + q]` — a 1-D convolution over the flat index `q`, whatever the
//! strides and dilations, with no bounds test. The `pw − ow` columns past each row's end are
//! computed and dropped (ow/pw of the lanes do useful work: 78% on a 7-wide 3×3 stage, where
//! a row-by-row tile used 44%). Flat chunks of 16 outputs are independent, so several are
//! accumulated at once in registers across all taps (no add waits on the one before it),
//! then copied out row by row with the residual added.
//!
//! The sum per output is the bias, then the taps in row-major order, each a multiply then an
//! add (no FMA): the row loop's values, bitwise, on every ISA.
//!
//! Cost: one copy of the input (plus padding) per channel, and `kh·kw` multiply-adds per
//! flat output (`oh·pw`); workspace [`Layout::ws_len`] (a band and an output row block per
//! thread slot).

use super::Geo;
use super::phase_split::{deinterleave, phase_row, valid};
use crate::ops::copy::copy_short;
use crate::ops::gemm::WS_SLOTS;
use crate::ops::gemm::micro::{TileAct, act_scalar};

/// Target f32 size of one band (input rows × phases × phase width): the band and the block
/// of flat outputs it gives stay in L1 (16 KB each) while the taps sweep them.
const BAND_CAP: usize = 1 << 12;
/// Most taps (`kh · kw`) the banded path takes; bigger kernels keep the row loop.
const MAX_TAPS: usize = 128;
/// Outputs per chunk: one AVX-512 register, two AVX2 ones.
const CHUNK: usize = 16;

/// A depthwise conv's band geometry (2-D: the leading spatial axis is a unit axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// Width of one phase of a padded input row, with room for every tap's run.
    pw: usize,
    /// Rows per vertical phase in a band.
    rp: usize,
    /// Output rows per band.
    band_out: usize,
    /// f32 of one band, slack for the last chunk's reads included.
    band_len: usize,
    /// f32 of one block of flat outputs (`band_out · pw`, whole chunks).
    out_len: usize,
}

impl Layout {
    /// f32 of workspace: one band and one output block per thread slot.
    pub(super) fn ws_len(&self) -> usize {
        WS_SLOTS * self.slot_len()
    }

    /// f32 of one slot's band and output block.
    pub(super) fn slot_len(&self) -> usize {
        self.band_len + self.out_len
    }
}

/// The preferred layout for `geo` (the band's output rows halved until it holds at most
/// [`BAND_CAP`] f32, or one row), or `None` when the conv is not 2-D (a 3-D depthwise conv
/// keeps the row loop), has too many taps or no output.
pub(super) fn layout(geo: &Geo) -> Option<Layout> {
    let mut band_out = geo.small[1];
    loop {
        let lay = at(geo, band_out)?;
        if lay.band_len <= BAND_CAP || band_out == 1 {
            return Some(lay);
        }
        band_out = band_out.div_ceil(2);
    }
}

/// [`layout`] within `ws` f32 of workspace in all: a blob whose workspace an older ge planned
/// runs on shorter bands, or (`None`) on the row loop when not even one output row fits.
pub(super) fn layout_within(geo: &Geo, ws: usize) -> Option<Layout> {
    let mut lay = layout(geo)?;
    while lay.ws_len() > ws {
        if lay.band_out == 1 {
            return None;
        }
        lay = at(geo, lay.band_out.div_ceil(2))?;
    }
    Some(lay)
}

/// The layout for bands of `band_out` output rows (`None` on overflow or an unsupported conv).
fn at(geo: &Geo, band_out: usize) -> Option<Layout> {
    if geo.big[0] != 1 || geo.small[0] != 1 || geo.k[0] != 1 || geo.small_plane == 0 {
        return None;
    }
    if geo.k[1].checked_mul(geo.k[2])? > MAX_TAPS {
        return None;
    }
    let (ow, sv, sh) = (geo.small[2], geo.s[1], geo.s[2]);
    // Tap t2 reads phase (t2·d) % s from column (t2·d) / s on: a run of ow columns.
    let pw = ow.checked_add((geo.k[2] - 1).checked_mul(geo.d[2])? / sh)?;
    let rp = band_out.checked_add((geo.k[1] - 1).checked_mul(geo.d[1])? / sv)?;
    let grid = rp.checked_mul(sv)?.checked_mul(sh)?.checked_mul(pw)?;
    // The last chunk of the last phase's taps reads up to `pw + CHUNK` f32 past the grid.
    let band_len = grid.checked_add(pw)?.checked_add(CHUNK)?;
    let out_len = band_out.checked_mul(pw)?.checked_next_multiple_of(CHUNK)?;
    band_len.checked_add(out_len)?.checked_mul(WS_SLOTS)?;
    Some(Layout {
        pw,
        rp,
        band_out,
        band_len,
        out_len,
    })
}

/// Each tap's offset in the band from the flat output index, in `(kh, kw)` order, and the
/// valid columns of horizontal phases 0 and 1: the same for every channel, so computed once
/// per conv (their divisions would cost more than a small plane's multiply-adds).
pub(super) struct Offsets {
    offs: [usize; MAX_TAPS],
    taps: usize,
    cols: [(usize, usize); 2],
}

impl Offsets {
    pub(super) fn new(geo: &Geo, lay: &Layout) -> Offsets {
        let (sv, sh) = (geo.s[1], geo.s[2]);
        let taps = geo.k[1] * geo.k[2];
        let mut offs = [0usize; MAX_TAPS];
        for (t, off) in offs.iter_mut().enumerate().take(taps) {
            let (r, c) = ((t / geo.k[2]) * geo.d[1], (t % geo.k[2]) * geo.d[2]);
            let phase = (r % sv) * sh + c % sh;
            *off = (phase * lay.rp + r / sv) * lay.pw + c / sh;
        }
        let cols = [valid(geo, 0, lay.pw), valid(geo, 1, lay.pw)];
        Offsets { offs, taps, cols }
    }
}

/// One channel: `y = act(w ⋆ x + bias (+ res))`. `buf` holds [`Layout::slot_len`] f32; `first`
/// says it may hold anything (else it holds the previous channel's band of this conv, whose
/// zeros a plane that fits one band keeps: the same positions are rewritten).
// Inlined into `isa::with_simd`'s closure, so it compiles for the chosen ISA.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn plane(
    geo: &Geo,
    lay: &Layout,
    offs: &Offsets,
    x: &[f32],
    w: &[f32],
    bias: f32,
    res: Option<&[f32]>,
    act: TileAct,
    y: &mut [f32],
    buf: &mut [f32],
    first: bool,
) {
    let (oh, ow, sv) = (geo.small[1], geo.small[2], geo.s[1]);
    let zero = first || lay.band_out < oh;
    // The taps' offsets and weights side by side (no per-channel table to fill: zeroing a
    // `MAX_TAPS` one cost more than a small plane's multiply-adds).
    let n = offs.taps.min(w.len());
    let taps = Taps(&offs.offs[..n], &w[..n]);
    let (band, out) = buf[..lay.slot_len()].split_at_mut(lay.band_len);
    // Eight chunks in flight fill AVX-512's registers; four (eight ymm) AVX2's.
    let wide = crate::arch::kernels::depthwise_chunks() == 8;
    let mut o0 = 0;
    while o0 < oh {
        let o1 = (o0 + lay.band_out).min(oh);
        fill(geo, lay, &offs.cols, x, o0 * sv, band, zero);
        let flat = &mut out[..((o1 - o0) * lay.pw).next_multiple_of(CHUNK)];
        if wide {
            chunks::<8>(band, taps, bias, flat);
        } else {
            chunks::<4>(band, taps, bias, flat);
        }
        for o in o0..o1 {
            let src = &flat[(o - o0) * lay.pw..][..ow];
            let res = res.map(|r| &r[o * ow..(o + 1) * ow]);
            store_row(&mut y[o * ow..(o + 1) * ow], src, res, act);
        }
        o0 = o1;
    }
}

/// `dst = act(src + res)` (`src` alone without a residual): the outputs of one row leave the
/// flat block with the activation a pass over the whole output applied before (a second trip
/// through memory), in the same order, so the same values. Each activation gets its own loop.
#[inline(always)]
fn store_row(dst: &mut [f32], src: &[f32], res: Option<&[f32]>, act: TileAct) {
    #[inline(always)]
    fn each(dst: &mut [f32], src: &[f32], res: Option<&[f32]>, f: impl Fn(f32) -> f32) {
        match res {
            Some(r) => {
                for ((d, &s), &r) in dst.iter_mut().zip(src).zip(r) {
                    *d = f(s + r);
                }
            }
            None => {
                for (d, &s) in dst.iter_mut().zip(src) {
                    *d = f(s);
                }
            }
        }
    }
    match act {
        TileAct::None if res.is_none() => copy_short(dst, src),
        TileAct::None => each(dst, src, res, |v| v),
        TileAct::Clamp { lo, hi } => {
            each(dst, src, res, |v| act_scalar(TileAct::Clamp { lo, hi }, v))
        }
        #[cfg(feature = "std")]
        TileAct::HardSwish => each(dst, src, res, |v| act_scalar(TileAct::HardSwish, v)),
        other => each(dst, src, res, |v| act_scalar(other, v)),
    }
}

/// Copies the band's rows (padded rows `r0 + rr·s + v`) into `band`, split by vertical and
/// horizontal phase, zeros where the padded grid lies outside the input; zeros the slack.
/// `cols` holds [`valid`] of phases 0 and 1 (strides above 2 compute theirs per row).
/// Narrow rows zero the whole band first, unless `zero` is false (the band holds a
/// previous fill of the same rows, so the same positions hold zeros).
#[inline(always)]
fn fill(
    geo: &Geo,
    lay: &Layout,
    cols: &[(usize, usize); 2],
    x: &[f32],
    r0: usize,
    band: &mut [f32],
    zero: bool,
) {
    let (ih, iw, sv, sh) = (geo.big[1], geo.big[2], geo.s[1], geo.s[2]);
    let (pt, pw) = (geo.pb[1], lay.pw);
    let grid = lay.rp * sv * sh * pw;
    // Narrow rows: one memset for the whole band beats two tiny ones per row.
    let zeroed = pw < 64;
    if zeroed {
        if zero {
            band.fill(0.0);
        }
    } else {
        band[grid..].fill(0.0);
    }
    let phase_len = lay.rp * pw;
    for v in 0..sv {
        for rr in 0..lay.rp {
            let at = (v * sh * lay.rp + rr) * pw;
            let Some(r) = (r0 + rr * sv + v).checked_sub(pt).filter(|&r| r < ih) else {
                if !zeroed {
                    for h in 0..sh {
                        band[at + h * phase_len..][..pw].fill(0.0);
                    }
                }
                continue;
            };
            let xrow = &x[r * iw..(r + 1) * iw];
            if sh == 2 {
                let (p0, p1) = band[at..].split_at_mut(phase_len);
                deinterleave(geo, cols, xrow, &mut p0[..pw], &mut p1[..pw], zeroed);
            } else {
                for h in 0..sh {
                    let dst = &mut band[at + h * phase_len..][..pw];
                    let lohi = if h < 2 { cols[h] } else { valid(geo, h, pw) };
                    phase_row(geo, lohi, xrow, h, dst, zeroed);
                }
            }
        }
    }
}

/// Each tap's band offset and weight (equal lengths).
#[derive(Clone, Copy)]
struct Taps<'a>(&'a [usize], &'a [f32]);

/// `flat[q] = bias + Σ_t w_t · band[off_t + q]` for every `q` of `flat` (whole chunks), `R`
/// chunks at a time, then fewer for the rest.
#[inline(always)]
fn chunks<const R: usize>(band: &[f32], taps: Taps<'_>, bias: f32, flat: &mut [f32]) {
    let mut groups = flat.chunks_exact_mut(R * CHUNK);
    for (g, out) in groups.by_ref().enumerate() {
        group::<R>(band, g * R * CHUNK, taps, bias, out);
    }
    let done = flat.len() / (R * CHUNK) * R * CHUNK;
    let mut rest = &mut flat[done..];
    let mut q = done;
    // At most R − 1 chunks remain: in groups of 4, 2, then 1 (still independent chains).
    for r in [4, 2, 1] {
        while r < R && rest.len() >= r * CHUNK {
            let (out, tail) = rest.split_at_mut(r * CHUNK);
            match r {
                4 => group::<4>(band, q, taps, bias, out),
                2 => group::<2>(band, q, taps, bias, out),
                _ => group::<1>(band, q, taps, bias, out),
            }
            q += r * CHUNK;
            rest = tail;
        }
    }
}

/// `R` chunks of flat outputs from `q`, in registers across all taps.
#[inline(always)]
fn group<const R: usize>(band: &[f32], q: usize, taps: Taps<'_>, bias: f32, out: &mut [f32]) {
    let mut acc = [[bias; CHUNK]; R];
    for (&off, &wv) in taps.0.iter().zip(taps.1) {
        for (r, a) in acc.iter_mut().enumerate() {
            // In range by construction: the band's slack covers the last chunk of every tap.
            let at = q + off + r * CHUNK;
            let xs: &[f32; CHUNK] = band[at..at + CHUNK]
                .try_into()
                .unwrap_or_else(|_| unreachable!());
            for l in 0..CHUNK {
                a[l] += wv * xs[l];
            }
        }
    }
    for (r, a) in acc.iter().enumerate() {
        let o: &mut [f32; CHUNK] = (&mut out[r * CHUNK..(r + 1) * CHUNK])
            .try_into()
            .unwrap_or_else(|_| unreachable!());
        *o = *a;
    }
}
