//! The Conv task: decoding its operands, planning, and running the chosen path per batch and
//! group, split between host threads.

use super::*;

pub(super) struct Operands<'a> {
    pub(super) x: &'a [f32],
    pub(super) w: &'a [f32],
    pub(super) bias: Option<&'a [f32]>,
    /// Conv only: a skip connection shaped like the output, added before the activation.
    pub(super) residual: Option<&'a [f32]>,
    /// Conv only: per-input-channel scale and shift applied (with `ConvParams::prologue`)
    /// to the input while it is packed.
    pub(super) prologue: Option<(&'a [f32], &'a [f32])>,
}

pub(super) fn operands<'a>(
    ins: &[Option<TensorRef<'a>>],
    m: usize,
) -> Result<Operands<'a>, KernelError> {
    let x = f32_in(input(ins, 0, "conv input")?)?;
    let w = f32_in(input(ins, 1, "conv weights")?)?;
    let bias = match ins.get(2).and_then(|t| t.as_ref()) {
        Some(b) => {
            let b = f32_in(b)?;
            if b.len() != m {
                return Err(bad("conv bias length differs from the output channels"));
            }
            Some(b)
        }
        None => None,
    };
    let residual = match ins.get(3).and_then(|t| t.as_ref()) {
        Some(r) => Some(f32_in(r)?),
        None => None,
    };
    let prologue = match (
        ins.get(4).and_then(|t| t.as_ref()),
        ins.get(5).and_then(|t| t.as_ref()),
    ) {
        (Some(s), Some(t)) => Some((f32_in(s)?, f32_in(t)?)),
        (None, None) => None,
        _ => return Err(bad("conv prologue needs both scale and shift")),
    };
    Ok(Operands {
        x,
        w,
        bias,
        residual,
        prologue,
    })
}

pub(super) fn shapes(
    ins: &[Option<TensorRef<'_>>],
    outs: &[TensorMut<'_>],
) -> Result<(Shape, Shape, Shape), KernelError> {
    let x = input(ins, 0, "conv input")?.shape;
    let w = input(ins, 1, "conv weights")?.shape;
    let y = outs
        .first()
        .ok_or(KernelError::MissingTensor("conv output"))?
        .shape;
    Ok((x, w, y))
}

/// Conv: `Y = W ⋆ X + B (+ R)`, then the fused activation.
pub fn run_conv(
    p: &ConvParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    run_conv_on(p, ins, outs, ws, &Serial)
}

/// [`run_conv`] with its GEMMs split between the slots of `par`.
pub fn run_conv_on(
    p: &ConvParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    // Firmware (no std) runs plain layouts only; its blobs are compiled with the binary.
    #[cfg(feature = "std")]
    match p.channel_layout() {
        Some(ChannelLayout::Plain) => {}
        Some(l @ (ChannelLayout::Blocked | ChannelLayout::PlainToBlocked)) => {
            return blocked::run_blocked(p, l, ins, outs, ws, par);
        }
        _ => return Err(bad("conv: unsupported channel layout")),
    }
    let (xs, wsh, ysh) = shapes(ins, outs)?;
    let mut pl = plan(p, false, &xs, &wsh, &ysh)?;
    if matches!(pl.path, Path::Direct(_)) && pl.gemm_len.saturating_mul(4) > ws.len() {
        // Less workspace than preferred: the planner gave this conv a smaller level where
        // the arena peaks ([`conv_workspace_levels`]), or an older ge planned the blob.
        // Narrower bands if they fit, else im2col (an older blob, planned before the direct
        // path took this shape).
        match direct::layout_within(&pl.geo, ws.len() / 4) {
            Some(lay) => {
                pl.path = Path::Direct(lay);
                pl.gemm_len = lay.ws_len();
            }
            // Older blobs reach std users only (firmware compiles its blob with the
            // binary), so firmware links no im2col fallback.
            None if cfg!(feature = "std") => {
                pl.path = Path::Implicit;
                pl.gemm_len = gemm_packed_ws_len(pl.geo.small_plane, pl.rows);
            }
            None => {}
        }
    }
    #[cfg(feature = "std")]
    if crate::arch::kernels::CONV_LANES
        && crate::arch::kernels::conv_lanes_preferred()
        && let Some(lay) = lanes_layout(&pl.geo, pl.path)
        && lanes::ws_len(&pl.geo, &lay).saturating_mul(4) <= ws.len()
    {
        // AVX2 (its tiles have no compressing store, so row tiles waste lanes on narrow
        // rows): output channels in the lanes instead.
        pl.path = Path::Lanes(lay);
        pl.gemm_len = lanes::ws_len(&pl.geo, &lay);
    }
    if cfg!(feature = "std")
        && let Path::Direct(lay) = pl.path
        && lay.narrow
        && !direct::flat_here()
    {
        // Narrow rows on row tiles would waste most lanes: im2col, which the plan left
        // room for.
        pl.path = Path::Implicit;
        pl.gemm_len = gemm_packed_ws_len(pl.geo.small_plane, pl.rows);
    }
    if matches!(pl.path, Path::Implicit | Path::Pointwise)
        && pl.gemm_len.saturating_mul(4) > ws.len()
    {
        // A smaller level ([`conv_workspace_levels`]): as many packing slots as it holds
        // (one is all a one-thread run uses).
        let slot = pack_slot_len(pl.geo.small_plane, pl.rows).max(1);
        let slots = (ws.len() / 4).saturating_sub(pl.col_len) / slot;
        if slots >= 1 {
            pl.gemm_len = pl.gemm_len.min(slots * slot);
        }
    }
    if cfg!(feature = "std")
        && pl.path == Path::Implicit
        && pl.gemm_len.saturating_mul(4) > ws.len()
    {
        // A strided 1×1 conv planned by an older ge, for the direct path.
        if let Some(lay) = direct::layout_within(&pl.geo, ws.len() / 4) {
            pl.path = Path::Direct(lay);
            pl.gemm_len = lay.ws_len();
        }
    }
    if cfg!(feature = "std")
        && matches!(pl.path, Path::Depthwise(Some(_)))
        && pl.gemm_len.saturating_mul(4) > ws.len()
    {
        // Likewise a depthwise conv planned with less workspace: shorter bands, else the
        // row loop.
        let lay = depthwise::layout_within(&pl.geo, ws.len() / 4);
        pl.path = Path::Depthwise(lay);
        pl.gemm_len = lay.map_or(0, |l| l.ws_len());
    }
    #[cfg(feature = "std")]
    if crate::arch::kernels::DEPTHWISE_BLOCKS
        && matches!(pl.path, Path::Depthwise(Some(_)))
        && crate::arch::kernels::depthwise_blocks_preferred()
        && let Some(lay) = depthwise_blocks::layout(&pl.geo)
        && lay.ws_len().saturating_mul(4) <= ws.len()
    {
        pl.path = Path::DepthwiseBlocked(lay);
        pl.gemm_len = lay.ws_len();
    }
    run_conv_planned(p, &pl, ins, outs, ws, par)
}

/// [`run_conv_on`] on a given plan (tests force the im2col path through it).
pub(super) fn run_conv_planned(
    p: &ConvParams,
    pl: &Plan,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    let geo = pl.geo;
    let ops = operands(ins, geo.m)?;
    let y = f32_out(output(outs, 0, "conv output")?)?;
    if y.is_empty() {
        return Ok(());
    }
    if ops.residual.is_some_and(|r| r.len() != y.len()) {
        return Err(bad("conv residual differs from the output in size"));
    }
    let prologue = match ops.prologue {
        Some((scale, shift)) => {
            let padded = p.pad_begin.iter().chain(&p.pad_end).any(|&v| v != 0);
            let act = tile_act(&p.prologue).ok_or(bad("conv prologue activation"))?;
            if padded || geo.g != 1 || pl.path.depthwise() {
                return Err(bad("conv prologue needs an unpadded, ungrouped conv"));
            }
            if scale.len() != geo.c || shift.len() != geo.c {
                return Err(bad("conv prologue length differs from the input channels"));
            }
            Some((scale, shift, act))
        }
        None => None,
    };
    let gws = ws_f32(ws, pl.col_len + pl.gemm_len)?;
    let (xp, yp) = (geo.big_plane, geo.small_plane);
    let krows = pl.rows;
    let act = tile_act(&p.act);
    for b in 0..geo.n {
        let xb = &ops.x[b * geo.c * xp..(b + 1) * geo.c * xp];
        let yb = &mut y[b * geo.m * yp..(b + 1) * geo.m * yp];
        match pl.path {
            Path::Depthwise(lay) => {
                let (w, bias) = (ops.w, ops.bias);
                let yptr = SendPtr(yb.as_mut_ptr());
                let slots = par.threads().min(geo.c).clamp(1, WS_SLOTS);
                let slots = if geo.c * yp * geo.kprod < PAR_MIN_TAPS {
                    1
                } else {
                    slots
                };
                let band_len = lay.map_or(0, |l| l.slot_len());
                let bptr = SendPtr(gws.as_mut_ptr());
                let rb = ops
                    .residual
                    .map(|r| &r[b * geo.m * yp..(b + 1) * geo.m * yp]);
                let body = |s: usize| {
                    // SAFETY: slot `s` alone uses band `s` of the planned workspace
                    // (`WS_SLOTS` bands of `band_len`; `slots ≤ WS_SLOTS`).
                    let band = unsafe {
                        core::slice::from_raw_parts_mut(bptr.get().add(s * band_len), band_len)
                    };
                    let offs = lay
                        .as_ref()
                        .filter(|_| cfg!(feature = "std"))
                        .map(|l| depthwise::Offsets::new(&geo, l));
                    // One ISA switch per slot, not per channel (small planes are many).
                    isa::with_simd(
                        #[inline(always)]
                        || {
                            for ch in s * geo.c / slots..(s + 1) * geo.c / slots {
                                // SAFETY: slot `s` alone writes channels
                                // `s·c/slots..(s+1)·c/slots` of this batch's output, all
                                // inside `yb`.
                                let yc = unsafe {
                                    core::slice::from_raw_parts_mut(yptr.get().add(ch * yp), yp)
                                };
                                let bv = bias.map_or(0.0, |bv| bv[ch]);
                                let (xc, wc) = (
                                    &xb[ch * xp..(ch + 1) * xp],
                                    &w[ch * geo.kprod..(ch + 1) * geo.kprod],
                                );
                                let rc = rb.map(|r| &r[ch * yp..(ch + 1) * yp]);
                                match (&lay, &offs) {
                                    // (statically dead without std: see `plan`)
                                    (Some(l), Some(o)) if cfg!(feature = "std") => {
                                        depthwise::plane(
                                            &geo,
                                            l,
                                            o,
                                            xc,
                                            wc,
                                            bv,
                                            rc,
                                            act.unwrap_or(crate::ops::gemm::TileAct::None),
                                            yc,
                                            band,
                                            ch == s * geo.c / slots,
                                        )
                                    }
                                    _ => {
                                        yc.fill(bv);
                                        depthwise_plane(&geo, xc, wc, yc);
                                        if let Some(r) = rc {
                                            yc.iter_mut().zip(r).for_each(|(v, r)| *v += r);
                                        }
                                    }
                                }
                            }
                        },
                    );
                };
                if slots == 1 {
                    body(0);
                } else {
                    par.run(slots, &body);
                }
            }
            Path::Pointwise | Path::Implicit => {
                for g in 0..geo.g {
                    let xg = &xb[g * geo.cg * xp..(g + 1) * geo.cg * xp];
                    let wg = &ops.w[g * geo.mg * krows..(g + 1) * geo.mg * krows];
                    let yg = &mut yb[g * geo.mg * yp..(g + 1) * geo.mg * yp];
                    let ep = Epilogue {
                        alpha: 1.0,
                        accumulate: false,
                        row_bias: ops.bias.map(|bv| &bv[g * geo.mg..(g + 1) * geo.mg]),
                        residual: ops.residual.map(|r| {
                            let at = b * geo.m * yp + g * geo.mg * yp;
                            (&r[at..at + geo.mg * yp], yp)
                        }),
                        act: act.unwrap_or(crate::ops::gemm::TileAct::None),
                    };
                    let pointwise = MatB {
                        b: xg,
                        ld: xp,
                        trans: false,
                    };
                    let implicit = Im2col { geo: &geo, x: xg };
                    let mut src: &dyn PackB = if pl.path == Path::Pointwise {
                        &pointwise
                    } else {
                        &implicit
                    };
                    let with_prologue;
                    if let Some((scale, shift, act)) = prologue {
                        with_prologue = Prologue {
                            inner: src,
                            scale,
                            shift,
                            rows_per_channel: geo.kprod,
                            act,
                        };
                        src = &with_prologue;
                    }
                    let al = if geo.packed {
                        ALayout::Panels
                    } else {
                        ALayout::Strided { rs: krows, cs: 1 }
                    };
                    gemm_packed(geo.mg, yp, krows, wg, al, src, yg, yp, &ep, gws, par)?;
                }
            }
            Path::Direct(lay) => {
                for g in 0..geo.g {
                    let grp = direct_group(&geo, &ops, xb, yb, b, g, act, prologue);
                    direct::run(&geo, &lay, grp, gws, par)?;
                }
            }
            #[cfg(feature = "std")]
            Path::Lanes(lay) => {
                for g in 0..geo.g {
                    let grp = direct_group(&geo, &ops, xb, yb, b, g, act, prologue);
                    crate::arch::kernels::conv_lanes(&geo, &lay, grp, gws, par)
                        .ok_or(KernelError::BadParams("conv lanes path without AVX2"))??;
                }
            }
            #[cfg(feature = "std")]
            Path::DepthwiseBlocked(lay) => {
                let rb = ops
                    .residual
                    .map(|r| &r[b * geo.m * yp..(b + 1) * geo.m * yp]);
                let act = act.unwrap_or(crate::ops::gemm::TileAct::None);
                run_depthwise_blocks(&geo, &lay, xb, &ops, rb, act, yb, gws, par)?;
            }
            Path::Columns { .. } => return Err(KernelError::BadParams("conv plan")),
        }
    }
    if pl.path.fuses_act() && act.is_some() {
        // applied in the GEMM's epilogue (or the depthwise blocks' store)
        return Ok(());
    }
    finish(p, y)
}

/// Group `g` of batch item `b` (input `xb`, output `yb`) as the direct and lanes paths
/// take it.
#[allow(clippy::too_many_arguments)]
pub(super) fn direct_group<'a>(
    geo: &Geo,
    ops: &Operands<'a>,
    xb: &'a [f32],
    yb: &'a mut [f32],
    b: usize,
    g: usize,
    act: Option<crate::ops::gemm::TileAct>,
    prologue: Option<(&'a [f32], &'a [f32], crate::ops::gemm::TileAct)>,
) -> direct::Group<'a> {
    let (xp, yp, k) = (geo.big_plane, geo.small_plane, geo.cg * geo.kprod);
    let at = b * geo.m * yp + g * geo.mg * yp;
    direct::Group {
        x: &xb[g * geo.cg * xp..(g + 1) * geo.cg * xp],
        w: &ops.w[g * geo.mg * k..(g + 1) * geo.mg * k],
        y: &mut yb[g * geo.mg * yp..(g + 1) * geo.mg * yp],
        bias: ops.bias.map(|bv| &bv[g * geo.mg..(g + 1) * geo.mg]),
        residual: ops.residual.map(|r| &r[at..at + geo.mg * yp]),
        act: act.unwrap_or(crate::ops::gemm::TileAct::None),
        prologue,
    }
}

/// One batch of a depthwise conv in channel blocks ([`depthwise_blocks`]): blocks of 16
/// channels split between thread slots (each channel's values are the same on any split).
/// An error where the ISA has no such kernel (the path is only planned where it has).
#[cfg(feature = "std")]
#[allow(clippy::too_many_arguments)]
pub(super) fn run_depthwise_blocks(
    geo: &Geo,
    lay: &depthwise_blocks::Layout,
    xb: &[f32],
    ops: &Operands<'_>,
    rb: Option<&[f32]>,
    act: crate::ops::gemm::TileAct,
    yb: &mut [f32],
    gws: &mut [f32],
    par: &dyn Parallel,
) -> KernelResult {
    use depthwise_blocks::LANES;
    let missing = core::sync::atomic::AtomicBool::new(false);
    let (xp, yp, taps) = (geo.big_plane, geo.small_plane, geo.kprod);
    let blocks = geo.c.div_ceil(LANES);
    let slots = if geo.c * yp * taps < PAR_MIN_TAPS {
        1
    } else {
        par.threads().min(blocks).clamp(1, WS_SLOTS)
    };
    let slot_len = lay.slot_len();
    let (yptr, bptr) = (SendPtr(yb.as_mut_ptr()), SendPtr(gws.as_mut_ptr()));
    let body = |s: usize| {
        // SAFETY: slot `s` alone uses workspace slot `s` (`WS_SLOTS` slots of `slot_len`
        // planned, `slots ≤ WS_SLOTS`).
        let buf =
            unsafe { core::slice::from_raw_parts_mut(bptr.get().add(s * slot_len), slot_len) };
        for blk in s * blocks / slots..(s + 1) * blocks / slots {
            let (c0, c1) = (blk * LANES, ((blk + 1) * LANES).min(geo.c));
            // SAFETY: slot `s` alone writes the planes of channels `c0..c1` of this batch's
            // output (its blocks), all inside `yb`.
            let y =
                unsafe { core::slice::from_raw_parts_mut(yptr.get().add(c0 * yp), (c1 - c0) * yp) };
            let first = blk == s * blocks / slots;
            // SAFETY: the slices are this block's channels; `buf` is the slot's.
            let done = unsafe {
                crate::arch::kernels::depthwise_block(
                    geo,
                    lay,
                    &xb[c0 * xp..c1 * xp],
                    &ops.w[c0 * taps..c1 * taps],
                    ops.bias.map(|b| &b[c0..c1]),
                    rb.map(|r| &r[c0 * yp..c1 * yp]),
                    act,
                    y,
                    buf,
                    first,
                )
            };
            if !done {
                missing.store(true, core::sync::atomic::Ordering::Relaxed);
                return;
            }
        }
    };
    if slots == 1 {
        body(0);
    } else {
        par.run(slots, &body);
    }
    if missing.into_inner() {
        return Err(KernelError::BadParams("depthwise blocks without AVX-512"));
    }
    Ok(())
}

pub(super) fn finish(p: &ConvParams, y: &mut [f32]) -> KernelResult {
    if p.act.op != 0 {
        crate::ops::unary::apply_activation(&p.act, y)?;
    }
    Ok(())
}
