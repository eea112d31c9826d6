//! Whole-run conversions between the 16-bit floats (fp16, bf16) and f32, with F16C on x86-64
//! (`vcvtph2ps` / `vcvtps2ph`, 8 lanes) and a portable build on the bit math of
//! [`crate::ops::cast`]. Both round f32 → fp16 to nearest even and widen exactly, so they
//! agree bit for bit on every value but NaN payloads (tested). bf16 has no AVX2 instruction;
//! its bit math is already a shift and an add.

use ge_runtime::format::DType;

use super::super::KernelError;
use super::super::cast::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
use crate::arch::isa;

/// Which build converts: F16C when the CPU has it and the kernels' ISA is not forced to the
/// portable one (`GE_ISA=portable`).
pub(crate) fn fast() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        isa::isa() != isa::Isa::Portable && std::is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn mismatch() -> KernelError {
    KernelError::Shape("converted run lengths differ")
}

/// `dst[i] = src[i]` for a run of little-endian `dtype` (f16, bf16 or f32) elements.
pub(crate) fn widen(
    dtype: DType,
    src: &[u8],
    dst: &mut [f32],
    fast: bool,
) -> Result<(), KernelError> {
    if src.len() != dst.len().saturating_mul(dtype.size()) {
        return Err(mismatch());
    }
    match dtype {
        DType::F32 => {
            for (d, s) in dst.iter_mut().zip(src.chunks_exact(4)) {
                *d = f32::from_le_bytes([s[0], s[1], s[2], s[3]]);
            }
        }
        DType::F16 => {
            let done = if fast { widen_f16c(src, dst) } else { 0 };
            for (d, s) in dst[done..].iter_mut().zip(src[2 * done..].chunks_exact(2)) {
                *d = f16_to_f32(u16::from_le_bytes([s[0], s[1]]));
            }
        }
        DType::Bf16 => {
            for (d, s) in dst.iter_mut().zip(src.chunks_exact(2)) {
                *d = bf16_to_f32(u16::from_le_bytes([s[0], s[1]]));
            }
        }
        _ => {
            return Err(KernelError::UnsupportedDType(
                "only f16, bf16 and f32 widen",
            ));
        }
    }
    Ok(())
}

/// `dst[i] = src[i]` rounded to nearest even in `dtype` (f16, bf16 or f32), little-endian.
pub(crate) fn narrow(
    dtype: DType,
    src: &[f32],
    dst: &mut [u8],
    fast: bool,
) -> Result<(), KernelError> {
    if dst.len() != src.len().saturating_mul(dtype.size()) {
        return Err(mismatch());
    }
    match dtype {
        DType::F32 => {
            for (d, s) in dst.chunks_exact_mut(4).zip(src) {
                d.copy_from_slice(&s.to_le_bytes());
            }
        }
        DType::F16 => {
            let done = if fast { narrow_f16c(src, dst) } else { 0 };
            for (d, s) in dst[2 * done..].chunks_exact_mut(2).zip(&src[done..]) {
                d.copy_from_slice(&f32_to_f16(*s).to_le_bytes());
            }
        }
        DType::Bf16 => {
            for (d, s) in dst.chunks_exact_mut(2).zip(src) {
                d.copy_from_slice(&f32_to_bf16(*s).to_le_bytes());
            }
        }
        _ => {
            return Err(KernelError::UnsupportedDType(
                "only f16, bf16 and f32 narrow",
            ));
        }
    }
    Ok(())
}

/// Widens the whole 8-element blocks of `src` with F16C; returns how many it did.
#[cfg(target_arch = "x86_64")]
fn widen_f16c(src: &[u8], dst: &mut [f32]) -> usize {
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
    // SAFETY: only called when `fast()` found F16C (and AVX) on this CPU.
    unsafe { run(src, dst) }
}

#[cfg(not(target_arch = "x86_64"))]
fn widen_f16c(_: &[u8], _: &mut [f32]) -> usize {
    0
}

/// Narrows the whole 8-element blocks of `src` with F16C (round to nearest even); returns
/// how many it did.
#[cfg(target_arch = "x86_64")]
fn narrow_f16c(src: &[f32], dst: &mut [u8]) -> usize {
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
    // SAFETY: only called when `fast()` found F16C (and AVX) on this CPU.
    unsafe { run(src, dst) }
}

#[cfg(not(target_arch = "x86_64"))]
fn narrow_f16c(_: &[f32], _: &mut [u8]) -> usize {
    0
}
