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

/// Output positions per GEMM block at each workspace level, the preferred first. The
/// planner gives a conv where the arena peaks a lower level (less scratch; the same bytes,
/// each output being its own exact integer sum): MLPerf Tiny's ResNet-8 took 135 KB of
/// scratch for a 3×3 conv over 4 KB of activations at the preferred level. No fewer than
/// 16: the byte transposes around the GEMM then run on whole 16 × 16 SSE2 blocks (at 8
/// positions ResNet-8 ran 43% slower on the host, at 16 10%).
const BLOCK_ROWS: [usize; WORKSPACE_LEVELS] = [ROWS, 64, 48, 32, 24, 16];

/// How a task runs in the workspace it was given, decided from its length ([`path_for`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(in crate::ops::gemm_i8) enum Path {
    /// The depthwise plane, `band` output rows at a time ([`depthwise_f32`]).
    Depthwise { band: usize },
    /// Quads on a padded copy of the input rows `band` output rows read ([`run_quads`]).
    Quads { band: usize },
    /// im2col and the int8 GEMM, `rows` output positions a block; `flip`: the corrections
    /// for i8 activations read as `a + 128` have room; `table`: so has the pointwise
    /// kernel's weight table.
    Gemm {
        rows: usize,
        flip: bool,
        table: bool,
    },
}

/// Bytes of the run-time zero point's corrections (input 5 present), first in the workspace.
pub(super) fn corr_len(g: &Geom, runtime_zp: bool) -> Option<usize> {
    if runtime_zp {
        g.m.checked_mul(4)
    } else {
        Some(0)
    }
}

/// Bytes of one GEMM block of `rows` positions: its results (`esize` bytes each), its
/// columns (rounded to 64 bytes) and, through [`im2col_by_taps`], the tap-major copy.
pub(super) fn block_len(p: &QConvParams, g: &Geom, rows: usize, esize: usize) -> Option<usize> {
    let acc = rows.checked_mul(g.m / g.group)?.checked_mul(esize)?;
    let cols = rows.checked_mul(g.k)?.checked_add(63)? & !63;
    let taps = if by_taps(p, g) {
        rows.checked_mul(g.k)?
    } else {
        0
    };
    acc.checked_add(cols)?.checked_add(taps)
}

/// Bytes of the pointwise kernel's weight table ([`pointwise::table_len`] i32), which
/// takes the block's place (that path needs no columns); 0 when the conv is not pointwise.
pub(super) fn table_bytes(p: &QConvParams, g: &Geom) -> Option<usize> {
    if is_pointwise(p, g) {
        pointwise::table_len(g.m, g.c / g.group)?.checked_mul(4)
    } else {
        Some(0)
    }
}

/// Output rows per band (depthwise, row quads) at workspace level `level`: all of them, then
/// halves, one at the last.
fn band_rows(g: &Geom, level: usize) -> usize {
    if level + 1 == WORKSPACE_LEVELS {
        1
    } else {
        g.oh.div_ceil(1 << level).max(1)
    }
}

/// Whether a depthwise conv runs on its f32 plane: a window of at most [`MAX_DW_TAPS`]
/// taps, and an i32 output or requantization constants (`has_rq`).
pub(super) fn dw_direct(p: &QConvParams, g: &Geom, has_rq: bool) -> bool {
    depthwise_on_plane(g.group, g.m, g.c, g.k, p.kind() == QGEMM_OUT_I32 || has_rq)
}

/// Whether a conv of `group` groups, `m` outputs, `c` inputs and `k` taps a group runs on
/// its f32 plane ([`depthwise_f32`]; `i32_or_rq`: its output is i32 or it has
/// requantization constants). The compiler then stores its weight as it is, `[C][k]`
/// (compact: `k` bytes a channel instead of a GEMM panel), and the kernel tells the two
/// layouts apart by length.
pub fn depthwise_on_plane(group: usize, m: usize, c: usize, k: usize, i32_or_rq: bool) -> bool {
    c == group && m == group && k <= MAX_DW_TAPS && i32_or_rq
}

/// The workspace bytes of each level, the preferred first (all `None` on overflow).
fn levels(
    p: &QConvParams,
    g: &Geom,
    runtime_zp: bool,
    has_rq: bool,
) -> Option<[usize; WORKSPACE_LEVELS]> {
    let corr = corr_len(g, runtime_zp)?;
    let esize = if p.kind() == QGEMM_OUT_I32 { 4 } else { 1 };
    let mut out = [0; WORKSPACE_LEVELS];
    for (level, slot) in out.iter_mut().enumerate() {
        let body = if let Some(layout) = QuadLayout::of(p) {
            quads_ws(layout, p, g, band_rows(g, level))?
        } else if dw_direct(p, g, has_rq) {
            // Every level holds the sixteen-channel ring of narrow rows (the AVX-512
            // kernel's, [`dw_lanes`]: kws's 25 × 5 planes, 1.6 KB), at the arena's peak too.
            let band = dw_band(p, g, band_rows(g, level))?;
            band.max(dw_lanes(p, g)?).checked_mul(4)?
        } else {
            let block = block_len(p, g, BLOCK_ROWS[level], esize)?;
            // The preferred level leaves the pointwise kernel room for its table.
            let block = if level == 0 {
                block.max(table_bytes(p, g)?)
            } else {
                block
            };
            block.checked_add(g.m.checked_mul(4)?)?
        };
        *slot = corr.checked_add(body)?;
    }
    Some(out)
}

/// The path a task takes in `ws_len` bytes of workspace: the depthwise plane in the largest
/// band that fits, else GEMM blocks of the most positions that fit (then the flipped
/// corrections and the pointwise table where room is left). `None`: not even the least
/// (or no band, for `compact` depthwise weights, which only the plane reads).
/// A blob planned by an older ge (the i32 block, no corrections) runs too.
pub(super) fn path_for(
    p: &QConvParams,
    g: &Geom,
    runtime_zp: bool,
    has_rq: bool,
    esize: usize,
    compact: bool,
    ws_len: usize,
) -> Option<Path> {
    let room = ws_len.checked_sub(corr_len(g, runtime_zp)?)?;
    if let Some(layout) = QuadLayout::of(p) {
        // Only this path reads the layout.
        return (0..WORKSPACE_LEVELS)
            .map(|level| band_rows(g, level))
            .find(|&band| quads_ws(layout, p, g, band).is_some_and(|b| b <= room))
            .map(|band| Path::Quads { band });
    }
    if dw_direct(p, g, has_rq) {
        for level in 0..WORKSPACE_LEVELS {
            let band = band_rows(g, level);
            if dw_band(p, g, band)?.checked_mul(4)? <= room {
                return Some(Path::Depthwise { band });
            }
        }
    }
    if compact {
        return None;
    }
    let rows = BLOCK_ROWS
        .into_iter()
        .find(|&r| block_len(p, g, r, esize).is_some_and(|b| b <= room))?;
    let flip = !is_depthwise(g) && block_len(p, g, rows, esize)? + g.m * 4 <= room;
    let table = flip && is_pointwise(p, g) && table_bytes(p, g)? + g.m * 4 <= room;
    Some(Path::Gemm { rows, flip, table })
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
        && matches!(p.kind(), QGEMM_OUT_Q8_F32 | QGEMM_OUT_Q8_TFLITE)
        && !is_depthwise(g)
}

/// One input and one output channel per group.
pub(super) fn is_depthwise(g: &Geom) -> bool {
    g.c == g.group && g.m == g.group
}

/// The padded input rows a band of `band` output rows of a depthwise conv reads (`hp × wp`
/// f32: the rows and columns its outputs reach, plus the slack a flat run's last taps read
/// past it) and three runs of outputs (sums, activation sums, requantized values), in f32
/// elements.
pub(super) fn dw_band(p: &QConvParams, g: &Geom, band: usize) -> Option<usize> {
    let (hp, wp) = dw_plane(p, g, band)?;
    let run = dw_run(p, g, wp, band)?;
    hp.checked_mul(wp)?
        .checked_add(dw_slack(p, g))?
        .checked_add(run.checked_mul(3)?)
}

/// f32 a depthwise conv sixteen channels a vector needs (the AVX-512 kernel's `lanes`): a
/// ring of the window's rows of sixteen-channel pixel vectors and one output row of
/// sixteen-channel bytes; 0 for output rows of sixteen or more, which fill the per-channel
/// band's vectors (at 24 and 48 columns the ring was slower, and its size took the planner's
/// larger bands away).
pub(super) fn dw_lanes(p: &QConvParams, g: &Geom) -> Option<usize> {
    if g.ow >= 16 {
        return Some(0);
    }
    let (ring, wp) = dw_plane(p, g, 1)?;
    lanes_floats(ring, wp, g.ow)
}

/// f32 of the sixteen-channel ring (`ring` rows of `wp` pixel vectors) and one output row of
/// `ow` sixteen-channel bytes: what `depthwise_q8::lanes` needs, which checks it by this.
pub(crate) fn lanes_floats(ring: usize, wp: usize, ow: usize) -> Option<usize> {
    ring.checked_mul(wp)?
        .checked_mul(16)?
        .checked_add(ow.div_ceil(16).checked_mul(64)?)
}

/// The range of an 8-bit output type: u8's, else i8's (for the vector epilogues).
pub(super) fn q8_bounds(y: DType) -> (i32, i32) {
    if y == DType::U8 {
        (0, 255)
    } else {
        (-128, 127)
    }
}

/// Values past the padded plane a flat run reads: the last tap row's column offset.
pub(super) fn dw_slack(p: &QConvParams, g: &Geom) -> usize {
    g.kw.saturating_sub(1)
        .saturating_mul(p.dilation[1] as usize)
}

/// Outputs per run: a stride-1 conv runs over the flat padded band (`band` rows of `wp`,
/// the columns past `ow` computed and dropped), so each tap is one long multiply-add; a
/// strided one row by row.
pub(super) fn dw_run(p: &QConvParams, g: &Geom, wp: usize, band: usize) -> Option<usize> {
    if dw_flat(p) {
        band.checked_sub(1)?
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

/// Rows and columns of the padded plane `band` output rows of a depthwise conv read.
pub(super) fn dw_plane(p: &QConvParams, g: &Geom, band: usize) -> Option<(usize, usize)> {
    let reach = |o: usize, s: u32, k: usize, d: u32| -> Option<usize> {
        o.checked_sub(1)?
            .checked_mul(s as usize)?
            .checked_add(k.checked_sub(1)?.checked_mul(d as usize)?)?
            .checked_add(1)
    };
    Some((
        reach(band, p.stride[0], g.kh, p.dilation[0])?,
        reach(g.ow, p.stride[1], g.kw, p.dilation[1])?,
    ))
}

/// Workspace bytes a task can run with at each level, the preferred first (all 0 for
/// shapes it cannot run: it then fails with an error).
pub fn workspace_levels(
    p: &QConvParams,
    ins: &[Option<Shape>],
    outs: &[Shape],
) -> [usize; WORKSPACE_LEVELS] {
    let (Some(Some(x)), Some(y)) = (ins.first(), outs.first()) else {
        return [0; WORKSPACE_LEVELS];
    };
    let present = |i: usize| ins.get(i).copied().flatten().is_some();
    geom(p, *x, *y)
        .and_then(|g| levels(p, &g, present(5), present(4)))
        .unwrap_or([0; WORKSPACE_LEVELS])
}

/// Workspace bytes of a task at its preferred level ([`workspace_levels`]).
pub fn workspace_bytes(p: &QConvParams, ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    workspace_levels(p, ins, outs)[0]
}

/// One channel's band of a depthwise conv on the f32 plane (the ISAs' `depthwise_q8::run`):
/// its input plane, where the band starts, and the window.
pub struct DwBand<'a> {
    /// The channel's `h × w` input bytes (u8, or i8 when `signed`).
    pub plane: &'a [u8],
    pub signed: bool,
    pub h: usize,
    pub w: usize,
    /// The band's first input row (negative: padding rows).
    pub iy0: isize,
    /// Input rows and padded columns of the band (`wp` from input column `−pl`).
    pub rows: usize,
    pub wp: usize,
    pub pl: usize,
    /// The padding value (the activation zero point).
    pub pad: f32,
    /// The taps, row-major, `kh × kw`.
    pub taps: &'a [f32],
    pub kh: usize,
    pub kw: usize,
    pub dh: usize,
    pub dw: usize,
    /// Strides: rows any, columns 1 or 2.
    pub sh: usize,
    pub sw: usize,
    /// Output rows of the band and their width.
    pub here: usize,
    pub ow: usize,
    pub corr: i32,
}

impl DwBand<'_> {
    /// Whether the band kernels take a window of these column strides.
    pub fn stride_fits(sw: usize) -> bool {
        sw == 1 || sw == 2
    }

    /// Whether the band fits a buffer of `buf` f32 (its `rows × wp` widened rows) and an
    /// output of `y` bytes (`here × ow`), and the window reaches no column or row past
    /// the band.
    pub fn fits(&self, buf: usize, y: usize) -> bool {
        let reach_x = (self.ow.saturating_sub(1)) * self.sw + (self.kw.saturating_sub(1)) * self.dw;
        let reach_y =
            (self.here.saturating_sub(1)) * self.sh + (self.kh.saturating_sub(1)) * self.dh;
        DwBand::stride_fits(self.sw)
            && self.kh != 0
            && self.kw != 0
            && self.taps.len() >= self.kh * self.kw
            && self.rows.checked_mul(self.wp).is_some_and(|n| buf >= n)
            && y >= self.here * self.ow
            && self.plane.len() >= self.h * self.w
            && reach_x < self.wp
            && reach_y < self.rows
    }
}

/// A depthwise conv sixteen channels a vector (the ISAs' `depthwise_q8::lanes`): the input
/// planes, the window,
/// the taps and per-channel constants. Small planes (MobileNet's 6 × 6 to 24 × 24, kws's
/// 25 × 5) spent most of the banded kernel's time per channel on its band; here a band row of sixteen
/// channels is one transpose and every tap one multiply-add for all sixteen.
pub struct Planes<'a> {
    /// `[C][h][w]` bytes (u8, or i8 when `signed`).
    pub x: &'a [u8],
    pub signed: bool,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub oh: usize,
    pub ow: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub dh: usize,
    pub dw: usize,
    pub pt: usize,
    pub pl: usize,
    /// The padding value (the activation zero point, as the activations read).
    pub pad: f32,
    /// `[C][kh·kw]` taps.
    pub taps: &'a [i8],
    /// Per channel: the folded correction and the requantizer (1 or C each).
    pub corr: &'a [i32],
    pub rq: &'a [crate::ops::gemm_i8::Requant],
    pub zp: i32,
    pub lo: i32,
    pub hi: i32,
}

/// Most taps the lanes kernels hold in registers' worth of stack (one vector each).
pub const LANE_TAPS: usize = 64;

/// Padded columns of one ring row and the ring's rows: `(wp, ring)`.
pub fn lanes_ring(p: &Planes<'_>) -> (usize, usize) {
    let wp = (p.ow.max(1) - 1) * p.sw + (p.kw.max(1) - 1) * p.dw + 1;
    (wp, (p.kh.max(1) - 1) * p.dh + 1)
}

/// The ring slot of input row `iy` in a ring of `ring` rows (rows are filled in order, each
/// once).
#[inline(always)]
pub fn ring_slot(iy: isize, ring: usize) -> usize {
    iy.rem_euclid(ring.max(1) as isize) as usize
}

/// Brings into the ring (`fill(iy, slot)`) the input rows output row `oy`'s window reaches
/// that it does not hold yet — `next` is the first row not filled; rows a stride larger than
/// the window skips are never read — and returns the window's top row.
#[inline(always)]
pub fn ring_advance(
    p: &Planes<'_>,
    ring: usize,
    oy: usize,
    next: &mut isize,
    mut fill: impl FnMut(isize, usize),
) -> isize {
    let top = (oy * p.sh) as isize - p.pt as isize;
    let bottom = top + ((p.kh.max(1) - 1) * p.dh) as isize;
    *next = (*next).max(bottom + 1 - ring as isize);
    while *next <= bottom {
        fill(*next, ring_slot(*next, ring));
        *next += 1;
    }
    top
}
