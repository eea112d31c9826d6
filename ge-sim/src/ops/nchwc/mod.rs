//! Kernels on blocked channels ([`ge_runtime::format::ChannelLayout`], NCHWc with c = 16):
//! the reorder between the layouts (GE's TransData) and the direct convolution
//! ([`conv`], [`depthwise`]); blocked pooling lives with the other pools (`pool::blocked`). The compiler
//! blocks only values whose channel count is a multiple of [`BLOCK`], so a blocked tensor
//! has its plain form's length.

#[cfg(feature = "std")]
pub mod conv;
#[cfg(feature = "std")]
pub mod depthwise;
#[cfg(all(test, feature = "std"))]
mod tests;

use ge_runtime::format::{BLOCK, ChannelLayout, ReorderParams, TensorMut, TensorRef};

use super::copy::{f32_in, f32_out};
use super::{KernelError, KernelResult, input, output};
use crate::arch::isa;

/// `[N, C, S]` of a tensor whose channels are axis 1 (`S` the product of the rest).
fn ncs(dims: &[usize]) -> Result<(usize, usize, usize), KernelError> {
    match dims {
        [n, c, rest @ ..] if c % BLOCK == 0 => Ok((*n, *c, rest.iter().product())),
        _ => Err(KernelError::Shape(
            "reorder: blocked tensors need rank ≥ 2 and channels a multiple of 16",
        )),
    }
}

/// `y[i][l] = x[l][i]` for 16 planes `x` of `s` values (plain → blocked), 16 pixels at a
/// time through a 16×16 tile, so both sides move in runs of 16 values (per-value scatter
/// ran at ~4 GB/s on 26 MB tensors).
#[inline(always)]
fn transpose_tiles(x: &[f32], y: &mut [f32], s: usize) {
    let mut i0 = 0;
    while i0 < s {
        let m = (s - i0).min(BLOCK);
        let mut t = [[0.0f32; BLOCK]; BLOCK];
        for (l, row) in t.iter_mut().enumerate() {
            row[..m].copy_from_slice(&x[l * s + i0..][..m]);
        }
        for (i, px) in y[i0 * BLOCK..][..m * BLOCK]
            .chunks_exact_mut(BLOCK)
            .enumerate()
        {
            for (l, v) in px.iter_mut().enumerate() {
                *v = t[l][i];
            }
        }
        i0 += m;
    }
}

/// The inverse of [`transpose_tiles`] (blocked → plain).
#[inline(always)]
fn transpose_tiles_back(x: &[f32], y: &mut [f32], s: usize) {
    let mut i0 = 0;
    while i0 < s {
        let m = (s - i0).min(BLOCK);
        let mut t = [[0.0f32; BLOCK]; BLOCK];
        for (i, px) in x[i0 * BLOCK..][..m * BLOCK].chunks_exact(BLOCK).enumerate() {
            for (l, &v) in px.iter().enumerate() {
                t[l][i] = v;
            }
        }
        for (l, row) in t.iter().enumerate() {
            y[l * s + i0..][..m].copy_from_slice(&row[..m]);
        }
        i0 += m;
    }
}

/// Reorder: the input in the other layout, same logical shape. O(elements).
pub fn run_reorder(
    p: &ReorderParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let xt = input(ins, 0, "reorder input")?;
    let (n, c, s) = ncs(xt.shape.dims())?;
    let x = f32_in(xt)?;
    let yt = output(outs, 0, "reorder output")?;
    if yt.shape.dims() != xt.shape.dims() {
        return Err(KernelError::Shape("reorder changes the shape"));
    }
    let y = f32_out(yt)?;
    if x.len() != n * c * s || y.len() != x.len() {
        return Err(KernelError::Shape(
            "reorder: tensor length differs from its shape",
        ));
    }
    let to_blocked = match ChannelLayout::from_u32(p.to) {
        Some(ChannelLayout::Blocked) => true,
        Some(ChannelLayout::BlockedToPlain) => false,
        _ => return Err(KernelError::BadParams("reorder: unknown target layout")),
    };
    let groups = n * c / BLOCK;
    isa::with_simd(
        #[inline(always)]
        || {
            for g in 0..groups {
                let (xg, yg) = (
                    &x[g * BLOCK * s..][..BLOCK * s],
                    &mut y[g * BLOCK * s..][..BLOCK * s],
                );
                if to_blocked {
                    transpose_tiles(xg, yg, s);
                } else {
                    transpose_tiles_back(xg, yg, s);
                }
            }
        },
    );
    Ok(())
}
