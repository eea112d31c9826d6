//! ge-sim: the simulated NPU.
#![no_std]

#[cfg(feature = "std")]
extern crate std;

pub mod kernels;
