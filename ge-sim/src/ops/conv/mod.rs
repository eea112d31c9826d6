//! N-d convolution and transposed convolution (im2col + GEMM).
//!
//! Both ops are normalized to 3 spatial axes (leading unit axes for 1-D / 2-D) and share one
//! geometry: a "big" grid (Conv: the input; ConvTranspose: the output) and a "small" grid
//! (Conv: the output; ConvTranspose: the input) related by `big = small·stride − pad + k·dilation`.
//! Conv gathers the big grid into columns (im2col) and multiplies by the weights; ConvTranspose
//! multiplies by the transposed weights and scatter-adds the columns into the big grid
//! (col2im). Columns are processed in chunks so the workspace stays bounded. Depthwise conv and
//! 1×1 stride-1 conv take direct paths without a column buffer; every other Conv runs the
//! [`direct`] path (the GEMM tile reading a padded copy of the input), the implicit im2col
//! packing only when the direct path's offsets would not fit in 32 bits.

mod depthwise_plane;
mod geometry;
mod im2col;
mod plan;
mod prologue;
mod run;
mod transpose;

use depthwise_plane::*;
pub(crate) use geometry::*;
use im2col::*;
pub use plan::*;
use prologue::*;
pub use run::*;
pub use transpose::*;

#[cfg(feature = "std")]
pub(crate) mod blocked;
mod depthwise;
pub(crate) mod depthwise_blocks;
pub(crate) mod direct;
pub(crate) mod lanes;
mod phase_split;

use ge_runtime::format::{ChannelLayout, ConvParams, Shape, TensorMut, TensorRef, WeightLayout};

use super::copy::{f32_in, f32_out};
use super::gemm::{
    ALayout, Epilogue, MatB, NR, PackB, SendPtr, WS_SLOTS, gemm_packed, gemm_packed_ws_len,
    pack_slot_len, sgemm, sgemm_ws_len, tile_act, ws_f32,
};
use super::{KernelError, KernelResult, input, output};
use crate::arch::isa;
use crate::threads::{Parallel, Serial};

/// Target size of the column buffer, in f32.
const COL_CAP: usize = 1 << 19;
/// Fewest columns per chunk (when a column is longer than `COL_CAP / MIN_COLS`).
const MIN_COLS: usize = 64;
/// Fewest multiply-adds (output elements × taps) worth splitting a depthwise conv between threads.
const PAR_MIN_TAPS: usize = 1 << 16;

#[cfg(test)]
mod tests;
