//! The quad conv tile on AVX-512 VNNI ([`crate::ops::gemm_i8::conv::quads`]): each
//! quad row of the panel is one zmm (sixteen output channels' four weights, in channel order),
//! each position's four activations one broadcast dword of the band's copy, one `vpdpbusd`
//! a position (four exact u8·i8 products summed into each channel's i32). Two accumulator
//! sets (even and odd quad rows) keep twelve sums in flight.

use core::arch::x86_64::*;

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
