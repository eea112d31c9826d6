//! Sources of op(B) that pack `GEMM_KC × NC` blocks into `NR`-column panels for
//! [`gemm_packed`](super::gemm_packed): a row-major matrix, pre-packed f32 panels, and int8
//! panels widened on the fly.

use super::*;

/// A source of op(B) (`k × n`) that packs blocks of itself for [`gemm_packed`].
pub trait PackB: Sync {
    /// Packs rows `pc..pc+kc`, columns `jc..jc+nc` (inside the `k × n` extent the caller
    /// gave [`gemm_packed`]) into `NR`-column panels: panel `q` at `out[q·kc·NR..]`, row `p`
    /// of a panel at `p·NR`, columns past `nc` zero. `out` holds
    /// `kc · nc.next_multiple_of(NR)` values.
    fn pack(&self, pc: usize, kc: usize, jc: usize, nc: usize, out: &mut [f32]);

    /// The same block when it is stored exactly as [`PackB::pack`] would write it (a
    /// pre-packed constant B), to be read where it lies; `None` to pack it.
    fn packed(&self, _pc: usize, _kc: usize, _jc: usize, _nc: usize) -> Option<&[f32]> {
        None
    }
}

/// A constant f32 B (`k × n`) stored in [`ge_runtime::format::pack_gemm_b`]'s order (a
/// GemmPacked's): blocks of whole panels are read in place; a block holding the narrower
/// last panel (`n mod NR` columns, stored that wide) is copied out zero-padded.
#[derive(Clone, Copy, Debug)]
pub struct PanelB<'a> {
    pub b: &'a [f32],
    pub k: usize,
    pub n: usize,
}

impl PackB for PanelB<'_> {
    fn pack(&self, pc: usize, kc: usize, jc: usize, nc: usize, out: &mut [f32]) {
        for q in 0..nc.div_ceil(NR) {
            let j0 = jc + q * NR;
            let (nr, w) = ((nc - q * NR).min(NR), (self.n - j0).min(NR));
            let at = gemm_b_index(self.k, self.n, pc, j0);
            let panel = &mut out[q * kc * NR..(q + 1) * kc * NR];
            if nr == NR && w == NR {
                panel.copy_from_slice(&self.b[at..at + kc * NR]);
                continue;
            }
            for (p, dst) in panel.chunks_exact_mut(NR).enumerate() {
                dst[..nr].copy_from_slice(&self.b[at + p * w..][..nr]);
                dst[nr..].fill(0.0);
            }
        }
    }

    fn packed(&self, pc: usize, kc: usize, jc: usize, nc: usize) -> Option<&[f32]> {
        if !nc.is_multiple_of(NR) || jc + nc > self.n {
            return None;
        }
        let at = gemm_b_index(self.k, self.n, pc, jc);
        self.b.get(at..at + kc * nc)
    }
}

/// A row-major matrix as op(B): `B[p][j] = b[p·ld + j]`, or `b[j·ld + p]` when `trans`.
#[derive(Clone, Copy, Debug)]
pub struct MatB<'a> {
    pub b: &'a [f32],
    pub ld: usize,
    pub trans: bool,
}

impl PackB for MatB<'_> {
    fn pack(&self, pc: usize, kc: usize, jc: usize, nc: usize, out: &mut [f32]) {
        let panels = nc.div_ceil(NR);
        if self.trans {
            for q in 0..panels {
                let panel = &mut out[q * kc * NR..(q + 1) * kc * NR];
                let nr = (nc - q * NR).min(NR);
                if nr < NR {
                    panel.fill(0.0);
                }
                for j in 0..nr {
                    let col = jc + q * NR + j;
                    let src = &self.b[col * self.ld + pc..col * self.ld + pc + kc];
                    for (p, v) in src.iter().enumerate() {
                        panel[p * NR + j] = *v;
                    }
                }
            }
        } else {
            for p in 0..kc {
                let row = &self.b[(pc + p) * self.ld + jc..(pc + p) * self.ld + jc + nc];
                let (full, rest) = row.as_chunks::<NR>();
                for (q, src) in full.iter().enumerate() {
                    let dst: &mut [f32; NR] = (&mut out[q * kc * NR + p * NR..][..NR])
                        .try_into()
                        .unwrap_or_else(|_| unreachable!());
                    *dst = *src;
                }
                if !rest.is_empty() {
                    let dst = &mut out[full.len() * kc * NR + p * NR..][..NR];
                    dst[..rest.len()].copy_from_slice(rest);
                    dst[rest.len()..].fill(0.0);
                }
            }
        }
    }
}

/// A row-major `k × n` int8 or uint8 matrix as B, dequantized while it is packed
/// (weight-only int8: the blob stores the weights as bytes): `B[p][j] = float(b[p·ld + j]) ·
/// scale[j]` (one scale for every column when `scale` has one value) — the same f32 value a
/// Cast and a Mul of the weights give, so results equal those of the f32 weights. Unsigned
/// bytes are read as `(x ^ 0x80) as i8 + 128`: one code path, exact.
#[derive(Clone, Copy, Debug)]
pub struct Int8B<'a> {
    pub b: &'a [u8],
    pub unsigned: bool,
    pub scale: &'a [f32],
    pub ld: usize,
    /// `Some(k)`: the `k × ld` bytes are in [`ge_runtime::format::pack_gemm_b`]'s order
    /// (each panel row contiguous), `None`: row-major.
    pub panels: Option<usize>,
}

impl PackB for Int8B<'_> {
    fn pack(&self, pc: usize, kc: usize, jc: usize, nc: usize, out: &mut [f32]) {
        let (flip, offset) = if self.unsigned {
            (0x80, 128.0)
        } else {
            (0, 0.0)
        };
        crate::arch::isa::with_simd(
            #[inline(always)]
            || {
                let mut sc = [0f32; NR];
                for q in 0..nc.div_ceil(NR) {
                    let panel = &mut out[q * kc * NR..(q + 1) * kc * NR];
                    let (j0, nr) = (jc + q * NR, (nc - q * NR).min(NR));
                    match self.scale {
                        [s] => sc.fill(*s),
                        cols => sc[..nr].copy_from_slice(&cols[j0..j0 + nr]),
                    }
                    // Row `p` of the panel: `at + p·step`.
                    let (at, step) = match self.panels {
                        Some(k) => (gemm_b_index(k, self.ld, pc, j0), (self.ld - j0).min(NR)),
                        None => (pc * self.ld + j0, self.ld),
                    };
                    for p in 0..kc {
                        let row = &self.b[at + p * step..][..nr];
                        let dst = &mut panel[p * NR..(p + 1) * NR];
                        for ((d, &x), &s) in dst.iter_mut().zip(row).zip(&sc) {
                            *d = (f32::from((x ^ flip) as i8) + offset) * s;
                        }
                        dst[nr..].fill(0.0);
                    }
                }
            },
        );
    }
}
