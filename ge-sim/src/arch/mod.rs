//! How each instruction set computes what `ops` defines: the ISA classes and their
//! detection ([`isa`]); the table `ops` calls on every target — [`tile`] (the f32 tile
//! contract and its dispatch), [`kernels`] (f32 entries) and [`qtile`] (int8 entries), each
//! running the chosen ISA's build or saying it did not; and one folder per ISA of
//! hand-written kernels (`x86/avx2`, `x86/avx512`, and what both use). Only this module
//! names a target architecture. The portable path is the kernels' own Rust; these builds
//! are checked bitwise against it (or, where FMA rounds once, against the same FMA order).

pub mod isa;
pub(crate) mod kernels;
#[cfg(feature = "std")]
pub mod peak;
pub(crate) mod qtile;
pub mod tile;
#[cfg(feature = "std")]
pub(crate) mod vec16;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86;

/// Whether [`prefetch_l2`] issues anything: std x86-64 builds (firmware links none of it).
pub(crate) const PREFETCH: bool = cfg!(all(feature = "std", target_arch = "x86_64"));

/// Prefetches to L2 the cache lines of the `len` floats from `p` where the target has a
/// prefetch hint ([`PREFETCH`]); a hint, so `p` need not be valid. O(len / 16).
#[inline(always)]
pub(crate) fn prefetch_l2(p: *const f32, len: usize) {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    x86::prefetch::l2(p, len);
    #[cfg(not(all(feature = "std", target_arch = "x86_64")))]
    let _ = (p, len);
}
