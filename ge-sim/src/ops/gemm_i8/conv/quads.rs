//! int8 convolutions without im2col: the weight in quads packed at compile time, the
//! activations read straight from a padded copy of the input rows the outputs read.
//!
//! A quad is four weights of one output channel that meet four adjacent bytes of the copy,
//! so that a position's four activations are one unaligned 32-bit load, broadcast against
//! sixteen output channels' quads (one `vpdpbusd` on AVX-512 VNNI). Two layouts
//! ([`QuadLayout`]):
//! - **channel quads**, `w[j][4c4..4c4 + 4][ky][kx]`: the copy interleaves four channels per
//!   column (`[C/4][rows][cols][4]`); no padding when `C/group` is a multiple of four;
//! - **row quads**, `w[j][c][ky][4q..4q + 4]`: four taps of a kernel row, the row padded to
//!   a multiple of four, the copy plain (`[C][rows][cols]`): for the stems (one to three
//!   input channels, rows of three or more taps).
//!
//! The copy writes the padding out as the activation zero point and flips i8 activations to
//! `a + 128` (the tiles multiply unsigned activations; the compiler's flipped corrections
//! take the flip off). im2col copied every activation `kh·kw` times in small pieces (most of
//! a 3×3 conv's time); this copies each once. Same integers as the GEMM path, whatever the
//! order; the same epilogues. O(N·M·H_out·W_out·quads) products, O(C·H·W) copies.

use super::*;
use crate::arch::isa::Isa;
use crate::ops::gemm_i8::{Columns, MAX_POINTWISE_CG, MR, NR};

/// Bytes of one quad row of a panel: sixteen output channels' four weights.
const QUAD_ROW: usize = 4 * NR;

/// Which four weights a quad holds ([`QConvParams::quads`]'s layouts).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum QuadLayout {
    /// Four taps of a kernel row ([`ge_runtime::format::QCONV_ROW_QUADS`]).
    Rows,
    /// Four input channels at one tap ([`ge_runtime::format::QCONV_CHANNEL_QUADS`]).
    Channels,
}

impl QuadLayout {
    /// The layout a task's record names, `None` for GEMM panels.
    pub fn of(p: &QConvParams) -> Option<QuadLayout> {
        match p.out & ge_runtime::format::QCONV_LAYOUT_MASK {
            ge_runtime::format::QCONV_ROW_QUADS => Some(QuadLayout::Rows),
            ge_runtime::format::QCONV_CHANNEL_QUADS => Some(QuadLayout::Channels),
            _ => None,
        }
    }

    /// Quads per kernel row (row quads) or per tap (channel quads), and the copied
    /// channels a quad row steps over (`cg` or `⌈cg/4⌉`), as (`per`, `planes`).
    fn counts(self, cg: usize, kw: usize) -> (usize, usize) {
        match self {
            QuadLayout::Rows => (kw.div_ceil(4), cg),
            QuadLayout::Channels => (kw, cg.div_ceil(4)),
        }
    }

    /// Bytes a copied column: one activation, or four channels' interleaved.
    fn unit(self) -> usize {
        match self {
            QuadLayout::Rows => 1,
            QuadLayout::Channels => 4,
        }
    }
}

/// The quad layout a conv's weight takes, `None` when it stays on GEMM panels: not
/// depthwise (that has its plane; a 1×1 conv's channel quads are what the VNNI pointwise
/// kernel broadcasts, read in place), no dilation along rows
/// (a row quad's taps are then adjacent), weight zero points all zero (the padding
/// weights would otherwise need the activations' sums), a constant activation zero point
/// (the padding value and the flipped corrections are the compiler's). Of the two, the one
/// with fewer padding weights; channel quads on a tie, row quads only for kernel rows of
/// three or more taps.
#[allow(clippy::too_many_arguments)]
pub fn quad_layout(
    group: usize,
    m: usize,
    c: usize,
    kernel: [usize; 2],
    dilation_w: usize,
    zb_zero: bool,
    za_const: bool,
) -> Option<QuadLayout> {
    let cg = c / group.max(1);
    let depthwise = c == group && m == group;
    if depthwise || dilation_w != 1 || !zb_zero || !za_const || cg == 0 {
        return None;
    }
    let kw = kernel[1];
    // A 1×1 conv with more channels than the VNNI pointwise kernel holds keeps the GEMM
    // panels (MobileNet's 128-channel 1×1s ran 1.8× slower through the copy).
    if kernel == [1, 1] && cg > MAX_POINTWISE_CG {
        return None;
    }
    let by_channels = cg.div_ceil(4) * 4 * kw;
    let by_rows = cg * kw.div_ceil(4) * 4;
    Some(if kw >= 3 && by_rows < by_channels {
        QuadLayout::Rows
    } else {
        QuadLayout::Channels
    })
}

/// Bytes of one group's quad weight for `mg` output channels of `cg` inputs and a `kh × kw`
/// kernel: `⌈mg/16⌉` panels of quad rows of 64 bytes.
pub fn quads_len(layout: QuadLayout, mg: usize, cg: usize, kh: usize, kw: usize) -> Option<usize> {
    let (per, planes) = layout.counts(cg, kw);
    mg.div_ceil(NR)
        .checked_mul(planes)?
        .checked_mul(kh)?
        .checked_mul(per)?
        .checked_mul(QUAD_ROW)
}

/// Packs one group's weight `w` (`[mg][cg][kh][kw]`, as ONNX stores it) into `out`
/// ([`quads_len`] bytes): panel `p`, quad row `r = (plane·kh + ky)·per + i`, channel `t`,
/// byte `u` is `w[16p + t][c][ky][kx]` with `(c, kx) = (plane, 4i + u)` for row quads and
/// `(4·plane + u, i)` for channel quads; zero past the kernel row, `cg` and `mg`. O(len).
pub fn pack_quads(
    layout: QuadLayout,
    w: &[i8],
    mg: usize,
    cg: usize,
    kh: usize,
    kw: usize,
    out: &mut [i8],
) -> Result<(), KernelError> {
    let len = quads_len(layout, mg, cg, kh, kw)
        .ok_or(KernelError::Shape("quad int8 weight too large"))?;
    let k = cg * kh * kw;
    if w.len() < mg.saturating_mul(k) {
        return Err(KernelError::Shape("int8 weight smaller than its shape"));
    }
    let out = out
        .get_mut(..len)
        .ok_or(KernelError::Shape("quad int8 weight buffer too small"))?;
    out.fill(0);
    let (per, planes) = layout.counts(cg, kw);
    let rows = planes * kh * per;
    for (p, panel) in out.chunks_exact_mut((rows * QUAD_ROW).max(1)).enumerate() {
        for (r, row) in panel.chunks_exact_mut(QUAD_ROW).enumerate() {
            let (plane, ky, i) = (r / (kh * per), (r / per) % kh, r % per);
            for t in 0..NR.min(mg.saturating_sub(p * NR)) {
                for u in 0..4 {
                    let (c, kx) = match layout {
                        QuadLayout::Rows => (plane, 4 * i + u),
                        QuadLayout::Channels => (4 * plane + u, i),
                    };
                    if c < cg && kx < kw {
                        row[4 * t + u] = w[(p * NR + t) * k + (c * kh + ky) * kw + kx];
                    }
                }
            }
        }
    }
    Ok(())
}

/// The padded copy of a band: planes (channels, or channel quads) of `rows × wp` bytes.
#[derive(Clone, Copy)]
pub(super) struct Band {
    /// Input rows the band's `out_rows` output rows read.
    pub(super) rows: usize,
    /// Bytes a copied row: every column the outputs' quads read, from input column `−pl`.
    pub(super) wp: usize,
    /// Bytes a column ([`QuadLayout::unit`]).
    pub(super) unit: usize,
    /// Planes copied: `cg` or `⌈cg/4⌉`.
    pub(super) planes: usize,
}

impl Band {
    pub(super) fn of(
        layout: QuadLayout,
        p: &QConvParams,
        g: &Geom,
        out_rows: usize,
    ) -> Option<Band> {
        let rows = out_rows
            .checked_sub(1)?
            .checked_mul(p.stride[0] as usize)?
            .checked_add((g.kh.checked_sub(1)?).checked_mul(p.dilation[0] as usize)?)?
            .checked_add(1)?;
        let (per, planes) = layout.counts(g.c / g.group, g.kw);
        // The last position's quads reach `4·per` bytes past its first.
        let unit = layout.unit();
        let wp =
            g.ow.checked_sub(1)?
                .checked_mul(p.stride[1] as usize)?
                .checked_mul(unit)?
                .checked_add(4 * per)?;
        Some(Band {
            rows,
            wp,
            unit,
            planes,
        })
    }

    /// Bytes of the copy (rounded to 64).
    pub(super) fn bytes(self) -> Option<usize> {
        Some(
            self.planes
                .checked_mul(self.rows.checked_mul(self.wp)?)?
                .checked_add(63)?
                & !63,
        )
    }
}

/// Output positions per block of results (the epilogue's `[positions][mg]` block).
fn block_rows(g: &Geom, out_rows: usize) -> usize {
    ROWS.min(out_rows.saturating_mul(g.ow)).max(1)
}

/// Workspace bytes of a band of `out_rows` output rows: the copy and one block of results.
pub(super) fn quads_ws(
    layout: QuadLayout,
    p: &QConvParams,
    g: &Geom,
    out_rows: usize,
) -> Option<usize> {
    let copy = Band::of(layout, p, g, out_rows)?.bytes()?;
    let esize = if p.kind() == QGEMM_OUT_I32 { 4 } else { 1 };
    let block = block_rows(g, out_rows)
        .checked_mul(g.m / g.group)?
        .checked_mul(esize)?;
    copy.checked_add(block)
}

/// Writes the band of input rows `iy0..` (`iy0` may be negative: padding rows) of one
/// group's planes `x` (`[cg][h][w]`) into `copy`: row `r`, column `t` of channel `c` is
/// `x[c][iy0 + r][t − pl]` (flipped when `flip`), `pad` where that lies outside (and for the
/// channels past `cg` in the last channel quad). O(planes·rows·wp).
#[allow(clippy::too_many_arguments)]
fn copy_band(
    layout: QuadLayout,
    x: &[u8],
    g: &Geom,
    cg: usize,
    band: Band,
    iy0: isize,
    pl: usize,
    pad: u8,
    flip: bool,
    copy: &mut [u8],
) {
    let hw = g.h * g.w;
    let mask = if flip { 0x80 } else { 0 };
    let cols = band.wp / band.unit;
    let (lo, hi) = (pl.min(cols), (pl + g.w).min(cols));
    let line = |c: usize, iy: isize| -> Option<&[u8]> {
        (c < cg && iy >= 0 && (iy as usize) < g.h)
            .then(|| &x[c * hw + iy as usize * g.w..][..hi - lo])
    };
    for (pi, plane) in copy
        .chunks_exact_mut(band.rows * band.wp)
        .take(band.planes)
        .enumerate()
    {
        for (r, dst) in plane.chunks_exact_mut(band.wp).enumerate() {
            let iy = iy0 + r as isize;
            match layout {
                QuadLayout::Rows => match line(pi, iy) {
                    None => dst.fill(pad),
                    Some(src) => {
                        dst[..lo].fill(pad);
                        for (d, &s) in dst[lo..hi].iter_mut().zip(src) {
                            *d = s ^ mask;
                        }
                        dst[hi..].fill(pad);
                    }
                },
                QuadLayout::Channels => {
                    dst[..4 * lo].fill(pad);
                    dst[4 * hi..].fill(pad);
                    let lines: [Option<&[u8]>; 4] = core::array::from_fn(|u| line(4 * pi + u, iy));
                    interleave4(lines, pad, mask, &mut dst[4 * lo..4 * hi]);
                }
            }
        }
    }
}

/// `out[4t + u] = lines[u][t] ^ mask` (`pad` for a missing line): four rows of `out.len()/4`
/// bytes interleaved into columns of four, sixteen columns at a time with SIMD unpacks
/// where the target has them.
fn interleave4(lines: [Option<&[u8]>; 4], pad: u8, mask: u8, out: &mut [u8]) {
    let t = crate::arch::kernels::interleave4(lines, pad, mask, out);
    for (u, line) in lines.iter().enumerate() {
        for (i, d) in out[4 * t..].iter_mut().skip(u).step_by(4).enumerate() {
            *d = line.map_or(pad, |l| l[t + i] ^ mask);
        }
    }
}

/// The band geometry one tile reads: quad row `r = (plane·kh + ky)·per + i` at
/// `plane·plane_bytes + ky·row + 4i` in the copy (the next four taps of a kernel row, or the
/// next tap's four channels: four bytes on either way).
#[derive(Clone, Copy)]
pub struct QuadGeo {
    pub planes: usize,
    pub kh: usize,
    pub per: usize,
    pub plane: usize,
    /// Bytes between consecutive kernel rows: `dh · wp`.
    pub row: usize,
}

impl QuadGeo {
    /// Quad rows of a panel.
    pub fn quads(&self) -> usize {
        self.planes * self.kh * self.per
    }

    /// The copy's offsets of quad rows `0, 1, …` in turn, without a division per row.
    #[inline(always)]
    pub fn walk(&self) -> QuadWalk {
        QuadWalk {
            geo: *self,
            c: 0,
            ky: 0,
            q: 0,
        }
    }

    /// The copy's offset of quad row `r`.
    #[inline(always)]
    pub fn offset(&self, r: usize) -> usize {
        let (cy, q) = (r / self.per, r % self.per);
        (cy / self.kh) * self.plane + (cy % self.kh) * self.row + 4 * q
    }
}

/// [`QuadGeo::walk`]'s position: quad `q` of kernel row `ky` of plane `c`.
pub struct QuadWalk {
    geo: QuadGeo,
    c: usize,
    ky: usize,
    q: usize,
}

impl QuadWalk {
    /// The next quad row's offset.
    #[inline(always)]
    pub fn advance(&mut self) -> usize {
        let g = &self.geo;
        let o = self.c * g.plane + self.ky * g.row + 4 * self.q;
        self.q += 1;
        if self.q == g.per {
            self.q = 0;
            self.ky += 1;
            if self.ky == g.kh {
                self.ky = 0;
                self.c += 1;
            }
        }
        o
    }
}

/// `acc[i][t] = Σ_r Σ_u a[off[i] + offset(r) + u] · B[r][t][u]`, portable: the reference
/// of the vector tiles.
///
/// # Safety
/// `a + off[i] + offset(r)` holds 4 readable bytes for every row `i` and quad row `r`;
/// `bp` holds `quads()` quad rows of 64 bytes.
pub unsafe fn quads_tile(
    a: *const u8,
    off: &[usize; MR],
    geo: QuadGeo,
    bp: *const i8,
) -> [[i32; NR]; MR] {
    let mut acc = [[0i32; NR]; MR];
    for r in 0..geo.quads() {
        let o = geo.offset(r);
        // SAFETY: quad row `r` of the panel, per the contract.
        let b: &[i8; QUAD_ROW] = unsafe { &*(bp.add(r * QUAD_ROW) as *const [i8; QUAD_ROW]) };
        for (row, &at) in acc.iter_mut().zip(off) {
            // SAFETY: 4 bytes at `a + at + o`, per the contract.
            let v: [u8; 4] = unsafe { (a.add(at + o) as *const [u8; 4]).read_unaligned() };
            for (t, c) in row.iter_mut().enumerate() {
                let q = &b[4 * t..4 * t + 4];
                let s = i32::from(v[0]) * i32::from(q[0])
                    + i32::from(v[1]) * i32::from(q[1])
                    + i32::from(v[2]) * i32::from(q[2])
                    + i32::from(v[3]) * i32::from(q[3]);
                *c = c.wrapping_add(s);
            }
        }
    }
    acc
}

/// A band of a quad conv with few output channels, positions in lanes (the ISAs'
/// `qconv_quads::positions`).
pub struct Positions<'a> {
    /// The band's copy (channel quads: four bytes a column) and where its quad rows lie.
    pub copy: &'a [u8],
    pub geo: QuadGeo,
    /// Bytes of a copied row.
    pub wp: usize,
    pub sh: usize,
    /// Column stride: 1 or 2.
    pub sw: usize,
    /// Output rows of the band and their width.
    pub here: usize,
    pub ow: usize,
    /// The group's quads (one panel: at most sixteen output channels).
    pub weights: &'a [i8],
    pub mg: usize,
    pub corr: &'a [i32],
    /// One requantizer or `mg`, in a vector form.
    pub rq: &'a [Requant],
    pub range: (i32, i32, i32),
}

/// Whether the positions kernels take a conv: at most eight output channels a group (the
/// sixteen-channel tile leaves half its lanes empty), column stride 1 or 2.
pub fn positions_fit(mg: usize, sw: usize) -> bool {
    mg <= 8 && (sw == 1 || sw == 2)
}

impl Positions<'_> {
    /// Whether the band fits the kernels: few channels and stride ([`positions_fit`]), the
    /// copy holding every quad the band's positions read, a whole panel of weights, the
    /// corrections, requantizers in a vector form (one or `mg`), and `y` (`y_len` bytes)
    /// holding the band's rows of every channel, planes `plane` apart.
    pub fn fits(&self, y_len: usize, plane: usize) -> bool {
        let quads = self.geo.quads();
        let reach = self.geo.offset(quads.saturating_sub(1)) + 4;
        let last = (self.here.saturating_sub(1)) * self.sh * self.wp
            + (self.ow.saturating_sub(1)) * self.sw * 4;
        let per = |v: usize| v == 1 || v == self.mg;
        positions_fit(self.mg, self.sw)
            && quads != 0
            && self.here != 0
            && self.ow != 0
            && self.copy.len() >= last + reach
            && self.weights.len() >= quads * 64
            && self.corr.len() >= self.mg
            && per(self.rq.len())
            && crate::ops::gemm_i8::vector_form(self.rq)
            && y_len >= (self.mg - 1) * plane + self.here * self.ow
    }
}

/// Runs one quad conv ([`Path::Quads`]) in `ws`: per group and band, the padded copy,
/// then blocks of output positions through the tile and the GEMM's epilogue into
/// `[positions][mg]`, transposed into the output planes.
pub(super) fn run_quads<A: Act + bytemuck::Pod>(
    layout: QuadLayout,
    s: &Slices<'_>,
    x: &[A],
    pad: u8,
    out_rows: usize,
    ws: &mut [u8],
    y: &mut [u8],
) -> KernelResult {
    let (p, g) = (s.p, &s.g);
    let shape = |m| Err(KernelError::Shape(m));
    let (cg, mg) = (g.c / g.group, g.m / g.group);
    let out_rows = out_rows.clamp(1, g.oh.max(1));
    let (Some(band), Some(need)) = (
        Band::of(layout, p, g, out_rows),
        quads_ws(layout, p, g, out_rows),
    ) else {
        return shape("int8 conv: band too large");
    };
    let copy_len = need - block_rows(g, out_rows) * mg * s.esize;
    if ws.len() < need || p.dilation[1] != 1 {
        return shape("int8 conv: workspace too small for its band");
    }
    let corr = match (A::SIGNED, s.flipped) {
        (false, _) => s.corr,
        (true, Some(f)) => f,
        (true, None) => return shape("int8 conv: quad weights need the flipped corrections"),
    };
    if !s.zb.iter().all(|&z| z == 0) {
        return shape("int8 conv: quad weights need zero weight zero points");
    }
    // A 1×1 conv with few channels: the pointwise kernel (pixels in lanes, no copy and no
    // transposes) reads the channel quads in place.
    if layout == QuadLayout::Channels
        && is_pointwise(p, g)
        && s.esize == 1
        && crate::ops::gemm_i8::vector_form(s.rq)
        && crate::ops::gemm_i8::pointwise::available()
        && let Ok(table) = bytemuck::try_cast_slice::<i8, i32>(s.b)
    {
        return run_pointwise(s, x, (table, s.plen / 4, true), corr, &[], y);
    }
    let (copy, results) = ws.split_at_mut(copy_len);
    let geo = QuadGeo {
        planes: band.planes,
        kh: g.kh,
        per: layout.counts(cg, g.kw).0,
        plane: band.rows * band.wp,
        row: p.dilation[0] as usize * band.wp,
    };
    let plen = s.plen;
    let (sh, sw) = (p.stride[0] as usize, p.stride[1] as usize);
    let (pt, pl) = (p.pad_begin[0] as isize, p.pad_begin[1] as usize);
    let hw = g.oh * g.ow;
    let bp = block_rows(g, out_rows);
    let esize = s.esize;
    let pad = if A::SIGNED { pad ^ 0x80 } else { pad };
    let xb: &[u8] = bytemuck::cast_slice(x);
    let (lo, hi) = q8_bounds(s.y);
    // Few output channels: positions in lanes (VNNI's kernel, else AVX2's).
    let positions = (layout == QuadLayout::Channels
        && esize == 1
        && positions_fit(mg, sw)
        && crate::ops::gemm_i8::vector_form(s.rq))
    .then(|| crate::arch::qtile::positions_kernel(isa::isa()))
    .flatten();
    for n in 0..g.batch {
        for gi in 0..g.group {
            let xg = &xb[(n * g.c + gi * cg) * g.h * g.w..][..cg * g.h * g.w];
            let weights = &s.b[gi * plen..(gi + 1) * plen];
            let cols = Columns {
                n: mg,
                corr: &corr[gi * mg..(gi + 1) * mg],
                zb: &[],
            };
            let q = QOutParams {
                rq: group_slice(s.rq, gi, mg),
                zp: s.zp,
            };
            for o0 in (0..g.oh).step_by(out_rows) {
                let here = out_rows.min(g.oh - o0);
                let iy0 = (o0 * sh) as isize - pt;
                copy_band(layout, xg, g, cg, band, iy0, pl, pad, A::SIGNED, copy);
                // Few output channels on VNNI: positions in lanes, straight into the planes.
                if let Some(kernel) = positions {
                    let run = Positions {
                        copy,
                        geo,
                        wp: band.wp,
                        sh,
                        sw,
                        here,
                        ow: g.ow,
                        weights,
                        mg,
                        corr: cols.corr,
                        rq: q.rq,
                        range: (s.zp, lo, hi),
                    };
                    let at = (n * g.m + gi * mg) * hw + o0 * g.ow;
                    if crate::arch::qtile::positions(kernel, &run, &mut y[at..], hw) {
                        continue;
                    }
                }
                let first = o0 * g.ow;
                let last = (o0 + here) * g.ow;
                for p0 in (first..last).step_by(bp) {
                    let rows = bp.min(last - p0);
                    let mut out = block_out(s.y, &mut results[..rows * mg * esize], mg, q)?;
                    // Position `p0 + i`'s first byte in the copy.
                    let at = |i: usize| {
                        let pos = p0 + i;
                        (pos / g.ow - o0) * sh * band.wp + (pos % g.ow) * sw * band.unit
                    };
                    block(isa::isa(), &cols, rows, at, copy, geo, weights, &mut out)?;
                    let at = (n * g.m + gi * mg) * hw + p0;
                    to_planes(results, esize, (rows, mg), &mut y[at * esize..], hw);
                }
            }
        }
    }
    Ok(())
}

/// Rows `0..m` of a block (row `i` at `at(i)` in the copy `a`, increasing with `i`) times
/// every panel of `b`, finished by `cols`' epilogue into `out`, on `isa`'s tile. Checks
/// every read and write first.
#[allow(clippy::too_many_arguments)]
pub(super) fn block(
    isa: Isa,
    cols: &Columns<'_>,
    m: usize,
    at: impl Fn(usize) -> usize,
    a: &[u8],
    geo: QuadGeo,
    b: &[i8],
    out: &mut QOut<'_>,
) -> KernelResult {
    cols.check_out(m, out)?;
    let quads = geo.quads();
    if m == 0 || cols.n == 0 || quads == 0 {
        return Ok(());
    }
    let panel = quads * QUAD_ROW;
    let panels = cols.n.div_ceil(NR);
    let reach = at(m - 1)
        .checked_add(geo.offset(quads - 1))
        .and_then(|r| r.checked_add(4));
    if !matches!(reach, Some(r) if r <= a.len()) || b.len() < panels * panel {
        return Err(KernelError::Shape("int8 conv: quad block outside its copy"));
    }
    let wide = crate::arch::qtile::wide(isa, out);
    let rowsum = [0i32; MR];
    for i0 in (0..m).step_by(MR) {
        let mr = MR.min(m - i0);
        let off: [usize; MR] = core::array::from_fn(|i| at(i0 + if i < mr { i } else { 0 }));
        for p in 0..panels {
            let bp = b[p * panel..].as_ptr();
            // Every tile below: rows `i0..i0 + mr` (and the repeats of `i0`) read at most
            // `at(m − 1) + offset(quads − 1) + 4 ≤ a.len()` bytes (offsets grow with the row
            // and the quad), the panel `panel` bytes of `b` (both checked above).
            if let Some(w) = wide {
                // SAFETY: as above; `w` proves the CPU runs the AVX-512 tile, `out` passed
                // `check_out`.
                unsafe {
                    crate::arch::qtile::wide_quads_block(
                        w,
                        a.as_ptr(),
                        &off,
                        geo,
                        bp,
                        cols,
                        &rowsum,
                        i0,
                        mr,
                        p * NR,
                        out,
                    )
                };
                continue;
            }
            // SAFETY: as above; `isa` is the CPU's.
            let acc = unsafe { crate::arch::qtile::quads_tile_on(isa, a.as_ptr(), &off, geo, bp) };
            cols.store(isa, &acc, &rowsum, i0, mr, p * NR, out);
        }
    }
    Ok(())
}
