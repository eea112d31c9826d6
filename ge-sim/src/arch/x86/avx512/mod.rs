//! AVX-512 F/BW/VL (32 zmm registers; VNNI where the CPU has it): the f32 GEMM blocks and
//! strips, the int8 GEMM tile, the pointwise int8 conv and requantization, the blocked convolution tile, the
//! depthwise rows and the sigmoid.

#[cfg(feature = "std")]
pub(crate) mod blocked_conv;
#[cfg(feature = "std")]
pub(crate) mod depthwise;
pub(crate) mod depthwise_q8;
pub(crate) mod gemm;
pub(crate) mod pointwise;
pub(crate) mod qconv_quads;
pub(crate) mod qgemm;
pub(crate) mod requant;
#[cfg(feature = "std")]
pub(crate) mod sigmoid;
