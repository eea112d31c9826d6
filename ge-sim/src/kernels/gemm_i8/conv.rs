//! The `QConv` task: a 2-D integer convolution (ConvInteger, QLinearConv) as im2col on the
//! int8 GEMM ([`qgemm`]), one block of [`ROWS`] output positions of one group at a time, so
//! the workspace stays small whatever the image: the block's columns (u8/i8, padding filled
//! with the activation zero point so that it adds nothing) and its `ROWS × M/group` results,
//! which are then written channel-major into the output. Weights are packed per group at
//! compile time. O(N·M·H_out·W_out·K).

use ge_runtime::format::{
    DType, QCONV_FLIPPED, QConvParams, QGEMM_OUT_I32, QGEMM_OUT_Q8, QGEMM_OUT_Q8_F32, Shape,
    TensorMut, TensorRef,
};

use super::task::{activation_zero_point, corrected};
use super::{
    Act, MAX_POINTWISE_CG, QGemm, QOut, QOutParams, Requant, packed_len, pointwise, qgemm,
};
use crate::arch::isa;
use crate::kernels::real::Real;
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

/// Bytes planned after [`parts`] for the faster paths: a depthwise conv's padded f32 plane
/// and output runs ([`dw_band`]), else the `m` i32 corrections of i8 activations read flipped
/// ([`flipped_corrections`]). A blob planned by an older ge lacks them and runs the GEMM
/// path with the i8 tile, which needs only [`parts`].
fn extra_len(p: &QConvParams, g: &Geom) -> Option<usize> {
    if is_depthwise(g) {
        dw_band(p, g)?.checked_mul(4)
    } else if is_pointwise(p, g) {
        // ... and the weight quads [`pointwise`] broadcasts.
        pointwise::table_len(g.m, g.c / g.group)?
            .checked_add(g.m)?
            .checked_mul(4)
    } else if by_taps(p, g) {
        // ... and the tap-major block [`im2col_by_taps`] transposes.
        g.m.checked_mul(4)?.checked_add(ROWS.checked_mul(g.k)?)
    } else {
        g.m.checked_mul(4)
    }
}

/// Whether im2col goes through the tap-major block ([`im2col_by_taps`]): a window wider than
/// one value, at column stride 1 (each tap's positions are then runs of an input row).
fn by_taps(p: &QConvParams, g: &Geom) -> bool {
    p.stride[1] == 1 && g.kh * g.kw > 1
}

/// A 1×1 stride-1 unpadded conv with at most [`MAX_POINTWISE_CG`] input channels per group,
/// requantized in the f32 form: [`pointwise`]'s, with VNNI.
fn is_pointwise(p: &QConvParams, g: &Geom) -> bool {
    g.kh == 1
        && g.kw == 1
        && p.stride == [1, 1]
        && p.pad_begin == [0, 0]
        && p.pad_end == [0, 0]
        && g.oh == g.h
        && g.ow == g.w
        && g.c / g.group <= MAX_POINTWISE_CG
        && p.out == QGEMM_OUT_Q8_F32
        && !is_depthwise(g)
}

/// One input and one output channel per group.
fn is_depthwise(g: &Geom) -> bool {
    g.c == g.group && g.m == g.group
}

/// The padded input plane a depthwise conv reads (`hp × wp` f32: the rows and columns its
/// outputs reach, plus the slack a flat run's last taps read past it) and three runs of
/// outputs (sums, activation sums, requantized values), in f32 elements.
fn dw_band(p: &QConvParams, g: &Geom) -> Option<usize> {
    let (hp, wp) = dw_plane(p, g)?;
    let run = dw_run(p, g, wp)?;
    hp.checked_mul(wp)?
        .checked_add(dw_slack(p, g))?
        .checked_add(run.checked_mul(3)?)
}

/// Values past the padded plane a flat run reads: the last tap row's column offset.
fn dw_slack(p: &QConvParams, g: &Geom) -> usize {
    g.kw.saturating_sub(1)
        .saturating_mul(p.dilation[1] as usize)
}

/// Outputs per run: a stride-1 conv runs over the flat padded plane (`oh` rows of `wp`,
/// the columns past `ow` computed and dropped), so each tap is one long multiply-add; a
/// strided one row by row.
fn dw_run(p: &QConvParams, g: &Geom, wp: usize) -> Option<usize> {
    if dw_flat(p) {
        g.oh.checked_sub(1)?
            .checked_mul(p.stride[0] as usize)?
            .checked_add(1)?
            .checked_mul(wp)
    } else {
        Some(g.ow)
    }
}

/// Whether a depthwise conv runs over its flat padded plane: stride 1, and stride 2 too —
/// every position of the plane is computed and the strided ones kept, four times the
/// products but one contiguous multiply-add per tap instead of a gather per output.
fn dw_flat(p: &QConvParams) -> bool {
    p.stride[0] <= 2 && p.stride[1] <= 2
}

/// Rows and columns of a depthwise conv's padded plane.
fn dw_plane(p: &QConvParams, g: &Geom) -> Option<(usize, usize)> {
    let reach = |o: usize, s: u32, k: usize, d: u32| -> Option<usize> {
        o.checked_sub(1)?
            .checked_mul(s as usize)?
            .checked_add(k.checked_sub(1)?.checked_mul(d as usize)?)?
            .checked_add(1)
    };
    Some((
        reach(g.oh, p.stride[0], g.kh, p.dilation[0])?,
        reach(g.ow, p.stride[1], g.kw, p.dilation[1])?,
    ))
}

/// Workspace bytes of a task (0 for shapes it cannot run: it then fails with an error).
pub fn workspace_bytes(p: &QConvParams, ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    let (Some(Some(x)), Some(y)) = (ins.first(), outs.first()) else {
        return 0;
    };
    let runtime_zp = ins.get(5).copied().flatten().is_some();
    geom(p, *x, *y)
        .and_then(|g| Some((parts(&g, runtime_zp)?, extra_len(p, &g)?)))
        .map_or(0, |((a, c, z), e)| {
            a.saturating_add(c).saturating_add(z).saturating_add(e)
        })
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
    let (cols, extra) = rest.split_at_mut(cols_len);
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
    let flipped = match ins.get(QCONV_FLIPPED).copied().flatten() {
        Some(t) => {
            let f = t.as_slice::<i32>()?;
            if f.len() != g.m {
                return Err(KernelError::Shape(
                    "int8 conv: flipped corrections per channel",
                ));
            }
            Some(f)
        }
        None => None,
    };
    let s = Slices {
        p,
        g,
        flipped,
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
        DType::U8 => conv_on(&s, xt.as_slice::<u8>()?, cols, acc, extra, yt.data),
        DType::I8 => conv_on(&s, xt.as_slice::<i8>()?, cols, acc, extra, yt.data),
        _ => Err(KernelError::UnsupportedDType(
            "int8 conv: x must be u8 or i8",
        )),
    }
}

/// A task's geometry, zero point, output element size and per-channel constants.
struct Slices<'a> {
    p: &'a QConvParams,
    g: Geom,
    /// The compiler's corrections for flipped i8 activations (input 7), when the blob has them.
    flipped: Option<&'a [i32]>,
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

/// `extra`: the workspace past [`parts`] ([`extra_len`]): a depthwise conv's plane, or the
/// corrections with which i8 activations are read as `a + 128` (u8, the bytes xor 0x80
/// after im2col) — the VNNI tile then multiplies without flipping each broadcast. Empty in a
/// blob from an older ge: the GEMM path with the i8 tile.
fn conv_on<A: Act + bytemuck::Pod>(
    s: &Slices<'_>,
    x: &[A],
    cols: &mut [u8],
    acc: &mut [u8],
    extra: &mut [u8],
    y: &mut [u8],
) -> KernelResult {
    let (p, g, za, esize) = (s.p, &s.g, s.za, s.esize);
    let mg = g.m / g.group;
    let cg = g.c / g.group;
    let hw = g.oh * g.ow;
    let pad = if A::SIGNED { za as i8 as u8 } else { za as u8 };
    if is_depthwise(g)
        && let Some(done) = depthwise_f32(s, x, pad, extra, y)
    {
        return done;
    }
    let (extra, table_ws) = extra.split_at_mut((g.m * 4).min(extra.len()));
    let flip: Option<&[i32]> = match extra.get_mut(..g.m * 4) {
        _ if !A::SIGNED || is_depthwise(g) => None,
        _ if s.flipped.is_some() => s.flipped,
        Some(b) => bytemuck::try_cast_slice_mut::<u8, i32>(b).ok().map(|f| {
            flipped_corrections(s, f);
            &*f
        }),
        _ => None,
    };
    #[cfg(target_arch = "x86_64")]
    if is_pointwise(p, g)
        && esize == 1
        && s.rq.iter().all(|r| r.shift == 0)
        && super::avx512::has_vnni()
        && isa::isa() == isa::Isa::Avx512
        && let Ok(table) = bytemuck::try_cast_slice_mut::<u8, i32>(table_ws)
        && let Some(table) = table.get_mut(..pointwise::table_len(g.m, cg).unwrap_or(usize::MAX))
    {
        pointwise::fill_table(s.b, s.plen, g.group, mg, g.k, table);
        let corr = flip.unwrap_or(s.corr);
        let xb: &[u8] = bytemuck::cast_slice(x);
        let (lo, hi) = if s.y == DType::U8 {
            (0, 255)
        } else {
            (-128, 127)
        };
        let kq = cg.div_ceil(4);
        for n in 0..g.batch {
            for gi in 0..g.group {
                let group = pointwise::Group {
                    x: &xb[(n * g.c + gi * cg) * hw..][..cg * hw],
                    hw,
                    cg,
                    mg,
                    flip: A::SIGNED,
                    table: &table[gi * mg * kq..(gi + 1) * mg * kq],
                    corr: &corr[gi * mg..(gi + 1) * mg],
                    zb: group_slice(s.zb, gi, mg),
                    rq: group_slice(s.rq, gi, mg),
                    zp: s.zp,
                    lo,
                    hi,
                };
                let at = (n * g.m + gi * mg) * hw;
                // SAFETY: VNNI and AVX-512 F/BW/VL were detected just above.
                if !unsafe { pointwise::run_group(&group, &mut y[at..at + mg * hw]) } {
                    return Err(KernelError::Shape("int8 pointwise conv: slices"));
                }
            }
        }
        return Ok(());
    }
    // The tap-major block, when this ge planned it (an older blob's workspace lacks it).
    let mut taps: Option<&mut [u8]> = if by_taps(p, g) {
        table_ws.get_mut(..ROWS * g.k)
    } else {
        None
    };
    for n in 0..g.batch {
        for gi in 0..g.group {
            let xg = &x[(n * g.c + gi * cg) * g.h * g.w..][..cg * g.h * g.w];
            for p0 in (0..hw).step_by(ROWS) {
                let rows = ROWS.min(hw - p0);
                match taps.as_deref_mut() {
                    Some(t) => {
                        im2col_by_taps(p, g, bytemuck::cast_slice(xg), pad, p0, rows, t, cols)
                    }
                    None => im2col(p, g, xg, pad, p0, rows, cols),
                }
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
                let (b, zb) = (
                    &s.b[gi * s.plen..(gi + 1) * s.plen],
                    group_slice(s.zb, gi, mg),
                );
                if let Some(f) = flip {
                    let a = &mut cols[..rows * g.k];
                    a.iter_mut().for_each(|v| *v ^= 0x80);
                    let gemm = QGemm::<u8> {
                        m: rows,
                        n: mg,
                        k: g.k,
                        a,
                        lda: g.k,
                        b,
                        corr: &f[gi * mg..(gi + 1) * mg],
                        zb,
                    };
                    qgemm(&gemm, out)?;
                } else {
                    let gemm = QGemm::<A> {
                        m: rows,
                        n: mg,
                        k: g.k,
                        a: bytemuck::cast_slice(&cols[..rows * g.k]),
                        lda: g.k,
                        b,
                        corr: &s.corr[gi * mg..(gi + 1) * mg],
                        zb,
                    };
                    qgemm(&gemm, out)?;
                }
                // Block [rows, mg] → y[n, gi·mg + j, p0 + r].
                let at = (n * g.m + gi * mg) * hw + p0;
                if esize == 1 {
                    transpose_bytes(&acc[..rows * mg], mg, rows, mg, &mut y[at..], hw);
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

/// A depthwise conv on a padded f32 copy of each channel: every product and partial sum
/// is an integer below 2^24 in magnitude (at most [`MAX_DW_TAPS`] taps of 255·128), so f32
/// arithmetic is exact whatever the order and the result is the integer the GEMM path
/// computes (padding reads as the activation zero point there too); the tap loop is then a
/// plain multiply-add over consecutive values, built for the host's vector ISA. That path
/// ran a 16-column tile for one column per group. `None` (the GEMM path then runs) when the
/// workspace was planned by an older ge or the window is too large. O(N·C·(H·W + H_out·W_out·k)).
fn depthwise_f32<A: Act + bytemuck::Pod>(
    s: &Slices<'_>,
    x: &[A],
    pad: u8,
    ws: &mut [u8],
    y: &mut [u8],
) -> Option<KernelResult> {
    let (p, g) = (s.p, &s.g);
    let (hp, wp) = dw_plane(p, g)?;
    let run = dw_run(p, g, wp)?;
    let need = dw_band(p, g)?;
    let ws: &mut [f32] = bytemuck::try_cast_slice_mut(ws.get_mut(..need.checked_mul(4)?)?).ok()?;
    if g.k > MAX_DW_TAPS || (s.y != DType::I32 && s.rq.is_empty()) {
        return None;
    }
    let (band, rest) = ws.split_at_mut(hp * wp + dw_slack(p, g));
    let (acc, rest) = rest.split_at_mut(run);
    let (sum, qv) = rest.split_at_mut(run);
    let (sh, sw) = (p.stride[0] as usize, p.stride[1] as usize);
    let (dh, dw) = (p.dilation[0] as usize, p.dilation[1] as usize);
    let (pt, pl) = (p.pad_begin[0] as usize, p.pad_begin[1] as usize);
    let (hw, ohw) = (g.h * g.w, g.oh * g.ow);
    let flat = dw_flat(p);
    // The byte im2col writes for padding, read as an activation.
    let pad = if A::SIGNED {
        f32::from(pad as i8)
    } else {
        f32::from(pad)
    };
    let mut w = [0f32; MAX_DW_TAPS];
    // The vector requantization (onnxruntime's f32 form, as the GEMM path's AVX-512 epilogue).
    #[cfg(target_arch = "x86_64")]
    let wide = isa::isa() == isa::Isa::Avx512;
    isa::with_simd(
        #[inline(always)]
        || {
            for n in 0..g.batch {
                for c in 0..g.c {
                    let panel = &s.b[c * s.plen..(c + 1) * s.plen];
                    for (kk, wv) in w.iter_mut().enumerate().take(g.k) {
                        *wv = f32::from(panel[kk / 2 * 2 * super::NR + kk % 2]);
                    }
                    // The plane with its padding written out (rows and columns past the
                    // input read as the zero point, as im2col's do).
                    let plane = &x[(n * g.c + c) * hw..][..hw];
                    band.fill(pad);
                    for (r, row) in band.chunks_exact_mut(wp).enumerate() {
                        let Some(iy) = r.checked_sub(pt).filter(|&iy| iy < g.h) else {
                            continue;
                        };
                        let src = &plane[iy * g.w..][..g.w];
                        let lo = pl.min(wp);
                        for (d, v) in row[lo..].iter_mut().zip(src) {
                            *d = f32::from(v.wide());
                        }
                    }
                    let (corr, zb) = (s.corr[c], pick(s.zb, c).unwrap_or(0));
                    let rq = pick(s.rq, c).unwrap_or(Requant { mult: 0, shift: 1 });
                    // Runs: the whole plane at once (stride ≤ 2), else each output row.
                    let runs = if flat { 1 } else { g.oh };
                    for oy in 0..runs {
                        acc.fill(0.0);
                        sum.fill(0.0);
                        for i in 0..g.kh {
                            for j in 0..g.kw {
                                let wt = w[i * g.kw + j];
                                let from = &band[(oy * sh + i * dh) * wp + j * dw..];
                                if flat || sw == 1 {
                                    for (a, &v) in acc.iter_mut().zip(from) {
                                        *a += v * wt;
                                    }
                                    if zb != 0 {
                                        for (a, &v) in sum.iter_mut().zip(from) {
                                            *a += v;
                                        }
                                    }
                                } else {
                                    for (t, a) in acc.iter_mut().enumerate() {
                                        *a += from[t * sw] * wt;
                                    }
                                    if zb != 0 {
                                        for (t, a) in sum.iter_mut().enumerate() {
                                            *a += from[t * sw];
                                        }
                                    }
                                }
                            }
                        }
                        // The run's rows: `sh·wp` apart in a flat run, every `sw`-th of
                        // their first `(ow − 1)·sw + 1` positions kept.
                        let (rows, stride, step) = if flat {
                            (g.oh, sh * wp, sw)
                        } else {
                            (1, g.ow, 1)
                        };
                        let at = (n * g.c + c) * ohw + oy * g.ow;
                        if let (Some(scale), DType::U8 | DType::I8) = (f32_scale(rq), s.y) {
                            // onnxruntime's f32 requantization, lane by lane over the whole
                            // run (the scalar `apply` per output was most of this task's
                            // time): the rounded product plus the zero point is exact in f32
                            // below 2^24, and a larger one saturates either way.
                            let (lo, hi) = if s.y == DType::U8 {
                                (0.0, 255.0)
                            } else {
                                (-128.0, 127.0)
                            };
                            #[cfg(target_arch = "x86_64")]
                            if wide {
                                let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut *qv);
                                let range = (lo as i32, hi as i32);
                                // SAFETY: `wide`: AVX-512 F/BW/VL were detected.
                                unsafe {
                                    super::avx512::requant_run(
                                        acc, sum, corr, zb, scale, s.zp, range, bytes,
                                    )
                                };
                                for r in 0..rows {
                                    let out = &mut y[at + r * g.ow..][..g.ow];
                                    let from = bytes[r * stride..].iter().step_by(step);
                                    for (o, &q) in out.iter_mut().zip(from) {
                                        *o = q;
                                    }
                                }
                                continue;
                            }
                            let zp = s.zp as f32;
                            for ((q, &a), &sm) in qv.iter_mut().zip(acc.iter()).zip(sum.iter()) {
                                let v = (a as i32)
                                    .wrapping_add(corr)
                                    .wrapping_sub(zb.wrapping_mul(sm as i32));
                                *q = ((v as f32 * scale).round_even() + zp).clamp(lo, hi);
                            }
                            for r in 0..rows {
                                let out = &mut y[at + r * g.ow..][..g.ow];
                                let from = qv[r * stride..].iter().step_by(step);
                                for (o, &q) in out.iter_mut().zip(from) {
                                    *o = q as i32 as u8;
                                }
                            }
                            continue;
                        }
                        for r in 0..rows {
                            for t in 0..g.ow {
                                let i = r * stride + t * step;
                                let (a, sm) = (acc[i], sum[i]);
                                let v = (a as i32)
                                    .wrapping_add(corr)
                                    .wrapping_sub(zb.wrapping_mul(sm as i32));
                                let o = at + r * g.ow + t;
                                match s.y {
                                    DType::I32 => {
                                        y[o * 4..o * 4 + 4].copy_from_slice(&v.to_le_bytes())
                                    }
                                    DType::U8 => y[o] = rq.apply(v, s.zp, 0, 255) as u8,
                                    _ => y[o] = rq.apply(v, s.zp, -128, 127) as i8 as u8,
                                }
                            }
                        }
                    }
                }
            }
        },
    );
    Some(Ok(()))
}

/// Most taps of a depthwise window the direct path takes (larger ones are an error).
const MAX_DW_TAPS: usize = 64;

/// The scale of onnxruntime's f32 requantization form, `None` for the fixed-point one.
fn f32_scale(rq: Requant) -> Option<f32> {
    (rq.shift == 0).then(|| f32::from_bits(rq.mult as u32))
}

/// A per-channel list's entry `c`, its only one for a per-tensor list, `None` when empty.
fn pick<T: Copy>(v: &[T], c: usize) -> Option<T> {
    if v.len() == 1 {
        v.first().copied()
    } else {
        v.get(c).copied()
    }
}

/// The corrections for activations read as `a + 128`: the tile then sums
/// `Σ(a + 128)·b = Σa·b + 128·Σb` and the row sums grow by `128·k`, so
/// `corr'_j = corr_j − 128·Σ_k B[k][j] + 128·k·zb_j` (wrapping, as every i32 here) gives the
/// same result. `Σ_k B` comes from the packed panels (their padding is zero). O(m·k).
fn flipped_corrections(s: &Slices<'_>, out: &mut [i32]) {
    use super::NR;
    let g = &s.g;
    let mg = g.m / g.group;
    let kp = g.k.div_ceil(2) * 2;
    for gi in 0..g.group {
        for p in 0..mg.div_ceil(NR) {
            // One pass over the panel sums its sixteen columns (pair rows
            // `[B[2q][j], B[2q+1][j]]`; the padding is zero).
            let panel = &s.b[gi * s.plen + p * NR * kp..][..NR * kp];
            let mut sums = [0i32; NR];
            for pair in panel.chunks_exact(2 * NR) {
                for (c, sum) in sums.iter_mut().enumerate() {
                    *sum += i32::from(pair[2 * c]) + i32::from(pair[2 * c + 1]);
                }
            }
            for (t, &sum) in sums.iter().enumerate().take(mg - p * NR) {
                let j = gi * mg + p * NR + t;
                if let Some(o) = out.get_mut(j) {
                    *o = flipped_correction(s, j, sum);
                }
            }
        }
    }
}

/// Channel `j`'s correction for flipped activations, from its column sum.
fn flipped_correction(s: &Slices<'_>, j: usize, colsum: i32) -> i32 {
    let zb = pick(s.zb, j).unwrap_or(0);
    s.corr[j]
        .wrapping_sub(colsum.wrapping_mul(128))
        .wrapping_add((s.g.k as i32).wrapping_mul(128).wrapping_mul(zb))
}

/// im2col through a tap-major block: for each tap (input channel, kernel row, kernel
/// column) the block's `rows` positions read runs of one input row (column stride 1), copied
/// whole into `t[tap][r]` with the padding filled around them; one byte transpose then gives
/// `cols[r][tap]`. Same bytes as [`im2col`], without its per-position, per-row small copies
/// (most of a 3×3 int8 conv's time after the VNNI tile). O(rows·k).
#[allow(clippy::too_many_arguments)]
fn im2col_by_taps(
    p: &QConvParams,
    g: &Geom,
    x: &[u8],
    pad: u8,
    p0: usize,
    rows: usize,
    t: &mut [u8],
    cols: &mut [u8],
) {
    let (sh, dh, dw) = (
        p.stride[0] as usize,
        p.dilation[0] as isize,
        p.dilation[1] as isize,
    );
    let (pt, pl) = (p.pad_begin[0] as isize, p.pad_begin[1] as isize);
    let (hw, win) = (g.h * g.w, g.kh * g.kw);
    for (tap, trow) in t.chunks_exact_mut(rows).enumerate().take(g.k) {
        let (c, i, j) = (tap / win, (tap / g.kw) % g.kh, tap % g.kw);
        let plane = &x[c * hw..(c + 1) * hw];
        let mut r = 0;
        while r < rows {
            let pos = p0 + r;
            let (oy, ox0) = (pos / g.ow, pos % g.ow);
            let n = (g.ow - ox0).min(rows - r);
            let dst = &mut trow[r..r + n];
            let iy = (oy * sh) as isize - pt + i as isize * dh;
            if iy < 0 || iy as usize >= g.h {
                dst.fill(pad);
            } else {
                let line = &plane[iy as usize * g.w..][..g.w];
                let start = ox0 as isize - pl + j as isize * dw;
                let lo = (-start).clamp(0, n as isize) as usize;
                let hi = (g.w as isize - start).clamp(lo as isize, n as isize) as usize;
                dst[..lo].fill(pad);
                dst[hi..].fill(pad);
                let from = (start + lo as isize) as usize;
                dst[lo..hi].copy_from_slice(&line[from..from + (hi - lo)]);
            }
            r += n;
        }
    }
    transpose_bytes(t, rows, g.k, rows, cols, g.k);
}

/// `dst[j·ldd + i] = src[i·lds + j]` for `i < rows`, `j < cols`: whole 16 × 16 blocks by
/// SSE2 byte unpacks (four rounds), the edges element by element. The 1×1 conv's im2col and
/// the block-to-planes copy are such transposes; element by element they cost as much as a
/// small conv's GEMM. O(rows·cols).
pub(super) fn transpose_bytes(
    src: &[u8],
    lds: usize,
    rows: usize,
    cols: usize,
    dst: &mut [u8],
    ldd: usize,
) {
    if rows == 0 || cols == 0 {
        return;
    }
    // Every read and write below stays inside these.
    let (need_src, need_dst) = ((rows - 1) * lds + cols, (cols - 1) * ldd + rows);
    let (src, dst) = (&src[..need_src], &mut dst[..need_dst]);
    let (full_r, full_c) = (rows / 16 * 16, cols / 16 * 16);
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    for i0 in (0..full_r).step_by(16) {
        for j0 in (0..full_c).step_by(16) {
            // SAFETY: rows `i0..i0 + 16` of src hold 16 bytes from `j0` (`i < rows`,
            // `j0 + 16 ≤ cols`), rows `j0..j0 + 16` of dst 16 from `i0`; SSE2 is enabled.
            unsafe {
                transpose16(
                    src.as_ptr().add(i0 * lds + j0),
                    lds,
                    dst.as_mut_ptr().add(j0 * ldd + i0),
                    ldd,
                )
            };
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    let (full_r, full_c) = (0, 0);
    for i in 0..rows {
        // Columns the blocks did not cover: all of them in rows past the blocks.
        let from = if i < full_r { full_c } else { 0 };
        for j in from..cols {
            dst[j * ldd + i] = src[i * lds + j];
        }
    }
}

/// One 16 × 16 byte block: after unpacking bytes, words, dwords and qwords of row pairs,
/// output row `2p` / `2p + 1` is the low / high qword pair of column pair `p`.
///
/// # Safety
/// `src + i·lds` and `dst + j·ldd` hold 16 bytes for `i, j < 16`.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
unsafe fn transpose16(src: *const u8, lds: usize, dst: *mut u8, ldd: usize) {
    use core::arch::x86_64::*;
    // SAFETY: per the contract; SSE2 is part of the target.
    unsafe {
        let r: [__m128i; 16] = core::array::from_fn(|i| _mm_loadu_si128(src.add(i * lds).cast()));
        // Rows (2k, 2k + 1) interleaved by bytes: columns 0–7 (lo) and 8–15 (hi).
        let b: [[__m128i; 2]; 8] = core::array::from_fn(|k| {
            [
                _mm_unpacklo_epi8(r[2 * k], r[2 * k + 1]),
                _mm_unpackhi_epi8(r[2 * k], r[2 * k + 1]),
            ]
        });
        // Rows 4m..4m + 4: c[m][q] holds columns 4q..4q + 4.
        let c: [[__m128i; 4]; 4] = core::array::from_fn(|m| {
            let (lo, hi) = (b[2 * m], b[2 * m + 1]);
            [
                _mm_unpacklo_epi16(lo[0], hi[0]),
                _mm_unpackhi_epi16(lo[0], hi[0]),
                _mm_unpacklo_epi16(lo[1], hi[1]),
                _mm_unpackhi_epi16(lo[1], hi[1]),
            ]
        });
        // Rows 8n..8n + 8: d[n][p] holds columns 2p, 2p + 1.
        let d: [[__m128i; 8]; 2] = core::array::from_fn(|n| {
            core::array::from_fn(|p| {
                let (q, hi) = (p / 2, p % 2 == 1);
                let (x, y) = (c[2 * n][q], c[2 * n + 1][q]);
                if hi {
                    _mm_unpackhi_epi32(x, y)
                } else {
                    _mm_unpacklo_epi32(x, y)
                }
            })
        });
        for (p, (&lo, &hi)) in d[0].iter().zip(&d[1]).enumerate() {
            _mm_storeu_si128(dst.add(2 * p * ldd).cast(), _mm_unpacklo_epi64(lo, hi));
            _mm_storeu_si128(
                dst.add((2 * p + 1) * ldd).cast(),
                _mm_unpackhi_epi64(lo, hi),
            );
        }
    }
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
        transpose_bytes(&x[p0..], hw, cg, rows, cols, g.k);
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
                    crate::kernels::copy::copy_short(dst, src);
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
