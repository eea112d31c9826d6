//! 1×1 stride-1 int8 convolutions with few input channels per group (ShuffleNet's grouped
//! 1×1s, a ResNet bottleneck's 64-channel ones) on AVX-512 VNNI, pixels in lanes: a register
//! holds sixteen consecutive positions of one output channel, each lane summing four input
//! channels per `vpdpbusd` against the channel's four weights broadcast. The activations
//! are read straight from their NCHW planes (four planes interleaved into channel quads
//! once per sixteen positions, kept in registers across every output channel) and the
//! results stored straight to theirs: neither the im2col transpose nor the block-to-planes
//! transpose of the GEMM path runs, which cost more than the products when k is small.
//! Same integers and the same f32 requantization as the GEMM path (tested against it).
//! O(N·M·H·W·⌈C/4⌉) `vpdpbusd`s.

#[cfg(target_arch = "x86_64")]
use super::MAX_POINTWISE_CG;

/// i32 weight quads `[M][⌈cg/4⌉]` the kernel broadcasts, for `m` channels of `cg` inputs.
pub fn table_len(m: usize, cg: usize) -> Option<usize> {
    m.checked_mul(cg.div_ceil(4))
}

/// Fills `table[j][q] = B[4q..4q + 4][j]` (as one little-endian i32, zero past `k`) from the
/// packed k-pair panels of each group (`plen` bytes per group, `mg` columns, `k` rows).
pub fn fill_table(b: &[i8], plen: usize, group: usize, mg: usize, k: usize, table: &mut [i32]) {
    use super::NR;
    let (kp, kq) = (k.div_ceil(2) * 2, k.div_ceil(4));
    for gi in 0..group {
        for jj in 0..mg {
            let panel = &b[gi * plen + jj / NR * NR * kp..][..NR * kp];
            let col = 2 * (jj % NR);
            for q in 0..kq {
                let pair = |r: usize| -> [i8; 2] {
                    match panel.get(r * 2 * NR + col..r * 2 * NR + col + 2) {
                        Some(&[lo, hi]) if r < kp / 2 => [lo, hi],
                        _ => [0, 0],
                    }
                };
                let ([b0, b1], [b2, b3]) = (pair(2 * q), pair(2 * q + 1));
                if let Some(t) = table.get_mut((gi * mg + jj) * kq + q) {
                    *t = i32::from_le_bytes([b0 as u8, b1 as u8, b2 as u8, b3 as u8]);
                }
            }
        }
    }
}

/// One group's planes: `x` `[cg][hw]` (i8 read flipped to `a + 128` when `flip`), the
/// weight quads `table` `[mg][⌈cg/4⌉]`, per-channel corrections `corr` `[mg]`, weight zero
/// points `zb` (`[]`, `[1]` or `[mg]`), requantizers `rq` in the f32 form (`[1]` or `[mg]`,
/// every shift 0: `mult` holds the scale's bits), output zero point and range; `y`
/// `[mg][hw]` bytes.
pub struct Group<'a> {
    pub x: &'a [u8],
    pub hw: usize,
    pub cg: usize,
    pub mg: usize,
    pub flip: bool,
    pub table: &'a [i32],
    /// `table` is the blob's channel quads (`[⌈mg/16⌉][⌈cg/4⌉][16]`, `conv::QuadLayout`)
    /// rather than the `[mg][⌈cg/4⌉]` table [`fill_table`] writes.
    pub quads: bool,
    pub corr: &'a [i32],
    pub zb: &'a [i32],
    pub rq: &'a [super::Requant],
    pub zp: i32,
    pub lo: i32,
    pub hi: i32,
}

/// Runs one group; `false` (nothing written) when the slices do not fit the geometry.
///
/// # Safety
/// The CPU supports AVX-512 F/BW/VL and VNNI.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2")]
pub unsafe fn run_group(g: &Group<'_>, y: &mut [u8]) -> bool {
    use core::arch::x86_64::*;

    use crate::arch::x86::avx512::requant::{Q8Range, Rq16};
    let kq = g.cg.div_ceil(4);
    fn per<T>(v: &[T], n: usize) -> bool {
        v.len() == 1 || v.len() == n
    }
    if g.cg == 0
        || g.cg > MAX_POINTWISE_CG
        || g.x.len() < g.cg * g.hw
        || y.len() < g.mg * g.hw
        || g.table.len()
            < if g.quads {
                g.mg.div_ceil(16) * 16 * kq
            } else {
                g.mg * kq
            }
        || g.corr.len() < g.mg
        || !(g.zb.is_empty() || per(g.zb, g.mg))
        || !per(g.rq, g.mg)
        || !super::vector_form(g.rq)
    {
        return false;
    }
    let pick = |v: &[i32], j: usize| if v.len() == 1 { v[0] } else { v[j] };
    // Channel `j`'s weight quad `q`.
    let at = |j: usize, q: usize| {
        if g.quads {
            ((j / 16) * kq + q) * 16 + j % 16
        } else {
            j * kq + q
        }
    };
    // SAFETY: every load reads `n ≤ 16` bytes (masked) of a plane row `r < cg` at `p0 <
    // hw`, inside `x`; every store writes `n` bytes of row `j < mg` at `p0`, inside `y`;
    // the table, corrections, zero points and scales were checked above.
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
