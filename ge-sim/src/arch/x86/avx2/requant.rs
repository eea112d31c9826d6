//! Eight requantizations at once on AVX2, in either run-time form of [`Requant`]:
//! onnxruntime's f32 scale, or TFLite's Q31 multiplier and shift with gemmlowp's two
//! roundings — lane for lane what [`Requant::apply`] computes (the AVX-512 `Rq16`'s eight-lane
//! twin), so the AVX2 kernels give the scalar path's bytes in both `--int8-rounding` modes.

use core::arch::x86_64::*;

use crate::arch::x86::short_copy::copy_short;
use crate::ops::gemm_i8::Requant;
use crate::ops::tflite::fixed::mbqm_shifts as shifts;

/// The output's zero point and range, broadcast.
#[derive(Clone, Copy)]
pub struct Q8Range8 {
    zp: __m256i,
    lo: __m256i,
    hi: __m256i,
    /// `lo − zp` and `hi − zp` (saturated to i32): TFLite's sum is clamped before the zero
    /// point is added, so that the add cannot overflow.
    lo_zp: __m256i,
    hi_zp: __m256i,
}

impl Q8Range8 {
    #[target_feature(enable = "avx2")]
    #[inline]
    pub fn new(zp: i32, lo: i32, hi: i32) -> Q8Range8 {
        let off = |b: i32| (i64::from(b) - i64::from(zp)).clamp(i32::MIN.into(), i32::MAX.into());
        Q8Range8 {
            zp: _mm256_set1_epi32(zp),
            lo: _mm256_set1_epi32(lo),
            hi: _mm256_set1_epi32(hi),
            lo_zp: _mm256_set1_epi32(off(lo) as i32),
            hi_zp: _mm256_set1_epi32(off(hi) as i32),
        }
    }
}

/// A requantizer for eight lanes (one per column, or the same in all).
#[derive(Clone, Copy)]
pub enum Rq8 {
    /// onnxruntime's: `round_half_even(f32(v)·s) + zp`.
    F32(__m256),
    /// TFLite's: `rdbpot(srdhm(v·2^left, mult), right) + zp`.
    Tflite {
        mult: __m256i,
        left: __m256i,
        right: __m256i,
    },
}

impl Rq8 {
    /// `r` in every lane; `None` for the exact (`shift > 0`) form, which only the scalar
    /// path computes.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub fn splat(r: Requant) -> Option<Rq8> {
        match (r.shift, r.tflite_shift()) {
            (0, _) => Some(Rq8::F32(_mm256_set1_ps(f32::from_bits(r.mult as u32)))),
            (_, Some(t)) => {
                let (l, rt) = shifts(t);
                Some(Rq8::Tflite {
                    mult: _mm256_set1_epi32(r.mult),
                    left: _mm256_set1_epi32(l),
                    right: _mm256_set1_epi32(rt),
                })
            }
            _ => None,
        }
    }

    /// The requantizers of `rq`'s first eight (or fewer) columns, every one in the same
    /// vector form (`None` otherwise, or for an empty list); lanes past the list repeat its
    /// first record.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub fn columns(rq: &[Requant]) -> Option<Rq8> {
        let first = *rq.first()?;
        if rq.len() == 1 {
            return Rq8::splat(first);
        }
        let rq = &rq[..rq.len().min(8)];
        let at = |i: usize| rq.get(i).copied().unwrap_or(first);
        if rq.iter().all(|r| r.shift == 0) {
            let s: [f32; 8] = core::array::from_fn(|i| f32::from_bits(at(i).mult as u32));
            // SAFETY: eight readable f32.
            return Some(Rq8::F32(unsafe { _mm256_loadu_ps(s.as_ptr()) }));
        }
        let (mut m, mut l, mut r) = ([0i32; 8], [0i32; 8], [0i32; 8]);
        for i in 0..8 {
            let x = at(i);
            m[i] = x.mult;
            (l[i], r[i]) = shifts(x.tflite_shift()?);
        }
        // SAFETY: eight readable i32 each.
        unsafe {
            Some(Rq8::Tflite {
                mult: _mm256_loadu_si256(m.as_ptr().cast()),
                left: _mm256_loadu_si256(l.as_ptr().cast()),
                right: _mm256_loadu_si256(r.as_ptr().cast()),
            })
        }
    }

    /// Eight i32 sums requantized and saturated to the range, as eight i32.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub fn apply(self, v: __m256i, r: Q8Range8) -> __m256i {
        match self {
            Rq8::F32(s) => f32_lanes(v, s, r),
            Rq8::Tflite { mult, left, right } => {
                let q = mbqm8(v, mult, left, right);
                let q = _mm256_min_epi32(_mm256_max_epi32(q, r.lo_zp), r.hi_zp);
                _mm256_add_epi32(q, r.zp)
            }
        }
    }
}

/// onnxruntime's requantization of eight lanes: `round_half_even(f32(v)·s)` (the product
/// clamped to ±2^30 first, where it saturates either way) plus the zero point, clamped to
/// the range.
#[target_feature(enable = "avx2")]
#[inline]
pub fn f32_lanes(v: __m256i, s: __m256, r: Q8Range8) -> __m256i {
    let big = _mm256_set1_ps(1073741824.0);
    let f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), s);
    let f = _mm256_min_ps(
        _mm256_max_ps(f, _mm256_sub_ps(_mm256_setzero_ps(), big)),
        big,
    );
    let q = _mm256_add_epi32(_mm256_cvtps_epi32(f), r.zp);
    _mm256_min_epi32(_mm256_max_epi32(q, r.lo), r.hi)
}

/// TFLite's `MultiplyByQuantizedMultiplier` on eight lanes: `v·2^left` (wrapping), the
/// saturating rounding doubling high multiply by `mult`, then the rounding divide by
/// `2^right` (half away from zero); shift counts in `0..=31`. Lane for lane
/// [`crate::ops::tflite::fixed::mbqm`]. AVX2 has no 64-bit arithmetic shift, but the high
/// multiply keeps bits 31..62 of the 64-bit sum, which a logical shift delivers as well.
#[target_feature(enable = "avx2")]
#[inline]
pub fn mbqm8(v: __m256i, mult: __m256i, left: __m256i, right: __m256i) -> __m256i {
    let x = _mm256_sllv_epi32(v, left);
    let nudge = _mm256_set1_epi64x(1 << 30);
    // Even lanes: bits 31..62 to the low half; odd lanes: to the high half.
    let even = _mm256_srli_epi64::<31>(_mm256_add_epi64(_mm256_mul_epi32(x, mult), nudge));
    let odd = _mm256_mul_epi32(_mm256_srli_epi64::<32>(x), _mm256_srli_epi64::<32>(mult));
    let odd = _mm256_slli_epi64::<1>(_mm256_add_epi64(odd, nudge));
    let h = _mm256_blend_epi32::<0b1010_1010>(even, odd);
    let min = _mm256_set1_epi32(i32::MIN);
    let both_min = _mm256_and_si256(_mm256_cmpeq_epi32(x, min), _mm256_cmpeq_epi32(mult, min));
    let h = _mm256_blendv_epi8(h, _mm256_set1_epi32(i32::MAX), both_min);
    // rdbpot: the arithmetic shift, plus one where the remainder is above half.
    let one = _mm256_set1_epi32(1);
    let mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, right), one);
    let rem = _mm256_and_si256(h, mask);
    let thr = _mm256_sub_epi32(_mm256_srai_epi32::<1>(mask), _mm256_srai_epi32::<31>(h));
    let q = _mm256_srav_epi32(h, right);
    // The comparison's −1 where the remainder is above the threshold.
    _mm256_sub_epi32(q, _mm256_cmpgt_epi32(rem, thr))
}

/// The low byte of each of eight i32 lanes, in order, as one u64 (little endian).
#[target_feature(enable = "avx2")]
#[inline]
pub fn low_bytes(q: __m256i) -> u64 {
    let pick = _mm256_setr_epi8(
        0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, -1,
    );
    let b = _mm256_shuffle_epi8(q, pick);
    let lo = _mm_cvtsi128_si32(_mm256_castsi256_si128(b)) as u32;
    let hi = _mm_cvtsi128_si32(_mm256_extracti128_si256::<1>(b)) as u32;
    u64::from(lo) | (u64::from(hi) << 32)
}

/// TFLite's int8 Add of equal-shaped `a` and `b` into `y` (`QBinaryParams`, op Add),
/// eight at a time: lane for lane `ops::tflite::binary`'s scalar arithmetic (the AVX-512
/// `qadd_i8` on eight lanes; ResNet-8's residual Adds took 36–143 µs each one value at a
/// time). Returns `false` (nothing written) when the slices differ in length.
#[target_feature(enable = "avx2")]
pub fn qadd_i8(p: &ge_runtime::format::QBinaryParams, a: &[i8], b: &[i8], y: &mut [i8]) -> bool {
    if a.len() != y.len() || b.len() != y.len() {
        return false;
    }
    let splat = |m: i32, t: i32| {
        let (l, r) = shifts(t);
        (
            _mm256_set1_epi32(m),
            _mm256_set1_epi32(l),
            _mm256_set1_epi32(r),
        )
    };
    let (ma, la, ra) = splat(p.a_mult, p.a_shift);
    let (mb, lb, rb) = splat(p.b_mult, p.b_shift);
    let (mo, lo, ro) = splat(p.out_mult, p.out_shift);
    let ls = _mm256_set1_epi32(p.left_shift.clamp(0, 31));
    let (za, zb) = (_mm256_set1_epi32(p.a_zp), _mm256_set1_epi32(p.b_zp));
    let range = Q8Range8::new(p.out_zp, p.act_min.max(-128), p.act_max.min(127));
    for t in (0..y.len()).step_by(8) {
        let n = 8.min(y.len() - t);
        let (mut va, mut vb) = ([0u8; 8], [0u8; 8]);
        copy_short(&mut va[..n], bytemuck::cast_slice(&a[t..t + n]));
        copy_short(&mut vb[..n], bytemuck::cast_slice(&b[t..t + n]));
        let widen = |v: [u8; 8]| _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(i64::from_le_bytes(v)));
        let (va, vb) = (widen(va), widen(vb));
        let sa = mbqm8(_mm256_sllv_epi32(_mm256_sub_epi32(va, za), ls), ma, la, ra);
        let sb = mbqm8(_mm256_sllv_epi32(_mm256_sub_epi32(vb, zb), ls), mb, lb, rb);
        let q = mbqm8(_mm256_add_epi32(sa, sb), mo, lo, ro);
        let q = _mm256_min_epi32(_mm256_max_epi32(q, range.lo_zp), range.hi_zp);
        let bytes = low_bytes(_mm256_add_epi32(q, range.zp)).to_le_bytes();
        copy_short(bytemuck::cast_slice_mut(&mut y[t..t + n]), &bytes);
    }
    true
}

#[cfg(all(test, feature = "std"))]
mod tests {
    extern crate std;
    use std::{vec, vec::Vec};

    use super::*;

    /// Every lane equals `Requant::apply` in both vector forms, over sums and multipliers
    /// that reach the rounding ties, the saturation and both shift directions.
    #[test]
    fn lanes_equal_the_scalar_requantizer() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut specials = vec![0i32, 1, -1, 2, -2, i32::MAX, i32::MIN, 1 << 20, -(1 << 20)];
        specials.extend((0..200).map(|_| next() as i32 >> (next() % 31)));
        let mut records: Vec<Requant> = [1e-6f64, 0.003, 0.0517, 0.49, 0.5, 1.0, 7.3, 1000.0]
            .iter()
            .map(|&m| Requant::from_tflite(m).unwrap())
            .collect();
        records.push(Requant {
            mult: i32::MIN,
            shift: crate::ops::gemm_i8::requant::TFLITE_BIAS,
        });
        records.extend(
            [1e-4f32, 0.0078125, 0.25, 0.5, 1.0, 3.0]
                .iter()
                .map(|&s| Requant::from_f32_scale(s).unwrap()),
        );
        for &(zp, lo, hi) in &[(0, -128, 127), (-5, -128, 127), (128, 0, 255), (3, 0, 255)] {
            for &r in &records {
                // SAFETY: AVX2 was detected above.
                unsafe {
                    let rq = Rq8::splat(r).unwrap();
                    let range = Q8Range8::new(zp, lo, hi);
                    for chunk in specials.chunks(8) {
                        let mut v = [0i32; 8];
                        v[..chunk.len()].copy_from_slice(chunk);
                        let mut out = [0i32; 8];
                        let q = rq.apply(_mm256_loadu_si256(v.as_ptr().cast()), range);
                        _mm256_storeu_si256(out.as_mut_ptr().cast(), q);
                        for (i, &x) in v.iter().enumerate() {
                            assert_eq!(out[i], r.apply(x, zp, lo, hi), "{r:?} {x} {zp}");
                        }
                        let bytes = low_bytes(q).to_le_bytes();
                        for i in 0..8 {
                            assert_eq!(bytes[i], out[i] as u8);
                        }
                    }
                }
            }
        }
    }
}
