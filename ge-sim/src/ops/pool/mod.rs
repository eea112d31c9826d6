//! Max / average / Lp pooling, windowed and global (f32).
//!
//! Windows are normalized to 3 spatial axes. A window's taps at `o·stride − pad_begin +
//! t·dilation` that fall outside the input are skipped (they are padding, or lie past the
//! padded input in ceil mode). Average divides by the number of in-input taps
//! (`count_include_pad = 0`) or by the number of taps inside the padded extent
//! `[−pad_begin, in + pad_end)` (`count_include_pad = 1`, as onnxruntime does). Lp is
//! `(Σ |x|^p)^(1/p)` over the in-input taps. An empty window yields 0.

mod fold;
mod geometry;
mod lp;
mod run;

pub(crate) use fold::*;
pub(crate) use geometry::*;
use lp::*;
pub use run::*;

use ge_runtime::format::{
    ChannelLayout, DType, Element, PoolKind, PoolParams, Shape, TensorMut, TensorRef,
};

use super::copy::{checked_len, f32_in, f32_out};
use super::{KernelError, KernelResult, input, output, vmath};
use crate::arch::isa;

#[cfg(feature = "std")]
mod blocked;

/// 2-D windows the tests run on wide rows: (kernel, stride, dilation, pads begin, end).
#[cfg(test)]
pub(crate) type Window = ([usize; 2], [usize; 2], [usize; 2], [usize; 2], [usize; 2]);
#[cfg(test)]
pub(crate) const WINDOWS: [Window; 7] = [
    ([1, 3], [1, 3], [1, 1], [0, 1], [0, 1]),
    ([3, 3], [1, 1], [1, 1], [1, 1], [1, 1]),
    ([3, 3], [2, 2], [1, 1], [0, 0], [1, 1]),
    ([3, 3], [2, 2], [1, 1], [1, 1], [1, 1]),
    ([2, 2], [2, 2], [1, 1], [0, 0], [0, 0]),
    ([1, 5], [1, 3], [1, 2], [0, 3], [0, 2]),
    ([3, 4], [1, 1], [2, 1], [2, 0], [0, 3]),
];

#[cfg(test)]
mod tests;
