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
