//! The int8 depthwise band on AVX-512 ([`crate::ops::gemm_i8::conv`]'s f32 plane): one
//! channel's band of input rows widened to f32 sixteen at a time, then each output row
//! sixteen positions a vector, every tap one multiply-add kept in registers (a stride-2 row
//! picks the even positions of two loads with one permute), the sums requantized in
//! registers ([`Rq16`]) and stored straight into the output row. The products and partial
//! sums are integers below 2^24 (the plane's tap bound), exact in f32 whatever the order,
//! so the bytes are the portable loop's. The loop it replaces stored and reloaded its
//! accumulators per tap, widened the band one value at a time and wrote the outputs one
//! byte at a time: kws's 25 × 5 planes ran at a sixth of the f32 conv's speed.
//! O(rows·wp + here·ow·taps) per band.

use core::arch::x86_64::*;

use super::requant::{Q8Range, Rq16};
pub use crate::ops::gemm_i8::conv::DwBand;

/// Widens the band into `buf` (`rows × wp` f32, padding written out), then computes the
/// band's `here` output rows into `y` (`here × ow` bytes). `false` (nothing written) when
/// a length or the column stride does not fit.
///
/// # Safety
/// The CPU supports AVX-512 F/BW/VL.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
pub unsafe fn run(b: &DwBand<'_>, rq: Rq16, range: Q8Range, buf: &mut [f32], y: &mut [u8]) -> bool {
    let need = b.rows * b.wp;
    if !b.fits(buf.len(), y.len()) {
        return false;
    }
    let buf = &mut buf[..need];
    // SAFETY: every load and store below is masked to, or lies inside, the checked lengths:
    // band row `r < rows` columns `< wp`, input row `iy < h` columns `< w`, output row
    // `oy < here` columns `< ow`; the features are enabled on this function.
    unsafe {
        // The padding everywhere, then the input rows' columns widened over it.
        let pad = _mm512_set1_ps(b.pad);
        let mut t = 0;
        while t < need {
            let n = 16.min(need - t);
            let m: __mmask16 = if n == 16 { !0 } else { (1u16 << n) - 1 };
            _mm512_mask_storeu_ps(buf.as_mut_ptr().add(t), m, pad);
            t += 16;
        }
        // Input columns `0..w` land at band columns `pl..`, those past `wp` dropped.
        let cols = b.w.min(b.wp.saturating_sub(b.pl));
        for r in 0..b.rows {
            let iy = b.iy0 + r as isize;
            if iy < 0 || iy as usize >= b.h {
                continue;
            }
            let src = b.plane.as_ptr().add(iy as usize * b.w);
            let dst = buf.as_mut_ptr().add(r * b.wp + b.pl);
            let mut t = 0;
            while t < cols {
                let n = 16.min(cols - t);
                let m: __mmask16 = if n == 16 { !0 } else { (1u16 << n) - 1 };
                let bytes = _mm_maskz_loadu_epi8(m, src.add(t) as *const i8);
                let wide = if b.signed {
                    _mm512_cvtepi8_epi32(bytes)
                } else {
                    _mm512_cvtepu8_epi32(bytes)
                };
                _mm512_mask_storeu_ps(dst.add(t), m, _mm512_cvtepi32_ps(wide));
                t += 16;
            }
        }
        let corr = _mm512_set1_epi32(b.corr);
        let evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let base = buf.as_ptr();
        // Sixteen floats at `at`: a plain load inside the band, masked at its end (lanes past
        // it read as zero and are never stored).
        let load = |at: usize| {
            if at + 16 <= need {
                _mm512_loadu_ps(base.add(at))
            } else {
                let n = need.saturating_sub(at).min(16);
                _mm512_maskz_loadu_ps(((1u32 << n) - 1) as u16, base.wrapping_add(at))
            }
        };
        let read = |at: usize| {
            if b.sw == 1 {
                load(at)
            } else {
                _mm512_permutex2var_ps(load(at), evens, load(at + 16))
            }
        };
        // Rows narrower than a vector at column stride 1: the band's rows as one flat run
        // (position `q` reads band `q + tap offset`; the columns past `ow` are computed and
        // dropped), four vectors at a time, the bytes copied out row by row.
        if b.sw == 1 && b.ow < 16 {
            let len = (b.here - 1) * b.sh * b.wp + b.ow;
            let step = b.sh * b.wp;
            let mut q0 = 0;
            while q0 < len {
                let mut acc = [_mm512_setzero_ps(); 4];
                for i in 0..b.kh {
                    for j in 0..b.kw {
                        let wt = _mm512_set1_ps(*b.taps.get_unchecked(i * b.kw + j));
                        let off = i * b.dh * b.wp + j * b.dw;
                        for (v, a) in acc.iter_mut().enumerate() {
                            *a = _mm512_fmadd_ps(load(q0 + 16 * v + off), wt, *a);
                        }
                    }
                }
                // 16 spare bytes: a row's masked copy below loads 16 from its start.
                let mut bytes = [0u8; 80];
                for (v, &a) in acc.iter().enumerate() {
                    let q = rq.apply(_mm512_add_epi32(_mm512_cvttps_epi32(a), corr), range);
                    _mm_storeu_si128(bytes.as_mut_ptr().add(16 * v) as *mut __m128i, q);
                }
                // Output rows meeting positions `q0..q0 + 64`: row `r` is `r·step..+ow`.
                let end = (q0 + 64).min(len);
                let mut r = q0 / step;
                while r * step < end {
                    let (lo, hi) = ((r * step).max(q0), (r * step + b.ow).min(end));
                    if lo < hi {
                        // `hi − lo ≤ ow < 16` bytes, one masked store (a call to `memcpy` per
                        // row cost more than the row's products).
                        let dst = y.as_mut_ptr().add(r * b.ow + lo - r * step);
                        let v = _mm_loadu_si128(bytes.as_ptr().add(lo - q0) as *const __m128i);
                        _mm_mask_storeu_epi8(dst as *mut i8, (1u16 << (hi - lo)) - 1, v);
                    }
                    r += 1;
                }
                q0 += 64;
            }
            return true;
        }
        // Four output rows at a time: four independent multiply-add chains.
        const ROWS: usize = 4;
        for oy0 in (0..b.here).step_by(ROWS) {
            let rows = ROWS.min(b.here - oy0);
            let mut ox = 0;
            while ox < b.ow {
                let n = 16.min(b.ow - ox);
                let mut acc = [_mm512_setzero_ps(); ROWS];
                for i in 0..b.kh {
                    for j in 0..b.kw {
                        let wt = _mm512_set1_ps(*b.taps.get_unchecked(i * b.kw + j));
                        let col = ox * b.sw + j * b.dw;
                        for (r, a) in acc.iter_mut().enumerate().take(rows) {
                            let at = ((oy0 + r) * b.sh + i * b.dh) * b.wp + col;
                            *a = _mm512_fmadd_ps(read(at), wt, *a);
                        }
                    }
                }
                let m: __mmask16 = if n == 16 { !0 } else { (1u16 << n) - 1 };
                for (r, &a) in acc.iter().enumerate().take(rows) {
                    let v = _mm512_add_epi32(_mm512_cvttps_epi32(a), corr);
                    let q = rq.apply(v, range);
                    _mm_mask_storeu_epi8(
                        y.as_mut_ptr().add((oy0 + r) * b.ow + ox) as *mut i8,
                        m,
                        q,
                    );
                }
                ox += 16;
            }
        }
    }
    true
}

pub use crate::ops::gemm_i8::conv::{LANE_TAPS, Planes, lanes_ring};
use crate::ops::gemm_i8::conv::{ring_advance, ring_slot};

/// Runs the whole conv ([`Planes`]) sixteen channels at a time into `y` (`[C][oh][ow]`
/// bytes): each input row of sixteen planes transposed once into pixel vectors (widened to
/// f32, exact) in a ring of the window's rows, each output pixel the taps' multiply-adds
/// of sixteen channels, requantized per channel in registers, each output row transposed
/// back into the planes. `false` (nothing written) when a length does not fit.
///
/// # Safety
/// The CPU supports AVX-512 F/BW/VL.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
pub unsafe fn lanes(p: &Planes<'_>, ws: &mut [f32], y: &mut [u8]) -> bool {
    let k = p.kh * p.kw;
    let (hw, ohw) = (p.h * p.w, p.oh * p.ow);
    let (wp, ring) = lanes_ring(p);
    let per = |v: usize| v == 1 || v == p.c;
    let vector = crate::ops::gemm_i8::vector_form(p.rq);
    if k == 0
        || k > LANE_TAPS
        || !DwBand::stride_fits(p.sw)
        || p.x.len() < p.c * hw
        || y.len() < p.c * ohw
        || p.taps.len() < p.c * k
        || !per(p.corr.len())
        || !per(p.rq.len())
        || !vector
        || crate::ops::gemm_i8::conv::lanes_floats(ring, wp, p.ow).is_none_or(|n| n > ws.len())
        || p.ow == 0
        || p.oh == 0
    {
        return false;
    }
    let (ring_buf, out_buf) = ws.split_at_mut(ring * wp * 16);
    let obytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out_buf[..p.ow.div_ceil(16) * 16 * 4]);
    let pick = |v: &[i32], c: usize| if v.len() == 1 { v[0] } else { v[c] };
    // SAFETY: every pointer below stays inside the slices checked above: plane `c < C` row
    // `iy < h` columns `< w` (masked loads), ring slot `< ring` pixel `< wp`, output bytes
    // `< ow·16`, output plane `c < C` row `oy < oh` columns `< ow` (masked stores); the
    // features are enabled on this function.
    unsafe {
        let pad = _mm512_set1_ps(p.pad);
        let range = Q8Range::new(p.zp, p.lo, p.hi);
        let mut block = [0u8; 256];
        let mut trans = [0u8; 256];
        let mut otrans = [0u8; 256];
        let ring_ptr = ring_buf.as_mut_ptr();
        for c0 in (0..p.c).step_by(16) {
            let nc = 16.min(p.c - c0);
            let cmask: __mmask16 = if nc == 16 { !0 } else { (1u16 << nc) - 1 };
            // The block's taps, corrections and requantizers, one lane per channel.
            let mut wv = [_mm512_setzero_ps(); LANE_TAPS];
            for (t, v) in wv.iter_mut().enumerate().take(k) {
                let mut lane = [0f32; 16];
                for (j, l) in lane.iter_mut().enumerate().take(nc) {
                    *l = f32::from(p.taps[(c0 + j) * k + t]);
                }
                *v = _mm512_loadu_ps(lane.as_ptr());
            }
            let mut corr = [0i32; 16];
            for (j, v) in corr.iter_mut().enumerate().take(nc) {
                *v = pick(p.corr, c0 + j);
            }
            let corr = _mm512_loadu_si512(corr.as_ptr() as *const __m512i);
            let rq = if p.rq.len() == 1 {
                Rq16::splat(p.rq[0])
            } else if p.rq[0].shift == 0 {
                let mut s = [0f32; 16];
                for (j, v) in s.iter_mut().enumerate().take(nc) {
                    *v = f32::from_bits(p.rq[c0 + j].mult as u32);
                }
                Some(Rq16::F32(_mm512_loadu_ps(s.as_ptr())))
            } else {
                Rq16::columns(&p.rq[c0..])
            };
            let Some(rq) = rq else {
                return false;
            };
            // Input row `iy` (any, padding outside) into ring slot `slot`.
            let mut fill = |iy: isize, slot: usize| {
                let row = ring_ptr.add(slot * wp * 16);
                for t in 0..wp {
                    _mm512_storeu_ps(row.add(t * 16), pad);
                }
                if iy < 0 || iy as usize >= p.h {
                    return;
                }
                let cols = p.w.min(wp.saturating_sub(p.pl));
                let mut x0 = 0;
                while x0 < cols {
                    let n = 16.min(cols - x0);
                    let m: __mmask16 = if n == 16 { !0 } else { (1u16 << n) - 1 };
                    for j in 0..16 {
                        let v = if j < nc {
                            let src = p.x.as_ptr().add((c0 + j) * hw + iy as usize * p.w + x0);
                            _mm_maskz_loadu_epi8(m, src as *const i8)
                        } else {
                            _mm_setzero_si128()
                        };
                        _mm_storeu_si128(block.as_mut_ptr().add(16 * j) as *mut __m128i, v);
                    }
                    crate::arch::x86::sse2::transpose16(block.as_ptr(), 16, trans.as_mut_ptr(), 16);
                    for px in 0..n {
                        let b = _mm_loadu_si128(trans.as_ptr().add(16 * px) as *const __m128i);
                        let wide = if p.signed {
                            _mm512_cvtepi8_epi32(b)
                        } else {
                            _mm512_cvtepu8_epi32(b)
                        };
                        let v = _mm512_mask_blend_ps(cmask, pad, _mm512_cvtepi32_ps(wide));
                        _mm512_storeu_ps(row.add((p.pl + x0 + px) * 16), v);
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
                    // Four pixels in flight.
                    let n = 4.min(p.ow - ox);
                    let mut acc = [_mm512_setzero_ps(); 4];
                    for i in 0..p.kh {
                        let row = base.add(slot_of(top + (i * p.dh) as isize) * wp * 16);
                        for j in 0..p.kw {
                            let wt = wv[i * p.kw + j];
                            for (q, a) in acc.iter_mut().enumerate().take(n) {
                                let px = (ox + q) * p.sw + j * p.dw;
                                *a = _mm512_fmadd_ps(_mm512_loadu_ps(row.add(px * 16)), wt, *a);
                            }
                        }
                    }
                    for (q, &a) in acc.iter().enumerate().take(n) {
                        let v = _mm512_add_epi32(_mm512_cvttps_epi32(a), corr);
                        let b = rq.apply(v, range);
                        _mm_storeu_si128(obytes.as_mut_ptr().add((ox + q) * 16) as *mut __m128i, b);
                    }
                    ox += n;
                }
                // The row's pixels (16 channels each) back into the planes.
                let mut x0 = 0;
                while x0 < p.ow {
                    let n = 16.min(p.ow - x0);
                    let m: __mmask16 = if n == 16 { !0 } else { (1u16 << n) - 1 };
                    crate::arch::x86::sse2::transpose16(
                        obytes.as_ptr().add(x0 * 16),
                        16,
                        otrans.as_mut_ptr(),
                        16,
                    );
                    for j in 0..nc {
                        let v = _mm_loadu_si128(otrans.as_ptr().add(16 * j) as *const __m128i);
                        let dst = y.as_mut_ptr().add((c0 + j) * ohw + oy * p.ow + x0);
                        _mm_mask_storeu_epi8(dst as *mut i8, m, v);
                    }
                    x0 += 16;
                }
            }
        }
    }
    true
}
