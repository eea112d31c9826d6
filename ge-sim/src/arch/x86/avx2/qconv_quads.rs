//! The quad conv tile on AVX2 ([`crate::ops::gemm_i8::conv::quads`]), exact as the
//! GEMM tile: eight output channels' quads widened to i16 (`vpmovsxbw`), a position's four
//! activations widened and repeated (`vpmovzxbw`), `vpmaddwd` summing tap pairs into i32
//! without saturating; the two pair sums of each channel are added at the end (`vphaddd`).
//! Twelve ymm accumulators: six positions × two four-channel halves, eight channels a pass.

use core::arch::x86_64::*;

use crate::ops::gemm_i8::conv::QuadGeo;
use crate::ops::gemm_i8::{MR, NR};

/// AVX2 build of [`crate::ops::gemm_i8::conv::quads_tile`].
///
/// # Safety
/// As the portable tile's; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn tile(
    a: *const u8,
    off: &[usize; MR],
    geo: QuadGeo,
    bp: *const i8,
) -> [[i32; NR]; MR] {
    let mut out = [[0i32; NR]; MR];
    let quads = geo.quads();
    for half in 0..2 {
        let z = _mm256_setzero_si256();
        let mut acc = [[z; 2]; MR];
        let mut walk = geo.walk();
        for r in 0..quads {
            let o = walk.advance();
            // SAFETY: quad row `r` holds 64 bytes of the panel (this half's 32), every
            // `a + off[i] + o` 4 readable bytes, per the contract; AVX2 is enabled.
            unsafe {
                let raw = _mm256_loadu_si256(bp.add(r * 64 + half * 32) as *const __m256i);
                let b0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(raw));
                let b1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(raw));
                for (s, &at) in acc.iter_mut().zip(off) {
                    let d = (a.add(at + o) as *const i32).read_unaligned();
                    let av = _mm256_cvtepu8_epi16(_mm_set1_epi32(d));
                    s[0] = _mm256_add_epi32(s[0], _mm256_madd_epi16(av, b0));
                    s[1] = _mm256_add_epi32(s[1], _mm256_madd_epi16(av, b1));
                }
            }
        }
        for (row, s) in out.iter_mut().zip(&acc) {
            // Pair sums → channels 0, 1, 4, 5 | 2, 3, 6, 7, then the middle qwords swapped.
            let h = _mm256_hadd_epi32(s[0], s[1]);
            let v = _mm256_permute4x64_epi64::<0b11_01_10_00>(h);
            // SAFETY: eight i32 of the row from `8·half`.
            unsafe { _mm256_storeu_si256(row[8 * half..].as_mut_ptr() as *mut __m256i, v) };
        }
    }
    out
}

use crate::ops::gemm_i8::conv::Positions;

/// Quad rows [`positions`] takes (its split weights on the stack, 4 KiB): a 3×3 window of
/// 28 input channels; wider convs take the tile.
const MAX_QUADS: usize = 64;

/// The band's outputs eight positions of a row a vector (the VNNI `positions` kernel on
/// AVX2): each quad row's eight activation dwords (a stride-2 row picks the even ones of two
/// loads) split into their even and odd bytes as i16 pairs, times each output channel's
/// quad split the same way, two exact `vpmaddwd`s; requantized per channel in either form
/// and stored straight into its plane (`y` from the band's first output row of the group's
/// first channel, planes `plane` apart). No transposes and no empty tile lanes: vww's
/// 3-channel stem (eight outputs) took 60 µs through the tile. `false` (nothing written)
/// when a length does not fit.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn positions(p: &Positions<'_>, y: &mut [u8], plane: usize) -> bool {
    use super::requant::{Q8Range8, Rq8, low_bytes};
    use crate::arch::x86::short_copy::copy_short;
    const N: usize = 8;
    let quads = p.geo.quads();
    if !p.fits(y.len(), plane) || quads > MAX_QUADS {
        return false;
    }
    // Every quad row's eight channels split once: `split[r][j]` = (even, odd) i16 pairs
    // (the panel's channels past `mg` are its zero padding).
    let mut split = [[[0i32; 2]; N]; MAX_QUADS];
    for (r, row) in split.iter_mut().enumerate().take(quads) {
        for (j, w) in row.iter_mut().enumerate() {
            let b = &p.weights[r * 64 + 4 * j..r * 64 + 4 * j + 4];
            *w = [super::i16_pair(b[0], b[2]), super::i16_pair(b[1], b[3])];
        }
    }
    let (zp, lo, hi) = p.range;
    let range = Q8Range8::new(zp, lo, hi);
    let mut rqs = [Rq8::F32(_mm256_setzero_ps()); N];
    for (j, r) in rqs.iter_mut().enumerate().take(p.mg) {
        let q = if p.rq.len() == 1 { p.rq[0] } else { p.rq[j] };
        match Rq8::splat(q) {
            Some(v) => *r = v,
            None => return false,
        }
    }
    let low16 = _mm256_set1_epi32(0x00ff_00ff);
    let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let evens = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    // Dwords `at..at + 4k` of the copy for the `k ≤ 8` lanes inside it (the rest zero).
    let load = |at: usize, k: usize| {
        let k = k.min(p.copy.len().saturating_sub(at) / 4);
        if k == 8 {
            // SAFETY: 32 bytes from `at` lie inside the copy.
            unsafe { _mm256_loadu_si256(p.copy.as_ptr().add(at).cast()) }
        } else {
            let m = _mm256_cmpgt_epi32(_mm256_set1_epi32(k as i32), lane);
            // SAFETY: only the `k` lanes inside the copy are read.
            unsafe { _mm256_maskload_epi32(p.copy.as_ptr().wrapping_add(at).cast(), m) }
        }
    };
    for oy in 0..p.here {
        let row = oy * p.sh * p.wp;
        let mut ox = 0;
        while ox < p.ow {
            let n = 8.min(p.ow - ox);
            let mut acc = [_mm256_setzero_si256(); N];
            let mut walk = p.geo.walk();
            for row_split in split.iter().take(quads) {
                let at = row + walk.advance() + ox * p.sw * 4;
                let x = if p.sw == 1 {
                    load(at, n)
                } else {
                    // Positions 2t: dwords 0..2n−1 of the two loads, the even ones kept.
                    let a = _mm256_permutevar8x32_epi32(load(at, 2 * n - 1), evens);
                    let b = _mm256_permutevar8x32_epi32(
                        load(at + 32, (2 * n - 1).saturating_sub(8)),
                        evens,
                    );
                    _mm256_blend_epi32::<0b1111_0000>(a, b)
                };
                let (xe, xo) = (_mm256_and_si256(x, low16), _mm256_srli_epi16::<8>(x));
                // All eight channels (registers, not a loop over `mg`).
                for (a, w) in acc.iter_mut().zip(row_split) {
                    let (we, wo) = (_mm256_set1_epi32(w[0]), _mm256_set1_epi32(w[1]));
                    let pair =
                        _mm256_add_epi32(_mm256_madd_epi16(xe, we), _mm256_madd_epi16(xo, wo));
                    *a = _mm256_add_epi32(*a, pair);
                }
            }
            for (j, &a) in acc.iter().enumerate().take(p.mg) {
                let v = _mm256_add_epi32(a, _mm256_set1_epi32(p.corr[j]));
                let bytes = low_bytes(rqs[j].apply(v, range)).to_le_bytes();
                let at = j * plane + oy * p.ow + ox;
                copy_short(&mut y[at..at + n], &bytes);
            }
            ox += 8;
        }
    }
    true
}
