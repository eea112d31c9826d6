//! Gemm and batched MatMul on a shared f32 GEMM core.
//!
//! [`gemm_packed`] is a cache-blocked GEMM: op(B) is packed in `GEMM_KC × NC` blocks into
//! `NR`-column panels (by a [`PackB`] source: a matrix, or a convolution's implicit im2col),
//! in the caller's workspace (one packing slot per host thread, planned in the arena);
//! op(A) is read in place (row-major or transposed, any leading dimension), a `MR`-row
//! micro-panel staying in L1 while B panels stream from L2; the `MR × NR` register tile
//! ([`micro`]: AVX2+FMA chosen at run time, or the portable build) applies the epilogue
//! (alpha, accumulate, per-row bias, Relu/Clip/LeakyRelu/HardSwish) while the tile is in registers.
//! Work is split between host threads by output tiles, so every element is computed by the
//! same instructions whatever the thread count.

mod driver;
mod gemv;
mod matmul;
pub use crate::arch::tile as micro;
mod pack;
#[cfg(feature = "std")]
pub use crate::arch::peak;
mod sgemm;
mod task;
mod workspace;

pub use driver::*;
pub use gemv::*;
pub use matmul::*;
pub use pack::*;
pub use sgemm::*;
pub use task::*;
pub use workspace::*;

use ge_runtime::format::{
    Activation, DType, GEMM_B_PANEL, GemmParams, MAX_RANK, Shape, TensorMut, TensorRef, UnaryOp,
    gemm_b_index,
};

pub use micro::{MR, NR, TileAct, TileEp};

use super::broadcast::{broadcast_strides, for_each_row};
use super::copy::{checked_len, f32_in, f32_out};
use super::{KernelError, KernelResult, input, output};
use crate::threads::{Parallel, Serial};

/// K blocks are the format's (`gemm_k_block`): pre-packed Bs (GemmW8, GemmPacked) are
/// stored in them.
pub(crate) use ge_runtime::format::gemm_k_block as k_block;

const _: () = assert!(
    NR == GEMM_B_PANEL,
    "pre-packed B panels are the tile's columns"
);
/// Largest N block (columns of a packed B block): a 256 × 128 block (128 KB) stays in L2
/// beside the A rows and C tiles streaming past it (512 columns filled all of a 512 KB L2).
const NC: usize = 128;
/// Packing slots planned in a GEMM's workspace: the most host threads one GEMM uses.
pub const WS_SLOTS: usize = 4;
/// Below this many multiply-adds a GEMM runs on one thread.
pub(crate) const PAR_MIN_MACS: usize = 1 << 18;

/// The epilogue of a [`gemm_packed`]:
/// `C = act(alpha · op(A)·op(B) (+ C) (+ bias[row]) (+ R))`.
#[derive(Clone, Copy, Debug)]
pub struct Epilogue<'a> {
    pub alpha: f32,
    pub accumulate: bool,
    /// One value per row of C.
    pub row_bias: Option<&'a [f32]>,
    /// A residual `R` laid out like C (values, leading dimension): a skip connection added
    /// while the tile is in registers, so the separate Add and its memory round trip vanish.
    pub residual: Option<(&'a [f32], usize)>,
    pub act: TileAct,
}

impl Epilogue<'_> {
    /// `C = op(A)·op(B)`.
    pub const PLAIN: Epilogue<'static> = Epilogue {
        alpha: 1.0,
        accumulate: false,
        row_bias: None,
        residual: None,
        act: TileAct::None,
    };
}

/// The in-register form of a fused activation, if it has one.
pub fn tile_act(act: &Activation) -> Option<TileAct> {
    match UnaryOp::from_u32(act.op) {
        _ if act.op == 0 => Some(TileAct::None),
        Some(UnaryOp::Relu) => Some(TileAct::Clamp {
            lo: 0.0,
            hi: f32::INFINITY,
        }),
        Some(UnaryOp::Clip) if !act.alpha.is_nan() && !act.beta.is_nan() => Some(TileAct::Clamp {
            lo: act.alpha,
            hi: act.beta,
        }),
        Some(UnaryOp::LeakyRelu) => Some(TileAct::Leaky { alpha: act.alpha }),
        #[cfg(feature = "std")]
        Some(UnaryOp::HardSwish) => Some(TileAct::HardSwish),
        #[cfg(feature = "std")]
        Some(UnaryOp::Sigmoid) => Some(TileAct::Sigmoid),
        #[cfg(feature = "std")]
        Some(UnaryOp::Silu) => Some(TileAct::Silu),
        Some(UnaryOp::Identity) => Some(TileAct::None),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
