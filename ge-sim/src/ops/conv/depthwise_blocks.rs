//! The plan of the depthwise conv in channel blocks (16 channels a vector, the AVX-512
//! kernel `arch::x86::avx512::depthwise`): its ring of padded rows, staged output row and
//! weight vectors per thread slot, and which convs it takes. Plain arithmetic, so the
//! compiler and every target plan the same workspace whichever CPU runs the blob.

use super::Geo;
use crate::ops::gemm::WS_SLOTS;

/// Channels per block: one AVX-512 register of f32.
pub(crate) const LANES: usize = 16;
/// Most taps (`kh · kw`) this path takes; bigger kernels keep the band.
const MAX_TAPS: usize = 128;
/// Most kernel rows (one ring offset each per output row).
pub(crate) const MAX_ROWS: usize = 16;
/// Most f32 of one slot's workspace (a ring of 114-pixel rows for a 3 × 3 kernel is 5.5 K).
const SLOT_CAP: usize = 1 << 16;

/// A depthwise conv's ring geometry (2-D: the leading spatial axis is a unit axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Padded columns a ring row holds: those the taps read, `(ow − 1)·sh + (kw − 1)·dh + 1`.
    pub(crate) pw: usize,
    /// Ring rows: the padded input rows one output row reads, `(kh − 1)·dv + 1`.
    pub(crate) ring: usize,
    /// Output columns (one output row of pixel vectors is staged, rounded up to whole
    /// transposes).
    pub(crate) ow: usize,
    /// Taps (`kh · kw`): one weight vector each.
    pub(crate) taps: usize,
}

impl Layout {
    /// f32 of workspace: one ring, output row and weight table per thread slot.
    pub(crate) fn ws_len(&self) -> usize {
        WS_SLOTS * self.slot_len()
    }

    /// f32 of one slot's ring, staged output row and weight vectors.
    pub(crate) fn slot_len(&self) -> usize {
        (self.ring * self.pw + self.stage() + self.taps) * LANES
    }

    /// Pixel vectors of the staged output row: whole transposes.
    pub(crate) fn stage(&self) -> usize {
        self.ow.next_multiple_of(LANES)
    }
}

/// The ring layout for `geo`, or `None` when the conv is not 2-D, has too many taps or no
/// output, or a slot would exceed [`SLOT_CAP`] (the band takes it).
pub(crate) fn layout(geo: &Geo) -> Option<Layout> {
    if geo.big[0] != 1 || geo.small[0] != 1 || geo.k[0] != 1 || geo.small_plane == 0 {
        return None;
    }
    let taps = geo.k[1].checked_mul(geo.k[2])?;
    if taps > MAX_TAPS || geo.k[1] > MAX_ROWS {
        return None;
    }
    let ow = geo.small[2];
    let span_h = (geo.k[2] - 1).checked_mul(geo.d[2])?;
    let pw = (ow - 1)
        .checked_mul(geo.s[2])?
        .checked_add(span_h)?
        .checked_add(1)?;
    let ring = (geo.k[1] - 1).checked_mul(geo.d[1])?.checked_add(1)?;
    let lay = Layout { pw, ring, ow, taps };
    let slot = ring
        .checked_mul(pw)?
        .checked_add(ow.checked_next_multiple_of(LANES)?)?
        .checked_add(taps)?
        .checked_mul(LANES)?;
    (slot <= SLOT_CAP).then_some(lay)
}
