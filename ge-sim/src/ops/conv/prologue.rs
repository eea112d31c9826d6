//! A per-input-channel prologue (BatchNorm + activation before the conv, DenseNet's
//! pre-activation) applied while packing B.

use super::*;

/// Packs op(B) through `inner`, then maps every packed value of input channel `c` to
/// `act(v·scale[c] + shift[c])` — a preceding BatchNorm(+activation) applied in the cache
/// instead of as its own task. Only valid without padding (padding must stay zero). Lanes
/// past the last column are transformed too; the tile never stores them.
pub(super) struct Prologue<'a> {
    pub(super) inner: &'a dyn PackB,
    pub(super) scale: &'a [f32],
    pub(super) shift: &'a [f32],
    /// Packed rows per input channel (the kernel taps).
    pub(super) rows_per_channel: usize,
    pub(super) act: crate::ops::gemm::TileAct,
}

impl PackB for Prologue<'_> {
    fn pack(&self, pc: usize, kc: usize, jc: usize, nc: usize, out: &mut [f32]) {
        self.inner.pack(pc, kc, jc, nc, out);
        if kc == 0 {
            return;
        }
        let per = self.rows_per_channel.max(1);
        for panel in out[..kc * nc.next_multiple_of(NR)].chunks_exact_mut(kc * NR) {
            for (p, row) in panel.chunks_exact_mut(NR).enumerate() {
                let ch = (pc + p) / per;
                let (s, t) = (self.scale[ch], self.shift[ch]);
                for v in row {
                    *v = crate::ops::gemm::micro::act_scalar(self.act, *v * s + t);
                }
            }
        }
    }
}
