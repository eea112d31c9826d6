//! The path planner: which kernel a convolution runs on (im2col GEMM, direct rows, depthwise
//! plane or band, blocked), the column chunking, and the workspace each needs.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Path {
    /// Depthwise conv (group == C == M): a padded, phase-split band per channel and the
    /// outputs in registers ([`depthwise`]); `None`: the row loop (3-D, or no workspace).
    Depthwise(Option<depthwise::Layout>),
    /// Depthwise conv on AVX-512: 16 channels at a time as pixel vectors
    /// ([`depthwise_blocks`]); chosen at run time over the band when the CPU has it.
    #[cfg(feature = "std")]
    DepthwiseBlocked(depthwise_blocks::Layout),
    /// 1×1, stride 1, unpadded conv: GEMM on the input.
    Pointwise,
    /// Conv: the register tile reading a padded band of the input in place.
    Direct(direct::Layout),
    /// Conv: GEMM on the implicit im2col matrix, packed straight from the input.
    Implicit,
    /// Conv on AVX2: output channels in the lanes, pixels broadcast from the direct path's
    /// band ([`lanes`]); chosen at run time over the direct and im2col paths.
    #[cfg(feature = "std")]
    Lanes(direct::Layout),
    /// ConvTranspose: GEMM then col2im over column chunks of `cols`.
    Columns { cols: usize },
}

impl Path {
    /// Whether the path applies an epilogue activation ([`tile_act`]) in registers; else
    /// it runs as a pass over the output.
    pub(super) fn fuses_act(&self) -> bool {
        // The banded depthwise path applies it while copying its outputs out.
        !matches!(self, Path::Depthwise(None))
    }

    /// A depthwise path (no input prologue).
    pub(super) fn depthwise(&self) -> bool {
        match self {
            Path::Depthwise(_) => true,
            #[cfg(feature = "std")]
            Path::DepthwiseBlocked(_) => true,
            _ => false,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    pub(super) geo: Geo,
    pub(super) path: Path,
    /// Rows of the column buffer (Conv: C/g·Πk; ConvTranspose: M/g·Πk).
    pub(super) rows: usize,
    /// Column-buffer f32 elements.
    pub(super) col_len: usize,
    /// GEMM packing f32 elements.
    pub(super) gemm_len: usize,
}

pub(super) fn plan(
    p: &ConvParams,
    transpose: bool,
    x: &Shape,
    w: &Shape,
    y: &Shape,
) -> Result<Plan, KernelError> {
    let geo = geometry(p, transpose, x, w, y)?;
    let ovf = || bad("conv workspace overflows");
    if transpose {
        let rows = geo.mg.checked_mul(geo.kprod).ok_or_else(ovf)?;
        let cols = chunk_cols(rows, geo.small_plane);
        let col_len = rows.checked_mul(cols).ok_or_else(ovf)?;
        return Ok(Plan {
            geo,
            path: Path::Columns { cols },
            rows,
            col_len,
            gemm_len: sgemm_ws_len(rows, cols, geo.cg),
        });
    }
    let rows = geo.cg.checked_mul(geo.kprod).ok_or_else(ovf)?;
    // One channel in and out is an ordinary conv too: the direct path's one-row strips run
    // it with the pixels in the lanes, where the depthwise paths (16 channels a vector, or
    // a row loop) ran basic-pitch's 256-tap filters at 3.6 GFLOP/s.
    if geo.g == geo.c && geo.m == geo.c && geo.c > 1 {
        // The banded path is host speed for the simulator; without `std` (firmware, where
        // flash is what counts) the row loop runs instead: bitwise the same values (tested),
        // about 3 KB less code.
        let lay = if cfg!(feature = "std") {
            depthwise::layout(&geo)
        } else {
            None
        };
        // Room for the AVX-512 channel blocks too, whichever CPU runs the blob.
        let blocked = if crate::arch::kernels::DEPTHWISE_BLOCKS {
            depthwise_blocks::layout(&geo).map_or(0, |l| l.ws_len())
        } else {
            0
        };
        return Ok(Plan {
            geo,
            path: Path::Depthwise(lay),
            rows,
            col_len: 0,
            gemm_len: lay.map_or(0, |l| l.ws_len()).max(blocked),
        });
    }
    let gemm_len = gemm_packed_ws_len(geo.small_plane, rows);
    if geo.kprod == 1 && geo.s == [1; 3] && geo.pb == [0; 3] && geo.big == geo.small {
        return Ok(Plan {
            geo,
            path: Path::Pointwise,
            rows,
            col_len: 0,
            gemm_len,
        });
    }
    // A strided 1×1 conv reads each input value at most once: packing its columns for the
    // GEMM gathers them once per N block, where the direct path's band would copy every input
    // row and re-stream the weights for each band of a few output rows.
    let strided_pointwise = geo.kprod == 1 && geo.pb == [0; 3];
    if let Some(lay) = direct::layout(&geo).filter(|_| !strided_pointwise) {
        // Narrow rows run flat tiles where the build stores them in registers, im2col
        // elsewhere (firmware, AVX2): room for both.
        let gemm_len = if lay.narrow {
            lay.ws_len().max(gemm_len)
        } else {
            lay.ws_len()
        };
        let gemm_len = gemm_len.max(lanes_ws_len(&geo, Path::Direct(lay)));
        return Ok(Plan {
            geo,
            path: Path::Direct(lay),
            rows,
            col_len: 0,
            gemm_len,
        });
    }
    Ok(Plan {
        geo,
        path: Path::Implicit,
        rows,
        col_len: 0,
        gemm_len: gemm_len.max(lanes_ws_len(&geo, Path::Implicit)),
    })
}

/// Workspace f32 the lanes path needs where it would take a conv planned on `path`, 0
/// elsewhere: room for it whichever CPU runs the blob (firmware plans none).
pub(super) fn lanes_ws_len(geo: &Geo, path: Path) -> usize {
    if crate::arch::kernels::CONV_LANES
        && let Some(lay) = lanes_layout(geo, path)
    {
        return lanes::ws_len(geo, &lay);
    }
    0
}

/// The band the lanes path would read for a conv planned on `path` (the direct path's, or
/// for narrow strided rows planned on im2col one of its own), if the path suits the conv.
pub(super) fn lanes_layout(geo: &Geo, path: Path) -> Option<direct::Layout> {
    let lay = match path {
        Path::Direct(lay) => lay,
        Path::Implicit => direct::any_rows_layout(geo)?,
        _ => return None,
    };
    lanes::suits(geo, &lay).then_some(lay)
}

pub(super) fn chunk_cols(rows: usize, plane: usize) -> usize {
    (COL_CAP / rows.max(1)).max(MIN_COLS).min(plane).max(1)
}

/// Scratch bytes Conv / ConvTranspose need (column buffer plus GEMM packing); 0 for a
/// malformed description (execution then reports the error).
pub fn conv_workspace_bytes(
    p: &ConvParams,
    transpose: bool,
    in_shapes: &[Option<Shape>],
    out_shapes: &[Shape],
) -> usize {
    let (Some(Some(x)), Some(Some(w)), Some(y)) =
        (in_shapes.first(), in_shapes.get(1), out_shapes.first())
    else {
        return 0;
    };
    if !transpose && p.channel_layout() != Some(ChannelLayout::Plain) {
        // Blocked convs read the input and weights in place; one with a prologue (its
        // scale and shift, inputs 4 and 5: a BatchNorm alone has no activation) first
        // writes the transformed input here.
        return if in_shapes.get(4).is_some_and(Option::is_some) {
            x.numel().saturating_mul(4)
        } else {
            0
        };
    }
    match plan(p, transpose, x, w, y) {
        Ok(pl) => pl.col_len.saturating_add(pl.gemm_len).saturating_mul(4),
        Err(_) => 0,
    }
}

/// Fewest output rows a band of an elastic direct conv gets ([`conv_workspace_levels`]):
/// below 4 rows (and 64 outputs) re-reading every weight per band costs more than 3%
/// (ResNet-8's 32 × 32 convs on AVX-512: 16 rows +0%, 4 rows +5%, 1 row +20%).
const MIN_BAND_ROWS: usize = 4;
const MIN_BAND_OUTPUTS: usize = 64;

/// The workspace sizes in bytes, largest first, a plain f32 Conv can run with (the planner
/// gives smaller ones where the arena peaks): its planned size; then for a direct conv
/// whose rows the row tiles take, bands of ½, ¼, ⅛ … of its rows (at least
/// [`MIN_BAND_ROWS`] and [`MIN_BAND_OUTPUTS`]); for an im2col or pointwise conv, or a direct
/// one on rows narrower than a tile (which runs im2col where flat tiles are not built), 2
/// then 1 GEMM packing slots (a run on one thread — firmware's — uses one). The values are the
/// same at every size: bands and slots only split independent work. `None` for other convs
/// (one size). O(levels).
pub fn conv_workspace_levels(
    p: &ConvParams,
    in_shapes: &[Option<Shape>],
    out_shapes: &[Shape],
) -> Option<[usize; crate::ops::WORKSPACE_LEVELS]> {
    let (Some(Some(x)), Some(Some(w)), Some(y)) =
        (in_shapes.first(), in_shapes.get(1), out_shapes.first())
    else {
        return None;
    };
    if p.channel_layout() != Some(ChannelLayout::Plain) {
        return None;
    }
    let pl = plan(p, false, x, w, y).ok()?;
    let full = pl.col_len.checked_add(pl.gemm_len)?.checked_mul(4)?;
    let mut levels = [full; crate::ops::WORKSPACE_LEVELS];
    let mut last = full;
    match pl.path {
        Path::Direct(lay) if !lay.narrow => {
            let geo = &pl.geo;
            let floor = MIN_BAND_ROWS.max(MIN_BAND_OUTPUTS.div_ceil(geo.small[2].max(1)));
            for (i, level) in levels.iter_mut().enumerate().skip(1) {
                let rows = (lay.band >> i).max(floor);
                if rows < lay.band {
                    last = last.min(lay.ws_len_for_band(rows, geo.s[1]).checked_mul(4)?);
                }
                *level = last;
            }
        }
        Path::Direct(_) | Path::Pointwise | Path::Implicit => {
            // 2, then 1 packing slots; a direct conv on narrow rows runs flat tiles on its
            // band where the build has them, else im2col (`run_conv_on`): room for both.
            let band = match pl.path {
                Path::Direct(lay) => lay.ws_len(),
                _ => 0,
            };
            let slot = pack_slot_len(pl.geo.small_plane, pl.rows);
            for (i, level) in levels.iter_mut().enumerate().skip(1) {
                let slots = (WS_SLOTS >> i).max(1);
                let need = band.max(pl.col_len.checked_add(slots.checked_mul(slot)?)?);
                last = last.min(need.checked_mul(4)?);
                *level = last;
            }
        }
        _ => return None,
    }
    (levels[crate::ops::WORKSPACE_LEVELS - 1] < full).then_some(levels)
}
