//! The AVX2 tile of [`crate::ops::nchwc::conv`]: one output block (16 channels, two ymm halves) × up to
//! [`PIXELS`] pixels in 12 of the 16 ymm registers, the block's two weight halves and one
//! broadcast beside them; a tile of a group's `fb` blocks runs as `fb` such passes over the
//! same input taps (a 2-block × 3-pixel tile, onnxruntime's AVX2 shape, needs 4 weight
//! registers and spills or folds them into 12 memory operands per channel). Each output
//! gets the AVX-512 tile's multiply-adds in the same order, so the two classes agree
//! bitwise. As there, the last chunk adds bias and residual and clamps before the store;
//! other activations run in the band epilogue ([`finish`]).

use core::arch::x86_64::*;

use ge_runtime::format::BLOCK;

use crate::arch::x86::avx2::gemm::{act, acts};
use crate::ops::nchwc::conv::{BandEnd, Geometry, PIXELS, Tile, TileEnd, TileTaps};

/// Lanes of one ymm register: a block is two.
const HALF: usize = BLOCK / 2;

/// The tile for `fb` blocks × `px ≤ PIXELS` pixels: block `f` at `f·BLOCK` in each
/// channel's `fb·BLOCK` weights and at `f·plane` in the output.
///
/// # Safety
/// As `conv::dispatch` for this tile; the CPU has AVX2 and FMA.
pub(crate) unsafe fn tile(geo: &Geometry, t: &Tile, fb: usize, px: usize) {
    // Each block's pass prefetches its share of the tile's slice of the next chunk.
    let share = t.ahead.1.div_ceil(fb).next_multiple_of(16);
    for f in 0..fb {
        let from = (f * share).min(t.ahead.1);
        let block = Tile {
            w: t.w.wrapping_add(f * BLOCK),
            ahead: (t.ahead.0.wrapping_add(from), share.min(t.ahead.1 - from)),
            y: t.y.wrapping_add(f * t.plane),
            end: t.end.map(|e| TileEnd {
                bias: if e.bias.is_null() {
                    e.bias
                } else {
                    e.bias.wrapping_add(f * BLOCK)
                },
                res: if e.res.is_null() {
                    e.res
                } else {
                    e.res.wrapping_add(f * t.plane)
                },
                act: e.act,
            }),
            ..*t
        };
        // SAFETY: forwarded contract, block `f` of the tile's group.
        unsafe {
            match px {
                1 => by_cb::<1>(geo, &block, fb),
                2 => by_cb::<2>(geo, &block, fb),
                3 => by_cb::<3>(geo, &block, fb),
                4 => by_cb::<4>(geo, &block, fb),
                5 => by_cb::<5>(geo, &block, fb),
                _ => by_cb::<PIXELS>(geo, &block, fb),
            }
        }
    }
}

/// # Safety
/// As [`tile`].
#[inline(always)]
unsafe fn by_cb<const PX: usize>(geo: &Geometry, t: &Tile, fb: usize) {
    // SAFETY: forwarded contract.
    unsafe {
        if geo.cb() == BLOCK {
            kernel::<PX, BLOCK>(geo, t, fb);
        } else {
            kernel::<PX, 1>(geo, t, fb);
        }
    }
}

/// One block × `PX` pixels; `fb` blocks' weights per channel step.
///
/// # Safety
/// As [`tile`], with `CB` the geometry's input block.
#[target_feature(enable = "avx2,fma")]
unsafe fn kernel<const PX: usize, const CB: usize>(geo: &Geometry, t: &Tile, fb: usize) {
    let width = fb * BLOCK;
    const { assert!(PX <= PIXELS) };
    let mut acc = [[_mm256_setzero_ps(); 2]; PX];
    let mut taps = TileTaps::<PX>::new(geo, t, PX);
    let mut ahead = t.spread::<CB>(geo);
    // SAFETY: (whole body) per the contract: each step reads `CB` channels of `PX` pixels
    // (or of ZEROS) and the block's 16 of each channel's `width` weights; the tile's
    // outputs are read and written.
    unsafe {
        if t.cibs.0 > 0 {
            for (p, a) in acc.iter_mut().enumerate() {
                for (h, v) in a.iter_mut().enumerate() {
                    *v = _mm256_loadu_ps(t.y.add(p * BLOCK + h * HALF));
                }
            }
        }
        taps.each_tap::<CB>(
            t.cibs,
            t.w,
            width,
            #[inline(always)]
            |pix, wp| {
                // A constant test: a plain input's tile prefetched its slice at once.
                if CB == BLOCK {
                    ahead.step();
                }
                for c in 0..CB {
                    let w0 = _mm256_loadu_ps(wp.add(c * width));
                    let w1 = _mm256_loadu_ps(wp.add(c * width + HALF));
                    for (p, a) in acc.iter_mut().enumerate() {
                        let xv = _mm256_broadcast_ss(&*pix[p].add(c));
                        a[0] = _mm256_fmadd_ps(xv, w0, a[0]);
                        a[1] = _mm256_fmadd_ps(xv, w1, a[1]);
                    }
                }
            },
        );
        ahead.finish();
        if let Some(e) = t.end {
            let clamp = e.clamp();
            for (p, a) in acc.iter_mut().enumerate() {
                for (h, v) in a.iter_mut().enumerate() {
                    if !e.bias.is_null() {
                        *v = _mm256_add_ps(*v, _mm256_loadu_ps(e.bias.add(h * HALF)));
                    }
                    if !e.res.is_null() {
                        *v = _mm256_add_ps(*v, _mm256_loadu_ps(e.res.add(p * BLOCK + h * HALF)));
                    }
                    *v = act(*v, clamp);
                }
            }
        }
        for (p, a) in acc.iter().enumerate() {
            for (h, &v) in a.iter().enumerate() {
                _mm256_storeu_ps(t.y.add(p * BLOCK + h * HALF), v);
            }
        }
    }
}

/// The band epilogue: `y = act(y + bias + residual)`, four registers (two pixels) at a time.
///
/// # Safety
/// As `conv::finish`; the CPU has AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn finish(e: &BandEnd) {
    // SAFETY: the band's `fb` blocks × `px` pixels of the output and residual (contract).
    unsafe {
        for f in 0..e.fb {
            let bias = (!e.bias.is_null()).then(|| {
                [
                    _mm256_loadu_ps(e.bias.add(f * BLOCK)),
                    _mm256_loadu_ps(e.bias.add(f * BLOCK + HALF)),
                ]
            });
            let mut p = 0;
            while p + 2 <= e.px {
                let at = f * e.plane + p * BLOCK;
                let v = [
                    band_sum(e, at, 0, bias),
                    band_sum(e, at, 1, bias),
                    band_sum(e, at, 2, bias),
                    band_sum(e, at, 3, bias),
                ];
                for (k, v) in acts(v, e.act).into_iter().enumerate() {
                    _mm256_storeu_ps(e.y.add(at + k * HALF), v);
                }
                p += 2;
            }
            if p < e.px {
                let at = f * e.plane + p * BLOCK;
                for k in 0..2 {
                    _mm256_storeu_ps(e.y.add(at + k * HALF), act(band_sum(e, at, k, bias), e.act));
                }
            }
        }
    }
}

/// The raw sums of half `k` from `at` (`k` counts halves: 0–1 are pixel `at`'s, 2–3 the
/// next pixel's) plus the bias and residual.
///
/// # Safety
/// As [`finish`], the half inside the band.
#[inline(always)]
unsafe fn band_sum(e: &BandEnd, at: usize, k: usize, bias: Option<[__m256; 2]>) -> __m256 {
    let at = at + k * HALF;
    // SAFETY: contract.
    unsafe {
        let mut v = _mm256_loadu_ps(e.y.add(at));
        if let Some(b) = bias {
            v = _mm256_add_ps(v, b[k % 2]);
        }
        if !e.res.is_null() {
            v = _mm256_add_ps(v, _mm256_loadu_ps(e.res.add(at)));
        }
        v
    }
}
