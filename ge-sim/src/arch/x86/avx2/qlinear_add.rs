//! onnxruntime's QLinearAdd on equal-shaped int8 operands, eight values a step: the
//! portable kernel's two fused multiply-adds (`ops::qlinear_add`), the same bytes.

use core::arch::x86_64::*;

use crate::ops::qlinear_add::AddF32;

/// `out[i] = k.general(a[i], b[i])` for every `i` of the shortest slice.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn add_i8(k: &AddF32, a: &[i8], b: &[i8], out: &mut [i8]) {
    let n = out.len().min(a.len()).min(b.len());
    let (ra, rb, fixed) = (
        _mm256_set1_ps(k.ra),
        _mm256_set1_ps(k.rb),
        _mm256_set1_ps(k.fixed),
    );
    let (lo, hi) = (_mm256_set1_ps(k.lo), _mm256_set1_ps(k.hi));
    let widen = |p: *const i8| {
        // SAFETY: the callers read 8 bytes at `p`, within the slice (`i + 8 <= n`).
        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(unsafe { _mm_loadl_epi64(p.cast()) }))
    };
    let mut i = 0;
    while i + 8 <= n {
        let va = widen(a.as_ptr().wrapping_add(i));
        let vb = widen(b.as_ptr().wrapping_add(i));
        let v = _mm256_fmadd_ps(va, ra, _mm256_fmadd_ps(vb, rb, fixed));
        // Clamped to the integer bounds first, then rounded half to even (MXCSR's default
        // mode): the same as rounding first.
        let q = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
        let w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256::<1>(q));
        // SAFETY: 8 bytes at `i`, within `out` (`i + 8 <= n <= out.len()`).
        unsafe { _mm_storel_epi64(out.as_mut_ptr().add(i).cast(), _mm_packs_epi16(w, w)) };
        i += 8;
    }
    for j in i..n {
        out[j] = k.general(i32::from(a[j]), i32::from(b[j])) as i8;
    }
}
