//! Direct convolution: the GEMM register tile ([`conv_tile`]) reads its B rows in place from
//! a padded copy of the input instead of from packed im2col columns, so each input value is
//! copied once per band rather than once per kernel tap (9× for a 3×3 kernel).
//!
//! The copy ("band") holds, for a band of output rows, every input row they read, with the
//! horizontal padding written out as zeros and each row split into `stride` phases (column
//! `c` of the padded row at `(c mod s)·pw + c / s`), so the `NR` outputs of a tile read `NR`
//! consecutive values for every tap whatever the stride. Rows outside the input are zero
//! rows. Weights are packed into `MR`-row panels once per call. Each output element gets the
//! same operations in the same order as on the im2col path (taps in (channel, kd, kh, kw)
//! order, the same K blocks, zeros for padding), so the two paths agree bitwise.
//!
//! Rows narrower than a tile (ResNet-50's 14- and 7-wide stages), or whose row tiles would
//! waste over a fifth of their lanes (YOLO's 20- and 40-wide), take *flat* tiles at
//! stride 1: a tile's lanes run across band rows (output `(r, c)` at flat index `r·wp + c`,
//! its B rows still `NR` consecutive band values per tap), the `wp − w` lanes past each
//! output row are computed and dropped by the AVX-512 block's compressing store
//! ([`Flat`]). Narrow rows ran on im2col before (its packing cost more than row tiles'
//! lane waste); elsewhere (AVX2, firmware) they still do, and wider rows keep row tiles.
//!
//! Cost: O(input · rows re-read at band borders) to copy, O(M·K·output) multiply-adds.

use super::super::gemm::micro::{
    Block, BlockA, BlockB, Flat, MR, NR, TileAct, TileEp, block, block_dims, isa, strip_cols,
};
use super::super::gemm::{SendPtr, k_block};
use super::{Geo, KernelError, bad};
use crate::threads::Parallel;

/// Target f32 size of one band (the copy stays in L2 while the tiles read it).
const BAND_CAP: usize = 1 << 16;
/// Readable f32 past the band: a row's last register block reads up to `2·NR` values past
/// its first column (AVX-512 blocks are two panels wide).
const SLACK: usize = 2 * NR;
/// Target f32 size of one K block's weight panels (an M block) kept in L2 while the band's
/// tiles read them.
const MC_FLOATS: usize = 96 * 1024;

/// The band geometry of one convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Width of one stride phase of a padded row.
    pub(crate) pw: usize,
    /// Padded row length (`stride · pw`).
    pub(crate) wp: usize,
    /// Output rows per band.
    pub(crate) band: usize,
    /// Input rows held per band (per channel and depth tap).
    pub(crate) rin: usize,
    /// f32 of the band, slack included.
    pub(crate) buf: usize,
    /// f32 of the packed weight panels.
    pub(crate) apack: usize,
    /// Taps (`K = C/g · Πk`), one u32 offset each.
    pub(crate) taps: usize,
    /// Tiles may run across whole band rows ([`Flat`] blocks: stride 1 along both row
    /// axes, at most a quarter of each padded row past the output row) and beat AVX-512
    /// row tiles, which waste over a fifth of their lanes here (rows of 20, 40: 62%; 14,
    /// 7: under half), where 56- or 112-wide rows waste an eighth and flat tiles' unaligned
    /// stores cost more (VGG-19: 4% slower).
    pub(crate) prefer_flat: bool,
    /// Output rows too narrow for row tiles (most lanes wasted): worth running only as
    /// flat tiles ([`flat_here`]), im2col elsewhere.
    pub(crate) narrow: bool,
}

impl Layout {
    /// f32 scratch elements the direct path needs.
    pub(super) fn ws_len(&self) -> usize {
        self.buf + self.apack + self.taps
    }

    /// f32 of the workspace of the same conv on bands of `rows` output rows (`s1`: its row
    /// stride): what [`layout_within`] needs to choose that band.
    pub(super) fn ws_len_for_band(&self, rows: usize, s1: usize) -> usize {
        let per_row = (self.buf - SLACK) / self.rin.max(1);
        let reach1 = self.rin - (self.band - 1) * s1;
        let rin = (rows.max(1) - 1) * s1 + reach1;
        per_row * rin + SLACK + self.apack + self.taps
    }
}

/// The band layout, or `None` when output rows are narrower than a tile's `NR` columns and
/// cannot take flat tiles (strided, or without `std`), offsets would not fit in u32 or the
/// conv is empty (the im2col path takes those). On narrow rows (a 7 × 7 or 14 × 14 stage) a
/// row tile wastes lanes and re-reads every weight for a few outputs, where the GEMM's
/// columns run across rows: ResNet-50's 7- and 14-wide 3 × 3 convs ran 1.3–2.9× faster on
/// im2col than on row tiles (AVX-512 and AVX2, `kernels` bench).
pub(crate) fn layout(geo: &Geo) -> Option<Layout> {
    // Firmware plans narrow rows on im2col at once (its model's shapes are constants
    // there, so the direct path folds away).
    if !cfg!(feature = "std") && geo.small[2] < NR {
        return None;
    }
    layout_within(geo, usize::MAX)
}

/// Whether this build stores flat blocks in registers (AVX-512 with `std`): elsewhere a
/// flat block goes through a stack tile, and narrow rows are faster on im2col.
pub(crate) fn flat_here() -> bool {
    cfg!(feature = "std") && isa().is_avx512()
}

/// [`layout`] with at most `ws` f32 of workspace, narrow rows allowed: bands of fewer rows
/// when the preferred band does not fit (a blob planned by an older ge, whose band formula
/// differed or which took the direct path on narrow rows), `None` when not even one output
/// row fits.
pub(crate) fn layout_within(geo: &Geo, ws: usize) -> Option<Layout> {
    band_layout(geo, ws, false)
}

/// A band layout for tiles that do not run along rows (the AVX2 lanes path, which takes
/// its pixels anywhere in the band): narrow rows allowed at any stride.
pub(crate) fn any_rows_layout(geo: &Geo) -> Option<Layout> {
    band_layout(geo, usize::MAX, true)
}

/// [`layout_within`], or with `any_rows` also rows that neither row nor flat tiles take.
fn band_layout(geo: &Geo, ws: usize, any_rows: bool) -> Option<Layout> {
    if geo.cg == 0 || geo.mg == 0 || geo.small.contains(&0) {
        return None;
    }
    let w = geo.small[2];
    let covered = w / NR * NR + (w % NR).next_multiple_of(NR / 2);
    // Without `std` (no flat tiles) wasteful rows leave at once, before any of the
    // arithmetic below: firmware folds its model's constant geometry through here.
    if !cfg!(feature = "std") && w * 4 < covered * 3 {
        return None;
    }
    let [k0, k1, k2] = geo.k;
    let (s1, s2) = (geo.s[1], geo.s[2]);
    let (d1, d2) = (geo.d[1], geo.d[2]);
    let span2 = (geo.small[2] - 1)
        .checked_mul(s2)?
        .checked_add((k2 - 1).checked_mul(d2)?)?
        + 1;
    let pw = span2.div_ceil(s2);
    let wp = pw.checked_mul(s2)?;
    // Row tiles cover one output row each: on narrow rows most of a tile's lanes would be
    // wasted, where im2col's columns run across rows; flat tiles run across band rows.
    let flat = s1 == 1 && s2 == 1 && 4 * w >= 3 * wp;
    let prefer_flat = flat && 5 * w < 4 * w.next_multiple_of(2 * NR);
    let narrow = w < NR || w * 4 < covered * 3;
    if narrow && !flat && !any_rows {
        return None;
    }
    let reach1 = (k1 - 1).checked_mul(d1)? + 1;
    let taps = geo.cg.checked_mul(geo.kprod)?;
    // A K block of `kb` consecutive taps spans at most this many channels.
    let chans = geo
        .cg
        .min((k_block(taps).max(1) - 1) / geo.kprod.max(1) + 2);
    let per_row = chans.checked_mul(k0)?.checked_mul(wp)?;
    let apack = apack_len(geo, taps)?;
    let taps_len = apack.checked_add(taps)?;
    let cap = BAND_CAP.min(ws.checked_sub(taps_len + SLACK)?);
    let fit = (cap / per_row.max(1)).saturating_sub(reach1) / s1 + 1;
    let band = fit.clamp(1, geo.small[1].max(1));
    let rin = (band - 1).checked_mul(s1)?.checked_add(reach1)?;
    let buf = per_row.checked_mul(rin)?.checked_add(SLACK)?;
    if buf > u32::MAX as usize || (ws != usize::MAX && buf - SLACK > cap) {
        return None;
    }
    buf.checked_add(apack)?.checked_add(taps)?;
    Some(Layout {
        pw,
        wp,
        band,
        rin,
        buf,
        apack,
        taps,
        prefer_flat,
        narrow,
    })
}

/// f32 of packed weight panels the workspace holds: all of them when the weights come in
/// ONNX order, only the group's last, partial panel (zero-padded to `MR` rows) when the
/// compiler pre-packed them.
fn apack_len(geo: &Geo, taps: usize) -> Option<usize> {
    if !geo.packed {
        geo.mg.next_multiple_of(MR).checked_mul(taps)
    } else if !geo.mg.is_multiple_of(MR) {
        MR.checked_mul(taps)
    } else {
        Some(0)
    }
}

/// One group of one batch item.
pub(crate) struct Group<'a> {
    /// The group's `C/g` input channel planes.
    pub x: &'a [f32],
    /// The group's `M/g` filters, `K` values each.
    pub w: &'a [f32],
    /// Its `M/g` output planes.
    pub y: &'a mut [f32],
    pub bias: Option<&'a [f32]>,
    /// A residual shaped like `y`, added before the activation.
    pub residual: Option<&'a [f32]>,
    pub act: TileAct,
    /// Per-input-channel scale, shift and activation applied while copying (unpadded convs).
    pub prologue: Option<(&'a [f32], &'a [f32], TileAct)>,
}

impl Group<'_> {
    /// The epilogue of a tile whose first output is filter `m0`'s element `at` (output
    /// planes `yp` apart): accumulating after the first K block, the bias, residual and
    /// activation on the last.
    pub(crate) fn tile_ep(&self, yp: usize, m0: usize, at: usize, add: bool, last: bool) -> TileEp {
        TileEp {
            alpha: 1.0,
            add,
            bias: match (last, self.bias) {
                (true, Some(b)) => b[m0..].as_ptr(),
                _ => core::ptr::null(),
            },
            res: match (last, self.residual) {
                (true, Some(r)) => r[at..].as_ptr(),
                _ => core::ptr::null(),
            },
            ldr: yp,
            act: if last { self.act } else { TileAct::None },
        }
    }

    /// Whether every operand holds what the group's shape reads and writes.
    pub(crate) fn check(&self, geo: &Geo) -> Result<(), KernelError> {
        let (yp, k) = (geo.small_plane, geo.cg * geo.kprod);
        if self.x.len() < geo.cg * geo.big_plane
            || self.w.len() < geo.mg * k
            || self.y.len() < geo.mg * yp
            || self.residual.is_some_and(|r| r.len() < geo.mg * yp)
            || self.bias.is_some_and(|b| b.len() < geo.mg)
        {
            return Err(bad("conv operand smaller than its shape"));
        }
        Ok(())
    }
}

/// `y = act(W ⋆ x + bias + residual)` for one group, split between the slots of `par` by
/// (output row, column block).
pub(crate) fn run(
    geo: &Geo,
    lay: &Layout,
    g: Group<'_>,
    ws: &mut [f32],
    par: &dyn Parallel,
) -> Result<(), KernelError> {
    let [small0, small1, small2] = geo.small;
    let (yp, k) = (geo.small_plane, lay.taps);
    g.check(geo)?;
    let ws = ws.get_mut(..lay.ws_len()).ok_or(KernelError::Workspace)?;
    let (band, rest) = ws.split_at_mut(lay.buf);
    let (apack, offs) = rest.split_at_mut(lay.apack);
    let offs: &mut [u32] = bytemuck::cast_slice_mut(offs);

    // Panels `..full` are read in place from pre-packed weights, the rest from `apack`.
    let full = if geo.packed {
        let full = geo.mg / MR;
        pad_last_panel(&g.w[full * MR * k..geo.mg * k], geo.mg % MR, apack);
        full
    } else if cfg!(feature = "std") {
        pack_weight_panels(g.w, geo.mg, k, apack);
        0
    } else {
        // Firmware (no `std`) runs the weights the compiler pre-packed (O1 and up) and links
        // no run-time packer.
        return Err(KernelError::BadParams(
            "conv weights in ONNX order need the std build: compile at O1 or above for no_std",
        ));
    };
    let max_off = tap_offsets(geo, lay, offs);
    let (wp, kb) = (lay.wp, k_block(k));
    // Every read stays inside the band: with blocks `w` columns wide, the farthest reads `w`
    // values from max_off + (band − 1)·s1·wp + (last column block).
    let fits = |w: usize| {
        max_off + (lay.band - 1) * geo.s[1] * wp + (small2 - 1) / w * w + w <= band.len()
    };
    if !fits(NR) {
        return Err(KernelError::BadParams("conv band layout"));
    }

    let isa = isa();
    let (bm, wide) = block_dims(isa);
    // Columns per register block: two panels where the ISA's block is that wide and the
    // band has the slack for it (a blob planned by an older ge may have `NR` only).
    let bn = if wide > NR && fits(wide) { wide } else { NR };
    let two_panels = bm > MR;
    // Flat tiles where row tiles waste many lanes and this build stores them in registers.
    let flat = lay.prefer_flat && flat_here() && bn == 2 * NR;
    // One output channel: one-row blocks a strip of column panels wide where the ISA has
    // them (their loads stop at the row's last column: `fits(NR)` covers them). The 6-row
    // blocks computed five rows of padding: basic-pitch's 256-tap filters ran at 3.6 GFLOP/s.
    let bn = match strip_cols(isa) {
        Some(strip) if geo.mg == 1 && !flat => strip,
        _ => bn,
    };
    let panels = geo.mg.div_ceil(MR);
    let yptr = SendPtr(g.y.as_mut_ptr());
    // K blocks outermost: a band holds one block's channels only, so it covers many output
    // rows and the block's weights are read once per band instead of once per few rows
    // (deep layers: thousands of channels on a 7 × 7 output). Then M blocks: one block's
    // weight panels (`kb × mc` values) stay in L2 while every (output row, column block) of
    // the band reads them, each item's band lines staying in L1 across the panels. The K
    // blocks of an output still run in order, so the sums are the same whatever the split.
    for o0 in 0..small0 {
        let mut pc = 0;
        while pc < k {
            let kc = kb.min(k - pc);
            let last = pc + kc >= k;
            let chans = pc / geo.kprod..((pc + kc - 1) / geo.kprod + 1).min(geo.cg);
            let mut r0 = 0;
            while r0 < small1 {
                let rows = lay.band.min(small1 - r0);
                let fill = Fill {
                    geo,
                    lay,
                    g: &g,
                    o0,
                    r0,
                };
                fill.band(chans.clone(), band, par);
                let (band, apack, offs): (&[f32], &[f32], &[u32]) = (band, apack, offs);
                let blocks = small2.div_ceil(bn);
                // Flat: output (row, column) at flat index row·wp + column of the band,
                // tiles of `bn` flat lanes; the `wp − small2` lanes past each row dropped.
                let f_end = (rows - 1) * wp + small2;
                let flat = flat && max_off + f_end.next_multiple_of(bn) <= band.len();
                let items = if flat {
                    f_end.div_ceil(bn)
                } else {
                    rows * blocks
                };
                // The kept lanes of the flat tile at `f` and where they go.
                let flat_cols = |f: usize| {
                    let mut cols = Flat {
                        mask: [0; 2],
                        col: [0; 2],
                    };
                    for v in 0..2 {
                        let fv = f + v * NR;
                        cols.col[v] = fv / wp * small2 + (fv % wp).min(small2);
                        for l in 0..NR {
                            let fl = fv + l;
                            if fl < f_end && fl % wp < small2 {
                                cols.mask[v] |= 1 << l;
                            }
                        }
                    }
                    cols
                };
                let mpanels = (MC_FLOATS / (kc * MR)).clamp(1, panels);
                let units = panels.div_ceil(mpanels) * items;
                // Without std one slot (firmware is single-core): one copy of the loop.
                let slots = if cfg!(feature = "std") {
                    par.threads().min(units).max(1)
                } else {
                    1
                };
                let body = |s: usize| {
                    for unit in s * units / slots..(s + 1) * units / slots {
                        let (mb, item) = (unit / items, unit % items);
                        let (nr, out_col, xat, cols) = if flat {
                            let f = item * bn;
                            let out = (o0 * small1 + r0) * small2;
                            ((f_end - f).min(bn), out, f, Some(flat_cols(f)))
                        } else {
                            let (ro, j) = (item / blocks, item % blocks * bn);
                            let out_col = (o0 * small1 + r0 + ro) * small2 + j;
                            ((small2 - j).min(bn), out_col, ro * geo.s[1] * wp + j, None)
                        };
                        let (mut q, qend) = (mb * mpanels, ((mb + 1) * mpanels).min(panels));
                        while q < qend {
                            let m0 = q * MR;
                            // Two panels per pass where the ISA's block has them, and on
                            // narrow rows (only with std: firmware keeps one tile build).
                            let pair = q + 1 < qend
                                && (two_panels || cfg!(feature = "std") && nr <= NR / 2);
                            let mr = (geo.mg - m0).min(if pair { 2 * MR } else { MR });
                            let at = m0 * yp + out_col;
                            let ep = g.tile_ep(yp, m0, at, pc > 0, last);
                            let panel = |q: usize| {
                                if q < full {
                                    g.w[(q * k + pc) * MR..].as_ptr()
                                } else {
                                    apack[((q - full) * k + pc) * MR..].as_ptr()
                                }
                            };
                            let a0 = panel(q);
                            let a1 = if pair { panel(q + 1) } else { a0 };
                            // SAFETY: each panel holds K·MR values; every `band[xat +
                            // offs[p]..][..bn]` is inside `band` (checked above); rows
                            // `m0..m0 + mr` and columns `j..j + nr` of this output row (flat:
                            // the kept lanes' outputs, all in the band's rows) are inside
                            // `y` (and the residual) and written by this unit only within
                            // this K block; `isa` was detected.
                            unsafe {
                                let blk = Block {
                                    kc,
                                    a: BlockA {
                                        a: [a0, a1],
                                        rs: 1,
                                        cs: [MR, MR],
                                    },
                                    b: BlockB::Taps {
                                        x: band.as_ptr().add(xat),
                                        offs: offs[pc..].as_ptr(),
                                    },
                                    c: yptr.get().add(at),
                                    ldc: yp,
                                    mr,
                                    nr,
                                    ep: &ep,
                                    flat: cols,
                                };
                                block(isa, &blk);
                            }
                            q += if pair { 2 } else { 1 };
                        }
                    }
                };
                if slots == 1 {
                    body(0);
                } else {
                    par.run(slots, &body);
                }
                r0 += rows;
            }
            pc += kc;
        }
    }
    Ok(())
}

/// Tap offsets into the band of the tap's K block (which holds that block's channels from
/// its first), in the weights' (channel, kd, kh, kw) order: `offs[p]` for each of the `K`
/// taps. Returns the largest. O(K).
pub(crate) fn tap_offsets(geo: &Geo, lay: &Layout, offs: &mut [u32]) -> usize {
    let [k0, k1, k2] = geo.k;
    let (wp, pw, rin, s2) = (lay.wp, lay.pw, lay.rin, geo.s[2]);
    let kb = k_block(lay.taps);
    let mut max_off = 0;
    let mut p = 0;
    for ci in 0..geo.cg {
        for t0 in 0..k0 {
            for t1 in 0..k1 {
                for t2 in 0..k2 {
                    let c0 = p / kb * kb / geo.kprod;
                    let h = t2 * geo.d[2];
                    let off =
                        (((ci - c0) * k0 + t0) * rin + t1 * geo.d[1]) * wp + (h % s2) * pw + h / s2;
                    offs[p] = off as u32;
                    max_off = max_off.max(off);
                    p += 1;
                }
            }
        }
    }
    max_off
}

/// Weight panels: `apack[(panel·K + p)·MR + i] = w[panel·MR + i][p]`, zero past `m` rows.
/// Six rows are read side by side (one pass over each, no per-element bounds checks).
/// O(m·k).
fn pack_weight_panels(w: &[f32], m: usize, k: usize, apack: &mut [f32]) {
    for (q, panel) in apack.chunks_exact_mut(k * MR).enumerate() {
        let rows: [&[f32]; MR] = core::array::from_fn(|i| {
            let row = q * MR + i;
            if row < m {
                &w[row * k..(row + 1) * k]
            } else {
                &[]
            }
        });
        if rows.iter().all(|r| r.len() == k) {
            for (p, lanes) in panel.chunks_exact_mut(MR).enumerate() {
                let lanes: &mut [f32; MR] = lanes.try_into().unwrap_or_else(|_| unreachable!());
                *lanes = [
                    rows[0][p], rows[1][p], rows[2][p], rows[3][p], rows[4][p], rows[5][p],
                ];
            }
        } else {
            for (p, lanes) in panel.chunks_exact_mut(MR).enumerate() {
                for (v, r) in lanes.iter_mut().zip(&rows) {
                    *v = r.get(p).copied().unwrap_or(0.0);
                }
            }
        }
    }
}

/// The last panel of pre-packed weights (`[K][rows]`, `rows < MR`) zero-padded to `MR` rows
/// in `apack` (`[K][MR]`), so the tile's fixed-width reads stay inside it. O(K·MR).
fn pad_last_panel(last: &[f32], rows: usize, apack: &mut [f32]) {
    if rows == 0 {
        return;
    }
    for (src, dst) in last.chunks_exact(rows).zip(apack.chunks_exact_mut(MR)) {
        dst[..rows].copy_from_slice(src);
        dst[rows..].fill(0.0);
    }
}

/// Fewest f32 of a band worth filling on several threads.
const PAR_MIN_FILL: usize = 1 << 14;

/// Where a band is filled from: one group's input at output depth `o0`, output rows from
/// `r0` on.
pub(crate) struct Fill<'a, 'g> {
    pub(crate) geo: &'a Geo,
    pub(crate) lay: &'a Layout,
    pub(crate) g: &'a Group<'g>,
    pub(crate) o0: usize,
    pub(crate) r0: usize,
}

impl Fill<'_, '_> {
    /// [`Self::channels`] with the channels split between the slots of `par` (each channel's
    /// rows are their own part of the band), then the slack zeroed. O(band).
    pub(crate) fn band(
        &self,
        chans: core::ops::Range<usize>,
        band: &mut [f32],
        par: &dyn Parallel,
    ) {
        let n = chans.len();
        let per_chan = self.geo.k[0] * self.lay.rin * self.lay.wp;
        let slots = par.threads().min(n).max(1);
        if !cfg!(feature = "std") || slots == 1 || n * per_chan < PAR_MIN_FILL {
            self.channels(chans, band);
        } else {
            let (c0, bp) = (chans.start, SendPtr(band.as_mut_ptr()));
            par.run(slots, &|s| {
                let (a, b) = (c0 + s * n / slots, c0 + (s + 1) * n / slots);
                // SAFETY: slot `s` alone writes channels `a..b`'s rows, band values
                // `(a − c0)·per_chan..(b − c0)·per_chan`, inside the band (`channels` lays
                // out `per_chan` values per channel from its first channel on).
                let part = unsafe {
                    core::slice::from_raw_parts_mut(
                        bp.get().add((a - c0) * per_chan),
                        (b - a) * per_chan,
                    )
                };
                self.channels(a..b, part);
            });
        }
        // The slack past the last row is read (never stored) by partial tiles.
        band[n * per_chan..].fill(0.0);
    }

    /// Copies the input rows of channels `chans` (band channel 0 = `chans.start`) for the
    /// band's output rows into `band`: zero rows outside the input, horizontal padding as
    /// zeros, each row split into stride phases, the prologue applied to real values.
    fn channels(&self, chans: core::ops::Range<usize>, band: &mut [f32]) {
        let Fill {
            geo,
            lay,
            g,
            o0,
            r0,
        } = *self;
        let [k0, _, _] = geo.k;
        let (big0, big1, big2) = (geo.big[0], geo.big[1], geo.big[2]);
        let (wp, pw, s2, pb2) = (lay.wp, lay.pw, geo.s[2], geo.pb[2]);
        let c0 = chans.start;
        // Stride-2 rows split by vector shuffles (host builds: firmware keeps the loop).
        let split2 = cfg!(feature = "std") && s2 == 2 && g.prologue.is_none();
        let cols = if split2 {
            [0, 1].map(|h| super::phase_split::valid(geo, h, pw))
        } else {
            [(0, 0); 2]
        };
        for ci in chans.clone() {
            let (scale, shift, pact) = match g.prologue {
                Some((sc, sh, a)) => (sc[ci], sh[ci], Some(a)),
                None => (1.0, 0.0, None),
            };
            for t0 in 0..k0 {
                let b0 = (o0 * geo.s[0] + t0 * geo.d[0]).checked_sub(geo.pb[0]);
                for r in 0..lay.rin {
                    let dst = &mut band[(((ci - c0) * k0 + t0) * lay.rin + r) * wp..][..wp];
                    let b1 = (r0 * geo.s[1] + r).checked_sub(geo.pb[1]);
                    let src = match (b0, b1) {
                        (Some(b0), Some(b1)) if b0 < big0 && b1 < big1 => {
                            &g.x[((ci * big0 + b0) * big1 + b1) * big2..][..big2]
                        }
                        _ => {
                            dst.fill(0.0);
                            continue;
                        }
                    };
                    let value = |c: usize| match c.checked_sub(pb2) {
                        Some(i) if i < big2 => match pact {
                            Some(a) => {
                                super::super::gemm::micro::act_scalar(a, src[i] * scale + shift)
                            }
                            None => src[i],
                        },
                        _ => 0.0,
                    };
                    if s2 == 1 && pact.is_none() {
                        let lo = pb2.min(wp);
                        let len = big2.min(wp - lo);
                        dst[..lo].fill(0.0);
                        dst[lo..lo + len].copy_from_slice(&src[..len]);
                        dst[lo + len..].fill(0.0);
                    } else if split2 {
                        let (p0, p1) = dst.split_at_mut(pw);
                        super::phase_split::deinterleave(geo, &cols, src, p0, p1, false);
                    } else {
                        for ph in 0..s2 {
                            for (q, d) in dst[ph * pw..(ph + 1) * pw].iter_mut().enumerate() {
                                *d = value(q * s2 + ph);
                            }
                        }
                    }
                }
            }
        }
    }
}
