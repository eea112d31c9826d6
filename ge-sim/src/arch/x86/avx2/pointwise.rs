//! 1×1 stride-1 int8 convolutions with few input channels per group on AVX2, pixels in lanes
//! as in the VNNI kernel ([`crate::ops::gemm_i8::pointwise`]): a register holds eight
//! consecutive positions of one output channel. Without VNNI the products are exact
//! `vpmaddwd`s of i16 pairs: four input planes are interleaved into channel quads once per
//! eight positions, then split into their even and odd channels (`(c0, c2)`, `(c1, c3)`
//! as i16 pairs), and the weight quads the same way once per chunk of channels, so one quad
//! is two `vpmaddwd`s per eight positions with no 16-bit saturation. kws's 64-channel 1×1s
//! went through the quad copy, the tile and the transpose back to planes at 30 µs each.
//! Same integers and the same requantization (either form) as the GEMM path.
//! O(N·M·H·W·⌈C/4⌉) `vpmaddwd` pairs.

use core::arch::x86_64::*;

use super::requant::{Q8Range8, Rq8, low_bytes};
use crate::arch::x86::short_copy::copy_short;
use crate::ops::gemm_i8::MAX_POINTWISE_CG;
use crate::ops::gemm_i8::pointwise::Group;

/// Position registers a step: two of eight positions. With four channels that is eight
/// accumulators, four activation registers and the two weight pairs: no spill in 16 ymm.
const REGS: usize = 2;

/// Four channels a block (one quarter of a weight panel).
const T: usize = 4;

/// Output channels whose split weights are prepared at once: four panels of sixteen, `2 ·
/// CHUNK · ⌈C/4⌉` i32 on the stack (8 KiB at 64 input channels).
const CHUNK: usize = 64;

/// One step's channel quads, even and odd channels apart: `[quad][register][2]`.
type Quads = [[[__m256i; 2]; REGS]; MAX_POINTWISE_CG / 4];

/// The chunk's weight quads split into their even and odd i16 pairs, both in the blob's
/// channel-quad order: `[panel of 16][quad][16]`.
struct Split {
    even: [i32; CHUNK * MAX_POINTWISE_CG / 4],
    odd: [i32; CHUNK * MAX_POINTWISE_CG / 4],
}

/// Runs one group; `false` (nothing written) when the slices do not fit the geometry.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn run_group(g: &Group<'_>, y: &mut [u8]) -> bool {
    let kq = g.cg.div_ceil(4);
    // `fits` includes one requantizer or `mg`, all in one vector form (which `Rq8` takes).
    if !g.fits(y.len()) {
        return false;
    }
    let mut xs: Quads = [[[_mm256_setzero_si256(); 2]; REGS]; MAX_POINTWISE_CG / 4];
    let mut split = Split {
        even: [0; CHUNK * MAX_POINTWISE_CG / 4],
        odd: [0; CHUNK * MAX_POINTWISE_CG / 4],
    };
    let low16 = _mm256_set1_epi32(0x00ff_00ff);
    let range = Q8Range8::new(g.zp, g.lo, g.hi);
    let tensor_rq = match g.rq {
        [r] => Rq8::splat(*r),
        _ => None,
    };
    for j0 in (0..g.mg).step_by(CHUNK) {
        let chunk = CHUNK.min(g.mg - j0);
        split_weights(g, j0, chunk, &mut split);
        for p0 in (0..g.hw).step_by(8 * REGS) {
            let n = (8 * REGS).min(g.hw - p0);
            let regs = n.div_ceil(8);
            for (q, quad) in xs.iter_mut().enumerate().take(kq) {
                for (r, x) in quad.iter_mut().enumerate().take(regs) {
                    let v = quads_at(g, 4 * q, p0 + 8 * r, (n - 8 * r).min(8));
                    *x = [_mm256_and_si256(v, low16), _mm256_srli_epi16::<8>(v)];
                }
            }
            let at = Step {
                xs: &xs[..kq],
                split: &split,
                j0,
                chunk,
                p0,
                n,
                range,
                tensor_rq,
            };
            if regs == 2 {
                step::<2>(g, &at, y);
            } else {
                step::<1>(g, &at, y);
            }
        }
    }
    true
}

/// Fills `split` with channels `j0..j0 + chunk`'s weight quads as their `(b0, b2)` and `(b1,
/// b3)` i16 pairs (zero past `mg`): eight quads a step from the blob's channel quads, one at
/// a time from the packed table.
#[target_feature(enable = "avx2")]
fn split_weights(g: &Group<'_>, j0: usize, chunk: usize, split: &mut Split) {
    let kq = g.cg.div_ceil(4);
    let len = chunk.div_ceil(16) * 16 * kq;
    let from = j0 / 16 * 16 * kq;
    if g.quads
        && let Some(src) = g.table.get(from..from + len)
    {
        for ((src, e), o) in src
            .chunks_exact(8)
            .zip(split.even.chunks_exact_mut(8))
            .zip(split.odd.chunks_exact_mut(8))
        {
            // SAFETY: three runs of eight i32.
            unsafe {
                let v = _mm256_loadu_si256(src.as_ptr().cast());
                let even = _mm256_srai_epi16::<8>(_mm256_slli_epi16::<8>(v));
                _mm256_storeu_si256(e.as_mut_ptr().cast(), even);
                _mm256_storeu_si256(o.as_mut_ptr().cast(), _mm256_srai_epi16::<8>(v));
            }
        }
        return;
    }
    for i in 0..len {
        let (panel, q, t) = (i / (16 * kq), i / 16 % kq, i % 16);
        let j = j0 + panel * 16 + t;
        let quad = if j < g.mg { g.weight(j, q) } else { 0 }.to_le_bytes();
        let b = quad.map(|v| v as i8);
        split.even[i] = super::i16_pair(b[0], b[2]);
        split.odd[i] = super::i16_pair(b[1], b[3]);
    }
}

/// One step of `n` positions from `p0` for the chunk of `chunk` channels from `j0`.
struct Step<'a> {
    xs: &'a [[[__m256i; 2]; REGS]],
    split: &'a Split,
    j0: usize,
    chunk: usize,
    p0: usize,
    n: usize,
    range: Q8Range8,
    /// The requantizer of every channel, when the tensor has one.
    tensor_rq: Option<Rq8>,
}

/// The products, corrections and requantization of one step on its first `R` registers.
#[target_feature(enable = "avx2")]
#[inline]
fn step<const R: usize>(g: &Group<'_>, s: &Step<'_>, y: &mut [u8]) {
    let kq = s.xs.len();
    // Σ_c a[c][p] per register, for the weight zero points.
    let mut rowsum = [_mm256_setzero_si256(); R];
    if g.zb.iter().any(|&z| z != 0) {
        let ones16 = _mm256_set1_epi16(1);
        for quad in s.xs {
            for (sum, x) in rowsum.iter_mut().zip(quad) {
                let pair = _mm256_add_epi32(
                    _mm256_madd_epi16(x[0], ones16),
                    _mm256_madd_epi16(x[1], ones16),
                );
                *sum = _mm256_add_epi32(*sum, pair);
            }
        }
    }
    // Four channels at a time (of one panel): 4·R independent sums in flight.
    for j in (0..s.chunk).step_by(T) {
        let mut acc = [[_mm256_setzero_si256(); R]; T];
        let base = (j / 16 * kq) * 16 + j % 16;
        let (even, odd) = (&s.split.even[base..], &s.split.odd[base..]);
        for (q, quad) in s.xs.iter().enumerate() {
            let (e, o) = (&even[16 * q..16 * q + T], &odd[16 * q..16 * q + T]);
            for (t, a) in acc.iter_mut().enumerate() {
                let (we, wo) = (_mm256_set1_epi32(e[t]), _mm256_set1_epi32(o[t]));
                for (a, x) in a.iter_mut().zip(quad) {
                    let pair =
                        _mm256_add_epi32(_mm256_madd_epi16(x[0], we), _mm256_madd_epi16(x[1], wo));
                    *a = _mm256_add_epi32(*a, pair);
                }
            }
        }
        for (t, a) in acc.iter().enumerate().take(s.chunk - j) {
            finish(g, s, s.j0 + j + t, a, &rowsum, y);
        }
    }
}

/// Channel `j`'s sums of one step: the correction, the weight zero point's term, the
/// requantization, stored to its plane.
#[target_feature(enable = "avx2")]
#[inline]
fn finish<const R: usize>(
    g: &Group<'_>,
    s: &Step<'_>,
    j: usize,
    acc: &[__m256i; R],
    rowsum: &[__m256i; R],
    y: &mut [u8],
) {
    let Some(rq) = s
        .tensor_rq
        .or_else(|| g.rq.get(j).and_then(|&r| Rq8::splat(r)))
    else {
        return;
    };
    let corr = _mm256_set1_epi32(g.corr[j]);
    let zb = match g.zb {
        [] => 0,
        [z] => *z,
        _ => g.zb[j],
    };
    for (r, (&a, &sum)) in acc.iter().zip(rowsum).enumerate() {
        let mut v = _mm256_add_epi32(a, corr);
        if zb != 0 {
            v = _mm256_sub_epi32(v, _mm256_mullo_epi32(_mm256_set1_epi32(zb), sum));
        }
        let bytes = low_bytes(rq.apply(v, s.range));
        let at = j * g.hw + s.p0 + 8 * r;
        let len = (s.n - 8 * r).min(8);
        if let Some(dst) = y.get_mut(at..at + len) {
            copy_short(dst, &bytes.to_le_bytes());
        }
    }
}

/// Positions `p..p + len` (`len ≤ 8`) of planes `c0..c0 + 4` as eight channel quads, one
/// per i32 lane (flipped to `a + 128` when the group reads i8 as u8; planes past `cg` and
/// lanes past `len` zero). The caller checked `x` holds `cg` planes of `hw` bytes and `p +
/// len ≤ hw`.
#[target_feature(enable = "avx2")]
#[inline]
fn quads_at(g: &Group<'_>, c0: usize, p: usize, len: usize) -> __m256i {
    let flip = _mm_set1_epi8(i8::MIN);
    let row = |r: usize| {
        if r >= g.cg {
            return _mm_setzero_si128();
        }
        let at = r * g.hw + p;
        let mut b = [0u8; 8];
        if let Some(src) = g.x.get(at..at + len) {
            copy_short(&mut b[..len], src);
        }
        let v = _mm_cvtsi64_si128(i64::from_le_bytes(b));
        if g.flip { _mm_xor_si128(v, flip) } else { v }
    };
    let (r0, r1, r2, r3) = (row(c0), row(c0 + 1), row(c0 + 2), row(c0 + 3));
    let (a, c) = (_mm_unpacklo_epi8(r0, r1), _mm_unpacklo_epi8(r2, r3));
    _mm256_set_m128i(_mm_unpackhi_epi16(a, c), _mm_unpacklo_epi16(a, c))
}
