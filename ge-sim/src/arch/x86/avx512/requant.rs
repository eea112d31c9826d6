//! Sixteen requantizations at once, in either run-time form of
//! [`Requant`]: onnxruntime's f32 scale, or TFLite's Q31 multiplier and shift with
//! gemmlowp's two roundings — lane for lane what [`Requant::apply`] computes, so every
//! path gives the scalar path's bytes.

use core::arch::x86_64::*;

use crate::ops::gemm_i8::Requant;
use crate::ops::tflite::fixed::mbqm_shifts as shifts;

/// The output's zero point and range, broadcast.
#[derive(Clone, Copy)]
pub struct Q8Range {
    zp: __m512i,
    lo: __m512i,
    hi: __m512i,
    /// `lo − zp` and `hi − zp` (saturated to i32): TFLite's sum is clamped before the zero
    /// point is added, so that the add cannot overflow.
    lo_zp: __m512i,
    hi_zp: __m512i,
}

impl Q8Range {
    #[target_feature(enable = "avx512f")]
    pub fn new(zp: i32, lo: i32, hi: i32) -> Q8Range {
        let off = |b: i32| (i64::from(b) - i64::from(zp)).clamp(i32::MIN.into(), i32::MAX.into());
        Q8Range {
            zp: _mm512_set1_epi32(zp),
            lo: _mm512_set1_epi32(lo),
            hi: _mm512_set1_epi32(hi),
            lo_zp: _mm512_set1_epi32(off(lo) as i32),
            hi_zp: _mm512_set1_epi32(off(hi) as i32),
        }
    }
}

/// A requantizer for sixteen lanes (one per column, or the same in all).
#[derive(Clone, Copy)]
pub enum Rq16 {
    /// onnxruntime's: `round_half_even(f32(v)·s) + zp`.
    F32(__m512),
    /// TFLite's: `rdbpot(srdhm(v·2^left, mult), right) + zp`.
    Tflite {
        mult: __m512i,
        left: __m512i,
        right: __m512i,
    },
}

impl Rq16 {
    /// `r` in every lane; `None` for the exact (`shift > 0`) form, which only the scalar
    /// path computes.
    #[target_feature(enable = "avx512f")]
    pub fn splat(r: Requant) -> Option<Rq16> {
        match (r.shift, r.tflite_shift()) {
            (0, _) => Some(Rq16::F32(_mm512_set1_ps(f32::from_bits(r.mult as u32)))),
            (_, Some(t)) => {
                let (l, rt) = shifts(t);
                Some(Rq16::Tflite {
                    mult: _mm512_set1_epi32(r.mult),
                    left: _mm512_set1_epi32(l),
                    right: _mm512_set1_epi32(rt),
                })
            }
            _ => None,
        }
    }

    /// [`Rq16::columns`] for callers that checked the forms first (`vector_form`): a zero
    /// scale for what cannot occur there, inside this function so that no intrinsic is
    /// called from the caller's closures.
    #[target_feature(enable = "avx512f")]
    pub fn columns_checked(rq: &[Requant]) -> Rq16 {
        Rq16::columns(rq).unwrap_or(Rq16::F32(_mm512_setzero_ps()))
    }

    /// The requantizers of `rq`'s first sixteen (or fewer) columns: one record in either
    /// vector form ([`Rq16::splat`]), or TFLite's form in every column (`None` otherwise;
    /// onnxruntime's per-column f32 scales are `qgemm::Scale::PerColumn`'s).
    #[target_feature(enable = "avx512f")]
    pub fn columns(rq: &[Requant]) -> Option<Rq16> {
        let rq = &rq[..rq.len().min(16)];
        let first = *rq.first()?;
        if rq.len() == 1 {
            return Rq16::splat(first);
        }
        let mut m = [0i32; 16];
        let (mut l, mut r) = ([0i32; 16], [0i32; 16]);
        for (i, x) in rq.iter().enumerate() {
            let t = x.tflite_shift()?;
            m[i] = x.mult;
            (l[i], r[i]) = shifts(t);
        }
        // SAFETY: 16 readable i32 each.
        unsafe {
            Some(Rq16::Tflite {
                mult: _mm512_loadu_si512(m.as_ptr().cast()),
                left: _mm512_loadu_si512(l.as_ptr().cast()),
                right: _mm512_loadu_si512(r.as_ptr().cast()),
            })
        }
    }

    /// Sixteen i32 sums requantized, saturated to the range, as sixteen bytes.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
    #[inline]
    pub fn apply(self, v: __m512i, r: Q8Range) -> __m128i {
        match self {
            Rq16::F32(s) => {
                // The conversion rounds to nearest even after the product is clamped to
                // ±2^30 (a product that large saturates either way).
                let big = _mm512_set1_ps(1073741824.0);
                let f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), s);
                let f = _mm512_min_ps(
                    _mm512_max_ps(f, _mm512_sub_ps(_mm512_setzero_ps(), big)),
                    big,
                );
                let q = _mm512_add_epi32(_mm512_cvtps_epi32(f), r.zp);
                _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(q, r.lo), r.hi))
            }
            Rq16::Tflite { mult, left, right } => {
                let q = mbqm16(v, mult, left, right);
                let q = _mm512_min_epi32(_mm512_max_epi32(q, r.lo_zp), r.hi_zp);
                _mm512_cvtepi32_epi8(_mm512_add_epi32(q, r.zp))
            }
        }
    }
}

/// TFLite's `MultiplyByQuantizedMultiplier` on sixteen lanes: `v·2^left` (wrapping), the
/// saturating rounding doubling high multiply by `mult`, then the rounding divide by
/// `2^right` (half away from zero); shift counts in `0..=31`. Lane for lane
/// [`crate::ops::tflite::fixed::mbqm`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
pub fn mbqm16(v: __m512i, mult: __m512i, left: __m512i, right: __m512i) -> __m512i {
    let x = _mm512_sllv_epi32(v, left);
    // srdhm: the 64-bit products of the even lanes, then of the odd ones.
    let nudge = _mm512_set1_epi64(1 << 30);
    let even = _mm512_srai_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, mult), nudge), 31);
    let odd = _mm512_mul_epi32(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(mult, 32));
    let odd = _mm512_slli_epi64(_mm512_srai_epi64(_mm512_add_epi64(odd, nudge), 31), 32);
    let h = _mm512_mask_blend_epi32(0xAAAA, even, odd);
    let min = _mm512_set1_epi32(i32::MIN);
    let both_min = _mm512_cmpeq_epi32_mask(x, min) & _mm512_cmpeq_epi32_mask(mult, min);
    let h = _mm512_mask_mov_epi32(h, both_min, _mm512_set1_epi32(i32::MAX));
    // rdbpot: the arithmetic shift, plus one where the remainder is above half.
    let one = _mm512_set1_epi32(1);
    let mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, right), one);
    let rem = _mm512_and_si512(h, mask);
    let thr = _mm512_sub_epi32(_mm512_srai_epi32(mask, 1), _mm512_srai_epi32(h, 31));
    let q = _mm512_srav_epi32(h, right);
    _mm512_mask_add_epi32(q, _mm512_cmpgt_epi32_mask(rem, thr), q, one)
}

/// TFLite's int8 Add of equal-shaped `a` and `b` into `y` (`QBinaryParams`, op Add),
/// sixteen at a time: lane for lane `ops::tflite::binary`'s scalar arithmetic. Returns
/// `false` (nothing written) when the slices differ in length.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
pub fn qadd_i8(p: &ge_runtime::format::QBinaryParams, a: &[i8], b: &[i8], y: &mut [i8]) -> bool {
    if a.len() != y.len() || b.len() != y.len() {
        return false;
    }
    let splat = |m: i32, t: i32| {
        let (l, r) = shifts(t);
        (
            _mm512_set1_epi32(m),
            _mm512_set1_epi32(l),
            _mm512_set1_epi32(r),
        )
    };
    let (ma, la, ra) = splat(p.a_mult, p.a_shift);
    let (mb, lb, rb) = splat(p.b_mult, p.b_shift);
    let (mo, lo, ro) = splat(p.out_mult, p.out_shift);
    let ls = _mm512_set1_epi32(p.left_shift.clamp(0, 31));
    let (za, zb) = (_mm512_set1_epi32(p.a_zp), _mm512_set1_epi32(p.b_zp));
    let range = Q8Range::new(p.out_zp, p.act_min.max(-128), p.act_max.min(127));
    for t in (0..y.len()).step_by(16) {
        let n = 16.min(y.len() - t);
        let mask: __mmask16 = if n == 16 { !0 } else { (1u16 << n) - 1 };
        // SAFETY: each masked load and store touches lanes `t..t + n` of equal-length slices.
        unsafe {
            let va = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mask, a.as_ptr().add(t)));
            let vb = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mask, b.as_ptr().add(t)));
            let sa = mbqm16(_mm512_sllv_epi32(_mm512_sub_epi32(va, za), ls), ma, la, ra);
            let sb = mbqm16(_mm512_sllv_epi32(_mm512_sub_epi32(vb, zb), ls), mb, lb, rb);
            let q = mbqm16(_mm512_add_epi32(sa, sb), mo, lo, ro);
            let q = _mm512_min_epi32(_mm512_max_epi32(q, range.lo_zp), range.hi_zp);
            let q = _mm512_cvtepi32_epi8(_mm512_add_epi32(q, range.zp));
            _mm_mask_storeu_epi8(y.as_mut_ptr().add(t), mask, q);
        }
    }
    true
}
