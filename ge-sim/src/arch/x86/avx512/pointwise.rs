//! The VNNI kernel of [`crate::ops::gemm_i8::pointwise`]: sixteen consecutive positions
//! of one output channel a register, each lane summing four input channels per `vpdpbusd`
//! against the channel's four weights broadcast; the channel quads of sixteen positions are
//! kept in registers across every output channel. O(N·M·H·W·⌈C/4⌉) `vpdpbusd`s.

use core::arch::x86_64::*;

use super::requant::{Q8Range, Rq16};
use crate::ops::gemm_i8::MAX_POINTWISE_CG;
use crate::ops::gemm_i8::pointwise::Group;

/// Runs one group; `false` (nothing written) when the slices do not fit the geometry.
///
/// # Safety
/// The CPU supports AVX-512 F/BW/VL and VNNI.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2")]
pub unsafe fn run_group(g: &Group<'_>, y: &mut [u8]) -> bool {
    let kq = g.cg.div_ceil(4);
    if !g.fits(y.len()) {
        return false;
    }
    let pick = |v: &[i32], j: usize| if v.len() == 1 { v[0] } else { v[j] };
    // Channel `j`'s weight quad `q`, unchecked in the loop below: `fits` checked the
    // table's length for every `j < mg`, `q < kq`.
    let at = |j: usize, q: usize| g.weight_index(j, q);
    // SAFETY: every load reads `n ≤ 16` bytes (masked) of a plane row `r < cg` at `p0 <
    // hw`, inside `x`; every store writes `n` bytes of row `j < mg` at `p0`, inside `y`;
    // the table, corrections, zero points and scales were checked above (`fits`).
    unsafe {
        let flip = _mm_set1_epi8(i8::MIN);
        let ones = _mm512_set1_epi8(1);
        let range = Q8Range::new(g.zp, g.lo, g.hi);
        for p0 in (0..g.hw).step_by(16) {
            let n = 16.min(g.hw - p0);
            let mask: __mmask16 = if n == 16 { !0 } else { (1u16 << n) - 1 };
            let row = |r: usize| {
                if r < g.cg {
                    let v =
                        _mm_maskz_loadu_epi8(mask, g.x.as_ptr().add(r * g.hw + p0) as *const i8);
                    if g.flip { _mm_xor_si128(v, flip) } else { v }
                } else {
                    _mm_setzero_si128()
                }
            };
            let mut xq = [_mm512_setzero_si512(); MAX_POINTWISE_CG / 4];
            for (q, v) in xq.iter_mut().enumerate().take(kq) {
                let (r0, r1, r2, r3) = (row(4 * q), row(4 * q + 1), row(4 * q + 2), row(4 * q + 3));
                let (a, b) = (_mm_unpacklo_epi8(r0, r1), _mm_unpackhi_epi8(r0, r1));
                let (c, d) = (_mm_unpacklo_epi8(r2, r3), _mm_unpackhi_epi8(r2, r3));
                let z = _mm512_castsi128_si512(_mm_unpacklo_epi16(a, c));
                let z = _mm512_inserti32x4::<1>(z, _mm_unpackhi_epi16(a, c));
                let z = _mm512_inserti32x4::<2>(z, _mm_unpacklo_epi16(b, d));
                *v = _mm512_inserti32x4::<3>(z, _mm_unpackhi_epi16(b, d));
            }
            let xq = &xq[..kq];
            // Σ_c a[c][p], for the weight zero points.
            let rowsum = if g.zb.iter().any(|&z| z != 0) {
                xq.iter().fold(_mm512_setzero_si512(), |s, &v| {
                    _mm512_dpbusd_epi32(s, v, ones)
                })
            } else {
                _mm512_setzero_si512()
            };
            let mut finish = |j: usize, acc: __m512i| {
                let mut v = _mm512_add_epi32(acc, _mm512_set1_epi32(g.corr[j]));
                if !g.zb.is_empty() {
                    let z = _mm512_set1_epi32(pick(g.zb, j));
                    v = _mm512_sub_epi32(v, _mm512_mullo_epi32(z, rowsum));
                }
                let r = if g.rq.len() == 1 { g.rq[0] } else { g.rq[j] };
                // `vector_form` (checked above): one form in every column.
                let rq = Rq16::columns_checked(core::slice::from_ref(&r));
                let q = rq.apply(v, range);
                let at = y.as_mut_ptr().add(j * g.hw + p0);
                _mm_mask_storeu_epi8(at as *mut i8, mask, q);
            };
            // Four channels at a time: four independent sums in flight.
            let mut j = 0;
            while j + 4 <= g.mg {
                let mut acc = [_mm512_setzero_si512(); 4];
                for (q, &v) in xq.iter().enumerate() {
                    for (t, a) in acc.iter_mut().enumerate() {
                        let w = _mm512_set1_epi32(*g.table.get_unchecked(at(j + t, q)));
                        *a = _mm512_dpbusd_epi32(*a, v, w);
                    }
                }
                for (t, &a) in acc.iter().enumerate() {
                    finish(j + t, a);
                }
                j += 4;
            }
            for j in j..g.mg {
                let acc = xq
                    .iter()
                    .enumerate()
                    .fold(_mm512_setzero_si512(), |a, (q, &v)| {
                        _mm512_dpbusd_epi32(
                            a,
                            v,
                            _mm512_set1_epi32(*g.table.get_unchecked(at(j, q))),
                        )
                    });
                finish(j, acc);
            }
        }
    }
    true
}
