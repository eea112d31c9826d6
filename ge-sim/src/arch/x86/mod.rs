//! x86-64: the AVX2+FMA and AVX-512 builds, and the L2 prefetch both use.

pub(crate) mod avx2;
pub(crate) mod avx512;
#[cfg(feature = "std")]
pub(crate) mod prefetch;
