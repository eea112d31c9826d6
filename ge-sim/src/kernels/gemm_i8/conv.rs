//! The `QConv` task: a 2-D integer convolution (ConvInteger, QLinearConv) as im2col on the
//! int8 GEMM ([`qgemm`]), one block of [`ROWS`] output positions of one group at a time, so
//! the workspace stays small whatever the image: the block's columns (u8/i8, padding filled
//! with the activation zero point so that it adds nothing) and its `ROWS × M/group` results,
//! which are then written channel-major into the output. Weights are packed per group at
//! compile time. O(N·M·H_out·W_out·K).

use ge_runtime::format::{
    DType, QConvParams, QGEMM_OUT_I32, QGEMM_OUT_Q8, QGEMM_OUT_Q8_F32, Shape, TensorMut, TensorRef,
};

use super::task::{activation_zero_point, corrected};
use super::{Act, QGemm, QOut, QOutParams, Requant, packed_len, qgemm};
use crate::kernels::{KernelError, KernelResult, input, output};

/// Output positions per block (a multiple of the tile's rows).
pub const ROWS: usize = 96;

/// The geometry every part of the task reads, from the params and shapes.
#[derive(Clone, Copy)]
struct Geom {
    batch: usize,
    c: usize,
    h: usize,
    w: usize,
    m: usize,
    oh: usize,
    ow: usize,
    group: usize,
    /// Input channels of a group × kernel window: the GEMM's k.
    k: usize,
    kh: usize,
    kw: usize,
}

fn geom(p: &QConvParams, x: Shape, y: Shape) -> Option<Geom> {
    if x.rank() != 4 || y.rank() != 4 || p.group == 0 {
        return None;
    }
    let group = p.group as usize;
    let (c, m) = (x.dim(1), y.dim(1));
    if c % group != 0 || m % group != 0 || x.dim(0) != y.dim(0) {
        return None;
    }
    let (kh, kw) = (p.kernel[0] as usize, p.kernel[1] as usize);
    Some(Geom {
        batch: x.dim(0),
        c,
        h: x.dim(2),
        w: x.dim(3),
        m,
        oh: y.dim(2),
        ow: y.dim(3),
        group,
        k: (c / group).checked_mul(kh)?.checked_mul(kw)?,
        kh,
        kw,
    })
}

/// Bytes of the per-block result (i32), of the columns, and of the run-time correction.
fn parts(g: &Geom, runtime_zp: bool) -> Option<(usize, usize, usize)> {
    let acc = ROWS.checked_mul(g.m / g.group)?.checked_mul(4)?;
    let cols = ROWS.checked_mul(g.k)?.checked_add(63)? & !63;
    Some((acc, cols, if runtime_zp { g.m.checked_mul(4)? } else { 0 }))
}

/// Workspace bytes of a task (0 for shapes it cannot run: it then fails with an error).
pub fn workspace_bytes(p: &QConvParams, ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    let (Some(Some(x)), Some(y)) = (ins.first(), outs.first()) else {
        return 0;
    };
    let runtime_zp = ins.get(5).copied().flatten().is_some();
    geom(p, *x, *y)
        .and_then(|g| parts(&g, runtime_zp))
        .map_or(0, |(a, c, z)| a.saturating_add(c).saturating_add(z))
}

/// Runs one `QConv` task.
pub fn run_qconv(
    p: &QConvParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let xt = input(ins, 0, "int8 conv x")?;
    let yt = output(outs, 0, "int8 conv output")?;
    let g = geom(p, xt.shape, yt.shape).ok_or(KernelError::Shape(
        "int8 conv: x and y must be 4-D with channels divisible by group",
    ))?;
    let b = input(ins, 1, "int8 conv packed weight")?.as_slice::<i8>()?;
    let mg = g.m / g.group;
    let plen = packed_len(g.k, mg).ok_or(KernelError::Shape("int8 conv: weight too large"))?;
    if b.len() < plen.saturating_mul(g.group) {
        return Err(KernelError::Shape("int8 conv: packed weight too small"));
    }
    let runtime = ins.get(5).copied().flatten();
    let (acc_len, cols_len, corr_len) =
        parts(&g, runtime.is_some()).ok_or(KernelError::Shape("int8 conv: too large"))?;
    if ws.len() < acc_len + cols_len + corr_len {
        return Err(KernelError::Shape("int8 conv: workspace too small"));
    }
    let (corr_ws, rest) = ws.split_at_mut(corr_len);
    let (acc, rest) = rest.split_at_mut(acc_len);
    let cols = &mut rest[..cols_len];
    let mut corr = input(ins, 2, "int8 conv correction")?.as_slice::<i32>()?;
    let za = match runtime {
        Some(za) => {
            let z = activation_zero_point(za)?;
            corr = corrected(z, ins.get(6).copied().flatten(), corr, g.m, corr_ws)?;
            z
        }
        None => p.a_zp,
    };
    let zb = match ins.get(3).copied().flatten() {
        Some(t) => t.as_slice::<i32>()?,
        None => &[],
    };
    let rq: &[Requant] = match ins.get(4).copied().flatten() {
        Some(t) => bytemuck::try_cast_slice(t.as_slice::<i32>()?)
            .map_err(|_| KernelError::Shape("int8 conv: requantization is not (mult, shift)"))?,
        None => &[],
    };
    if corr.len() != g.m || !matches!(zb.len(), 0 | 1) && zb.len() != g.m {
        return Err(KernelError::Shape(
            "int8 conv: correction / zero points per channel",
        ));
    }
    if !matches!(rq.len(), 0 | 1) && rq.len() != g.m {
        return Err(KernelError::Shape("int8 conv: requantization per channel"));
    }
    let esize = match (p.out, yt.dtype) {
        (QGEMM_OUT_I32, DType::I32) => 4,
        (QGEMM_OUT_Q8 | QGEMM_OUT_Q8_F32, DType::U8 | DType::I8) => 1,
        _ => {
            return Err(KernelError::UnsupportedDType(
                "int8 conv: output kind and element type disagree",
            ));
        }
    };
    if yt.data.len() != g.batch * g.m * g.oh * g.ow * esize {
        return Err(KernelError::Shape("int8 conv: output size"));
    }
    let s = Slices {
        p,
        g,
        za,
        esize,
        b,
        plen,
        corr,
        zb,
        rq,
        zp: p.out_zp,
        y: yt.dtype,
    };
    match xt.dtype {
        DType::U8 => conv_on(&s, xt.as_slice::<u8>()?, cols, acc, yt.data),
        DType::I8 => conv_on(&s, xt.as_slice::<i8>()?, cols, acc, yt.data),
        _ => Err(KernelError::UnsupportedDType(
            "int8 conv: x must be u8 or i8",
        )),
    }
}

/// A task's geometry, zero point, output element size and per-channel constants.
struct Slices<'a> {
    p: &'a QConvParams,
    g: Geom,
    za: i32,
    esize: usize,
    b: &'a [i8],
    plen: usize,
    corr: &'a [i32],
    zb: &'a [i32],
    rq: &'a [Requant],
    zp: i32,
    y: DType,
}

/// `v[g·mg..][..mg]` for a per-channel list, `v` itself for a per-tensor one (or empty).
fn group_slice<T>(v: &[T], g: usize, mg: usize) -> &[T] {
    if v.len() > 1 {
        &v[g * mg..(g + 1) * mg]
    } else {
        v
    }
}

fn conv_on<A: Act + bytemuck::Pod>(
    s: &Slices<'_>,
    x: &[A],
    cols: &mut [u8],
    acc: &mut [u8],
    y: &mut [u8],
) -> KernelResult {
    let (p, g, za, esize) = (s.p, &s.g, s.za, s.esize);
    let mg = g.m / g.group;
    let cg = g.c / g.group;
    let hw = g.oh * g.ow;
    let pad = if A::SIGNED { za as i8 as u8 } else { za as u8 };
    for n in 0..g.batch {
        for gi in 0..g.group {
            let xg = &x[(n * g.c + gi * cg) * g.h * g.w..][..cg * g.h * g.w];
            for p0 in (0..hw).step_by(ROWS) {
                let rows = ROWS.min(hw - p0);
                im2col(p, g, xg, pad, p0, rows, cols);
                let a: &[A] = bytemuck::cast_slice(&cols[..rows * g.k]);
                let gemm = QGemm {
                    m: rows,
                    n: mg,
                    k: g.k,
                    a,
                    lda: g.k,
                    b: &s.b[gi * s.plen..(gi + 1) * s.plen],
                    corr: &s.corr[gi * mg..(gi + 1) * mg],
                    zb: group_slice(s.zb, gi, mg),
                };
                let q = QOutParams {
                    rq: group_slice(s.rq, gi, mg),
                    zp: s.zp,
                };
                let block = &mut acc[..rows * mg * esize];
                let out = match s.y {
                    DType::I32 => QOut::I32 {
                        c: bytemuck::try_cast_slice_mut(block)
                            .map_err(|_| KernelError::Shape("int8 conv: workspace misaligned"))?,
                        ldc: mg,
                    },
                    DType::U8 => QOut::U8 {
                        c: block,
                        ldc: mg,
                        q,
                    },
                    _ => QOut::I8 {
                        c: bytemuck::cast_slice_mut(block),
                        ldc: mg,
                        q,
                    },
                };
                qgemm(&gemm, out)?;
                // Block [rows, mg] → y[n, gi·mg + j, p0 + r].
                for j in 0..mg {
                    let dst = ((n * g.m + gi * mg + j) * hw + p0) * esize;
                    for r in 0..rows {
                        let src = (r * mg + j) * esize;
                        y[dst + r * esize..][..esize].copy_from_slice(&acc[src..src + esize]);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Columns of output positions `p0..p0 + rows` of one group: row `r`, column
/// `(c·kh + i)·kw + j` is `x[c, oh·sh − pt + i·dh, ow·sw − pl + j·dw]`, `pad` outside.
fn im2col<A: Act + bytemuck::Pod>(
    p: &QConvParams,
    g: &Geom,
    xg: &[A],
    pad: u8,
    p0: usize,
    rows: usize,
    cols: &mut [u8],
) {
    let x: &[u8] = bytemuck::cast_slice(xg);
    let (sh, sw) = (p.stride[0] as isize, p.stride[1] as isize);
    let (dh, dw) = (p.dilation[0] as isize, p.dilation[1] as isize);
    let (pt, pl) = (p.pad_begin[0] as isize, p.pad_begin[1] as isize);
    let cg = g.c / g.group;
    for r in 0..rows {
        let pos = p0 + r;
        let (oy, ox) = ((pos / g.ow) as isize, (pos % g.ow) as isize);
        let row = &mut cols[r * g.k..(r + 1) * g.k];
        let mut at = 0;
        for c in 0..cg {
            let plane = &x[c * g.h * g.w..(c + 1) * g.h * g.w];
            for i in 0..g.kh {
                let iy = oy * sh - pt + i as isize * dh;
                let inside_y = iy >= 0 && (iy as usize) < g.h;
                for j in 0..g.kw {
                    let ix = ox * sw - pl + j as isize * dw;
                    row[at] = if inside_y && ix >= 0 && (ix as usize) < g.w {
                        plane[iy as usize * g.w + ix as usize]
                    } else {
                        pad
                    };
                    at += 1;
                }
            }
        }
    }
}
