//! A Conv task whose activations are blocked ([`ChannelLayout`]): its shapes and operands
//! checked and handed to [`crate::kernels::nchwc::conv`] (one group) or
//! [`crate::kernels::nchwc::depthwise`] (one channel per group).

use ge_runtime::format::{ChannelLayout, ConvParams, TensorMut, TensorRef, WeightLayout};

use super::{bad, finish, operands, shapes};
use crate::kernels::copy::f32_out;
use crate::kernels::gemm::{micro::TileAct, tile_act};
use crate::kernels::nchwc::conv::{Geometry, Operands, run};
use crate::kernels::nchwc::depthwise;
use crate::kernels::{KernelResult, output};
use crate::threads::Parallel;

/// Conv on blocked channels: 2-D, one group or depthwise, no prologue, blocked weights.
pub(super) fn run_blocked(
    p: &ConvParams,
    layout: ChannelLayout,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
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
    if p.weight_layout() != Some(WeightLayout::Blocked) || p.prologue.op != 0 {
        return Err(bad(
            "blocked conv: weights must be blocked and no prologue fused",
        ));
    }
    let ops = operands(ins, cout)?;
    if ops.prologue.is_some() {
        return Err(bad("blocked conv: no prologue on blocked channels"));
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
    let bops = Operands {
        x: ops.x,
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
