//! ge-sim: a simulated Da Vinci-like NPU.
//!
//! The device runs a validated `.om` model's task list in order. Each task's kernel computes
//! real results on the host ([`ops`]: what each kernel computes, one folder per family, one
//! [`ops::registry`] entry per task kind
//! holds its kernel, workspace size, work estimate and capabilities). Kernels report no work:
//! the analytic [`cost`] model estimates a task's work from its kind, parameters and shapes
//! alone — the same figure the compiler predicts with — and turns it and the bytes the task
//! moves into device cycles; the [`device`] keeps the timeline (launch overheads in
//! host-dispatched mode, one launch in sink mode).
//!
//! Profiles ([`profile::Profile`]) are sized from public figures for this class of part:
//! a cube does 16×16×16 fp16 MACs per cycle, fp32 is charged at a quarter of that; edge parts
//! have 1–2 cores and ~25 GB/s LPDDR, data-centre parts 20–32 cores and ~1.2 TB/s HBM.
#![no_std]
// Every `unsafe` block states why it is sound in a `// SAFETY:` comment.
#![deny(clippy::undocumented_unsafe_blocks)]
// Panics policy: library code returns errors; `unwrap`/`expect`/`panic!` are denied outside
// tests. Exceptions carry an `#[allow(..., reason = "...")]` naming the invariant.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

#[cfg(feature = "std")]
extern crate std;

/// How each ISA computes it: detection and one folder per instruction set.
pub mod arch;
pub mod cost;
pub mod device;
pub mod ops;
pub mod profile;
#[cfg(feature = "std")]
pub mod race;
pub mod target;
pub mod threads;

pub use device::{LaunchMode, NoObserver, Observer, Profile, RunReport, SimDevice, TaskRecord};
