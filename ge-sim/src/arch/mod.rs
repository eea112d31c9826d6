//! How each instruction set computes what `kernels` defines: the ISA classes and their
//! detection ([`isa`]), and one folder per ISA of hand-written kernels (register tiles,
//! blocked convolution, depthwise rows, sigmoid, int8 tiles, prefetch). The portable path is
//! the kernels' own Rust; these builds are checked bitwise against it (or, where FMA rounds
//! once, against the same FMA order).

pub mod isa;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86;
