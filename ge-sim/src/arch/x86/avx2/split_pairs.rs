//! Deinterleaving pairs of f32 with AVX2 shuffles.

/// `p0[j] = src[2j]`, `p1[j] = src[2j + 1]` eight pairs at a time (the stride-2 depthwise
/// band's phase split); returns the pairs done (`len − len mod 8`).
///
/// # Safety
/// The CPU must support AVX2; `src.len() = 2·p0.len() = 2·p1.len()`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn split_pairs(src: &[f32], p0: &mut [f32], p1: &mut [f32]) -> usize {
    use core::arch::x86_64::*;
    let n = p0.len() / 8 * 8;
    let mut j = 0;
    while j < n {
        // SAFETY: pairs `j..j + 8` lie inside the three slices (`j + 8 ≤ n`).
        unsafe {
            let a = _mm256_loadu_ps(src.as_ptr().add(2 * j));
            let b = _mm256_loadu_ps(src.as_ptr().add(2 * j + 8));
            // Per 128-bit half: a0 a2 b0 b2 | a4 a6 b4 b6 (odds: 1 3), then the 64-bit
            // pairs reordered (0, 2, 1, 3).
            let quads = |v: __m256| {
                _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)))
            };
            _mm256_storeu_ps(
                p0.as_mut_ptr().add(j),
                quads(_mm256_shuffle_ps::<0x88>(a, b)),
            );
            _mm256_storeu_ps(
                p1.as_mut_ptr().add(j),
                quads(_mm256_shuffle_ps::<0xDD>(a, b)),
            );
        }
        j += 8;
    }
    n
}
