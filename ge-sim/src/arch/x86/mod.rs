//! x86-64: the AVX2+FMA and AVX-512 builds, and what both use: the L2 prefetch and the 2-D
//! pooling rows (one generic body per ISA).

pub(crate) mod avx2;
pub(crate) mod avx512;
#[cfg(feature = "std")]
pub(crate) mod prefetch;
#[cfg(feature = "std")]
pub(crate) mod window2d;
