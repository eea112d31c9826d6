//! AVX2 + FMA (16 ymm registers): the f32 GEMM tile and its one-column form, the int8 GEMM
//! tile, the pointwise int8 conv and eight-lane requantization, the blocked convolution tile, the lanes convolution (output channels in lanes), the
//! whole-plane max and the sigmoid.

#[cfg(feature = "std")]
pub(crate) mod blocked_conv;
#[cfg(feature = "std")]
pub(crate) mod conv_lanes;
pub(crate) mod depthwise_q8;
pub(crate) mod gemm;
#[cfg(feature = "std")]
pub(crate) mod gemm_column;
#[cfg(feature = "std")]
pub(crate) mod max_planes;
pub(crate) mod plane_sums;
pub(crate) mod pointwise;
pub(crate) mod qconv_quads;
pub(crate) mod qgemm;
pub(crate) mod qlinear_add;
pub(crate) mod requant;
#[cfg(feature = "std")]
pub(crate) mod sigmoid;
pub(crate) mod split_pairs;

/// The i16 pair `(lo, hi)` as the one i32 lane `vpmaddwd` reads (a weight pair broadcast).
#[inline(always)]
pub(crate) fn i16_pair(lo: i8, hi: i8) -> i32 {
    (i32::from(lo) & 0xffff) | (i32::from(hi) << 16)
}
