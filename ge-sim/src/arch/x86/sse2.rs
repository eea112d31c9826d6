//! SSE2 byte shuffles (part of every x86-64 target): the int8 convs' 16 × 16 byte
//! transposes and four-row interleaves.

use core::arch::x86_64::*;

/// `out[4t + u] = lines[u][t] ^ mask` (`pad` for a missing line) for the whole groups of
/// sixteen columns; returns the columns done.
pub(crate) fn interleave4(lines: [Option<&[u8]>; 4], pad: u8, mask: u8, out: &mut [u8]) -> usize {
    let mut t = 0;
    let n = out.len() / 4;
    // SAFETY: SSE2 is part of the target; each load reads 16 bytes of a line at
    // `t + 16 ≤ n ≤ line.len()`, each store 16 of `out` below `4n`.
    unsafe {
        let (m, p) = (_mm_set1_epi8(mask as i8), _mm_set1_epi8(pad as i8));
        while t + 16 <= n {
            let r: [__m128i; 4] = core::array::from_fn(|u| match lines[u] {
                Some(l) => _mm_xor_si128(_mm_loadu_si128(l[t..t + 16].as_ptr().cast()), m),
                None => p,
            });
            let (a, b) = (_mm_unpacklo_epi8(r[0], r[1]), _mm_unpackhi_epi8(r[0], r[1]));
            let (c, d) = (_mm_unpacklo_epi8(r[2], r[3]), _mm_unpackhi_epi8(r[2], r[3]));
            let o = out[4 * t..4 * t + 64].as_mut_ptr();
            _mm_storeu_si128(o.cast(), _mm_unpacklo_epi16(a, c));
            _mm_storeu_si128(o.add(16).cast(), _mm_unpackhi_epi16(a, c));
            _mm_storeu_si128(o.add(32).cast(), _mm_unpacklo_epi16(b, d));
            _mm_storeu_si128(o.add(48).cast(), _mm_unpackhi_epi16(b, d));
            t += 16;
        }
    }
    t
}

/// One 16 × 16 byte block: after unpacking bytes, words, dwords and qwords of row pairs,
/// output row `2p` / `2p + 1` is the low / high qword pair of column pair `p`.
///
/// # Safety
/// `src + i·lds` and `dst + j·ldd` hold 16 bytes for `i, j < 16`.
pub(crate) unsafe fn transpose16(src: *const u8, lds: usize, dst: *mut u8, ldd: usize) {
    // SAFETY: per the contract; SSE2 is part of the target.
    unsafe {
        let r: [__m128i; 16] = core::array::from_fn(|i| _mm_loadu_si128(src.add(i * lds).cast()));
        // Rows (2k, 2k + 1) interleaved by bytes: columns 0–7 (lo) and 8–15 (hi).
        let b: [[__m128i; 2]; 8] = core::array::from_fn(|k| {
            [
                _mm_unpacklo_epi8(r[2 * k], r[2 * k + 1]),
                _mm_unpackhi_epi8(r[2 * k], r[2 * k + 1]),
            ]
        });
        // Rows 4m..4m + 4: c[m][q] holds columns 4q..4q + 4.
        let c: [[__m128i; 4]; 4] = core::array::from_fn(|m| {
            let (lo, hi) = (b[2 * m], b[2 * m + 1]);
            [
                _mm_unpacklo_epi16(lo[0], hi[0]),
                _mm_unpackhi_epi16(lo[0], hi[0]),
                _mm_unpacklo_epi16(lo[1], hi[1]),
                _mm_unpackhi_epi16(lo[1], hi[1]),
            ]
        });
        // Rows 8n..8n + 8: d[n][p] holds columns 2p, 2p + 1.
        let d: [[__m128i; 8]; 2] = core::array::from_fn(|n| {
            core::array::from_fn(|p| {
                let (q, hi) = (p / 2, p % 2 == 1);
                let (x, y) = (c[2 * n][q], c[2 * n + 1][q]);
                if hi {
                    _mm_unpackhi_epi32(x, y)
                } else {
                    _mm_unpacklo_epi32(x, y)
                }
            })
        });
        for (p, (&lo, &hi)) in d[0].iter().zip(&d[1]).enumerate() {
            _mm_storeu_si128(dst.add(2 * p * ldd).cast(), _mm_unpacklo_epi64(lo, hi));
            _mm_storeu_si128(
                dst.add((2 * p + 1) * ldd).cast(),
                _mm_unpackhi_epi64(lo, hi),
            );
        }
    }
}
