//! AVX2 + FMA (16 ymm registers): the f32 GEMM tile, the int8 GEMM tile, the blocked
//! convolution tile and the sigmoid.

#[cfg(feature = "std")]
pub(crate) mod blocked_conv;
pub(crate) mod gemm;
pub(crate) mod qgemm;
#[cfg(feature = "std")]
pub(crate) mod sigmoid;
