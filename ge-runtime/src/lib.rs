//! ge-runtime: the `.om` format and a runtime that executes it without touching the heap.
#![no_std]

#[cfg(feature = "std")]
extern crate std;

pub mod format;
