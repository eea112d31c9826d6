//! The pre-packed order of a constant GEMM B ([`GEMM_B_PANELS`]): a GemmW8's int8 B
//! (format ≥ 10) and a GemmPacked's f32 B (format ≥ 11). It is the order the host GEMM reads
//! its B blocks in: `run` dequantizes each int8 panel row from contiguous bytes instead of
//! 16 bytes from each of `kc` rows (a gather the hardware prefetcher does not follow, on
//! weights that arrive cold from L3 once a run), and reads f32 panels where they lie.
//!
//! op(B) (`k × n`) is cut into K blocks of [`gemm_k_block`]`(k)` rows (the last one
//! shorter); each block holds its column panels of [`GEMM_B_PANEL`] columns one after
//! another, a panel row by row (`[kc][16]`), the last `n mod 16` columns as one narrower
//! panel (`[kc][n mod 16]`). The tensor keeps its byte count (and its shape, but for a
//! transposed f32 B, stored `[K, N]` once packed): the layout is a permutation. The block
//! size is part of the format: a runtime that blocked K otherwise would need a new version.

/// Columns per panel (the host register tile's column panel: 16 f32 lanes).
pub const GEMM_B_PANEL: usize = 16;
/// Largest K block of the host GEMM.
pub const GEMM_KC: usize = 256;
/// Bit of [`super::GemmParams::trans_b`] saying B is in the pre-packed order (bit 0 stays
/// the ONNX `transB`, which a packed B no longer has).
pub const GEMM_B_PANELS: u32 = 1 << 8;

/// The K block size for `k`: at most [`GEMM_KC`], blocks of (nearly) equal size.
pub const fn gemm_k_block(k: usize) -> usize {
    if k == 0 {
        return 0;
    }
    k.div_ceil(k.div_ceil(GEMM_KC))
}

/// Where op(B)`[p][j]` of a `k × n` B lies in the packed order. O(1).
#[inline]
pub const fn gemm_b_index(k: usize, n: usize, p: usize, j: usize) -> usize {
    let kb = gemm_k_block(k);
    let pc = p - p % kb;
    let kc = if k - pc < kb { k - pc } else { kb };
    let j0 = j - j % GEMM_B_PANEL;
    let w = if n - j0 < GEMM_B_PANEL {
        n - j0
    } else {
        GEMM_B_PANEL
    };
    pc * n + j0 * kc + (p - pc) * w + (j - j0)
}

/// Packs B (`k × n` row-major, or `n × k` when `trans`) into the order above. Both slices
/// hold `k·n` values. O(k·n) (an index computed per value: compile time only).
pub fn pack_gemm_b<T: Copy>(src: &[T], k: usize, n: usize, trans: bool, dst: &mut [T]) {
    for p in 0..k {
        for j in 0..n {
            let s = if trans { j * k + p } else { p * n + j };
            dst[gemm_b_index(k, n, p, j)] = src[s];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern crate std;
    use std::vec;
    use std::vec::Vec;

    /// Every element lands once (a permutation), panels row by row inside K blocks.
    #[test]
    fn packing_is_a_permutation_in_block_panel_order() {
        for (k, n) in [(1, 1), (7, 5), (300, 37), (600, 64), (513, 17), (256, 16)] {
            let mut seen = vec![false; k * n];
            for p in 0..k {
                for j in 0..n {
                    let i = gemm_b_index(k, n, p, j);
                    assert!(!seen[i], "{k}x{n}: ({p}, {j}) lands twice");
                    seen[i] = true;
                }
            }
            let src: Vec<u32> = (0..(k * n) as u32).collect();
            let mut dst = vec![0; k * n];
            pack_gemm_b(&src, k, n, false, &mut dst);
            let kb = gemm_k_block(k);
            // The first K block's first panel: rows of 16 (or n) consecutive columns.
            let w = n.min(GEMM_B_PANEL);
            for p in 0..kb.min(k) {
                for j in 0..w {
                    assert_eq!(dst[p * w + j], (p * n + j) as u32);
                }
            }
            let mut t = vec![0; k * n];
            for p in 0..k {
                for j in 0..n {
                    t[j * k + p] = src[p * n + j];
                }
            }
            let mut dst_t = vec![0; k * n];
            pack_gemm_b(&t, k, n, true, &mut dst_t);
            assert_eq!(dst, dst_t, "{k}x{n}: transposed source");
        }
    }
}
