//! int8 depthwise conv on AVX2: narrow planes sixteen channels a block as two eight-lane
//! halves (the AVX-512 lanes kernel's ring of transposed input rows and its per-pixel
//! multiply-adds, exact f32 sums of integer products; kws's 25 × 5 depthwise convs took
//! 58 µs each on the per-channel path), wider ones a channel's band at a time (the AVX-512
//! band kernel on eight lanes), both requantized in registers.

use core::arch::x86_64::*;

use super::requant::{Q8Range8, Rq8, low_bytes};
use crate::arch::x86::short_copy::copy_short;
use crate::arch::x86::sse2::transpose16;
use crate::ops::gemm_i8::conv::{
    DwBand, LANE_TAPS, Planes, lanes_floats, lanes_ring, ring_advance, ring_slot,
};

/// Runs the whole conv ([`Planes`]) into `y` (`[C][oh][ow]` bytes), the same bytes as the
/// per-channel path, requantized in either vector form ([`Rq8`]); `false` (nothing
/// written) for the exact fixed-point form or when a length does not fit.
///
/// # Safety
/// The CPU supports AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub unsafe fn lanes(p: &Planes<'_>, ws: &mut [f32], y: &mut [u8]) -> bool {
    let k = p.kh * p.kw;
    let (hw, ohw) = (p.h * p.w, p.oh * p.ow);
    let (wp, ring) = lanes_ring(p);
    let per = |v: usize| v == 1 || v == p.c;
    if k == 0
        || k > LANE_TAPS
        || p.x.len() < p.c * hw
        || y.len() < p.c * ohw
        || p.taps.len() < p.c * k
        || !per(p.corr.len())
        || !per(p.rq.len())
        || !crate::ops::gemm_i8::vector_form(p.rq)
        || p.rq.is_empty()
        || lanes_floats(ring, wp, p.ow).is_none_or(|n| n > ws.len())
        || p.ow == 0
        || p.oh == 0
        || p.sw == 0
    {
        return false;
    }
    let (ring_buf, out_buf) = ws.split_at_mut(ring * wp * 16);
    let obytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out_buf[..p.ow.div_ceil(16) * 16 * 4]);
    let pick = |v: &[i32], c: usize| if v.len() == 1 { v[0] } else { v[c] };
    // Channels `c..c + 8`'s requantizers (the tensor's one, or from the per-channel list).
    let rq_at = |c: usize| match p.rq {
        [r] => Rq8::splat(*r),
        _ => Rq8::columns(p.rq.get(c..).filter(|r| !r.is_empty()).unwrap_or(p.rq)),
    };
    let signed_out = p.lo < 0;
    // SAFETY: every pointer below stays inside the slices checked above: plane `c < C` row
    // `iy < h` columns `< w`, ring slot `< ring` pixel `< wp`, output bytes `< ow·16`,
    // output plane `c < C` row `oy < oh` columns `< ow`; the features are enabled here.
    unsafe {
        let pad = _mm256_set1_ps(p.pad);
        let range = Q8Range8::new(p.zp, p.lo, p.hi);
        let mut block = [0u8; 256];
        let mut trans = [0u8; 256];
        let mut otrans = [0u8; 256];
        let ring_ptr = ring_buf.as_mut_ptr();
        for c0 in (0..p.c).step_by(16) {
            let nc = 16.min(p.c - c0);
            // Lane masks of the block's channels (the rest read as padding).
            let mut m = [0i32; 16];
            for v in m.iter_mut().take(nc) {
                *v = -1;
            }
            let cm = [
                _mm256_castsi256_ps(_mm256_loadu_si256(m.as_ptr() as *const __m256i)),
                _mm256_castsi256_ps(_mm256_loadu_si256(m.as_ptr().add(8) as *const __m256i)),
            ];
            let mut wv = [[_mm256_setzero_ps(); 2]; LANE_TAPS];
            for (t, v) in wv.iter_mut().enumerate().take(k) {
                let mut lane = [0f32; 16];
                for (j, l) in lane.iter_mut().enumerate().take(nc) {
                    *l = f32::from(p.taps[(c0 + j) * k + t]);
                }
                *v = [
                    _mm256_loadu_ps(lane.as_ptr()),
                    _mm256_loadu_ps(lane.as_ptr().add(8)),
                ];
            }
            let mut corr = [0i32; 16];
            for (j, v) in corr.iter_mut().enumerate().take(nc) {
                *v = pick(p.corr, c0 + j);
            }
            let corr = [
                _mm256_loadu_si256(corr.as_ptr() as *const __m256i),
                _mm256_loadu_si256(corr.as_ptr().add(8) as *const __m256i),
            ];
            // `vector_form` (checked above): every half has its requantizers.
            let (Some(rq0), Some(rq1)) = (rq_at(c0), rq_at(c0 + 8)) else {
                return false;
            };
            let rqs = [rq0, rq1];
            // Input row `iy` (any, padding outside) into ring slot `slot`.
            let mut fill = |iy: isize, slot: usize| {
                let row = ring_ptr.add(slot * wp * 16);
                for t in 0..2 * wp {
                    _mm256_storeu_ps(row.add(t * 8), pad);
                }
                if iy < 0 || iy as usize >= p.h {
                    return;
                }
                let cols = p.w.min(wp.saturating_sub(p.pl));
                let mut x0 = 0;
                while x0 < cols {
                    let n = 16.min(cols - x0);
                    block.fill(0);
                    for j in 0..nc {
                        let src = (c0 + j) * hw + iy as usize * p.w + x0;
                        copy_short(&mut block[16 * j..16 * j + n], &p.x[src..src + n]);
                    }
                    transpose16(block.as_ptr(), 16, trans.as_mut_ptr(), 16);
                    for px in 0..n {
                        let b = _mm_loadu_si128(trans.as_ptr().add(16 * px) as *const __m128i);
                        let hi8 = _mm_srli_si128::<8>(b);
                        let (w0, w1) = if p.signed {
                            (_mm256_cvtepi8_epi32(b), _mm256_cvtepi8_epi32(hi8))
                        } else {
                            (_mm256_cvtepu8_epi32(b), _mm256_cvtepu8_epi32(hi8))
                        };
                        let dst = row.add((p.pl + x0 + px) * 16);
                        let v0 = _mm256_blendv_ps(pad, _mm256_cvtepi32_ps(w0), cm[0]);
                        let v1 = _mm256_blendv_ps(pad, _mm256_cvtepi32_ps(w1), cm[1]);
                        _mm256_storeu_ps(dst, v0);
                        _mm256_storeu_ps(dst.add(8), v1);
                    }
                    x0 += 16;
                }
            };
            let slot_of = |iy: isize| ring_slot(iy, ring);
            let mut next = -(p.pt as isize);
            for oy in 0..p.oh {
                let top = ring_advance(p, ring, oy, &mut next, &mut fill);
                let base = ring_ptr as *const f32;
                let mut ox = 0;
                while ox < p.ow {
                    // Four pixels in flight, two halves each.
                    let n = 4.min(p.ow - ox);
                    let mut acc = [[_mm256_setzero_ps(); 2]; 4];
                    for i in 0..p.kh {
                        let row = base.add(slot_of(top + (i * p.dh) as isize) * wp * 16);
                        for j in 0..p.kw {
                            let wt = wv[i * p.kw + j];
                            for (q, a) in acc.iter_mut().enumerate().take(n) {
                                let at = row.add(((ox + q) * p.sw + j * p.dw) * 16);
                                a[0] = _mm256_fmadd_ps(_mm256_loadu_ps(at), wt[0], a[0]);
                                a[1] = _mm256_fmadd_ps(_mm256_loadu_ps(at.add(8)), wt[1], a[1]);
                            }
                        }
                    }
                    for (q, a) in acc.iter().enumerate().take(n) {
                        // Either requantization form, in the output range.
                        let mut out = [_mm256_setzero_si256(); 2];
                        for h in 0..2 {
                            let v = _mm256_add_epi32(_mm256_cvttps_epi32(a[h]), corr[h]);
                            out[h] = rqs[h].apply(v, range);
                        }
                        // 16 i32 → 16 i16 (in channel order) → 16 bytes.
                        let w = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(
                            out[0], out[1],
                        ));
                        let (w0, w1) =
                            (_mm256_castsi256_si128(w), _mm256_extracti128_si256::<1>(w));
                        let b = if signed_out {
                            _mm_packs_epi16(w0, w1)
                        } else {
                            _mm_packus_epi16(w0, w1)
                        };
                        _mm_storeu_si128(obytes.as_mut_ptr().add((ox + q) * 16) as *mut __m128i, b);
                    }
                    ox += n;
                }
                // The row's pixels (16 channels each) back into the planes.
                let mut x0 = 0;
                while x0 < p.ow {
                    let n = 16.min(p.ow - x0);
                    transpose16(obytes.as_ptr().add(x0 * 16), 16, otrans.as_mut_ptr(), 16);
                    for j in 0..nc {
                        let dst = (c0 + j) * ohw + oy * p.ow + x0;
                        copy_short(&mut y[dst..dst + n], &otrans[16 * j..16 * j + n]);
                    }
                    x0 += 16;
                }
            }
        }
    }
    true
}

/// Widens one channel's band ([`DwBand`]) into `buf` (`rows × wp` f32, padding written
/// out), then computes its `here` output rows into `y` (`here × ow` bytes): four output
/// rows of sixteen positions at a time in two eight-lane halves, every tap one
/// multiply-add kept in registers (a stride-2 row picks the even positions of two loads),
/// requantized in registers in either form ([`Rq8`]). The AVX-512 band's kernel on eight
/// lanes: the same exact f32 sums, so the portable loop's bytes (which ran vww's 48 × 48
/// and 24 × 24 depthwise convs at 70–100 µs, eight times the f32 conv). `false` (nothing
/// written) when a length or the column stride does not fit.
///
/// # Safety
/// The CPU supports AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub unsafe fn run(b: &DwBand<'_>, rq: Rq8, range: Q8Range8, buf: &mut [f32], y: &mut [u8]) -> bool {
    if !b.fits(buf.len(), y.len()) {
        return false;
    }
    let need = b.rows * b.wp;
    let buf = &mut buf[..need];
    buf.fill(b.pad);
    // Input columns `0..w` land at band columns `pl..`, those past `wp` dropped.
    let cols = b.w.min(b.wp.saturating_sub(b.pl));
    for r in 0..b.rows {
        let iy = b.iy0 + r as isize;
        if iy < 0 || iy as usize >= b.h {
            continue;
        }
        let src = &b.plane[iy as usize * b.w..][..cols];
        let dst = &mut buf[r * b.wp + b.pl..][..cols];
        let mut t = 0;
        while t + 8 <= cols {
            // SAFETY: eight bytes of `src` and eight f32 of `dst` from `t < cols − 7`.
            unsafe {
                let bytes = _mm_loadl_epi64(src.as_ptr().add(t).cast());
                let wide = if b.signed {
                    _mm256_cvtepi8_epi32(bytes)
                } else {
                    _mm256_cvtepu8_epi32(bytes)
                };
                _mm256_storeu_ps(dst.as_mut_ptr().add(t), _mm256_cvtepi32_ps(wide));
            }
            t += 8;
        }
        for (d, &v) in dst[t..].iter_mut().zip(&src[t..]) {
            *d = if b.signed {
                f32::from(v as i8)
            } else {
                f32::from(v)
            };
        }
    }
    let corr = _mm256_set1_epi32(b.corr);
    let buf = &*buf;
    // Rows narrower than two vectors at column stride 1: the band's rows as one flat run
    // (position `q` reads band `q + tap offset`; the columns past `ow` are computed and
    // dropped), four vectors at a time, the bytes copied out row by row.
    if b.sw == 1 && b.ow < 16 {
        let len = (b.here - 1) * b.sh * b.wp + b.ow;
        let step = b.sh * b.wp;
        let mut q0 = 0;
        while q0 < len {
            let mut acc = [_mm256_setzero_ps(); 4];
            for i in 0..b.kh {
                for j in 0..b.kw {
                    let wt = _mm256_set1_ps(b.taps[i * b.kw + j]);
                    let off = i * b.dh * b.wp + j * b.dw;
                    for (v, a) in acc.iter_mut().enumerate() {
                        *a = _mm256_fmadd_ps(load8(buf, q0 + 8 * v + off), wt, *a);
                    }
                }
            }
            let mut bytes = [0u8; 32];
            for (v, &a) in acc.iter().enumerate() {
                let q = rq.apply(_mm256_add_epi32(_mm256_cvttps_epi32(a), corr), range);
                bytes[8 * v..8 * v + 8].copy_from_slice(&low_bytes(q).to_le_bytes());
            }
            // Output rows meeting positions `q0..q0 + 32`: row `r` is `r·step..+ow`.
            let end = (q0 + 32).min(len);
            let mut r = q0 / step;
            while r * step < end {
                let (lo, hi) = ((r * step).max(q0), (r * step + b.ow).min(end));
                if lo < hi {
                    let at = r * b.ow + lo - r * step;
                    copy_short(&mut y[at..at + hi - lo], &bytes[lo - q0..]);
                }
                r += 1;
            }
            q0 += 32;
        }
        return true;
    }
    if b.sw == 1 {
        rows4::<1>(b, buf, rq, range, corr, y);
    } else {
        rows4::<2>(b, buf, rq, range, corr, y);
    }
    true
}

/// Eight floats of `buf` at `at`: a plain load inside it, masked at its end (lanes past it
/// read as zero and are never stored).
#[target_feature(enable = "avx2")]
#[inline]
fn load8(buf: &[f32], at: usize) -> __m256 {
    if let Some(v) = buf.get(at..at + 8) {
        // SAFETY: eight floats.
        unsafe { _mm256_loadu_ps(v.as_ptr()) }
    } else {
        let n = buf.len().saturating_sub(at).min(8) as i32;
        let m = _mm256_cmpgt_epi32(
            _mm256_set1_epi32(n),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        );
        // SAFETY: only the lanes below `len − at` (none when `at ≥ len`) are read.
        unsafe { _mm256_maskload_ps(buf.as_ptr().wrapping_add(at.min(buf.len())), m) }
    }
}

/// Eight output positions from band offset `at` at column stride `SW` (1, or 2: the even
/// positions of two loads, `[a0 a2 b0 b2 | a4 a6 b4 b6]` permuted into order).
#[target_feature(enable = "avx2")]
#[inline]
fn read8<const SW: usize>(buf: &[f32], at: usize) -> __m256 {
    if SW == 1 {
        load8(buf, at)
    } else {
        let pair = _mm256_shuffle_ps::<0b10_00_10_00>(load8(buf, at), load8(buf, at + 8));
        _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(
            pair,
        )))
    }
}

/// The band's output rows, four rows of sixteen positions at a time: eight independent
/// chains in registers (a last group of fewer rows computes four and stores its own; the
/// rows past the band read as zero).
#[target_feature(enable = "avx2,fma")]
fn rows4<const SW: usize>(
    b: &DwBand<'_>,
    buf: &[f32],
    rq: Rq8,
    range: Q8Range8,
    corr: __m256i,
    y: &mut [u8],
) {
    const ROWS: usize = 4;
    for oy0 in (0..b.here).step_by(ROWS) {
        let rows = ROWS.min(b.here - oy0);
        let mut ox = 0;
        while ox < b.ow {
            let mut acc = [[_mm256_setzero_ps(); 2]; ROWS];
            for i in 0..b.kh {
                for j in 0..b.kw {
                    let wt = _mm256_set1_ps(b.taps[i * b.kw + j]);
                    let col = ox * SW + j * b.dw;
                    for (r, a) in acc.iter_mut().enumerate() {
                        let at = ((oy0 + r) * b.sh + i * b.dh) * b.wp + col;
                        a[0] = _mm256_fmadd_ps(read8::<SW>(buf, at), wt, a[0]);
                        a[1] = _mm256_fmadd_ps(read8::<SW>(buf, at + 8 * SW), wt, a[1]);
                    }
                }
            }
            for (r, a) in acc.iter().enumerate().take(rows) {
                for (h, &v) in a.iter().enumerate() {
                    let from = ox + 8 * h;
                    if from >= b.ow {
                        break;
                    }
                    let v = _mm256_add_epi32(_mm256_cvttps_epi32(v), corr);
                    let bytes = low_bytes(rq.apply(v, range)).to_le_bytes();
                    let at = (oy0 + r) * b.ow + from;
                    copy_short(&mut y[at..at + 8.min(b.ow - from)], &bytes);
                }
            }
            ox += 16;
        }
    }
}
