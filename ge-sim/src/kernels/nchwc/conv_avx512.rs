//! The AVX-512 tile of [`super::conv`]: `FB` output blocks × `PX` pixels in `FB·PX` zmm
//! accumulators, one FMA per (input channel, tap), the epilogue in registers.

use core::arch::x86_64::*;

use ge_runtime::format::BLOCK;

use super::conv::{Geometry, Tile, tap_pixel, tap_row};
use crate::kernels::gemm::avx512::act;

/// Most pixels of a tile this build has (the widest `kernel` instance).
const MAX_PX: usize = 6;

/// The tile for `fb ≤ 4` blocks × `px ≤ MAX_PX` pixels.
///
/// # Safety
/// As `conv::row` for this tile; the CPU has AVX-512 F/BW/VL.
pub(super) unsafe fn tile(geo: &Geometry, t: &Tile, fb: usize, px: usize) {
    macro_rules! by_px {
        ($fb:literal) => {
            match px {
                1 => by_cb::<$fb, 1>(geo, t),
                2 => by_cb::<$fb, 2>(geo, t),
                3 => by_cb::<$fb, 3>(geo, t),
                4 => by_cb::<$fb, 4>(geo, t),
                5 => by_cb::<$fb, 5>(geo, t),
                _ => by_cb::<$fb, MAX_PX>(geo, t),
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
        match (geo.cb() == BLOCK, geo.stride[1]) {
            (true, 1) => kernel::<FB, PX, BLOCK, 1>(geo, t),
            (true, 2) => kernel::<FB, PX, BLOCK, 2>(geo, t),
            (true, _) => kernel::<FB, PX, BLOCK, 0>(geo, t),
            (false, 1) => kernel::<FB, PX, 1, 1>(geo, t),
            (false, 2) => kernel::<FB, PX, 1, 2>(geo, t),
            (false, _) => kernel::<FB, PX, 1, 0>(geo, t),
        }
    }
}

/// `SW`: the column stride when 1 or 2 (the pixels of a tap in the input then lie at
/// constant offsets from one pointer), else 0 (per-pixel pointers).
///
/// # Safety
/// As [`tile`], with `CB` the geometry's input block.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn kernel<const FB: usize, const PX: usize, const CB: usize, const SW: usize>(
    geo: &Geometry,
    t: &Tile,
) {
    let [kh, kw] = geo.kernel;
    let width = FB * BLOCK;
    // Pixel spacing in the input (or in `gathered`) of a tap's pixels.
    let s_px = if SW == 0 { 1 } else { SW };
    const { assert!(SW <= 2 && PX <= MAX_PX) };
    let mut gathered = [0.0f32; MAX_PX * 2 * BLOCK];
    let mut acc = [[_mm512_setzero_ps(); FB]; PX];
    let mut wp = t.w;
    // SAFETY: (whole body) per the contract: each step reads `CB` channels of `PX` pixels
    // (or of ZEROS) and `CB·width` weights, and the epilogue touches the tile's outputs.
    unsafe {
        for cib in 0..geo.cin / CB {
            for i in 0..kh {
                let Some(ih) = tap_row(geo, t.oh, i) else {
                    wp = wp.add(kw * CB * width);
                    continue;
                };
                for j in 0..kw {
                    // Every pixel of the tap inside the row: one pointer, constant offsets;
                    // else (borders, other strides) the pixels gathered to the stack first,
                    // so there is one multiply-add loop (two kept the accumulators in
                    // memory).
                    let iw0 =
                        (t.ow0 * geo.stride[1] + j * geo.dilation[1]).wrapping_sub(geo.pad[1]);
                    let base = if SW != 0 && iw0 < geo.w && iw0 + (PX - 1) * SW < geo.w {
                        t.x.add(((cib * geo.h + ih) * geo.w + iw0) * CB)
                    } else {
                        for p in 0..PX {
                            let src = tap_pixel(geo, t.x, cib, ih, t.ow0 + p, j);
                            core::ptr::copy_nonoverlapping(
                                src,
                                gathered.as_mut_ptr().add(p * s_px * CB),
                                CB,
                            );
                        }
                        gathered.as_ptr()
                    };
                    for c in 0..CB {
                        let wv: [__m512; FB] = core::array::from_fn(|f| {
                            _mm512_loadu_ps(wp.add(c * width + f * BLOCK))
                        });
                        for (p, a) in acc.iter_mut().enumerate() {
                            let xv = _mm512_set1_ps(*base.add(p * s_px * CB + c));
                            for (a, &w) in a.iter_mut().zip(&wv) {
                                *a = _mm512_fmadd_ps(xv, w, *a);
                            }
                        }
                    }
                    wp = wp.add(CB * width);
                }
            }
        }
        for (p, a) in acc.iter().enumerate() {
            for (f, &v) in a.iter().enumerate() {
                let at = f * t.plane + p * BLOCK;
                let mut v = v;
                if !t.bias.is_null() {
                    v = _mm512_add_ps(v, _mm512_loadu_ps(t.bias.add(f * BLOCK)));
                }
                if !t.res.is_null() {
                    v = _mm512_add_ps(v, _mm512_loadu_ps(t.res.add(at)));
                }
                _mm512_storeu_ps(t.y.add(at), act(v, t.act));
            }
        }
    }
}
