//! Max over whole planes (GlobalMaxPool, a window covering each unpadded plane) in AVX2
//! registers: eight planes at a time, each step loading eight values of each plane and
//! transposing them (8 × 8, 24 shuffles) so that lane `l` of the accumulator folds plane
//! `l`'s values in memory order. The scalar interleaved fold ([`crate::ops::pool::fold_planes`]) is a
//! compare-and-select chain per value (Magika's 512 × 508 global max: 250 us; onnxruntime
//! 38). Same [`crate::ops::pool::max_step`] per lane in the same order, so the same values, bitwise
//! (NaN payloads and signed zeros included). O(input).

use core::arch::x86_64::*;

use crate::arch::x86::window2d::{Lanes, Ymm};
use crate::ops::pool::max_step;

/// Planes folded at once: one per lane.
const PLANES: usize = 8;

/// `y[p] = max of plane p` (`plane > 0` values each, `y.len()` planes in `x`).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn max_planes(x: &[f32], y: &mut [f32], plane: usize) {
    debug_assert!(plane > 0 && x.len() >= y.len() * plane);
    let groups = y.len() / PLANES;
    for g in 0..groups {
        let xs = &x[g * PLANES * plane..(g + 1) * PLANES * plane];
        let rows: [&[f32]; PLANES] = core::array::from_fn(|l| &xs[l * plane..(l + 1) * plane]);
        // SAFETY: AVX2 is enabled; every load reads 8 values inside a row (`i + 8 ≤ plane`),
        // the store writes the group's 8 outputs.
        unsafe {
            let mut acc = _mm256_set1_ps(f32::NEG_INFINITY);
            let mut i = 0;
            while i + PLANES <= plane {
                // Loops, not `array::from_fn` (its closure compiled out of line, without
                // AVX2).
                let mut v = [_mm256_setzero_ps(); PLANES];
                for (vl, row) in v.iter_mut().zip(&rows) {
                    *vl = _mm256_loadu_ps(row.as_ptr().add(i));
                }
                transpose(&mut v);
                for col in v {
                    acc = Ymm::keep_max(acc, col);
                }
                i += PLANES;
            }
            // The last `plane mod 8` values, one column at a time.
            while i < plane {
                let col: [f32; PLANES] = core::array::from_fn(|l| rows[l][i]);
                acc = Ymm::keep_max(acc, _mm256_loadu_ps(col.as_ptr()));
                i += 1;
            }
            _mm256_storeu_ps(y[g * PLANES..(g + 1) * PLANES].as_mut_ptr(), acc);
        }
    }
    for (o, xpl) in y[groups * PLANES..]
        .iter_mut()
        .zip(x[groups * PLANES * plane..].chunks_exact(plane))
    {
        *o = xpl.iter().fold(f32::NEG_INFINITY, |a, &v| max_step(a, v));
    }
}

/// In-place 8 × 8 transpose: `v[i]` lane `j` becomes `v[j]` lane `i`.
///
/// # Safety
/// AVX2 (AVX) enabled on the caller.
#[inline(always)]
unsafe fn transpose(v: &mut [__m256; PLANES]) {
    // SAFETY: register-only AVX operations.
    unsafe {
        let mut t = [_mm256_setzero_ps(); 8];
        for (i, ti) in t.iter_mut().enumerate() {
            let (a, b) = (v[i / 2 * 2], v[i / 2 * 2 + 1]);
            *ti = if i % 2 == 0 {
                _mm256_unpacklo_ps(a, b)
            } else {
                _mm256_unpackhi_ps(a, b)
            };
        }
        // u[4h + q]: columns q and q + 4 (per 128-bit half) of rows 4h..4h + 4.
        let mut u = [_mm256_setzero_ps(); 8];
        for h in 0..2 {
            let (t0, t1, t2, t3) = (t[4 * h], t[4 * h + 1], t[4 * h + 2], t[4 * h + 3]);
            u[4 * h] = _mm256_shuffle_ps::<0x44>(t0, t2);
            u[4 * h + 1] = _mm256_shuffle_ps::<0xEE>(t0, t2);
            u[4 * h + 2] = _mm256_shuffle_ps::<0x44>(t1, t3);
            u[4 * h + 3] = _mm256_shuffle_ps::<0xEE>(t1, t3);
        }
        for q in 0..4 {
            v[q] = _mm256_permute2f128_ps::<0x20>(u[q], u[4 + q]);
            v[4 + q] = _mm256_permute2f128_ps::<0x31>(u[q], u[4 + q]);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::arch::isa::Isa;
    use crate::ops::pool::{fold_planes, max_fin, max_step};

    /// Bitwise the scalar fold, on planes with NaNs (several payloads), signed zeros and
    /// infinities, group remainders and plane lengths off the 8-value steps.
    #[test]
    fn avx2_max_planes_are_the_scalar_fold() {
        if !Isa::Avx2Fma.supported() {
            std::println!("skipping the AVX2 max planes: this CPU lacks AVX2");
            return;
        }
        let special = [
            f32::NAN,
            f32::from_bits(0x7fc0_0001),
            -0.0,
            0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        for (planes, plane) in [(8, 8), (19, 13), (3, 508), (16, 1), (9, 49), (24, 7)] {
            for zeros in [false, true] {
                let x: std::vec::Vec<f32> = (0..planes * plane)
                    .map(|i| match i % 37 {
                        3 | 11 | 30 => special[(i / 37) % special.len()],
                        _ if zeros => [0.0, -0.0][i % 2],
                        _ => ((i * 7919) % 211) as f32 - 100.0,
                    })
                    .collect();
                let (mut got, mut want) = (std::vec![7.0; planes], std::vec![7.0; planes]);
                // SAFETY: AVX2 is supported (checked above).
                unsafe { super::max_planes(&x, &mut got, plane) };
                fold_planes(&x, &mut want, plane, f32::NEG_INFINITY, &max_step, &max_fin);
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<std::vec::Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{planes} planes of {plane}");
            }
        }
    }
}
