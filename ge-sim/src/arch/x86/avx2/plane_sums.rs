//! The dequantizing whole-plane average's sums on AVX2 (`ops::pool`'s
//! `average_dequantized`): eight planes a vector, one lane each, so that every plane is
//! still summed in memory order with the scalar loop's operations (`(f32(x) − zp) · scale`
//! then the add, never fused) — the same floats. Eight positions a step: each plane's
//! eight bytes widened to f32 with one conversion, the 8 × 8 block transposed in registers.

use core::arch::x86_64::*;

/// Adds `(f32(x[c·plane + i]) − zp) · scale` to `a[c]` for the eight planes `c` and the
/// positions `i` of whole steps of eight, in order; returns the positions summed (the
/// caller continues from there). `x` holds the eight planes (i8 when `signed`, else u8).
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn sums8(
    x: &[u8],
    signed: bool,
    plane: usize,
    zp: f32,
    scale: f32,
    a: &mut [f32; 8],
) -> usize {
    if x.len() < 8 * plane {
        return 0;
    }
    let steps = plane / 8;
    let (zpv, sv) = (_mm256_set1_ps(zp), _mm256_set1_ps(scale));
    // SAFETY: eight floats.
    let mut acc = unsafe { _mm256_loadu_ps(a.as_ptr()) };
    for s in 0..steps {
        let row = |c: usize| {
            let at = c * plane + 8 * s;
            let mut b = [0u8; 8];
            b.copy_from_slice(&x[at..at + 8]);
            let v = _mm_cvtsi64_si128(i64::from_le_bytes(b));
            let w = if signed {
                _mm256_cvtepi8_epi32(v)
            } else {
                _mm256_cvtepu8_epi32(v)
            };
            _mm256_cvtepi32_ps(w)
        };
        let r: [__m256; 8] = core::array::from_fn(row);
        for c in transpose8(r) {
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_sub_ps(c, zpv), sv));
        }
    }
    // SAFETY: eight floats.
    unsafe { _mm256_storeu_ps(a.as_mut_ptr(), acc) };
    steps * 8
}

/// Rows `r[0..8]` of an 8 × 8 block as its columns: `out[k][c] = r[c][k]`.
#[target_feature(enable = "avx2")]
#[inline]
fn transpose8(r: [__m256; 8]) -> [__m256; 8] {
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
        _mm256_permute2f128_ps::<0x31>(s2, s6),
        _mm256_permute2f128_ps::<0x31>(s3, s7),
    ]
}
