//! ConvTranspose as a GEMM into columns and col2im.

use super::*;

/// ConvTranspose: `Y = Wᵀ ⋆ X + B` (GEMM then col2im), then the fused activation.
pub fn run_conv_transpose(
    p: &ConvParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let (xs, wsh, ysh) = shapes(ins, outs)?;
    let pl = plan(p, true, &xs, &wsh, &ysh)?;
    let geo = pl.geo;
    let ops = operands(ins, geo.m)?;
    if ops.residual.is_some() {
        return Err(bad("conv_transpose takes no residual input"));
    }
    let y = f32_out(output(outs, 0, "conv_transpose output")?)?;
    if y.is_empty() {
        return Ok(());
    }
    let scratch = ws_f32(ws, pl.col_len + pl.gemm_len)?;
    let (col, gws) = scratch.split_at_mut(pl.col_len);
    let Path::Columns { cols } = pl.path else {
        return Err(KernelError::BadParams("conv_transpose plan"));
    };
    let (xp, yp) = (geo.small_plane, geo.big_plane);
    let rows = pl.rows;
    for b in 0..geo.n {
        let xb = &ops.x[b * geo.c * xp..(b + 1) * geo.c * xp];
        let yb = &mut y[b * geo.m * yp..(b + 1) * geo.m * yp];
        for (ch, yc) in yb.chunks_exact_mut(yp).enumerate() {
            yc.fill(ops.bias.map_or(0.0, |bv| bv[ch]));
        }
        for g in 0..geo.g {
            let xg = &xb[g * geo.cg * xp..(g + 1) * geo.cg * xp];
            let wg = &ops.w[g * geo.cg * rows..(g + 1) * geo.cg * rows];
            let yg = &mut yb[g * geo.mg * yp..(g + 1) * geo.mg * yp];
            for p0 in (0..xp).step_by(cols) {
                let pc = cols.min(xp - p0);
                let col = &mut col[..rows * pc];
                sgemm(
                    rows,
                    pc,
                    geo.cg,
                    1.0,
                    wg,
                    rows,
                    true,
                    &xg[p0..],
                    xp,
                    false,
                    false,
                    col,
                    pc,
                    gws,
                )?;
                col2im(&geo, col, p0, pc, yg);
            }
        }
    }
    finish(p, y)
}
