//! Whole-run conversions between the 16-bit floats (fp16, bf16) and f32, with F16C on x86-64
//! (`vcvtph2ps` / `vcvtps2ph`, 8 lanes) and a portable build on the bit math of
//! [`crate::ops::cast`]. Both round f32 → fp16 to nearest even and widen exactly, so they
//! agree bit for bit on every value but NaN payloads (tested). bf16 has no AVX2 instruction;
//! its bit math is already a shift and an add.

use ge_runtime::format::DType;

use super::super::KernelError;
use super::super::cast::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};

/// Which build converts: F16C when the CPU has it and the kernels' ISA is not forced to the
/// portable one (`GE_ISA=portable`).
pub(crate) fn fast() -> bool {
    crate::arch::kernels::f16c()
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
            let done = if fast {
                crate::arch::kernels::widen_f16(src, dst)
            } else {
                0
            };
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
            let done = if fast {
                crate::arch::kernels::narrow_f16(src, dst)
            } else {
                0
            };
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
