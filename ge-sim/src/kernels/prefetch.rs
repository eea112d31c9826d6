//! Software prefetch to L2 for operands the hardware prefetcher meets too late: weights,
//! read once per run and cold from L3 or memory, whose first use otherwise stalls a tile.
//! A prefetch is a hint (it never faults and changes no value), so addresses need not be
//! valid; callers still keep them inside their operands. Std x86-64 builds only: the
//! firmware links none of it.

use core::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};

/// Floats per 64-byte cache line.
const LINE: usize = 16;

/// Prefetches to L2 the cache lines of the `len` floats from `p`. O(len / 16).
#[inline(always)]
pub(crate) fn l2(p: *const f32, len: usize) {
    for l in 0..len.div_ceil(LINE) {
        // SAFETY: a prefetch reads nothing architecturally and never faults.
        unsafe { _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(l * LINE).cast()) };
    }
}
