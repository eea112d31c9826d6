//! x86-64: the AVX2+FMA and AVX-512 builds, and what both use: the L2 prefetch, short copies and the 2-D
//! pooling rows (one generic body per ISA).

pub(crate) mod avx2;
pub(crate) mod avx512;
#[cfg(feature = "std")]
pub(crate) mod f16c;
#[cfg(feature = "std")]
pub(crate) mod prefetch;
pub(crate) mod short_copy;
pub(crate) mod sse2;
#[cfg(all(test, feature = "std"))]
mod tests;
#[cfg(feature = "std")]
pub(crate) mod vec16;
#[cfg(feature = "std")]
pub(crate) mod window2d;
