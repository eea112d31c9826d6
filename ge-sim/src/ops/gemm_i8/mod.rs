//! int8 GEMM: u8 or i8 activations (A, `m × k`, row-major in place) times int8 weights (B,
//! packed at compile time by [`pack::pack_b`]) accumulated exactly in i32, then written as
//! i32 or requantized to u8/i8 ([`requant`]) per tensor or per output column.
//!
//! The zero points never enter the inner loop: `Σ_k (a−za)(B−zb) + bias` is computed as the
//! raw product plus a per-column correction folded at compile time
//! ([`pack::fold_zero_points`]), minus `zb_j·Σ_k a` only when some weight zero point is
//! non-zero. The `MR × NR` tile ([`tile`] portable, [`avx2`] with AVX2) is chosen by the ISA
//! dispatch of [`crate::arch::isa`]; every path gives the same integers. No heap, no
//! workspace: packed B comes from the blob, row sums and tiles live on the stack.
//! Accumulators are i32 and wrap (as onnxruntime's) past `k ≈ 2^31 / (255·128)`, which no
//! real layer reaches.

pub mod conv;
pub mod conv_epilogue;
pub mod pack;
pub mod pointwise;
pub mod requant;
pub mod task;
#[cfg(test)]
mod tests;
pub(crate) mod tile;

pub use pack::{fold_zero_points, pack_b, packed_len};
pub use requant::Requant;

use super::KernelError;
use crate::arch::isa::{Isa, isa};

/// Rows of the register tile.
pub const MR: usize = 6;
/// Columns of the register tile and of a packed B panel.
pub const NR: usize = 16;
/// Most input channels per group [`pointwise`] holds in registers (as channel quads).
pub const MAX_POINTWISE_CG: usize = 64;
/// Target bytes of packed B reused across a block of A rows (about half an L2).
const B_BLOCK_BYTES: usize = 256 * 1024;

/// An 8-bit activation element: u8 or i8, widened to i16 for the products.
pub trait Act: Copy + Send + Sync + 'static {
    /// Whether the bytes are two's complement (i8) rather than unsigned (u8).
    const SIGNED: bool;
    fn wide(self) -> i16;
}

impl Act for u8 {
    const SIGNED: bool = false;
    #[inline(always)]
    fn wide(self) -> i16 {
        i16::from(self)
    }
}

impl Act for i8 {
    const SIGNED: bool = true;
    #[inline(always)]
    fn wide(self) -> i16 {
        i16::from(self)
    }
}

/// One product's inputs: `a` (row `i` at `a[i·lda..]`), packed `b`, the folded correction
/// `corr` (`n` values) and the weight zero points `zb` (empty when all are zero, else 1 or
/// `n` values).
#[derive(Clone, Copy)]
pub struct QGemm<'a, A> {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: &'a [A],
    pub lda: usize,
    pub b: &'a [i8],
    pub corr: &'a [i32],
    pub zb: &'a [i32],
}

/// Requantization of the output: multipliers (1 or `n`), the output zero point and range.
#[derive(Clone, Copy)]
pub struct QOutParams<'a> {
    pub rq: &'a [Requant],
    pub zp: i32,
}

/// Where the result goes (`ldc` apart rows).
pub enum QOut<'a> {
    /// The exact i32 result (MatMulInteger / ConvInteger).
    I32 { c: &'a mut [i32], ldc: usize },
    /// Requantized to u8 (QLinearMatMul, QDQ with uint8 activations).
    U8 {
        c: &'a mut [u8],
        ldc: usize,
        q: QOutParams<'a>,
    },
    /// Requantized to i8.
    I8 {
        c: &'a mut [i8],
        ldc: usize,
        q: QOutParams<'a>,
    },
}

/// `C = Σ_k (A − za)(B − zb) + bias` (zero points and bias folded into `corr`), then stored
/// per [`QOut`]. Validates every length first. O(m·n·k).
pub fn qgemm<A: Act>(g: &QGemm<'_, A>, out: QOut<'_>) -> Result<(), KernelError> {
    qgemm_on(isa(), g, out)
}

/// [`qgemm`] on a given ISA (tests compare the paths); `isa` must be supported by the CPU.
pub(crate) fn qgemm_on<A: Act>(
    isa: Isa,
    g: &QGemm<'_, A>,
    mut out: QOut<'_>,
) -> Result<(), KernelError> {
    check(g, &out)?;
    if g.m == 0 || g.n == 0 {
        return Ok(());
    }
    let kp = g.k.div_ceil(2) * 2;
    let panel = NR * kp;
    let panels = g.n.div_ceil(NR);
    let block = (B_BLOCK_BYTES / panel.max(1)).clamp(1, panels);
    let wide = crate::arch::qtile::wide(isa, &out);
    for p0 in (0..panels).step_by(block) {
        for i0 in (0..g.m).step_by(MR) {
            let mr = MR.min(g.m - i0);
            let off: [usize; MR] =
                core::array::from_fn(|i| if i < mr { (i0 + i) * g.lda } else { i0 * g.lda });
            let rowsum = row_sums(g, &off);
            for p in p0..(p0 + block).min(panels) {
                let bp = &g.b[p * panel..(p + 1) * panel];
                if let Some(w) = wide {
                    // SAFETY: as below; `w` proves the CPU runs the AVX-512 tile.
                    unsafe {
                        crate::arch::qtile::wide_gemm_block(
                            w,
                            g,
                            &off,
                            bp,
                            &rowsum,
                            i0,
                            mr,
                            p * NR,
                            &mut out,
                        )
                    };
                    continue;
                }
                // SAFETY: `check` proved rows `i0..i0 + mr` of A hold `k` values at `lda`
                // apart (rows past `mr` repeat row `i0`) and packed B holds every panel.
                let acc = unsafe {
                    crate::arch::qtile::tile_on(isa, g.k, g.a.as_ptr(), &off, mr, bp.as_ptr())
                };
                g.columns()
                    .store(isa, &acc, &rowsum, i0, mr, p * NR, &mut out);
            }
        }
    }
    Ok(())
}

/// True when every requantizer has the f32 form, or every one TFLite's: the forms the
/// vector epilogues compute (`Rq16`, `Rq8`).
pub(crate) fn vector_form(rq: &[Requant]) -> bool {
    rq.iter().all(|r| r.shift == 0) || rq.iter().all(|r| r.tflite_shift().is_some())
}

/// The columns a tile's results are finished with: `n` of them, their folded corrections
/// and weight zero points (empty when all are zero, else 1 or `n`).
#[derive(Clone, Copy)]
pub(crate) struct Columns<'a> {
    pub(crate) n: usize,
    pub(crate) corr: &'a [i32],
    pub(crate) zb: &'a [i32],
}

impl Columns<'_> {
    /// The epilogue: correction, zero-point term, then i32 or requantized store of columns
    /// `j0..` (sixteen or fewer) of rows `i0..i0 + mr`; `out` passed [`check_out`]; `isa`
    /// (supported by the CPU) picks the AVX2 f32 requantization.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn store(
        &self,
        isa: Isa,
        acc: &[[i32; NR]; MR],
        rowsum: &[i32; MR],
        i0: usize,
        mr: usize,
        j0: usize,
        out: &mut QOut<'_>,
    ) {
        let nr = NR.min(self.n - j0);
        let pick = |v: &[i32], j: usize| if v.len() == 1 { v[0] } else { v[j] };
        // Either vector form with no weight zero point, on AVX2: eight lanes at a time.
        if crate::arch::qtile::store_q8(isa, self, acc, i0, mr, j0, out) {
            return;
        }
        for (i, (row, &rs)) in acc.iter().zip(rowsum).enumerate().take(mr) {
            for (jj, &v) in row.iter().enumerate().take(nr) {
                let j = j0 + jj;
                let mut v = v.wrapping_add(self.corr[j]);
                if !self.zb.is_empty() {
                    v = v.wrapping_sub(pick(self.zb, j).wrapping_mul(rs));
                }
                let r = i0 + i;
                match out {
                    QOut::I32 { c, ldc } => c[r * *ldc + j] = v,
                    QOut::U8 { c, ldc, q } => {
                        let rq = if q.rq.len() == 1 { q.rq[0] } else { q.rq[j] };
                        c[r * *ldc + j] = rq.apply(v, q.zp, 0, 255) as u8;
                    }
                    QOut::I8 { c, ldc, q } => {
                        let rq = if q.rq.len() == 1 { q.rq[0] } else { q.rq[j] };
                        c[r * *ldc + j] = rq.apply(v, q.zp, -128, 127) as i8;
                    }
                }
            }
        }
    }

    /// Checks the columns' lists and that `out` holds `m` rows of them.
    pub(crate) fn check_out(&self, m: usize, out: &QOut<'_>) -> Result<(), KernelError> {
        let shape = |m| Err(KernelError::Shape(m));
        if self.corr.len() != self.n
            || !(self.zb.is_empty() || self.zb.len() == 1 || self.zb.len() == self.n)
        {
            return shape("int8 GEMM: correction needs n values, zero points 0, 1 or n");
        }
        if m == 0 || self.n == 0 {
            return Ok(());
        }
        let (len, ldc, rq) = match out {
            QOut::I32 { c, ldc } => (c.len(), *ldc, None),
            QOut::U8 { c, ldc, q } => (c.len(), *ldc, Some(q.rq.len())),
            QOut::I8 { c, ldc, q } => (c.len(), *ldc, Some(q.rq.len())),
        };
        if rq.is_some_and(|l| l != 1 && l != self.n) {
            return shape("int8 GEMM: requantization needs 1 or n multipliers");
        }
        let need_c = (m - 1).checked_mul(ldc).and_then(|x| x.checked_add(self.n));
        if ldc < self.n || !matches!(need_c, Some(l) if l <= len) {
            return shape("int8 GEMM: C smaller than m × n");
        }
        Ok(())
    }
}

impl<A> QGemm<'_, A> {
    pub(crate) fn columns(&self) -> Columns<'_> {
        Columns {
            n: self.n,
            corr: self.corr,
            zb: self.zb,
        }
    }
}

/// `Σ_k a` of the tile's rows, only when some weight zero point is non-zero.
fn row_sums<A: Act>(g: &QGemm<'_, A>, off: &[usize; MR]) -> [i32; MR] {
    let mut s = [0i32; MR];
    if g.zb.iter().any(|&z| z != 0) {
        for (si, &o) in s.iter_mut().zip(off) {
            *si = g.a[o..o + g.k].iter().map(|v| i32::from(v.wide())).sum();
        }
    }
    s
}

/// Every length the loops index, checked once.
fn check<A: Act>(g: &QGemm<'_, A>, out: &QOut<'_>) -> Result<(), KernelError> {
    let shape = |m| Err(KernelError::Shape(m));
    if g.m == 0 || g.n == 0 {
        return Ok(());
    }
    let need_a = (g.m - 1)
        .checked_mul(g.lda)
        .and_then(|x| x.checked_add(g.k));
    if g.lda < g.k || !matches!(need_a, Some(l) if l <= g.a.len()) {
        return shape("int8 GEMM: A smaller than m × k");
    }
    if !matches!(packed_len(g.k, g.n), Some(l) if l <= g.b.len()) {
        return shape("int8 GEMM: packed B smaller than k × n");
    }
    g.columns().check_out(g.m, out)
}
