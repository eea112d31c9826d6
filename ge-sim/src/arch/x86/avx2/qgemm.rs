//! The AVX2 build of the int8 tile (6 rows × 16 columns, 12 ymm accumulators of i32).
//!
//! Products are exact: both operands are widened to i16 (`vpmovsxbw` for the weights, the
//! activation pair broadcast with `vpbroadcastw` then `vpmovsxbw`/`vpmovzxbw`) and
//! multiplied by `vpmaddwd`, which adds each pair of
//! i16·i16 products into i32 without saturating. `vpmaddubsw` (u8·i8 pairs summed in
//! *saturating* i16) would do twice the work per instruction but clips `255·127·2 = 64,770`
//! to 32,767; onnxruntime's MLAS accepts that clipping on AVX2 (hence its advice to quantize
//! weights to 7 bits), XNNPACK widens first as here. ge keeps the exact result on every ISA.

use core::arch::x86_64::*;

use crate::ops::gemm_i8::{Act, MR, NR};

/// AVX2 build of [`crate::ops::gemm_i8::tile::tile`].
///
/// # Safety
/// As [`crate::ops::gemm_i8::tile::tile`]; the CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn tile<A: Act>(
    k: usize,
    a: *const A,
    off: &[usize; MR],
    bp: *const i8,
) -> [[i32; NR]; MR] {
    let z = _mm256_setzero_si256();
    let mut acc = [[z; 2]; MR];
    let pairs = k / 2;
    for q in 0..pairs {
        // SAFETY: pair `q` (32 bytes) of the panel and `a[off[i] + 2q + {0, 1}]` are in bounds
        // per the contract; AVX2 is enabled on this function.
        unsafe {
            let raw = _mm256_loadu_si256(bp.add(q * 2 * NR) as *const __m256i);
            let b0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(raw));
            let b1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(raw));
            for (c, &o) in acc.iter_mut().zip(off) {
                let av = widen::<A>(_mm_set1_epi16(
                    (a.add(o + 2 * q) as *const i16).read_unaligned(),
                ));
                c[0] = _mm256_add_epi32(c[0], _mm256_madd_epi16(av, b0));
                c[1] = _mm256_add_epi32(c[1], _mm256_madd_epi16(av, b1));
            }
        }
    }
    if k % 2 == 1 {
        // SAFETY: as above, for the last (half-filled) pair; only its first A value is read.
        unsafe {
            let raw = _mm256_loadu_si256(bp.add(pairs * 2 * NR) as *const __m256i);
            let b0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(raw));
            let b1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(raw));
            for (c, &o) in acc.iter_mut().zip(off) {
                // The pair (a, 0): the byte zero-extended into 16 bits.
                let byte = *(a.add(o + 2 * pairs) as *const u8);
                let av = widen::<A>(_mm_set1_epi16(i16::from(byte)));
                c[0] = _mm256_add_epi32(c[0], _mm256_madd_epi16(av, b0));
                c[1] = _mm256_add_epi32(c[1], _mm256_madd_epi16(av, b1));
            }
        }
    }
    let mut out = [[0i32; NR]; MR];
    for (o, v) in out.iter_mut().zip(acc) {
        // SAFETY: `o` is 16 i32 = two unaligned 32-byte stores.
        unsafe {
            _mm256_storeu_si256(o.as_mut_ptr() as *mut __m256i, v[0]);
            _mm256_storeu_si256(o.as_mut_ptr().add(8) as *mut __m256i, v[1]);
        }
    }
    out
}

/// An activation pair broadcast as bytes `[a0, a1]` × 8 widened to the i16 pairs `vpmaddwd`
/// reads (sign- or zero-extended by the activation type).
#[inline]
#[target_feature(enable = "avx2")]
fn widen<A: Act>(v: __m128i) -> __m256i {
    if A::SIGNED {
        _mm256_cvtepi8_epi16(v)
    } else {
        _mm256_cvtepu8_epi16(v)
    }
}
