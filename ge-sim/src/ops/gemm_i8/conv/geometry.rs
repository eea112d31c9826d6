//! The QConv geometry and the path it takes (pointwise, by taps, depthwise band or plane), and
//! the workspace each needs.

use super::*;

/// The geometry every part of the task reads, from the params and shapes.
#[derive(Clone, Copy)]
pub(super) struct Geom {
    pub(super) batch: usize,
    pub(super) c: usize,
    pub(super) h: usize,
    pub(super) w: usize,
    pub(super) m: usize,
    pub(super) oh: usize,
    pub(super) ow: usize,
    pub(super) group: usize,
    /// Input channels of a group × kernel window: the GEMM's k.
    pub(super) k: usize,
    pub(super) kh: usize,
    pub(super) kw: usize,
}

pub(super) fn geom(p: &QConvParams, x: Shape, y: Shape) -> Option<Geom> {
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
pub(super) fn parts(g: &Geom, runtime_zp: bool) -> Option<(usize, usize, usize)> {
    let acc = ROWS.checked_mul(g.m / g.group)?.checked_mul(4)?;
    let cols = ROWS.checked_mul(g.k)?.checked_add(63)? & !63;
    Some((acc, cols, if runtime_zp { g.m.checked_mul(4)? } else { 0 }))
}

/// Bytes planned after [`parts`] for the faster paths: a depthwise conv's padded f32 plane
/// and output runs ([`dw_band`]), else the `m` i32 corrections of i8 activations read flipped
/// ([`flipped_corrections`]). A blob planned by an older ge lacks them and runs the GEMM
/// path with the i8 tile, which needs only [`parts`].
pub(super) fn extra_len(p: &QConvParams, g: &Geom) -> Option<usize> {
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
pub(super) fn by_taps(p: &QConvParams, g: &Geom) -> bool {
    p.stride[1] == 1 && g.kh * g.kw > 1
}

/// A 1×1 stride-1 unpadded conv with at most [`MAX_POINTWISE_CG`] input channels per group,
/// requantized in the f32 form: [`pointwise`]'s, with VNNI.
pub(super) fn is_pointwise(p: &QConvParams, g: &Geom) -> bool {
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
pub(super) fn is_depthwise(g: &Geom) -> bool {
    g.c == g.group && g.m == g.group
}

/// The padded input plane a depthwise conv reads (`hp × wp` f32: the rows and columns its
/// outputs reach, plus the slack a flat run's last taps read past it) and three runs of
/// outputs (sums, activation sums, requantized values), in f32 elements.
pub(super) fn dw_band(p: &QConvParams, g: &Geom) -> Option<usize> {
    let (hp, wp) = dw_plane(p, g)?;
    let run = dw_run(p, g, wp)?;
    hp.checked_mul(wp)?
        .checked_add(dw_slack(p, g))?
        .checked_add(run.checked_mul(3)?)
}

/// Values past the padded plane a flat run reads: the last tap row's column offset.
pub(super) fn dw_slack(p: &QConvParams, g: &Geom) -> usize {
    g.kw.saturating_sub(1)
        .saturating_mul(p.dilation[1] as usize)
}

/// Outputs per run: a stride-1 conv runs over the flat padded plane (`oh` rows of `wp`,
/// the columns past `ow` computed and dropped), so each tap is one long multiply-add; a
/// strided one row by row.
pub(super) fn dw_run(p: &QConvParams, g: &Geom, wp: usize) -> Option<usize> {
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
pub(super) fn dw_flat(p: &QConvParams) -> bool {
    p.stride[0] <= 2 && p.stride[1] <= 2
}

/// Rows and columns of a depthwise conv's padded plane.
pub(super) fn dw_plane(p: &QConvParams, g: &Geom) -> Option<(usize, usize)> {
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
