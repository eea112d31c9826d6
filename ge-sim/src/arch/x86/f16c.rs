//! fp16 ↔ f32 runs with F16C (`vcvtph2ps` / `vcvtps2ph`, 8 lanes): both round to nearest
//! even and widen exactly, as the portable bit math does. Std builds (detected at run time).

/// Widens the whole 8-element blocks of `src` with F16C; returns how many it did.
pub(crate) fn widen(src: &[u8], dst: &mut [f32]) -> usize {
    #[target_feature(enable = "avx,f16c")]
    fn run(src: &[u8], dst: &mut [f32]) -> usize {
        use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm256_cvtph_ps, _mm256_storeu_ps};
        let n = dst.len() / 8 * 8;
        for i in (0..n).step_by(8) {
            // SAFETY: `i + 8 ≤ n ≤ dst.len()` and `src` holds 2 bytes per `dst` element
            // (checked by the caller), so both 16-byte load and 32-byte store are in bounds.
            unsafe {
                let h = _mm_loadu_si128(src.as_ptr().add(2 * i).cast::<__m128i>());
                _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
            }
        }
        n
    }
    // SAFETY: only called when `kernels::f16c()` found F16C (and AVX) on this CPU.
    unsafe { run(src, dst) }
}

/// Narrows the whole 8-element blocks of `src` with F16C (round to nearest even); returns
/// how many it did.
pub(crate) fn narrow(src: &[f32], dst: &mut [u8]) -> usize {
    #[target_feature(enable = "avx,f16c")]
    fn run(src: &[f32], dst: &mut [u8]) -> usize {
        use core::arch::x86_64::{
            __m128i, _MM_FROUND_TO_NEAREST_INT, _mm_storeu_si128, _mm256_cvtps_ph, _mm256_loadu_ps,
        };
        let n = src.len() / 8 * 8;
        for i in (0..n).step_by(8) {
            // SAFETY: `i + 8 ≤ n ≤ src.len()` and `dst` holds 2 bytes per `src` element
            // (checked by the caller).
            unsafe {
                let v = _mm256_loadu_ps(src.as_ptr().add(i));
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
                _mm_storeu_si128(dst.as_mut_ptr().add(2 * i).cast::<__m128i>(), h);
            }
        }
        n
    }
    // SAFETY: only called when `kernels::f16c()` found F16C (and AVX) on this CPU.
    unsafe { run(src, dst) }
}
