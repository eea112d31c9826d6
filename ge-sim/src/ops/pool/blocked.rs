//! Pooling on blocked channels ([`ge_runtime::format::ChannelLayout`]): a block's 16 channels
//! of one pixel are one vector, so every window tap is one vector max or add across the
//! block, with the plain path's per-channel semantics (taps skipped in the padding, the same
//! divisor, NaN wins a max). Taps are folded in the same order as in [`super::fold_windows`]'
//! general loop. O(output · taps).

use ge_runtime::format::{BLOCK, PoolKind};

use super::{Axis, max_fin, max_step};
use crate::ops::KernelError;

/// Windowed max or average pooling of blocked `x` into blocked `y` (`n·C/16` groups of
/// planes, each `Π inp` or `Π out` pixels of [`BLOCK`] channels). Inlined into the caller's
/// [`crate::arch::isa::with_simd`]: out of line, its 16-lane loops compiled for the
/// baseline (SSE2 blends: 2.7× onnxruntime on SqueezeNet's pools).
#[inline(always)]
pub(super) fn pool(
    x: &[f32],
    y: &mut [f32],
    ax: &[Axis; 3],
    kind: PoolKind,
    include_pad: bool,
) -> Result<(), KernelError> {
    let xp = ax[0].inp * ax[1].inp * ax[2].inp * BLOCK;
    let yp = ax[0].out * ax[1].out * ax[2].out * BLOCK;
    if xp == 0 || yp == 0 {
        return Ok(());
    }
    if !x.len().is_multiple_of(xp) || !y.len().is_multiple_of(yp) || x.len() / xp != y.len() / yp {
        return Err(KernelError::Shape(
            "blocked pool: tensors are not whole blocks",
        ));
    }
    match kind {
        PoolKind::Max => fold(x, y, ax, xp, yp, f32::NEG_INFINITY, max_step, max_fin),
        PoolKind::Average => fold(
            x,
            y,
            ax,
            xp,
            yp,
            0.0,
            |a, v| a + v,
            |a, n, padded| {
                let n = if include_pad { padded } else { n };
                if n == 0 { 0.0 } else { a / n as f32 }
            },
        ),
        PoolKind::Lp => Err(KernelError::BadParams(
            "blocked pool: Lp pooling is not blocked",
        )),
    }
}

/// [`pool`]'s loop for one fold (generic, so `step` inlines into the 16-lane loop).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn fold(
    x: &[f32],
    y: &mut [f32],
    ax: &[Axis; 3],
    xp: usize,
    yp: usize,
    init: f32,
    step: impl Fn(f32, f32) -> f32,
    fin: impl Fn(f32, usize, usize) -> f32,
) -> Result<(), KernelError> {
    for (xg, yg) in x.chunks_exact(xp).zip(y.chunks_exact_mut(yp)) {
        let mut out = yg.chunks_exact_mut(BLOCK);
        for o0 in 0..ax[0].out {
            let (l0, h0, p0) = ax[0].taps(o0);
            for o1 in 0..ax[1].out {
                let (l1, h1, p1) = ax[1].taps(o1);
                for o2 in 0..ax[2].out {
                    let (l2, h2, p2) = ax[2].taps(o2);
                    let mut acc = [init; BLOCK];
                    for t0 in l0..h0 {
                        let i0 = ax[0].index(o0, t0);
                        for t1 in l1..h1 {
                            let i1 = ax[1].index(o1, t1);
                            for t2 in l2..h2 {
                                let i2 = ax[2].index(o2, t2);
                                let at = ((i0 * ax[1].inp + i1) * ax[2].inp + i2) * BLOCK;
                                let v: &[f32; BLOCK] = xg[at..at + BLOCK]
                                    .try_into()
                                    .map_err(|_| KernelError::Shape("blocked pool tap"))?;
                                for (a, &v) in acc.iter_mut().zip(v) {
                                    *a = step(*a, v);
                                }
                            }
                        }
                    }
                    let n = (h0 - l0) * (h1 - l1) * (h2 - l2);
                    let padded = p0 * p1 * p2;
                    let Some(o) = out.next() else {
                        return Err(KernelError::Shape("blocked pool output"));
                    };
                    for (o, &a) in o.iter_mut().zip(&acc) {
                        *o = fin(a, n, padded);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Global max or average pooling of blocked `x` (`groups` of `plane` pixels) into `y`,
/// `[N, C, 1, …]`: the same bytes plain or blocked. Pixels are folded in order. Inlined into
/// the caller's `with_simd`, as [`pool`].
#[inline(always)]
pub(super) fn global(
    x: &[f32],
    y: &mut [f32],
    plane: usize,
    kind: PoolKind,
) -> Result<(), KernelError> {
    if x.len() != y.len() * plane || !y.len().is_multiple_of(BLOCK) {
        return Err(KernelError::Shape(
            "blocked global pool: tensors are not whole blocks",
        ));
    }
    if plane == 0 {
        y.fill(0.0);
        return Ok(());
    }
    for (xg, yg) in x.chunks_exact(plane * BLOCK).zip(y.chunks_exact_mut(BLOCK)) {
        let acc = match kind {
            PoolKind::Max => {
                xg.chunks_exact(BLOCK)
                    .fold([f32::NEG_INFINITY; BLOCK], |mut acc, px| {
                        for (a, &v) in acc.iter_mut().zip(px) {
                            *a = max_step(*a, v);
                        }
                        acc
                    })
            }
            PoolKind::Average => {
                let mut acc = xg.chunks_exact(BLOCK).fold([0.0f32; BLOCK], |mut acc, px| {
                    for (a, &v) in acc.iter_mut().zip(px) {
                        *a += v;
                    }
                    acc
                });
                acc.iter_mut().for_each(|a| *a /= plane as f32);
                acc
            }
            PoolKind::Lp => {
                return Err(KernelError::BadParams(
                    "blocked pool: Lp pooling is not blocked",
                ));
            }
        };
        yg.copy_from_slice(&acc);
    }
    Ok(())
}
