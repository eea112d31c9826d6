//! The quad conv tile on AVX-512 VNNI ([`crate::ops::gemm_i8::conv::quads`]): each
//! quad row of the panel is one zmm (sixteen output channels' four weights, in channel order),
//! each position's four activations one broadcast dword of the band's copy, one `vpdpbusd`
//! a position (four exact u8·i8 products summed into each channel's i32). Two accumulator
//! sets (even and odd quad rows) keep twelve sums in flight. Convs with few output channels
//! take [`positions`] instead: sixteen positions in lanes, no transposes.

use core::arch::x86_64::*;

use crate::ops::gemm_i8::conv::Positions;

use super::requant::{Q8Range, Rq16};
use crate::ops::gemm_i8::MR;
use crate::ops::gemm_i8::conv::QuadGeo;

/// VNNI build of [`crate::ops::gemm_i8::conv::quads_tile`]: row `i`'s sixteen sums in
/// `acc[i]`.
///
/// # Safety
/// As the portable tile's; the CPU supports AVX-512 F/BW/VL and VNNI.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2")]
pub unsafe fn tile(a: *const u8, off: &[usize; MR], geo: QuadGeo, bp: *const i8) -> [__m512i; MR] {
    let z = _mm512_setzero_si512();
    // Two named sets: indexing one array of sets by parity kept them on the stack.
    let (mut even, mut odd) = ([z; MR], [z; MR]);
    let quads = geo.quads();
    // Quad row offsets in the copy, advanced row by row (no division per quad).
    let mut walk = geo.walk();
    let mut next = || walk.advance();
    // SAFETY: quad row `r` is 64 bytes of the panel and every `a + off[i] + o` 4 readable
    // bytes, per the contract; the features are enabled on this function.
    let step = |set: &mut [__m512i; MR], r: usize, o: usize| unsafe {
        let bv = _mm512_loadu_si512(bp.add(r * 64) as *const __m512i);
        for (acc, &at) in set.iter_mut().zip(off) {
            let av = _mm512_set1_epi32((a.add(at + o) as *const i32).read_unaligned());
            *acc = _mm512_dpbusd_epi32(*acc, av, bv);
        }
    };
    let mut r = 0;
    while r + 2 <= quads {
        let (o0, o1) = (next(), next());
        step(&mut even, r, o0);
        step(&mut odd, r + 1, o1);
        r += 2;
    }
    if r < quads {
        let o = next();
        step(&mut even, r, o);
    }
    core::array::from_fn(|i| _mm512_add_epi32(even[i], odd[i]))
}

/// The band's outputs, sixteen positions of a row a vector: each quad row's sixteen
/// activation dwords (a stride-2 row picks the even ones of two loads) times each output
/// channel's quad broadcast, requantized per channel and stored straight into its plane
/// (`y` from the band's first output row of the group's first channel, planes `plane`
/// apart). No transposes: vww's 3-channel stem (eight outputs) spent most of its time on
/// the tile's empty lanes and the block transposes. `false` (nothing written) when a length
/// does not fit.
///
/// # Safety
/// The CPU supports AVX-512 F/BW/VL and VNNI.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2")]
pub unsafe fn positions(p: &Positions<'_>, y: &mut [u8], plane: usize) -> bool {
    const N: usize = 8;
    let quads = p.geo.quads();
    if !p.fits(y.len(), plane) {
        return false;
    }
    let (zp, lo, hi) = p.range;
    let range = Q8Range::new(zp, lo, hi);
    let mut rqs = [Rq16::F32(_mm512_setzero_ps()); N];
    for (j, r) in rqs.iter_mut().enumerate().take(p.mg) {
        let q = if p.rq.len() == 1 { p.rq[0] } else { p.rq[j] };
        match Rq16::splat(q) {
            Some(v) => *r = v,
            None => return false,
        }
    }
    let evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let base = p.copy.as_ptr();
    let wq = p.weights.as_ptr() as *const i32;
    // SAFETY: every load is masked to the lanes of positions `< ow` of rows `< here`, whose
    // quads lie inside the copy (`last + reach ≤ copy.len()`); weight quad `r` of channel
    // `j < mg ≤ 16` is inside the panel; stores are masked to `n` bytes of rows `< here`
    // of planes `j < mg`, inside `y`; the features are enabled on this function.
    unsafe {
        for oy in 0..p.here {
            let row = oy * p.sh * p.wp;
            let mut ox = 0;
            while ox < p.ow {
                let n = 16.min(p.ow - ox);
                let m: __mmask16 = if n == 16 { !0 } else { (1u16 << n) - 1 };
                let mut acc = [_mm512_setzero_si512(); N];
                let mut walk = p.geo.walk();
                for r in 0..quads {
                    let at = base.add(row + walk.advance() + ox * p.sw * 4);
                    let x = if p.sw == 1 {
                        _mm512_maskz_loadu_epi32(m, at as *const i32)
                    } else {
                        // Positions 2t: dwords 0..2n−1 of the two loads, the even ones kept.
                        let two = 2 * n - 1;
                        let m0: __mmask16 = if two >= 16 { !0 } else { (1u16 << two) - 1 };
                        let m1: __mmask16 = if two > 16 {
                            (1u16 << (two - 16)) - 1
                        } else {
                            0
                        };
                        let a = _mm512_maskz_loadu_epi32(m0, at as *const i32);
                        let b = _mm512_maskz_loadu_epi32(m1, at.add(64) as *const i32);
                        _mm512_permutex2var_epi32(a, evens, b)
                    };
                    for (j, a) in acc.iter_mut().enumerate().take(p.mg) {
                        let w = _mm512_set1_epi32(wq.add(r * 16 + j).read_unaligned());
                        *a = _mm512_dpbusd_epi32(*a, x, w);
                    }
                }
                for (j, &a) in acc.iter().enumerate().take(p.mg) {
                    let v = _mm512_add_epi32(a, _mm512_set1_epi32(p.corr[j]));
                    let q = rqs[j].apply(v, range);
                    let dst = y.as_mut_ptr().add(j * plane + oy * p.ow + ox);
                    _mm_mask_storeu_epi8(dst as *mut i8, m, q);
                }
                ox += 16;
            }
        }
    }
    true
}
