//! Depthwise 2-D convolution 16 channels at a time in AVX-512 registers: the host path of
//! depthwise convs on AVX-512 CPUs. Each input row of 16 channel planes is transposed into
//! pixel vectors (16 channels of one pixel, the NCHW16c order onnxruntime's depthwise kernel
//! reads), kept in a ring of zero-padded rows in the slot's workspace; every tap is then one
//! vector multiply and add for 16 channels, eight output pixels in flight, and each output
//! row is transposed back into the 16 planes with the residual added. The per-channel band
//! ([`crate::ops::conv::depthwise`]) spent most of a small plane's time on its copies (a 14 × 14 plane:
//! 18-wide band rows, fourteen 14-float copies in and out) and computed the columns past
//! each row; here a row's transposes cost 64 shuffles per 16 pixels of 16 channels.
//!
//! Values: the bias, then the taps in row-major order, each a multiply then an add, padding
//! read as zeros: the band's, so the row loop's, bitwise (tested). Strides and dilations
//! only change which pixel vectors a tap reads. O(C/16 · (input plane + output plane ·
//! taps)) vector operations; workspace [`Layout::ws_len`].

use core::arch::x86_64::*;

use crate::arch::tile::TileAct;
use crate::arch::x86::avx512::gemm::act as apply_act;
use crate::ops::conv::Geo;
use crate::ops::conv::depthwise_blocks::{LANES, Layout, MAX_ROWS};

/// Output pixels accumulated at once: independent add chains for the two FP ports.
const PIX: usize = 8;

/// One batch's channels `ch0..ch0 + lanes` (`1 ≤ lanes ≤ 16`): `x`, `res` and `y` hold
/// exactly those channels' planes, `w` their `lanes · taps` weights, `bias` their `lanes`
/// biases; `act` runs on each output after the residual. `buf` is the slot's [`Layout::slot_len`] f32; `first` says it may hold anything
/// (else the previous block's ring of this conv, whose padding columns are still zero).
///
/// # Safety
/// The CPU must support AVX-512F.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn block(
    geo: &Geo,
    lay: &Layout,
    x: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    res: Option<&[f32]>,
    act: TileAct,
    y: &mut [f32],
    buf: &mut [f32],
    first: bool,
) {
    let (xp, yp) = (geo.big_plane, geo.small_plane);
    let lanes = y.len() / yp.max(1);
    if !(1..=LANES).contains(&lanes)
        || x.len() != lanes * xp
        || w.len() != lanes * lay.taps
        || y.len() != lanes * yp
        || res.is_some_and(|r| r.len() != y.len())
        || bias.is_some_and(|b| b.len() != lanes)
        || buf.len() < lay.slot_len()
    {
        debug_assert!(false, "depthwise block operands");
        return;
    }
    let ring_len = lay.ring * lay.pw * LANES;
    let (ring, rest) = buf.split_at_mut(ring_len);
    let (stage, rest) = rest.split_at_mut(lay.stage() * LANES);
    let wt = &mut rest[..lay.taps * LANES];
    for (t, wv) in wt.chunks_exact_mut(LANES).enumerate() {
        for (l, v) in wv.iter_mut().enumerate() {
            *v = if l < lanes { w[l * lay.taps + t] } else { 0.0 };
        }
    }
    let mut bv = [0.0f32; LANES];
    if let Some(b) = bias {
        bv[..lanes].copy_from_slice(b);
    }
    if first {
        ring.fill(0.0);
    }
    let (oh, ow) = (geo.small[1], geo.small[2]);
    let (sv, dv, kh) = (geo.s[1], geo.d[1], geo.k[1]);
    let row_len = lay.pw * LANES;
    // The next padded input row to load into the ring.
    let mut next = 0;
    for o in 0..oh {
        let (lo, hi) = (o * sv, o * sv + (kh - 1) * dv);
        next = next.max(lo);
        while next <= hi {
            let slot = &mut ring[(next % lay.ring) * row_len..][..row_len];
            load_row(geo, lay, x, lanes, next, slot);
            next += 1;
        }
        let mut rows = [0usize; MAX_ROWS];
        for (t1, r) in rows.iter_mut().enumerate().take(kh) {
            *r = ((lo + t1 * dv) % lay.ring) * row_len;
        }
        let rows = &rows[..kh];
        // SAFETY: AVX-512F is enabled here; the helpers bound-check their slices.
        unsafe {
            match geo.s[2] {
                1 => row_pixels::<1>(geo, ring, rows, wt, &bv, stage),
                2 => row_pixels::<2>(geo, ring, rows, wt, &bv, stage),
                _ => row_pixels::<0>(geo, ring, rows, wt, &bv, stage),
            }
            store_row(stage, ow, o, yp, lanes, res, act, y);
        }
    }
}

/// Padded input row `pr` of the block's channels into the ring row `slot` as pixel vectors
/// (padded column `c` at `slot[c·16..]`); an all-padding row is zeroed. Columns past the
/// ring's width are never read and not stored; padding columns keep their zeros.
#[inline(always)]
fn load_row(geo: &Geo, lay: &Layout, x: &[f32], lanes: usize, pr: usize, slot: &mut [f32]) {
    let (ih, iw, pt, pl) = (geo.big[1], geo.big[2], geo.pb[1], geo.pb[2]);
    let Some(r) = pr.checked_sub(pt).filter(|&r| r < ih) else {
        slot.fill(0.0);
        return;
    };
    let xp = geo.big_plane;
    // Input columns whose padded column lies inside the ring row.
    let cols = iw.min(lay.pw.saturating_sub(pl));
    let mut c0 = 0;
    while c0 < cols {
        let n = (cols - c0).min(LANES);
        let k: __mmask16 = if n == LANES { !0 } else { (1u16 << n) - 1 };
        // SAFETY: AVX-512F is enabled by the caller; each masked load reads `n` values of
        // row `r` from column `c0` of a channel plane (`c0 + n ≤ iw`); the stores write
        // whole pixel vectors inside `dst`, a subslice of `slot`.
        unsafe {
            let mut v = [_mm512_setzero_ps(); LANES];
            for (l, vl) in v.iter_mut().enumerate().take(lanes) {
                let src = &x[l * xp + r * iw + c0..][..n];
                *vl = _mm512_maskz_loadu_ps(k, src.as_ptr());
            }
            transpose(&mut v);
            // Pixels past the chunk's `n` are zeros (masked loads): they land on the right
            // padding or on columns the next chunk rewrites, so whole transposes store.
            let at = (pl + c0) * LANES;
            let end = (at + LANES * LANES).min(slot.len());
            let dst = &mut slot[at..end];
            if dst.len() == LANES * LANES {
                for (i, vi) in v.iter().enumerate() {
                    _mm512_storeu_ps(dst.as_mut_ptr().add(i * LANES), *vi);
                }
            } else {
                for (d, vi) in dst.chunks_exact_mut(LANES).zip(&v) {
                    _mm512_storeu_ps(d.as_mut_ptr(), *vi);
                }
            }
        }
        c0 += n;
    }
}

/// One output row's pixels into `stage`, [`PIX`] at a time then 4, 2, 1; `SH` the
/// horizontal stride (0: read it from `geo`).
///
/// # Safety
/// As [`pixels`].
#[inline(always)]
unsafe fn row_pixels<const SH: usize>(
    geo: &Geo,
    ring: &[f32],
    rows: &[usize],
    wt: &[f32],
    bias: &[f32; LANES],
    stage: &mut [f32],
) {
    let ow = geo.small[2];
    let mut j = 0;
    // SAFETY: forwarded contract.
    unsafe {
        while j + PIX <= ow {
            pixels::<PIX, SH>(geo, ring, rows, wt, bias, j, stage);
            j += PIX;
        }
        if j + 4 <= ow {
            pixels::<4, SH>(geo, ring, rows, wt, bias, j, stage);
            j += 4;
        }
        if j + 2 <= ow {
            pixels::<2, SH>(geo, ring, rows, wt, bias, j, stage);
            j += 2;
        }
        if j < ow {
            pixels::<1, SH>(geo, ring, rows, wt, bias, j, stage);
        }
    }
}

/// Output pixels `j..j + P` of one row into `stage` (pixel vectors): the bias, then per tap
/// in row-major order `acc += w_t · ring[row(t1)][(j + i)·sh + t2·dh]`.
///
/// # Safety
/// AVX-512F; `rows` holds the ring offsets of the `kh` rows this output row reads.
#[inline(always)]
unsafe fn pixels<const P: usize, const SH: usize>(
    geo: &Geo,
    ring: &[f32],
    rows: &[usize],
    wt: &[f32],
    bias: &[f32; LANES],
    j: usize,
    stage: &mut [f32],
) {
    let (kw, dh) = (geo.k[2], geo.d[2]);
    let sh = if SH == 0 { geo.s[2] } else { SH };
    // SAFETY: AVX-512F (caller); every slice below is bounds-checked, the loads and stores
    // then read or write exactly its 16 values.
    unsafe {
        let mut acc = [_mm512_loadu_ps(bias.as_ptr()); P];
        for (t1, &row) in rows.iter().enumerate() {
            for t2 in 0..kw {
                let wv = _mm512_loadu_ps(wt[(t1 * kw + t2) * LANES..][..LANES].as_ptr());
                let base = row + (j * sh + t2 * dh) * LANES;
                let px = &ring[base..base + ((P - 1) * sh + 1) * LANES];
                for (i, a) in acc.iter_mut().enumerate() {
                    let v = _mm512_loadu_ps(px.as_ptr().add(i * sh * LANES));
                    *a = _mm512_add_ps(*a, _mm512_mul_ps(wv, v));
                }
            }
        }
        let out = &mut stage[j * LANES..(j + P) * LANES];
        for (i, a) in acc.iter().enumerate() {
            _mm512_storeu_ps(out.as_mut_ptr().add(i * LANES), *a);
        }
    }
}

/// Output row `o` from `stage` (pixel vectors) into the block's `lanes` planes of `y`, the
/// residual added (`conv + res`, as the band adds it), then `act`.
///
/// # Safety
/// AVX-512F; `stage` holds `ow` pixel vectors, padded to a multiple of 16.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn store_row(
    stage: &[f32],
    ow: usize,
    o: usize,
    yp: usize,
    lanes: usize,
    res: Option<&[f32]>,
    act: TileAct,
    y: &mut [f32],
) {
    let mut j0 = 0;
    while j0 < ow {
        let n = (ow - j0).min(LANES);
        let k: __mmask16 = if n == LANES { !0 } else { (1u16 << n) - 1 };
        // SAFETY: AVX-512F (caller); loads read pixel vectors `j0 + i < ow` of `stage`;
        // masked accesses touch `n` values of one output row of a plane (`j0 + n ≤ ow`).
        unsafe {
            // Whole transposes: the stage is padded to them (lanes past `n` are not stored).
            let src = &stage[j0 * LANES..(j0 + LANES) * LANES];
            // A loop, not `array::from_fn`: its closure was left out of line, where the
            // loads compile without AVX-512 (3% of ShuffleNet's time in the call).
            let mut v = [_mm512_setzero_ps(); LANES];
            for (i, vi) in v.iter_mut().enumerate() {
                *vi = _mm512_loadu_ps(src.as_ptr().add(i * LANES));
            }
            transpose(&mut v);
            for (l, vl) in v.iter().enumerate().take(lanes) {
                let at = l * yp + o * ow + j0;
                let mut out = *vl;
                if let Some(r) = res {
                    let rv = _mm512_maskz_loadu_ps(k, r[at..at + n].as_ptr());
                    out = _mm512_add_ps(out, rv);
                }
                out = apply_act(out, act);
                _mm512_mask_storeu_ps(y[at..at + n].as_mut_ptr(), k, out);
            }
        }
        j0 += n;
    }
}

/// In-place 16 × 16 transpose: `v[i]` lane `j` becomes `v[j]` lane `i`. Unpacks interleave
/// pairs of rows, then 128-bit lanes move as a 4 × 4 transpose of blocks (64 shuffles).
///
/// # Safety
/// AVX-512F.
#[inline(always)]
unsafe fn transpose(v: &mut [__m512; LANES]) {
    // SAFETY: register-only AVX-512F operations.
    unsafe {
        let mut t = [_mm512_setzero_ps(); LANES];
        for i in 0..8 {
            t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
        }
        // u[4g + q], 128-bit lane L: column 4L + q of rows 4g..4g + 4.
        let mut u = [_mm512_setzero_ps(); LANES];
        for g in 0..4 {
            u[4 * g] = lo(t[4 * g], t[4 * g + 2]);
            u[4 * g + 1] = hi(t[4 * g], t[4 * g + 2]);
            u[4 * g + 2] = lo(t[4 * g + 1], t[4 * g + 3]);
            u[4 * g + 3] = hi(t[4 * g + 1], t[4 * g + 3]);
        }
        // Column 4L + q gathers lane L of u[q], u[4 + q], u[8 + q], u[12 + q].
        for q in 0..4 {
            let v0 = _mm512_shuffle_f32x4::<0x88>(u[q], u[4 + q]);
            let v1 = _mm512_shuffle_f32x4::<0xdd>(u[q], u[4 + q]);
            let v2 = _mm512_shuffle_f32x4::<0x88>(u[8 + q], u[12 + q]);
            let v3 = _mm512_shuffle_f32x4::<0xdd>(u[8 + q], u[12 + q]);
            v[q] = _mm512_shuffle_f32x4::<0x88>(v0, v2);
            v[8 + q] = _mm512_shuffle_f32x4::<0xdd>(v0, v2);
            v[4 + q] = _mm512_shuffle_f32x4::<0x88>(v1, v3);
            v[12 + q] = _mm512_shuffle_f32x4::<0xdd>(v1, v3);
        }
    }
}

/// 64-bit pairs of `a` and `b` interleaved, low halves of each 128-bit lane.
///
/// # Safety
/// AVX-512F.
#[inline(always)]
unsafe fn lo(a: __m512, b: __m512) -> __m512 {
    // SAFETY: register-only AVX-512F operations.
    unsafe { _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b))) }
}

/// 64-bit pairs of `a` and `b` interleaved, high halves of each 128-bit lane.
///
/// # Safety
/// AVX-512F.
#[inline(always)]
unsafe fn hi(a: __m512, b: __m512) -> __m512 {
    // SAFETY: register-only AVX-512F operations.
    unsafe { _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b))) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::isa::Isa;

    #[test]
    fn transpose_is_a_transpose() {
        if !Isa::Avx512.supported() {
            std::println!("skipping the AVX-512 transpose: this CPU lacks AVX-512");
            return;
        }
        let a: [[f32; LANES]; LANES] =
            core::array::from_fn(|i| core::array::from_fn(|j| (i * 100 + j) as f32));
        let mut got = [[0.0f32; LANES]; LANES];
        // SAFETY: AVX-512 is supported (checked above); loads and stores are in bounds.
        unsafe { run_transpose(&a, &mut got) };
        for (i, row) in got.iter().enumerate() {
            for (j, &g) in row.iter().enumerate() {
                assert_eq!(g, a[j][i], "({i}, {j})");
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn run_transpose(a: &[[f32; LANES]; LANES], out: &mut [[f32; LANES]; LANES]) {
        // SAFETY: AVX-512F is enabled; each row is 16 f32.
        unsafe {
            let mut v: [__m512; LANES] = core::array::from_fn(|i| _mm512_loadu_ps(a[i].as_ptr()));
            transpose(&mut v);
            for (o, vi) in out.iter_mut().zip(&v) {
                _mm512_storeu_ps(o.as_mut_ptr(), *vi);
            }
        }
    }
}
