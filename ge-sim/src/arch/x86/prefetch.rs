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

/// A prefetch to L2 spread over the steps of a loop: `len` floats from `at`, a slice of
/// lines per step. A tile that prefetched its share of the next chunk in one burst at its
/// start (64 lines for a 7 × 7 plane's 9 tiles) stalled there while the burst held every L1
/// fill buffer: spread over its taps, ResNet-50's stage 5 took 9.0 ms instead of 10.9.
pub(crate) struct Spread {
    at: *const f32,
    end: *const f32,
    per_step: usize,
}

impl Spread {
    /// `len` floats from `at` over `steps` calls of [`Self::step`]; all at once when `steps`
    /// is 0 (a loop whose steps are too short to test for a prefetch each).
    #[inline(always)]
    pub(crate) fn new(at: *const f32, len: usize, steps: usize) -> Self {
        if steps == 0 {
            l2(at, len);
            return Spread {
                at,
                end: at,
                per_step: 0,
            };
        }
        Spread {
            at,
            end: at.wrapping_add(len),
            per_step: len.div_ceil(LINE).div_ceil(steps) * LINE,
        }
    }

    /// The next slice (none once the range is done).
    #[inline(always)]
    pub(crate) fn step(&mut self) {
        if self.at < self.end {
            l2(self.at, self.per_step);
            self.at = self.at.wrapping_add(self.per_step);
        }
    }

    /// Whatever the steps left (a loop that skipped steps: taps in the padding).
    #[inline(always)]
    pub(crate) fn finish(self) {
        if self.at < self.end {
            l2(
                self.at,
                (self.end as usize - self.at as usize) / size_of::<f32>(),
            );
        }
    }
}

impl crate::ops::nchwc::conv::Tile {
    /// The prefetch of [`Tile::ahead`] for a SIMD tile walking `CB`-channel tap steps: a
    /// slice per step on blocked input; all at once on a plain input, whose step is one
    /// channel of one tap (testing for a prefetch each step cost the stem 18%).
    #[inline(always)]
    pub(crate) fn spread<const CB: usize>(
        &self,
        geo: &crate::ops::nchwc::conv::Geometry,
    ) -> Spread {
        let steps = if CB == ge_runtime::format::BLOCK {
            (self.cibs.1 - self.cibs.0) * geo.kernel[0] * geo.kernel[1]
        } else {
            0
        };
        Spread::new(self.ahead.0, self.ahead.1, steps)
    }
}
