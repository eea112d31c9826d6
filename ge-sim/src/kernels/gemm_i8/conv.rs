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
    if cg == 1 && mg == 1 {
        return depthwise(s, x, y);
    }
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
                let at = (n * g.m + gi * mg) * hw + p0;
                if esize == 1 {
                    scatter_columns(&acc[..rows * mg], mg, rows, &mut y[at..], hw);
                } else {
                    let src: &[[u8; 4]] = bytemuck::cast_slice(&acc[..rows * mg * 4]);
                    let dst: &mut [[u8; 4]] = bytemuck::cast_slice_mut(&mut y[at * 4..]);
                    scatter_columns(src, mg, rows, dst, hw);
                }
            }
        }
    }
    Ok(())
}

/// A depthwise conv (one input and one output channel per group): each output is its
/// window's dot product computed directly, with exactly the integers of the GEMM path (the
/// window's padding reads as the activation zero point, so the folded correction and the
/// weight zero point's `zb·Σa` term apply unchanged), where that path ran a 16-column tile
/// for one column per group. O(N·C·H_out·W_out·k).
fn depthwise<A: Act + bytemuck::Pod>(s: &Slices<'_>, x: &[A], y: &mut [u8]) -> KernelResult {
    let (p, g) = (s.p, &s.g);
    let (sh, sw) = (p.stride[0] as isize, p.stride[1] as isize);
    let (dh, dw) = (p.dilation[0] as isize, p.dilation[1] as isize);
    let (pt, pl) = (p.pad_begin[0] as isize, p.pad_begin[1] as isize);
    let (hw, ohw) = (g.h * g.w, g.oh * g.ow);
    // The byte im2col writes for padding, read back as an activation.
    let pad = if A::SIGNED {
        i32::from(s.za as i8)
    } else {
        i32::from(s.za as u8)
    };
    let pick = |v: &[i32], c: usize| if v.len() == 1 { v[0] } else { v[c] };
    let mut w = [0i32; MAX_DW_TAPS];
    if g.k > MAX_DW_TAPS {
        return Err(KernelError::Shape("int8 depthwise conv: window too large"));
    }
    if s.y != DType::I32 && s.rq.is_empty() {
        return Err(KernelError::Shape("int8 conv: requantization per channel"));
    }
    for n in 0..g.batch {
        for c in 0..g.c {
            // Column 0 of the group's packed panel: k-pair q holds B[2q][0], B[2q+1][0].
            let panel = &s.b[c * s.plen..(c + 1) * s.plen];
            for (kk, wv) in w.iter_mut().enumerate().take(g.k) {
                *wv = i32::from(panel[kk / 2 * 2 * super::NR + kk % 2]);
            }
            let plane = &x[(n * g.c + c) * hw..][..hw];
            let (corr, zb) = (s.corr[c], if s.zb.is_empty() { 0 } else { pick(s.zb, c) });
            for pos in 0..ohw {
                let (oy, ox) = ((pos / g.ow) as isize, (pos % g.ow) as isize);
                let (mut acc, mut sum) = (0i32, 0i32);
                let mut kk = 0;
                for i in 0..g.kh {
                    let iy = oy * sh - pt + i as isize * dh;
                    for j in 0..g.kw {
                        let ix = ox * sw - pl + j as isize * dw;
                        let a = if iy >= 0 && (iy as usize) < g.h && ix >= 0 && (ix as usize) < g.w
                        {
                            i32::from(plane[iy as usize * g.w + ix as usize].wide())
                        } else {
                            pad
                        };
                        acc = acc.wrapping_add(a.wrapping_mul(w[kk]));
                        sum = sum.wrapping_add(a);
                        kk += 1;
                    }
                }
                let v = acc.wrapping_add(corr).wrapping_sub(zb.wrapping_mul(sum));
                let at = (n * g.c + c) * ohw + pos;
                match s.y {
                    DType::I32 => y[at * 4..at * 4 + 4].copy_from_slice(&v.to_le_bytes()),
                    DType::U8 => y[at] = pick_rq(s.rq, c).apply(v, s.zp, 0, 255) as u8,
                    _ => y[at] = pick_rq(s.rq, c).apply(v, s.zp, -128, 127) as i8 as u8,
                }
            }
        }
    }
    Ok(())
}

/// Most taps of a depthwise window the direct path takes (larger ones are an error).
const MAX_DW_TAPS: usize = 64;

/// A per-channel list's entry `c`, or its only one.
fn pick_rq(rq: &[Requant], c: usize) -> Requant {
    if rq.len() == 1 { rq[0] } else { rq[c] }
}

/// `dst[j·ld + r] = src[r·cols + j]` for `r < rows`, `j < cols`: a row-major block written
/// column by column (the GEMM's position-major block into channel planes). O(rows·cols).
fn scatter_columns<T: Copy>(src: &[T], cols: usize, rows: usize, dst: &mut [T], ld: usize) {
    for j in 0..cols {
        let out = &mut dst[j * ld..][..rows];
        for (r, d) in out.iter_mut().enumerate() {
            *d = src[r * cols + j];
        }
    }
}

/// Columns of output positions `p0..p0 + rows` of one group: row `r`, column
/// `(c·kh + i)·kw + j` is `x[c, oh·sh − pt + i·dh, ow·sw − pl + j·dw]`, `pad` outside.
/// A 1×1 stride-1 unpadded conv is a transpose of the input block, done channel by channel
/// (contiguous reads into a block that stays in L1); otherwise each position's window rows
/// are copied whole when they lie inside the input, element by element only at the borders.
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
    let hw = g.h * g.w;
    if g.kh == 1 && g.kw == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0 && hw == g.oh * g.ow {
        for c in 0..cg {
            let src = &x[c * hw + p0..][..rows];
            for (r, &v) in src.iter().enumerate() {
                cols[r * g.k + c] = v;
            }
        }
        return;
    }
    let span = (g.kw as isize - 1) * dw;
    for r in 0..rows {
        let pos = p0 + r;
        let (oy, ox) = ((pos / g.ow) as isize, (pos % g.ow) as isize);
        let ix0 = ox * sw - pl;
        let whole = dw == 1 && ix0 >= 0 && ix0 + span < g.w as isize;
        let row = &mut cols[r * g.k..(r + 1) * g.k];
        for (c, chan) in row.chunks_exact_mut(g.kh * g.kw).enumerate().take(cg) {
            let plane = &x[c * hw..(c + 1) * hw];
            for (i, dst) in chan.chunks_exact_mut(g.kw).enumerate() {
                let iy = oy * sh - pt + i as isize * dh;
                if iy < 0 || iy as usize >= g.h {
                    dst.fill(pad);
                } else if whole {
                    let src = &plane[iy as usize * g.w + ix0 as usize..][..g.kw];
                    for (d, &v) in dst.iter_mut().zip(src) {
                        *d = v;
                    }
                } else {
                    let line = &plane[iy as usize * g.w..][..g.w];
                    for (j, d) in dst.iter_mut().enumerate() {
                        let ix = ix0 + j as isize * dw;
                        *d = if ix >= 0 && (ix as usize) < g.w {
                            line[ix as usize]
                        } else {
                            pad
                        };
                    }
                }
            }
        }
    }
}
