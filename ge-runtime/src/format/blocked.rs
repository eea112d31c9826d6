//! Blocked channels (NCHWc, the host's counterpart of Da Vinci's NC1HWC0 "5HD" format): a
//! tensor `[N, C, d…]` stored as `[N, C/BLOCK, d…, BLOCK]`, so the `BLOCK` channels of one
//! pixel are one vector register of the AVX-512 kernels. The compiler plans which values are
//! blocked (only ones with `C` a multiple of `BLOCK`, so a blocked tensor has the same byte
//! count as its plain form and memory planning sees no change) and inserts `Reorder` tasks at
//! the borders of blocked regions (GE's TransData). Where a task reads or writes blocked
//! values is in its parameter record ([`ChannelLayout`]); tensors keep their logical shapes.

/// Channels per block: one AVX-512 register of f32.
pub const BLOCK: usize = 16;
/// Output-channel blocks a blocked conv computes per weight group (4 × 16 = 64 output
/// channels: four weight registers per tap).
pub const GROUP_BLOCKS: usize = 4;

numbered! {
    /// Where a task's activations are blocked (bits 16..24 of `ConvParams::spatial` and
    /// `PoolParams::spatial`; `ReorderParams::to`).
    ChannelLayout {
        /// Plain NCHW in and out.
        Plain = 0,
        /// Blocked input and output.
        Blocked = 1,
        /// Plain input, blocked output (a conv on a few input channels: the stem).
        PlainToBlocked = 2,
        /// Blocked input, plain output (global pooling, whose `[N, C, 1, …]` output is the
        /// same bytes in both layouts; the reorder back to plain).
        BlockedToPlain = 3,
    }
}

impl ChannelLayout {
    /// Whether the task reads a blocked input 0.
    pub const fn blocked_input(self) -> bool {
        matches!(self, ChannelLayout::Blocked | ChannelLayout::BlockedToPlain)
    }

    /// Whether the task writes a blocked output 0.
    pub const fn blocked_output(self) -> bool {
        matches!(self, ChannelLayout::Blocked | ChannelLayout::PlainToBlocked)
    }
}

/// Channels per input block of a blocked conv's weights: [`BLOCK`] on a blocked input, 1 on
/// a plain one.
pub const fn input_block(layout: ChannelLayout) -> usize {
    if layout.blocked_input() { BLOCK } else { 1 }
}

/// Index in [`super::WeightLayout::Blocked`] order of ONNX weight `[co, ci, i, j]` of a conv with
/// `cout` filters (a multiple of [`BLOCK`]), `cin` input channels, a `kh × kw` kernel and
/// input blocks of `cb` channels: per group of up to [`GROUP_BLOCKS`] output blocks
/// (`fb` of them), `[cin/cb][kh][kw][cb][fb·BLOCK]`, so each tap of an input channel is one
/// contiguous run of the group's output channels.
pub const fn blocked_weight_index(
    dims: [usize; 4],
    cb: usize,
    co: usize,
    ci: usize,
    i: usize,
    j: usize,
) -> usize {
    let [cout, cin, kh, kw] = dims;
    let width = GROUP_BLOCKS * BLOCK;
    let g0 = co / width * width;
    let fb = if cout - g0 < width { cout - g0 } else { width };
    let (cib, c) = (ci / cb, ci % cb);
    g0 * cin * kh * kw + (((cib * kh + i) * kw + j) * cb + c) * fb + (co - g0)
}

/// Packs ONNX-ordered conv weights `[cout, cin, kh, kw]` into [`super::WeightLayout::Blocked`]
/// order for input blocks of `cb` channels. `cout % BLOCK == 0` and `cin % cb == 0` (the
/// compiler blocks only such convs); both slices hold `cout·cin·kh·kw` values. O(weights).
pub fn pack_blocked_weights<T: Copy>(src: &[T], dims: [usize; 4], cb: usize, dst: &mut [T]) {
    let [cout, cin, kh, kw] = dims;
    for co in 0..cout {
        for ci in 0..cin {
            for i in 0..kh {
                for j in 0..kw {
                    let s = ((co * cin + ci) * kh + i) * kw + j;
                    dst[blocked_weight_index(dims, cb, co, ci, i, j)] = src[s];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern crate std;

    #[test]
    fn blocked_weight_order_is_a_permutation() {
        for (dims, cb) in [
            ([80, 32, 3, 3], 16),
            ([64, 3, 7, 7], 1),
            ([16, 16, 1, 1], 16),
        ] {
            let n: usize = dims.iter().product();
            let src: std::vec::Vec<usize> = (0..n).collect();
            let mut dst = std::vec![usize::MAX; n];
            pack_blocked_weights(&src, dims, cb, &mut dst);
            dst.sort_unstable();
            assert_eq!(dst, src, "{dims:?}");
        }
    }
}
