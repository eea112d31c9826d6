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

#[cfg(target_arch = "x86_64")]
use crate::arch::x86::avx512::requant::Rq16;
#[cfg(target_arch = "x86_64")]
use crate::arch::x86::{avx2::qgemm as avx2, avx512::qgemm as avx512};
pub mod conv;
pub mod conv_epilogue;
pub mod pack;
pub mod pointwise;
pub mod requant;
pub mod task;
#[cfg(test)]
mod tests;
mod tile;

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

/// Whether the x86 tile can ever run (see `gemm::micro`): otherwise its arm is dead code.
#[cfg(target_arch = "x86_64")]
pub(crate) const X86_TILES: bool = cfg!(any(feature = "std", target_feature = "avx2"));

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
    #[cfg(target_arch = "x86_64")]
    let wide = X86_TILES && isa == Isa::Avx512 && wide_epilogue(&out);
    #[cfg(target_arch = "x86_64")]
    let vnni = wide && avx512::has_vnni();
    for p0 in (0..panels).step_by(block) {
        for i0 in (0..g.m).step_by(MR) {
            let mr = MR.min(g.m - i0);
            let off: [usize; MR] =
                core::array::from_fn(|i| if i < mr { (i0 + i) * g.lda } else { i0 * g.lda });
            let rowsum = row_sums(g, &off);
            for p in p0..(p0 + block).min(panels) {
                let bp = &g.b[p * panel..(p + 1) * panel];
                #[cfg(target_arch = "x86_64")]
                if wide {
                    // SAFETY: as below; `wide` and `vnni` were checked against the CPU.
                    unsafe { wide_block(g, vnni, &off, bp, &rowsum, i0, mr, p * NR, &mut out) };
                    continue;
                }
                // SAFETY: `check` proved rows `i0..i0 + mr` of A hold `k` values at `lda`
                // apart (rows past `mr` repeat row `i0`) and packed B holds every panel.
                let acc = unsafe { tile_on(isa, g.k, g.a.as_ptr(), &off, mr, bp.as_ptr()) };
                g.columns()
                    .store(isa, &acc, &rowsum, i0, mr, p * NR, &mut out);
            }
        }
    }
    Ok(())
}

/// Whether the AVX-512 epilogue computes this output: i32, or requantized in one vector
/// form for every column (onnxruntime's f32 or TFLite's fixed point).
#[cfg(target_arch = "x86_64")]
pub(crate) fn wide_epilogue(out: &QOut<'_>) -> bool {
    match out {
        QOut::I32 { .. } => true,
        QOut::U8 { q, .. } | QOut::I8 { q, .. } => vector_form(q.rq),
    }
}

/// True when every requantizer has the f32 form, or every one TFLite's: the forms the
/// vector epilogues compute (`Rq16`, `Rq8`).
pub(crate) fn vector_form(rq: &[Requant]) -> bool {
    rq.iter().all(|r| r.shift == 0) || rq.iter().all(|r| r.tflite_shift().is_some())
}

/// One tile on AVX-512 (VNNI when `vnni`), stored by the vector
/// epilogue: the same integers and the same requantization as [`tile_on`] and [`store`].
///
/// # Safety
/// As [`tile_on`] with `bp` one packed panel; the CPU supports AVX-512 F/BW/VL (and VNNI
/// when `vnni`); `out` passed [`check`] and [`wide_epilogue`].
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn wide_block<A: Act>(
    g: &QGemm<'_, A>,
    vnni: bool,
    off: &[usize; MR],
    bp: &[i8],
    rowsum: &[i32; MR],
    i0: usize,
    mr: usize,
    j0: usize,
    out: &mut QOut<'_>,
) {
    // SAFETY: the contract covers the tile's reads and the store's writes.
    unsafe {
        let acc = if vnni && mr == 1 {
            avx512::row_vnni(g.k, g.a.as_ptr(), off[0], bp.as_ptr())
        } else if vnni {
            avx512::tile_vnni(g.k, g.a.as_ptr(), off, bp.as_ptr())
        } else {
            avx512::rows(&avx2::tile(g.k, g.a.as_ptr(), off, bp.as_ptr()))
        };
        g.columns().store_wide(&acc, rowsum, i0, mr, j0, out);
    }
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
    /// [`store`]'s epilogue on AVX-512: columns `j0..` (sixteen or fewer) of rows
    /// `i0..i0 + mr` of `out`.
    ///
    /// # Safety
    /// The CPU supports AVX-512 F/BW/VL; `out` passed [`check_out`] for at least
    /// `i0 + mr` rows and [`wide_epilogue`]; `j0 < n`.
    #[cfg(target_arch = "x86_64")]
    pub(crate) unsafe fn store_wide(
        &self,
        acc: &[core::arch::x86_64::__m512i; MR],
        rowsum: &[i32; MR],
        i0: usize,
        mr: usize,
        j0: usize,
        out: &mut QOut<'_>,
    ) {
        let nr = NR.min(self.n - j0);
        // SAFETY: `check_out` proved C, `corr`, `zb` and the requantizers hold columns
        // `j0..j0 + nr` of rows `i0..i0 + mr`.
        unsafe {
            let (zb, zb_all) = match self.zb.len() {
                0 => (core::ptr::null(), None),
                1 => (core::ptr::null(), Some(self.zb[0])),
                _ => (self.zb[j0..].as_ptr(), None),
            };
            let q8 = |c: *mut u8, ldc: usize, q: &QOutParams<'_>, lo: i32, hi: i32| {
                avx512::TileOut::Q8 {
                    c,
                    ldc,
                    scale: match (q.rq.len(), q.rq[0].shift) {
                        (1, 0) => avx512::Scale::PerTensor(f32::from_bits(q.rq[0].mult as u32)),
                        (_, 0) => avx512::Scale::PerColumn(&q.rq[j0].mult),
                        // TFLite's form (`wide_epilogue`: every column's); `columns` is
                        // `None` only for mixed forms, which `wide_epilogue` excludes.
                        _ => avx512::Scale::Fixed(Rq16::columns_checked(if q.rq.len() == 1 {
                            q.rq
                        } else {
                            &q.rq[j0..]
                        })),
                    },
                    zp: q.zp,
                    lo,
                    hi,
                }
            };
            let at = |ldc: usize| i0 * ldc + j0;
            let dst = match out {
                QOut::I32 { c, ldc } => avx512::TileOut::I32 {
                    c: c.as_mut_ptr().add(at(*ldc)),
                    ldc: *ldc,
                },
                QOut::U8 { c, ldc, q } => q8(c.as_mut_ptr().add(at(*ldc)), *ldc, q, 0, 255),
                QOut::I8 { c, ldc, q } => {
                    q8(c.as_mut_ptr().add(at(*ldc)).cast(), *ldc, q, -128, 127)
                }
            };
            avx512::store_tile(
                acc,
                rowsum,
                mr,
                nr,
                self.corr[j0..].as_ptr(),
                zb,
                zb_all,
                dst,
            );
        }
    }

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
        #[cfg(not(target_arch = "x86_64"))]
        let _ = isa;
        // Either vector form with no weight zero point, on AVX2: eight lanes at a time.
        #[cfg(target_arch = "x86_64")]
        if self.zb.iter().all(|&z| z == 0) && X86_TILES && isa != Isa::Portable {
            let target = match &mut *out {
                QOut::U8 { c, ldc, q } => Some((c.as_mut_ptr(), *ldc, *q, (0, 255))),
                QOut::I8 { c, ldc, q } => {
                    Some((c.as_mut_ptr().cast::<u8>(), *ldc, *q, (-128, 127)))
                }
                QOut::I32 { .. } => None,
            };
            if let Some((c, ldc, q, (lo, hi))) = target
                && vector_form(q.rq)
            {
                let corr: [i32; NR] =
                    core::array::from_fn(|t| if t < nr { self.corr[j0 + t] } else { 0 });
                let half = |h: usize| {
                    let from = if q.rq.len() == 1 { 0 } else { j0 + 8 * h };
                    q.rq.get(from..).filter(|r| !r.is_empty()).unwrap_or(q.rq)
                };
                // SAFETY: `check_out` proved rows `i0..i0 + mr` hold columns `j0..j0 + nr`;
                // AVX2 was detected (the ISA is not portable); `vector_form` holds.
                unsafe {
                    let at = c.add(i0 * ldc + j0);
                    let rq = [half(0), half(1)];
                    avx2::store_q8(acc, mr, nr, &corr, rq, (q.zp, lo, hi), at, ldc);
                }
                return;
            }
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
    fn columns(&self) -> Columns<'_> {
        Columns {
            n: self.n,
            corr: self.corr,
            zb: self.zb,
        }
    }
}

/// The tile of rows `off` on `isa` (`mr` of them real: the others repeat the first, and
/// are left zero when `mr` is 1 on x86).
///
/// # Safety
/// As [`tile::tile`]; `isa` must be supported by the CPU.
#[inline]
unsafe fn tile_on<A: Act>(
    isa: Isa,
    k: usize,
    a: *const A,
    off: &[usize; MR],
    mr: usize,
    bp: *const i8,
) -> [[i32; NR]; MR] {
    match isa {
        // One row (a dense layer at batch 1): the row tile, whose other rows are zero.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma | Isa::Avx512 if X86_TILES && mr == 1 => {
            // SAFETY: forwarded contract for row 0; the ISA was detected.
            unsafe { avx2::row(k, a, off[0], bp) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma | Isa::Avx512 if X86_TILES => {
            // SAFETY: forwarded contract; the ISA was detected.
            unsafe { avx2::tile(k, a, off, bp) }
        }
        _ => {
            let _ = mr;
            // SAFETY: forwarded contract.
            unsafe { tile::tile(k, a, off, bp) }
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
