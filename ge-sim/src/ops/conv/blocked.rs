//! A Conv task whose activations are blocked ([`ChannelLayout`]): its shapes and operands
//! checked and handed to [`crate::ops::nchwc::conv`] (one group) or
//! [`crate::ops::nchwc::depthwise`] (one channel per group). A fused prologue (a
//! BatchNorm and activation on the input: DenseNet's pre-activation 1×1 convs) is applied
//! to a copy of the input in the workspace first: in the tile it would cost three scalar
//! operations per broadcast.

use ge_runtime::format::{BLOCK, ChannelLayout, ConvParams, TensorMut, TensorRef, WeightLayout};

use super::{bad, finish, operands, shapes};
use crate::ops::copy::f32_out;
use crate::ops::gemm::{micro::TileAct, tile_act};
use crate::ops::nchwc::conv::{Geometry, Operands, run};
use crate::ops::nchwc::depthwise;
use crate::ops::{KernelResult, output};
use crate::threads::Parallel;

/// Conv on blocked channels: 2-D, one group or depthwise, blocked weights; a prologue only
/// on a blocked input of one group (its transformed copy in `work`).
pub(super) fn run_blocked(
    p: &ConvParams,
    layout: ChannelLayout,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    work: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    let (xs, ws, ys) = shapes(ins, outs)?;
    let (&[n, cin, h, w], &[cout, wc, kh, kw], &[yn, yc, oh, ow]) =
        (xs.dims(), ws.dims(), ys.dims())
    else {
        return Err(bad("blocked conv: 2-D convs only"));
    };
    let depthwise = p.group as usize == cin && cin == cout && wc == 1;
    if p.rank() != 2 || (p.group != 1 && !depthwise) || wc * p.group as usize != cin {
        return Err(bad(
            "blocked conv: shapes disagree (2-D, one group or one channel per group)",
        ));
    }
    if yn != n || yc != cout {
        return Err(bad("blocked conv: output shape disagrees with the input"));
    }
    if p.weight_layout() != Some(WeightLayout::Blocked) {
        return Err(bad("blocked conv: weights must be blocked"));
    }
    let ops = operands(ins, cout)?;
    // A prologue is its scale and shift (inputs 4 and 5), as on the plain path: a
    // BatchNorm fused without an activation has `p.prologue.op == 0`.
    if ops.prologue.is_some() && (depthwise || layout != ChannelLayout::Blocked) {
        return Err(bad(
            "blocked conv: a prologue needs a blocked input of one group",
        ));
    }
    let geo = Geometry {
        n,
        cin,
        h,
        w,
        cout,
        oh,
        ow,
        kernel: [kh, kw],
        stride: [p.stride[0] as usize, p.stride[1] as usize],
        dilation: [p.dilation[0] as usize, p.dilation[1] as usize],
        pad: [p.pad_begin[0] as usize, p.pad_begin[1] as usize],
        layout,
    };
    let act = tile_act(&p.act);
    let y = f32_out(output(outs, 0, "conv output")?)?;
    let x = match ops.prologue {
        Some((scale, shift)) => {
            let pro = tile_act(&p.prologue).ok_or(bad(
                "blocked conv: the prologue's activation has no vector form",
            ))?;
            let len = n * cin * h * w;
            let xt = work
                .get_mut(..len * 4)
                .ok_or(bad("blocked conv: workspace smaller than the input"))?;
            let xt: &mut [f32] = bytemuck::try_cast_slice_mut(xt)
                .map_err(|_| bad("blocked conv: workspace misaligned"))?;
            if scale.len() != cin || shift.len() != cin || ops.x.len() < len {
                return Err(bad(
                    "blocked conv: prologue or input shorter than its shape",
                ));
            }
            prologue(&ops.x[..len], scale, shift, pro, xt, h * w);
            &xt[..]
        }
        None => ops.x,
    };
    let bops = Operands {
        x,
        w: ops.w,
        bias: ops.bias,
        residual: ops.residual,
        act: act.unwrap_or(TileAct::None),
    };
    if depthwise {
        depthwise::run(&geo, &bops, y, par)?;
    } else {
        run(&geo, &bops, y, par)?;
    }
    // An activation the tile cannot apply runs as a pass (elementwise: any layout).
    if act.is_none() { finish(p, y) } else { Ok(()) }
}

/// `xt = act(x · scale + shift)` per channel of blocked `x` (`plane` pixels of 16 channels
/// per block), as the plain conv's packing applies a prologue (a multiply, then an add),
/// 16 lanes at a time. O(input).
fn prologue(x: &[f32], scale: &[f32], shift: &[f32], act: TileAct, xt: &mut [f32], plane: usize) {
    use crate::ops::gemm::micro::act_scalar;
    if crate::arch::kernels::blocked_prologue(x, scale, shift, act, xt, plane) {
        return;
    }
    // One build per activation kind, the match outside the loop (inside it, a branch per
    // value kept the loop scalar: 40% on DenseNet's 1×1 convs).
    match act {
        TileAct::None => each(x, scale, shift, xt, plane, |v| v),
        TileAct::Clamp { lo, hi } => each(x, scale, shift, xt, plane, move |v| {
            act_scalar(TileAct::Clamp { lo, hi }, v)
        }),
        TileAct::Leaky { alpha } => each(x, scale, shift, xt, plane, move |v| {
            act_scalar(TileAct::Leaky { alpha }, v)
        }),
        #[cfg(feature = "std")]
        other => each(x, scale, shift, xt, plane, move |v| act_scalar(other, v)),
    }
}

/// [`prologue`] with the activation `f`.
#[inline(always)]
fn each(
    x: &[f32],
    scale: &[f32],
    shift: &[f32],
    xt: &mut [f32],
    plane: usize,
    f: impl Fn(f32) -> f32 + Copy,
) {
    crate::arch::isa::with_simd(
        #[inline(always)]
        || {
            for (xb, tb, s, t) in channel_blocks(x, scale, shift, xt, plane) {
                for (px, out) in xb.chunks_exact(BLOCK).zip(tb.chunks_exact_mut(BLOCK)) {
                    for l in 0..BLOCK {
                        out[l] = f(px[l] * s[l] + t[l]);
                    }
                }
            }
        },
    );
}

/// Each channel block of `x` and `xt` (`plane` pixels of 16 channels; images follow each
/// other) with its 16 scales and shifts.
#[inline(always)]
pub(crate) fn channel_blocks<'a>(
    x: &'a [f32],
    scale: &'a [f32],
    shift: &'a [f32],
    xt: &'a mut [f32],
    plane: usize,
) -> impl Iterator<Item = (&'a [f32], &'a mut [f32], &'a [f32], &'a [f32])> {
    let blocks = scale.len() / BLOCK;
    x.chunks_exact(plane * BLOCK)
        .zip(xt.chunks_exact_mut(plane * BLOCK))
        .enumerate()
        .map(move |(i, (xb, tb))| {
            let c0 = i % blocks * BLOCK;
            (xb, tb, &scale[c0..c0 + BLOCK], &shift[c0..c0 + BLOCK])
        })
}
