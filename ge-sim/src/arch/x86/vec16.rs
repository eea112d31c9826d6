//! [`crate::arch::vec16::Vec16`] on x86-64: one AVX-512 register, or two AVX ones (FMA in
//! both, so the two agree bitwise), and the blocked depthwise rows built on each.

use crate::arch::vec16::Vec16;

use core::arch::x86_64::{
    __m256, __m512, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_setzero_ps, _mm512_storeu_ps,
};

/// One AVX-512 register.
#[derive(Clone, Copy)]
pub(crate) struct Zmm(__m512);

impl Vec16 for Zmm {
    #[inline(always)]
    fn zero() -> Self {
        // SAFETY: register-only; only built under AVX-512 (`rows_avx512`).
        Zmm(unsafe { _mm512_setzero_ps() })
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: contract.
        Zmm(unsafe { _mm512_loadu_ps(p) })
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: Self) {
        // SAFETY: contract.
        unsafe { _mm512_storeu_ps(p, v.0) }
    }
    #[inline(always)]
    fn mul_add(a: Self, x: Self, w: Self) -> Self {
        // SAFETY: register-only; only built under AVX-512 (`rows_avx512`).
        Zmm(unsafe { _mm512_fmadd_ps(x.0, w.0, a.0) })
    }
}

/// Two AVX registers.
#[derive(Clone, Copy)]
pub(crate) struct Ymm2(__m256, __m256);

impl Vec16 for Ymm2 {
    #[inline(always)]
    fn zero() -> Self {
        // SAFETY: register-only; only built under AVX2 (`rows_avx2`).
        unsafe { Ymm2(_mm256_setzero_ps(), _mm256_setzero_ps()) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: contract (16 values: two halves of 8).
        unsafe { Ymm2(_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: Self) {
        // SAFETY: contract.
        unsafe {
            _mm256_storeu_ps(p, v.0);
            _mm256_storeu_ps(p.add(8), v.1);
        }
    }
    #[inline(always)]
    fn mul_add(a: Self, x: Self, w: Self) -> Self {
        // SAFETY: register-only; only built under AVX2 (`rows_avx2`).
        unsafe {
            Ymm2(
                _mm256_fmadd_ps(x.0, w.0, a.0),
                _mm256_fmadd_ps(x.1, w.1, a.1),
            )
        }
    }
}

/// `Rows::run` on AVX-512 registers.
///
/// # Safety
/// As `Rows::run`; the CPU has AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn rows_avx512(r: &crate::ops::nchwc::depthwise::Rows<'_>) {
    // SAFETY: forwarded.
    unsafe { r.run::<Zmm>() }
}

/// `Rows::run` on pairs of AVX registers.
///
/// # Safety
/// As `Rows::run`; the CPU has AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn rows_avx2(r: &crate::ops::nchwc::depthwise::Rows<'_>) {
    // SAFETY: forwarded.
    unsafe { r.run::<Ymm2>() }
}
