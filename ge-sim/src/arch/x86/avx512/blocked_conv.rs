//! The AVX-512 tile of [`crate::ops::nchwc::conv`]: `FB` output blocks × `PX` pixels in `FB·PX` zmm
//! accumulators, one FMA per (input channel, tap), and the band epilogue. The tile stores
//! raw sums, or after its last chunk adds bias and residual and clamps (two instructions a
//! register) before the store; other activations run in the band epilogue: an epilogue
//! inlined 24 times (a sigmoid each) kept LLVM from unrolling the stores, and the
//! accumulator array then lived on the stack.

use core::arch::x86_64::*;

use ge_runtime::format::BLOCK;

use crate::arch::x86::avx512::gemm::{act, act4};
use crate::ops::nchwc::conv::{BandEnd, Geometry, PIXELS, Tile, TileTaps};

/// The tile for `fb ≤ 4` blocks × `px ≤` [`PIXELS`] pixels: one build per count.
///
/// # Safety
/// As `conv::row` for this tile; the CPU has AVX-512 F/BW/VL.
pub(crate) unsafe fn tile(geo: &Geometry, t: &Tile, fb: usize, px: usize) {
    macro_rules! by_px {
        ($fb:literal) => {
            match px {
                1 => by_cb::<$fb, 1>(geo, t),
                2 => by_cb::<$fb, 2>(geo, t),
                3 => by_cb::<$fb, 3>(geo, t),
                4 => by_cb::<$fb, 4>(geo, t),
                5 => by_cb::<$fb, 5>(geo, t),
                _ => by_cb::<$fb, PIXELS>(geo, t),
            }
        };
    }
    // SAFETY: forwarded contract.
    unsafe {
        match fb {
            1 => by_px!(1),
            2 => by_px!(2),
            3 => by_px!(3),
            _ => by_px!(4),
        }
    }
}

/// # Safety
/// As [`tile`].
#[inline(always)]
unsafe fn by_cb<const FB: usize, const PX: usize>(geo: &Geometry, t: &Tile) {
    // SAFETY: forwarded contract.
    unsafe {
        if geo.cb() == BLOCK {
            kernel::<FB, PX, BLOCK>(geo, t);
        } else {
            kernel::<FB, PX, 1>(geo, t);
        }
    }
}

/// Every loop over the tile's pixels has the constant length `PX` (a loop of a run-time
/// length, or one that may end early, kept LLVM from unrolling it, and the accumulators then
/// lived on the stack).
///
/// # Safety
/// As [`tile`], with `CB` the geometry's input block.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn kernel<const FB: usize, const PX: usize, const CB: usize>(geo: &Geometry, t: &Tile) {
    let width = FB * BLOCK;
    let mut acc = [[_mm512_setzero_ps(); FB]; PX];
    let mut taps = TileTaps::<PX>::new(geo, t, PX);
    let mut ahead = t.spread::<CB>(geo);
    // SAFETY: (whole body) per the contract: each step reads `CB` channels of `PX` pixels
    // (or of ZEROS) and `CB·width` weights; the tile's outputs are read and written.
    unsafe {
        if t.cibs.0 > 0 {
            for (p, a) in acc.iter_mut().enumerate() {
                for (f, v) in a.iter_mut().enumerate() {
                    *v = _mm512_loadu_ps(t.y.add(f * t.plane + p * BLOCK));
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
                    let wv: [__m512; FB] =
                        core::array::from_fn(|f| _mm512_loadu_ps(wp.add(c * width + f * BLOCK)));
                    for (p, a) in acc.iter_mut().enumerate() {
                        let xv = _mm512_set1_ps(*pix[p].add(c));
                        for (a, &w) in a.iter_mut().zip(&wv) {
                            *a = _mm512_fmadd_ps(xv, w, *a);
                        }
                    }
                }
            },
        );
        ahead.finish();
        if let Some(e) = t.end {
            let clamp = e.clamp();
            let bias: [__m512; FB] = core::array::from_fn(|f| {
                if e.bias.is_null() {
                    _mm512_setzero_ps()
                } else {
                    _mm512_loadu_ps(e.bias.add(f * BLOCK))
                }
            });
            for (p, a) in acc.iter_mut().enumerate() {
                for (f, v) in a.iter_mut().enumerate() {
                    if !e.bias.is_null() {
                        *v = _mm512_add_ps(*v, bias[f]);
                    }
                    if !e.res.is_null() {
                        let at = f * t.plane + p * BLOCK;
                        *v = _mm512_add_ps(*v, _mm512_loadu_ps(e.res.add(at)));
                    }
                    *v = act(*v, clamp);
                }
            }
        }
        for (p, a) in acc.iter().enumerate() {
            for (f, &v) in a.iter().enumerate() {
                _mm512_storeu_ps(t.y.add(f * t.plane + p * BLOCK), v);
            }
        }
    }
}

/// The band epilogue: `y = act(y + bias + residual)`.
///
/// # Safety
/// As `conv::finish`; the CPU has AVX-512 F/BW/VL.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
pub(crate) unsafe fn finish(e: &BandEnd) {
    // SAFETY: the band's `fb` blocks × `px` pixels of the output and residual (contract).
    unsafe {
        for f in 0..e.fb {
            let bias = (!e.bias.is_null()).then(|| _mm512_loadu_ps(e.bias.add(f * BLOCK)));
            // Four pixels at a time: the activation's chains side by side.
            let mut p = 0;
            while p + 4 <= e.px {
                let mut v = [_mm512_setzero_ps(); 4];
                for (k, v) in v.iter_mut().enumerate() {
                    *v = band_sum(e, f * e.plane + (p + k) * BLOCK, bias);
                }
                for (k, v) in act4(v, e.act).into_iter().enumerate() {
                    _mm512_storeu_ps(e.y.add(f * e.plane + (p + k) * BLOCK), v);
                }
                p += 4;
            }
            for p in p..e.px {
                let at = f * e.plane + p * BLOCK;
                _mm512_storeu_ps(e.y.add(at), act(band_sum(e, at, bias), e.act));
            }
        }
    }
}

/// The raw sum at `at` plus the bias and residual (a function, not a closure: a closure
/// would compile without the caller's AVX-512).
///
/// # Safety
/// As [`finish`], `at` inside the band.
#[inline(always)]
unsafe fn band_sum(e: &BandEnd, at: usize, bias: Option<__m512>) -> __m512 {
    // SAFETY: contract.
    unsafe {
        let mut v = _mm512_loadu_ps(e.y.add(at));
        if let Some(b) = bias {
            v = _mm512_add_ps(v, b);
        }
        if !e.res.is_null() {
            v = _mm512_add_ps(v, _mm512_loadu_ps(e.res.add(at)));
        }
        v
    }
}

/// `xt = act(x · scale + shift)` per channel of blocked `x`, a pixel's 16 channels in one
/// register: LLVM vectorized the portable loop's pixel loop instead, one gather per lane
/// (microcoded on Zen 4: DenseNet's pre-activation 1×1 convs spent 18% of its run there).
/// The same multiply, add and activation per value ([`act`] is bitwise
/// [`crate::arch::tile::act_scalar`] for these activations).
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL; `act` is none, a clamp, leaky or HardSwish.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
pub(crate) unsafe fn prologue(
    x: &[f32],
    scale: &[f32],
    shift: &[f32],
    act: crate::arch::tile::TileAct,
    xt: &mut [f32],
    plane: usize,
) {
    for (xb, tb, s, t) in crate::ops::conv::blocked::channel_blocks(x, scale, shift, xt, plane) {
        // SAFETY: 16 values at each pointer (slices of BLOCK); AVX-512F is enabled here.
        unsafe {
            let (s, t) = (_mm512_loadu_ps(s.as_ptr()), _mm512_loadu_ps(t.as_ptr()));
            for (px, out) in xb.chunks_exact(BLOCK).zip(tb.chunks_exact_mut(BLOCK)) {
                let v = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(px.as_ptr()), s), t);
                let v = self::act(v, act);
                _mm512_storeu_ps(out.as_mut_ptr(), v);
            }
        }
    }
}
