//! The QConv task: operands, per-group slices, and blocks of output positions through im2col
//! and the int8 GEMM.

use super::*;

/// Runs one `QConv` task, on the path its workspace's length selects ([`path_for`]).
pub fn run_qconv(
    p: &QConvParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    run_qconv_on(p, ins, outs, ws, None)
}

/// [`run_qconv`] on a given path (`forced`, tests: every path must give the same bytes)
/// or the one the workspace selects.
pub(in crate::ops::gemm_i8) fn run_qconv_on(
    p: &QConvParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    forced: Option<Path>,
) -> KernelResult {
    let ws_len = ws.len();
    let xt = input(ins, 0, "int8 conv x")?;
    let yt = output(outs, 0, "int8 conv output")?;
    let g = geom(p, xt.shape, yt.shape).ok_or(KernelError::Shape(
        "int8 conv: x and y must be 4-D with channels divisible by group",
    ))?;
    let b = input(ins, 1, "int8 conv packed weight")?.as_slice::<i8>()?;
    let mg = g.m / g.group;
    // Compact depthwise taps (`[C][k]`, [`depthwise_on_plane`]), row quads or GEMM panels.
    let compact = is_depthwise(&g) && Some(b.len()) == g.group.checked_mul(g.k);
    let plen = if compact {
        g.k
    } else if let Some(layout) = QuadLayout::of(p) {
        quads_len(layout, mg, g.c / g.group, g.kh, g.kw)
            .ok_or(KernelError::Shape("int8 conv: weight too large"))?
    } else {
        packed_len(g.k, mg).ok_or(KernelError::Shape("int8 conv: weight too large"))?
    };
    if b.len() < plen.saturating_mul(g.group) {
        return Err(KernelError::Shape("int8 conv: packed weight too small"));
    }
    let runtime = ins.get(5).copied().flatten();
    let corr_len =
        corr_len(&g, runtime.is_some()).ok_or(KernelError::Shape("int8 conv: too large"))?;
    let (corr_ws, rest) = ws
        .split_at_mut_checked(corr_len)
        .ok_or(KernelError::Shape("int8 conv: workspace too small"))?;
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
    let esize = match (p.kind(), yt.dtype) {
        (QGEMM_OUT_I32, DType::I32) => 4,
        (QGEMM_OUT_Q8 | QGEMM_OUT_Q8_F32 | QGEMM_OUT_Q8_TFLITE, DType::U8 | DType::I8) => 1,
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
        compact,
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
    let has_rq = ins.get(4).copied().flatten().is_some();
    let path = match forced {
        Some(path) => path,
        None => path_for(p, &g, runtime.is_some(), has_rq, esize, compact, ws_len)
            .ok_or(KernelError::Shape("int8 conv: workspace too small"))?,
    };
    if compact && !matches!(path, Path::Depthwise { .. })
        || QuadLayout::of(p).is_some() != matches!(path, Path::Quads { .. })
    {
        return Err(KernelError::Shape(
            "int8 conv: the weight's layout is read on one path only",
        ));
    }
    match xt.dtype {
        DType::U8 => conv_on(&s, xt.as_slice::<u8>()?, path, rest, yt.data),
        DType::I8 => conv_on(&s, xt.as_slice::<i8>()?, path, rest, yt.data),
        _ => Err(KernelError::UnsupportedDType(
            "int8 conv: x must be u8 or i8",
        )),
    }
}

/// A task's geometry, zero point, output element size and per-channel constants.
pub(super) struct Slices<'a> {
    pub(super) p: &'a QConvParams,
    pub(super) g: Geom,
    /// The compiler's corrections for flipped i8 activations (input 7), when the blob has them.
    pub(super) flipped: Option<&'a [i32]>,
    pub(super) za: i32,
    pub(super) esize: usize,
    pub(super) b: &'a [i8],
    /// `b` holds each channel's taps as they are (depthwise), not GEMM panels.
    pub(super) compact: bool,
    pub(super) plen: usize,
    pub(super) corr: &'a [i32],
    pub(super) zb: &'a [i32],
    pub(super) rq: &'a [Requant],
    pub(super) zp: i32,
    pub(super) y: DType,
}

/// `v[g·mg..][..mg]` for a per-channel list, `v` itself for a per-tensor one (or empty).
pub(super) fn group_slice<T>(v: &[T], g: usize, mg: usize) -> &[T] {
    if v.len() > 1 {
        &v[g * mg..(g + 1) * mg]
    } else {
        v
    }
}

/// Runs the conv on `path` in `ws` (the workspace past the run-time corrections): a
/// depthwise band of the f32 plane, or GEMM blocks (`[results][columns][taps]`, then the
/// flipped corrections with which i8 activations are read as `a + 128` — the u8 tile then
/// multiplies without flipping each broadcast —, the pointwise table in the block's place).
pub(super) fn conv_on<A: Act + bytemuck::Pod>(
    s: &Slices<'_>,
    x: &[A],
    path: Path,
    ws: &mut [u8],
    y: &mut [u8],
) -> KernelResult {
    let (p, g, za, esize) = (s.p, &s.g, s.za, s.esize);
    let mg = g.m / g.group;
    let cg = g.c / g.group;
    let hw = g.oh * g.ow;
    let pad = if A::SIGNED { za as i8 as u8 } else { za as u8 };
    let (rows, flip, table) = match path {
        Path::Depthwise { band } => {
            return depthwise_f32(s, x, pad, band, ws, y).unwrap_or(Err(KernelError::Shape(
                "int8 depthwise conv: workspace or window",
            )));
        }
        Path::Quads { band } => {
            let layout =
                QuadLayout::of(p).ok_or(KernelError::Shape("int8 conv: no quad layout"))?;
            return run_quads(layout, s, x, pad, band, ws, y);
        }
        Path::Gemm { rows, flip, table } => (rows.max(1), flip, table),
    };
    let block = block_len(p, g, rows, esize).ok_or(KernelError::Shape("int8 conv: too large"))?;
    let (block_ws, extra) = ws
        .split_at_mut_checked(block.max(if table {
            table_bytes(p, g).unwrap_or(0)
        } else {
            0
        }))
        .ok_or(KernelError::Shape("int8 conv: workspace too small"))?;
    let flip: Option<&[i32]> = match extra.get_mut(..g.m * 4) {
        _ if !A::SIGNED || is_depthwise(g) || !flip => None,
        _ if s.flipped.is_some() => s.flipped,
        Some(b) => bytemuck::try_cast_slice_mut::<u8, i32>(b).ok().map(|f| {
            flipped_corrections(s, f);
            &*f
        }),
        _ => None,
    };
    if is_pointwise(p, g)
        && esize == 1
        && crate::ops::gemm_i8::vector_form(s.rq)
        && table
        && pointwise::available()
        && let Ok(table) = bytemuck::try_cast_slice_mut::<u8, i32>(&mut *block_ws)
        && let Some(table) = table.get_mut(..pointwise::table_len(g.m, cg).unwrap_or(usize::MAX))
    {
        pointwise::fill_table(s.b, s.plen, g.group, mg, g.k, table);
        let kq = cg.div_ceil(4);
        return run_pointwise(
            s,
            x,
            (table, mg * kq, false),
            flip.unwrap_or(s.corr),
            s.zb,
            y,
        );
    }
    let acc_len = rows * mg * esize;
    let cols_len = (rows * g.k + 63) & !63;
    let (acc, rest) = block_ws.split_at_mut(acc_len);
    let (cols, taps) = rest.split_at_mut(cols_len.min(rest.len()));
    let mut taps: Option<&mut [u8]> = if by_taps(p, g) {
        taps.get_mut(..rows * g.k)
    } else {
        None
    };
    for n in 0..g.batch {
        for gi in 0..g.group {
            let xg = &x[(n * g.c + gi * cg) * g.h * g.w..][..cg * g.h * g.w];
            for p0 in (0..hw).step_by(rows) {
                let rows = rows.min(hw - p0);
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
                let out = block_out(s.y, block, mg, q)?;
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
                let at = (n * g.m + gi * mg) * hw + p0;
                to_planes(acc, esize, (rows, mg), &mut y[at * esize..], hw);
            }
        }
    }
    Ok(())
}

/// The `[rows][mg]` results block (`ldc = mg`) as the GEMM's output of element type `y`.
pub(super) fn block_out<'a>(
    y: DType,
    block: &'a mut [u8],
    mg: usize,
    q: QOutParams<'a>,
) -> Result<QOut<'a>, KernelError> {
    Ok(match y {
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
    })
}

/// A `[rows][mg]` results block of `esize`-byte elements into `mg` output planes `hw`
/// elements apart (`y` from the block's first element).
pub(super) fn to_planes(
    block: &[u8],
    esize: usize,
    (rows, mg): (usize, usize),
    y: &mut [u8],
    hw: usize,
) {
    if esize == 1 {
        transpose_bytes(&block[..rows * mg], mg, rows, mg, y, hw);
    } else {
        let src: &[[u8; 4]] = bytemuck::cast_slice(&block[..rows * mg * 4]);
        let dst: &mut [[u8; 4]] = bytemuck::cast_slice_mut(y);
        scatter_columns(src, mg, rows, dst, hw);
    }
}

/// The pointwise kernel ([`pointwise::run_group`]) over every batch and group: `table`
/// holds each group's `per` weight quads (the packed table, or the blob's channel quads when
/// `quads`), `corr` the corrections the activations' reading needs (flipped for i8).
pub(super) fn run_pointwise<A: Act + bytemuck::Pod>(
    s: &Slices<'_>,
    x: &[A],
    (table, per, quads): (&[i32], usize, bool),
    corr: &[i32],
    zb: &[i32],
    y: &mut [u8],
) -> KernelResult {
    let g = &s.g;
    let (cg, mg, hw) = (g.c / g.group, g.m / g.group, g.h * g.w);
    let (lo, hi) = q8_bounds(s.y);
    let xb: &[u8] = bytemuck::cast_slice(x);
    for n in 0..g.batch {
        for gi in 0..g.group {
            let (Some(table), Some(x)) = (
                table.get(gi * per..(gi + 1) * per),
                xb.get((n * g.c + gi * cg) * hw..(n * g.c + (gi + 1) * cg) * hw),
            ) else {
                return Err(KernelError::Shape("int8 pointwise conv: slices"));
            };
            let group = pointwise::Group {
                x,
                hw,
                cg,
                mg,
                flip: A::SIGNED,
                table,
                quads,
                corr: &corr[gi * mg..(gi + 1) * mg],
                zb: group_slice(zb, gi, mg),
                rq: group_slice(s.rq, gi, mg),
                zp: s.zp,
                lo,
                hi,
            };
            let at = (n * g.m + gi * mg) * hw;
            if !pointwise::run_group(&group, &mut y[at..at + mg * hw]) {
                return Err(KernelError::Shape("int8 pointwise conv: slices"));
            }
        }
    }
    Ok(())
}
