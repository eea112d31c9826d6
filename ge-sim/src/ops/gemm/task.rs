//! The Gemm, GemmW8 and GemmPacked tasks: decoding the parameter record, broadcasting C,
//! choosing op(B)'s source and the epilogue, then the driver.

use super::*;

/// Gemm: `Y = alpha · op(A) · op(B) + beta · C (+ R)`, C unidirectionally broadcast to
/// `[M, N]`, R (a fused residual) shaped like Y, then the fused activation.
pub fn run_gemm(
    p: &GemmParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    gemm_task::<B_F32>(p, ins, outs, ws, par)
}

/// GemmW8: the Gemm of f32 A and a weight-only int8/uint8 B (inputs A, B, B's scales — one,
/// or one per column —, optional C), B dequantized while it is packed ([`Int8B`]). Its own
/// kind, so that a device linking only f32 Gemm links none of it.
pub fn run_gemm_w8(
    p: &GemmParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    gemm_task::<B_INT8>(p, ins, outs, ws, par)
}

/// GemmPacked: a Gemm whose constant f32 B the compiler stored in the GEMM's panel order
/// ([`PanelB`]): read in place, never packed on the run. Its own kind, like GemmW8.
pub fn run_gemm_packed(
    p: &GemmParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    gemm_task::<B_PANELS>(p, ins, outs, ws, par)
}

/// A Gemm task's B: f32 as ONNX stores it, …
pub(super) const B_F32: u8 = 0;
/// … int8/uint8 with scales (GemmW8), …
pub(super) const B_INT8: u8 = 1;
/// … or f32 pre-packed (GemmPacked).
pub(super) const B_PANELS: u8 = 2;

/// Gemm, GemmW8 and GemmPacked (by `B`) on the shared checks, C broadcast and residual.
pub(super) fn gemm_task<const B: u8>(
    p: &GemmParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    let w8 = B == B_INT8;
    let at = input(ins, 0, "gemm A")?;
    let bt = input(ins, 1, "gemm B")?;
    let ct = ins.get(if w8 { 3 } else { 2 }).and_then(|t| t.as_ref());
    let yt = output(outs, 0, "gemm output")?;
    let a = f32_in(at)?;
    let (b, scales) = if w8 {
        if !matches!(bt.dtype, DType::I8 | DType::U8) {
            return Err(KernelError::UnsupportedDType("GemmW8's B is int8 or uint8"));
        }
        checked_len(&bt.shape, bt.dtype, bt.data.len())?;
        (&[][..], f32_in(input(ins, 2, "gemm B scales")?)?)
    } else {
        (f32_in(bt)?, &[][..])
    };
    let (ta, tb, panels) = (p.trans_a != 0, p.b_transposed(), p.b_panels());
    if (tb && panels) || ((B == B_PANELS) != panels && !w8) {
        return Err(KernelError::BadParams(
            "a pre-packed B (GEMM_B_PANELS, untransposed) is read by GemmW8 and GemmPacked \
             only, and GemmPacked reads no other",
        ));
    }
    let ra = at.shape.rank();
    // ONNX Gemm is 2-D; the compiler also emits `[…, M, K] · [K, N]` (MatMul + bias on
    // activations with batch axes), which is the same GEMM with the leading axes folded into M.
    if ra < 2 || (ta && ra != 2) || bt.shape.rank() != 2 || yt.shape.rank() != ra {
        return Err(KernelError::Shape(
            "gemm operands must be 2-D (A may have leading axes when not transposed)",
        ));
    }
    let (ad, bd, yd) = (at.shape.dims(), bt.shape.dims(), yt.shape.dims());
    let lda = ad[ra - 1];
    let (m, k) = if ta {
        (ad[1], ad[0])
    } else {
        (ad[..ra - 1].iter().product(), lda)
    };
    let (k2, n) = if tb { (bd[1], bd[0]) } else { (bd[0], bd[1]) };
    let rows_agree = if ta {
        yd[0] == m
    } else {
        yd[..ra - 1] == ad[..ra - 1]
    };
    if k != k2 || !rows_agree || yd[ra - 1] != n {
        return Err(KernelError::Shape("gemm operand shapes do not agree"));
    }
    let yshape = yt.shape;
    let y = f32_out(yt)?;
    let mut accumulate = match ct {
        Some(ct) if p.beta != 0.0 => {
            let c = f32_in(ct)?;
            let beta = p.beta;
            for_each_row(&yshape, [&ct.shape], |start, [off], [inc], len| {
                let dst = &mut y[start..start + len];
                if inc == 0 {
                    dst.fill(beta * c[off]);
                } else {
                    for (d, s) in dst.iter_mut().zip(&c[off..off + len]) {
                        *d = beta * *s;
                    }
                }
            })?;
            true
        }
        _ => false,
    };
    // Input 3 (GemmW8: 4; compiler-fused): a residual shaped like Y, added before the
    // activation.
    if let Some(rt) = ins.get(if w8 { 4 } else { 3 }).and_then(|t| t.as_ref()) {
        let r = f32_in(rt)?;
        if r.len() != y.len() {
            return Err(KernelError::Shape(
                "gemm residual differs from the output in size",
            ));
        }
        if accumulate {
            y.iter_mut().zip(r).for_each(|(d, r)| *d += r);
        } else {
            y.copy_from_slice(r);
        }
        accumulate = true;
    }
    // GemmW8's B: its bytes, dequantized while they are packed.
    let int8 = if w8 {
        if scales.len() != 1 && scales.len() != n {
            return Err(KernelError::Shape(
                "int8 gemm B scales: one, or one per column",
            ));
        }
        if tb {
            return Err(KernelError::BadParams("GemmW8 takes B untransposed"));
        }
        Some(Int8B {
            b: bt.data,
            unsigned: bt.dtype == DType::U8,
            scale: scales,
            ld: bd[1],
            panels: panels.then_some(k),
        })
    } else {
        None
    };
    // One row (a dense layer at batch 1): GemmW8 as the float Gemm's GEMV, on the int8
    // weights in place — no workspace ([`gemm_w8_workspace_bytes`]), the activation after.
    if let Some(q) = &int8
        && m == 1
    {
        // B's bytes were checked against its `[k, n]` shape above.
        check_operand(a.len(), if ta { k } else { 1 }, if ta { 1 } else { k }, lda)?;
        gemv_row_w8(
            n,
            k,
            p.alpha,
            a,
            if ta { lda } else { 1 },
            q,
            accumulate,
            &mut y[..n],
        );
        if p.act.op != 0 {
            crate::ops::unary::apply_activation(&p.act, y)?;
        }
        return Ok(());
    }
    // GemmPacked's B: its panels, read in place.
    let panel = PanelB { b, k, n };
    if B == B_PANELS && b.len() != k * n {
        return Err(KernelError::Shape("gemm pre-packed B is not K x N"));
    }
    // Packed, with the activation in the register tile: GemmW8 and GemmPacked always; f32 B
    // for several rows under a tile activation (else sgemm, which takes one row unpacked).
    let fused = if m > 1 || B != B_F32 {
        tile_act(&p.act)
    } else {
        None
    };
    let ws_len = if B != B_F32 {
        gemm_packed_ws_len(n, k)
    } else {
        sgemm_ws_len(m, n, k)
    };
    let wsf = ws_f32(ws, ws_len)?;
    if B != B_F32 || fused.is_some() {
        check_operand(a.len(), if ta { k } else { m }, if ta { m } else { k }, lda)?;
        let mat = MatB {
            b,
            ld: bd[1],
            trans: tb,
        };
        let src: &dyn PackB = match &int8 {
            Some(q) => q,
            None if B == B_PANELS => &panel,
            None => {
                check_operand(
                    b.len(),
                    if tb { n } else { k },
                    if tb { k } else { n },
                    bd[1],
                )?;
                &mat
            }
        };
        let (rs, cs) = if ta { (1, lda) } else { (lda, 1) };
        let ep = Epilogue {
            residual: None,
            alpha: p.alpha,
            accumulate,
            row_bias: None,
            act: fused.unwrap_or(TileAct::None),
        };
        gemm_packed(
            m,
            n,
            k,
            a,
            ALayout::Strided { rs, cs },
            src,
            y,
            n,
            &ep,
            wsf,
            par,
        )?;
    } else {
        sgemm_on(
            m, n, k, p.alpha, a, lda, ta, b, bd[1], tb, accumulate, y, n, wsf, par,
        )?;
    }
    if p.act.op != 0 && fused.is_none() {
        crate::ops::unary::apply_activation(&p.act, y)?;
    }
    Ok(())
}
