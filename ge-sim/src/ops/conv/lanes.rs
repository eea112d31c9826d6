//! The plan of the conv with output channels in the vector lanes (the AVX2 kernel
//! `arch::x86::avx2::conv_lanes`): which convs it takes and the workspace it needs on a
//! band layout. Plain arithmetic, so every target plans the same workspace.

use super::Geo;
use super::direct::Layout;
use crate::ops::gemm::k_block;

/// Output channels per tile: two AVX2 registers of f32.
pub(crate) const LANES: usize = 16;
/// Fewest output pixels per band worth the per-band weight repacking (each panel is
/// repacked once per band and K block).
const MIN_PIXELS: usize = 64;
/// Most f32 of repacked weight panels held at once (one block of output channels, kept in
/// L2 while every pixel tile of the band reads it, the tile's inputs staying in L1 across
/// the block's panels).
const PANELS_CAP: usize = 32 * 1024;

/// Blocks of 16 output channels whose `[kc][16]` panels are held at once.
pub(crate) fn panel_blocks(geo: &Geo, kb: usize) -> usize {
    (PANELS_CAP / (kb * LANES).max(1)).clamp(1, geo.mg.div_ceil(LANES))
}

/// f32 of workspace the lanes path needs on band layout `lay`: the band and its tap
/// offsets, and the weight panels of one block of output channels.
pub(crate) fn ws_len(geo: &Geo, lay: &Layout) -> usize {
    let taps = geo.cg * geo.kprod;
    let kb = k_block(taps);
    lay.buf + taps + panel_blocks(geo, kb) * kb * LANES
}

/// Whether the lanes path takes this conv: a k × k kernel, at least 4 of every 5 lanes
/// filled with output channels, and enough pixels per band to repay the weight repacking.
pub(crate) fn suits(geo: &Geo, lay: &Layout) -> bool {
    let pixels = lay.band.min(geo.small[1]) * geo.small[2];
    geo.kprod > 1 && geo.mg.next_multiple_of(LANES) * 4 <= geo.mg * 5 && pixels >= MIN_PIXELS
}
