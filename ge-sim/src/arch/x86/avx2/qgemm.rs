//! The AVX2 build of the int8 tile (6 rows × 16 columns, 12 ymm accumulators of i32).
//!
//! Products are exact: both operands are widened to i16 (`vpmovsxbw` for the weights, the
//! activation pair broadcast with `vpbroadcastw` then `vpmovsxbw`/`vpmovzxbw`) and
//! multiplied by `vpmaddwd`, which adds each pair of
//! i16·i16 products into i32 without saturating. `vpmaddubsw` (u8·i8 pairs summed in
//! *saturating* i16) would do twice the work per instruction but clips `255·127·2 = 64,770`
//! to 32,767; onnxruntime's MLAS accepts that clipping on AVX2 (hence its advice to quantize
//! weights to 7 bits), XNNPACK widens first as here. ge keeps the exact result on every ISA.

use core::arch::x86_64::*;

use super::requant::{Q8Range8, Rq8, low_bytes};
use crate::arch::x86::short_copy::copy_short;
use crate::ops::gemm_i8::{Act, MR, NR, Requant};

/// AVX2 build of [`crate::ops::gemm_i8::tile::tile`].
///
/// # Safety
/// As [`crate::ops::gemm_i8::tile::tile`]; the CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn tile<A: Act>(
    k: usize,
    a: *const A,
    off: &[usize; MR],
    bp: *const i8,
) -> [[i32; NR]; MR] {
    let z = _mm256_setzero_si256();
    let mut acc = [[z; 2]; MR];
    let pairs = k / 2;
    // SAFETY: every call reads pair `q ≤ ⌈k/2⌉ − 1` (32 bytes) of the panel and `a[off[i] +
    // 2q + {0, 1}]` (only the first for an odd `k`'s last pair), in bounds per the contract;
    // AVX2 is enabled on this function.
    unsafe {
        for q in 0..pairs {
            let b = panel_pair(bp, q);
            for (c, &o) in acc.iter_mut().zip(off) {
                madd_pair(c, a_pair(a, o + 2 * q), b);
            }
        }
        if k % 2 == 1 {
            let b = panel_pair(bp, pairs);
            for (c, &o) in acc.iter_mut().zip(off) {
                madd_pair(c, a_last(a, o + 2 * pairs), b);
            }
        }
    }
    let mut out = [[0i32; NR]; MR];
    for (o, v) in out.iter_mut().zip(acc) {
        // SAFETY: `o` is 16 i32 = two unaligned 32-byte stores.
        unsafe {
            _mm256_storeu_si256(o.as_mut_ptr() as *mut __m256i, v[0]);
            _mm256_storeu_si256(o.as_mut_ptr().add(8) as *mut __m256i, v[1]);
        }
    }
    out
}

/// [`tile`] for one row (a dense layer at batch 1): the same sums in `acc[0]` (the other
/// rows zero), two `vpmaddwd`s a pair instead of twelve of which ten were thrown away; two
/// pairs a step into separate accumulators (integer sums: any order gives the same values)
/// keep the chain's latency hidden. ad's dense layers on AVX2 ran the six-row tile.
///
/// # Safety
/// As [`tile`] for `off`; the CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn row<A: Act>(k: usize, a: *const A, off: usize, bp: *const i8) -> [[i32; NR]; MR] {
    let z = _mm256_setzero_si256();
    let mut acc = [[z; 2]; 2];
    let pairs = k / 2;
    // SAFETY: every call reads what `tile`'s do, for the one row at `off`.
    unsafe {
        let mut q = 0;
        while q + 2 <= pairs {
            let (p0, p1) = (a_pair(a, off + 2 * q), a_pair(a, off + 2 * q + 2));
            madd_pair(&mut acc[0], p0, panel_pair(bp, q));
            madd_pair(&mut acc[1], p1, panel_pair(bp, q + 1));
            q += 2;
        }
        if q < pairs {
            madd_pair(&mut acc[0], a_pair(a, off + 2 * q), panel_pair(bp, q));
        }
        if k % 2 == 1 {
            madd_pair(
                &mut acc[1],
                a_last(a, off + 2 * pairs),
                panel_pair(bp, pairs),
            );
        }
    }
    let mut out = [[0i32; NR]; MR];
    // SAFETY: `out[0]` is 16 i32 = two unaligned 32-byte stores.
    unsafe {
        let h0 = _mm256_add_epi32(acc[0][0], acc[1][0]);
        let h1 = _mm256_add_epi32(acc[0][1], acc[1][1]);
        _mm256_storeu_si256(out[0].as_mut_ptr() as *mut __m256i, h0);
        _mm256_storeu_si256(out[0].as_mut_ptr().add(8) as *mut __m256i, h1);
    }
    out
}

/// Pair `q` of a packed panel (sixteen columns' two rows) as the i16 pairs `vpmaddwd`
/// reads: columns 0–7, then 8–15.
///
/// # Safety
/// The panel holds pair `q` (32 bytes at `bp + 32q`); the CPU supports AVX2.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn panel_pair(bp: *const i8, q: usize) -> [__m256i; 2] {
    // SAFETY: per the contract.
    let raw = unsafe { _mm256_loadu_si256(bp.add(q * 2 * NR) as *const __m256i) };
    [
        _mm256_cvtepi8_epi16(_mm256_castsi256_si128(raw)),
        _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(raw)),
    ]
}

/// The activation pair `a[at], a[at + 1]` broadcast and widened.
///
/// # Safety
/// Both values are readable; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn a_pair<A: Act>(a: *const A, at: usize) -> __m256i {
    // SAFETY: per the contract.
    widen::<A>(_mm_set1_epi16(unsafe {
        (a.add(at) as *const i16).read_unaligned()
    }))
}

/// An odd `k`'s last activation as the pair `(a[at], 0)`: the byte zero-extended into 16
/// bits, then widened.
///
/// # Safety
/// `a[at]` is readable; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn a_last<A: Act>(a: *const A, at: usize) -> __m256i {
    // SAFETY: per the contract.
    let byte = unsafe { *(a.add(at) as *const u8) };
    widen::<A>(_mm_set1_epi16(i16::from(byte)))
}

/// `c += pairs(av) · b`, sixteen columns in two halves.
#[target_feature(enable = "avx2")]
#[inline]
fn madd_pair(c: &mut [__m256i; 2], av: __m256i, b: [__m256i; 2]) {
    c[0] = _mm256_add_epi32(c[0], _mm256_madd_epi16(av, b[0]));
    c[1] = _mm256_add_epi32(c[1], _mm256_madd_epi16(av, b[1]));
}

/// An activation pair broadcast as bytes `[a0, a1]` × 8 widened to the i16 pairs `vpmaddwd`
/// reads (sign- or zero-extended by the activation type).
#[inline]
#[target_feature(enable = "avx2")]
fn widen<A: Act>(v: __m128i) -> __m256i {
    if A::SIGNED {
        _mm256_cvtepi8_epi16(v)
    } else {
        _mm256_cvtepu8_epi16(v)
    }
}

/// [`crate::ops::gemm_i8`]'s epilogue in either vector form on eight lanes: `acc[i][j] +
/// corr[j]` requantized by `rq[h]` (the requantizers of columns `8h..8h + 8`, or one for all;
/// [`Rq8::columns`]), saturated to `[lo, hi]` with the zero point, for `nr ≤ 16` columns of
/// `mr ≤ MR` rows stored as bytes at `c + i·ldc`. Lane for lane the scalar
/// `Requant::apply` (the scalar epilogue was a third of kws's time on this path).
///
/// # Safety
/// Each of the `mr` rows at `c + i·ldc` holds `nr` writable bytes; the CPU supports AVX2;
/// every record of `rq` is in one vector form (`vector_form`).
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn store_q8(
    acc: &[[i32; NR]; MR],
    mr: usize,
    nr: usize,
    corr: &[i32; NR],
    rq: [&[Requant]; 2],
    (zp, lo, hi): (i32, i32, i32),
    c: *mut u8,
    ldc: usize,
) {
    let range = Q8Range8::new(zp, lo, hi);
    let zero = Rq8::F32(_mm256_setzero_ps());
    let rq = rq.map(|r| Rq8::columns(r).unwrap_or(zero));
    // SAFETY: the loads read 8 i32 of 16-element arrays at 0 and 8; the stores write `nr`
    // bytes of row `i < mr`, per the contract.
    unsafe {
        for (i, row) in acc.iter().enumerate().take(mr.min(MR)) {
            let mut out = [0u8; NR];
            for h in 0..2 {
                let v = _mm256_add_epi32(
                    _mm256_loadu_si256(row[8 * h..].as_ptr() as *const __m256i),
                    _mm256_loadu_si256(corr[8 * h..].as_ptr() as *const __m256i),
                );
                let bytes = low_bytes(rq[h].apply(v, range)).to_le_bytes();
                out[8 * h..8 * h + 8].copy_from_slice(&bytes);
            }
            let n = nr.min(NR);
            // A call-free copy (a `memcpy` call per row cost more than its products).
            copy_short(core::slice::from_raw_parts_mut(c.add(i * ldc), n), &out);
        }
    }
}
