//! The `QConv` task: a 2-D integer convolution (ConvInteger, QLinearConv) as im2col on the
//! int8 GEMM ([`qgemm`]), one block of at most [`ROWS`] output positions of one group at a
//! time, so the workspace stays small whatever the image: the block's columns (u8/i8,
//! padding filled with the activation zero point so that it adds nothing) and its
//! `rows × M/group` results, which are then written channel-major into the output; a
//! depthwise conv runs on a padded f32 copy of a band of rows of each channel; a conv whose
//! weight the compiler packed in quads ([`quads`]) multiplies a padded copy
//! of a band of input rows without im2col. How many
//! positions or rows follows from the workspace the planner gave the task ([`Path`]).
//! Weights are packed per group at compile time. O(N·M·H_out·W_out·K).

mod depthwise;
#[cfg(test)]
mod depthwise_tests;
mod geometry;
mod im2col;
mod quads;
#[cfg(test)]
mod quads_tests;
mod run;

use depthwise::*;
pub use geometry::*;
#[cfg(test)]
pub(super) use im2col::transpose_bytes;
use im2col::*;
use quads::*;
pub use quads::{
    Positions, QuadGeo, QuadLayout, pack_quads, positions_fit, quad_layout, quads_len, quads_tile,
};
pub use run::*;

use ge_runtime::format::{
    DType, QCONV_FLIPPED, QConvParams, QGEMM_OUT_I32, QGEMM_OUT_Q8, QGEMM_OUT_Q8_F32,
    QGEMM_OUT_Q8_TFLITE, Shape, TensorMut, TensorRef,
};

use super::task::{activation_zero_point, corrected};
use super::{
    Act, MAX_POINTWISE_CG, QGemm, QOut, QOutParams, Requant, packed_len, pointwise, qgemm,
};
use crate::arch::isa;
use crate::ops::real::Real;
use crate::ops::{KernelError, KernelResult, WORKSPACE_LEVELS, input, output};

/// Output positions per block (a multiple of the tile's rows).
pub const ROWS: usize = 96;
