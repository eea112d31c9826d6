//! Gemm and batched MatMul on a shared f32 GEMM core.
//!
//! [`gemm_packed`] is a cache-blocked GEMM: op(B) is packed in `GEMM_KC × NC` blocks into
//! `NR`-column panels (by a [`PackB`] source: a matrix, or a convolution's implicit im2col),
//! in the caller's workspace (one packing slot per host thread, planned in the arena);
//! op(A) is read in place (row-major or transposed, any leading dimension), a `MR`-row
//! micro-panel staying in L1 while B panels stream from L2; the `MR × NR` register tile
//! ([`micro`]: AVX2+FMA chosen at run time, or the portable build) applies the epilogue
//! (alpha, accumulate, per-row bias, Relu/Clip/LeakyRelu/HardSwish) while the tile is in registers.
//! Work is split between host threads by output tiles, so every element is computed by the
//! same instructions whatever the thread count.

#[cfg(target_arch = "x86_64")]
pub(crate) use crate::arch::x86::{avx2::gemm as avx2, avx512::gemm as avx512};
#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod column;
pub mod micro;
#[cfg(feature = "std")]
pub mod peak;

use ge_runtime::format::{
    Activation, DType, GEMM_B_PANEL, GemmParams, MAX_RANK, Shape, TensorMut, TensorRef, UnaryOp,
    gemm_b_index,
};

pub use micro::{MR, NR, TileAct, TileEp};

use super::broadcast::{broadcast_strides, for_each_row};
use super::copy::{checked_len, f32_in, f32_out};
use super::{KernelError, KernelResult, input, output};
use crate::threads::{Parallel, Serial};

/// K blocks are the format's (`gemm_k_block`): pre-packed Bs (GemmW8, GemmPacked) are
/// stored in them.
pub(crate) use ge_runtime::format::gemm_k_block as k_block;

const _: () = assert!(
    NR == GEMM_B_PANEL,
    "pre-packed B panels are the tile's columns"
);
/// Largest N block (columns of a packed B block): a 256 × 128 block (128 KB) stays in L2
/// beside the A rows and C tiles streaming past it (512 columns filled all of a 512 KB L2).
const NC: usize = 128;
/// Packing slots planned in a GEMM's workspace: the most host threads one GEMM uses.
pub const WS_SLOTS: usize = 4;
/// Below this many multiply-adds a GEMM runs on one thread.
const PAR_MIN_MACS: usize = 1 << 18;

/// f32 elements of one packing slot for `n × k` op(B).
pub fn pack_slot_len(n: usize, k: usize) -> usize {
    k_block(k) * n.next_multiple_of(NR).min(NC)
}

/// f32 scratch elements [`gemm_packed`] needs for an `n × k` op(B) (all slots).
pub fn gemm_packed_ws_len(n: usize, k: usize) -> usize {
    WS_SLOTS * pack_slot_len(n, k)
}

/// f32 scratch elements [`sgemm`] needs for an `m × n × k` product (0 when `m ≤ 1`, which
/// takes an unpacked matrix-vector path). Monotone in each argument.
pub fn sgemm_ws_len(m: usize, n: usize, k: usize) -> usize {
    if m <= 1 || n == 0 || k == 0 {
        return 0;
    }
    gemm_packed_ws_len(n, k)
}

/// The first `len` f32 of a byte workspace (64-byte aligned by the planner).
pub fn ws_f32(ws: &mut [u8], len: usize) -> Result<&mut [f32], KernelError> {
    if len == 0 {
        return Ok(&mut []);
    }
    let bytes = len.checked_mul(4).ok_or(KernelError::Workspace)?;
    let ws = ws.get_mut(..bytes).ok_or(KernelError::Workspace)?;
    bytemuck::try_cast_slice_mut(ws).map_err(|_| KernelError::Workspace)
}

fn check_operand(len: usize, rows: usize, cols: usize, ld: usize) -> Result<(), KernelError> {
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    match (rows - 1).checked_mul(ld).and_then(|x| x.checked_add(cols)) {
        Some(need) if ld >= cols && need <= len => Ok(()),
        _ => Err(KernelError::Shape(
            "gemm operand smaller than its dimensions",
        )),
    }
}

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

/// The epilogue of a [`gemm_packed`]:
/// `C = act(alpha · op(A)·op(B) (+ C) (+ bias[row]) (+ R))`.
#[derive(Clone, Copy, Debug)]
pub struct Epilogue<'a> {
    pub alpha: f32,
    pub accumulate: bool,
    /// One value per row of C.
    pub row_bias: Option<&'a [f32]>,
    /// A residual `R` laid out like C (values, leading dimension): a skip connection added
    /// while the tile is in registers, so the separate Add and its memory round trip vanish.
    pub residual: Option<(&'a [f32], usize)>,
    pub act: TileAct,
}

impl Epilogue<'_> {
    /// `C = op(A)·op(B)`.
    pub const PLAIN: Epilogue<'static> = Epilogue {
        alpha: 1.0,
        accumulate: false,
        row_bias: None,
        residual: None,
        act: TileAct::None,
    };
}

/// The in-register form of a fused activation, if it has one.
pub fn tile_act(act: &Activation) -> Option<TileAct> {
    match UnaryOp::from_u32(act.op) {
        _ if act.op == 0 => Some(TileAct::None),
        Some(UnaryOp::Relu) => Some(TileAct::Clamp {
            lo: 0.0,
            hi: f32::INFINITY,
        }),
        Some(UnaryOp::Clip) if !act.alpha.is_nan() && !act.beta.is_nan() => Some(TileAct::Clamp {
            lo: act.alpha,
            hi: act.beta,
        }),
        Some(UnaryOp::LeakyRelu) => Some(TileAct::Leaky { alpha: act.alpha }),
        #[cfg(feature = "std")]
        Some(UnaryOp::HardSwish) => Some(TileAct::HardSwish),
        #[cfg(feature = "std")]
        Some(UnaryOp::Sigmoid) => Some(TileAct::Sigmoid),
        #[cfg(feature = "std")]
        Some(UnaryOp::Silu) => Some(TileAct::Silu),
        Some(UnaryOp::Identity) => Some(TileAct::None),
        _ => None,
    }
}

/// A raw output pointer shared by slots that write disjoint parts of it.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr(pub(crate) *mut f32);
// SAFETY: users give every slot a disjoint part of the output (see `gemm_packed`).
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}

impl SendPtr {
    /// The pointer (a method, so closures capture the `Sync` wrapper, not the field).
    pub(crate) fn get(&self) -> *mut f32 {
        self.0
    }
}

/// How a GEMM's output is split between slots: by column panels or by row tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Split {
    Cols,
    Rows,
}

fn choose_split(m: usize, n: usize, k: usize, threads: usize) -> (Split, usize) {
    let t = threads.clamp(1, WS_SLOTS);
    // Without std one slot (firmware is single-core): one copy of the block loop.
    if t == 1 || !cfg!(feature = "std") || m.saturating_mul(n).saturating_mul(k) < PAR_MIN_MACS {
        return (Split::Cols, 1);
    }
    let (panels, tiles) = (n.div_ceil(NR), m.div_ceil(MR));
    // Estimated slot time in multiply-adds: the largest share of tiles, plus packing
    // (about 16 multiply-adds per packed value) — each row slot packs all of B.
    let pack = 16 * k * n;
    let cols_t = t.min(panels);
    let cols = panels.div_ceil(cols_t) * NR * tiles * MR * k + pack / cols_t;
    let rows_t = t.min(tiles);
    let rows = tiles.div_ceil(rows_t) * MR * panels * NR * k + pack;
    if cols <= rows {
        (Split::Cols, cols_t)
    } else {
        (Split::Rows, rows_t)
    }
}

/// How op(A) (`m × k`) lies in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ALayout {
    /// op(A)`[i][p] = a[i·rs + p·cs]` (row-major A: `rs = lda, cs = 1`; transposed:
    /// `rs = 1, cs = lda`).
    Strided { rs: usize, cs: usize },
    /// Panels of [`MR`] rows stored column by column (`[k][MR]`), the last `m mod MR` rows as
    /// one narrower panel (`[k][m mod MR]`): `m·k` values, the order the tile reads them
    /// (weights pre-packed by the compiler, [`ge_runtime::format::WeightLayout::Panels`]).
    Panels,
}

impl ALayout {
    /// Offset of op(A)`[i][p]` for a panel's first row `i` (a multiple of `MR`), and the
    /// tile's row and column strides from there.
    #[inline]
    fn at(self, m: usize, k: usize, i: usize, p: usize) -> (usize, usize, usize) {
        match self {
            ALayout::Strided { rs, cs } => (i * rs + p * cs, rs, cs),
            ALayout::Panels => {
                let w = (m - i).min(MR);
                (i * k + p * w, 1, w)
            }
        }
    }

    /// The last element read, for `m, k > 0`; `None` on overflow.
    fn last(self, m: usize, k: usize) -> Option<usize> {
        match self {
            ALayout::Strided { rs, cs } => (m - 1)
                .checked_mul(rs)
                .and_then(|x| (k - 1).checked_mul(cs).and_then(|y| x.checked_add(y))),
            ALayout::Panels => m.checked_mul(k).map(|l| l - 1),
        }
    }
}

/// `C[m × n] = epilogue(op(A) · op(B))` with op(A) laid out as `al` says, op(B) from `b`, C
/// row-major with leading dimension `ldc`. `ws` needs [`gemm_packed_ws_len`]`(n, k)` values.
/// Extents are validated; the work is split between up to `par.threads()` slots by output
/// tiles.
#[allow(clippy::too_many_arguments)]
pub fn gemm_packed(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    al: ALayout,
    b: &dyn PackB,
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue<'_>,
    ws: &mut [f32],
    par: &dyn Parallel,
) -> Result<(), KernelError> {
    check_operand(c.len(), m, n, ldc)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k > 0 && al.last(m, k).is_none_or(|l| l >= a.len()) {
        return Err(KernelError::Shape(
            "gemm operand smaller than its dimensions",
        ));
    }
    if ep.row_bias.is_some_and(|bias| bias.len() < m) {
        return Err(KernelError::Shape("gemm bias shorter than the rows"));
    }
    if let Some((r, ldr)) = ep.residual {
        check_operand(r.len(), m, n, ldr)?;
    }
    let slot = pack_slot_len(n, k);
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if n == 1 && k > 0 && al == ALayout::Panels && micro::isa() != micro::Isa::Portable {
        return gemm_column(m, k, a, b, c, ldc, ep, ws, slot, par);
    }
    let (split, slots) = choose_split(m, n, k, par.threads());
    let ws = ws.get_mut(..slot * slots).ok_or(KernelError::Workspace)?;
    let isa = micro::isa();
    let cp = SendPtr(c.as_mut_ptr());
    let wp = SendPtr(ws.as_mut_ptr());
    let (panels, tiles) = (n.div_ceil(NR), m.div_ceil(MR));
    let body = |s: usize| {
        let (r0, r1, c0, c1) = match split {
            Split::Cols => (
                0,
                m,
                (s * panels / slots) * NR,
                ((s + 1) * panels / slots * NR).min(n),
            ),
            Split::Rows => (
                (s * tiles / slots) * MR,
                ((s + 1) * tiles / slots * MR).min(m),
                0,
                n,
            ),
        };
        // SAFETY: slot `s` owns `ws[s·slot..(s+1)·slot]` exclusively.
        let bpack = unsafe { core::slice::from_raw_parts_mut(wp.get().add(s * slot), slot) };
        // SAFETY: slots write disjoint rectangles of C, all inside the validated extent.
        unsafe {
            gemm_block(
                isa,
                r0,
                r1,
                c0,
                c1,
                m,
                k,
                a,
                al,
                b,
                cp.get(),
                ldc,
                ep,
                bpack,
            )
        };
    };
    if slots == 1 {
        body(0);
    } else {
        par.run(slots, &body);
    }
    Ok(())
}

/// [`gemm_packed`] for one column of C from panel-packed A, on AVX2 ([`column`]: the tile's
/// values). Slots take whole panels of rows; each packs B's K blocks into its own part of
/// `ws` (`slot` f32 each). The caller has validated the extents.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
fn gemm_column(
    m: usize,
    k: usize,
    a: &[f32],
    b: &dyn PackB,
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue<'_>,
    ws: &mut [f32],
    slot: usize,
    par: &dyn Parallel,
) -> Result<(), KernelError> {
    let panels = m.div_ceil(MR);
    let t = par.threads().clamp(1, WS_SLOTS).min(panels);
    let slots = if m.saturating_mul(k) < PAR_MIN_MACS {
        1
    } else {
        t
    };
    let ws = ws.get_mut(..slot * slots).ok_or(KernelError::Workspace)?;
    let cep = column::ColumnEp {
        alpha: ep.alpha,
        accumulate: ep.accumulate,
        bias: ep.row_bias,
        res: ep.residual,
        act: ep.act,
    };
    let kb = k_block(k);
    let (cp, wp) = (SendPtr(c.as_mut_ptr()), SendPtr(ws.as_mut_ptr()));
    let body = |s: usize| {
        let rows = (
            (s * panels / slots) * MR,
            ((s + 1) * panels / slots * MR).min(m),
        );
        // SAFETY: slot `s` owns `ws[s·slot..(s+1)·slot]` exclusively.
        let xb = unsafe { core::slice::from_raw_parts_mut(wp.get().add(s * slot), slot) };
        let mut pc = 0;
        while pc < k && rows.0 < rows.1 {
            let kc = kb.min(k - pc);
            let last = pc + kc >= k;
            b.pack(pc, kc, 0, 1, &mut xb[..kc * NR]);
            // SAFETY: AVX2+FMA (the ISA is not portable); `a` holds `m·k` (checked by
            // `gemm_packed`), the packed block `kc·NR`; slots write disjoint rows of C.
            unsafe {
                column::column(
                    m,
                    k,
                    a,
                    &xb[..kc * NR],
                    (pc, kc, last),
                    rows,
                    cp.get(),
                    ldc,
                    &cep,
                )
            };
            pc += kc;
        }
    };
    if slots == 1 {
        body(0);
    } else {
        par.run(slots, &body);
    }
    Ok(())
}

/// Rows `r0..r1`, columns `c0..c1` of C.
///
/// # Safety
/// A, C and bias extents validated by [`gemm_packed`]; nothing else touches this rectangle
/// of C meanwhile; `bpack` holds [`pack_slot_len`] values.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_block(
    isa: micro::Isa,
    r0: usize,
    r1: usize,
    c0: usize,
    c1: usize,
    m: usize,
    k: usize,
    a: &[f32],
    al: ALayout,
    b: &dyn PackB,
    c: *mut f32,
    ldc: usize,
    ep: &Epilogue<'_>,
    bpack: &mut [f32],
) {
    if r0 >= r1 || c0 >= c1 {
        return;
    }
    let kb = k_block(k);
    let ncols = {
        let panels = (c1 - c0).div_ceil(NR);
        panels.div_ceil((panels * NR).div_ceil(NC)) * NR
    };
    let mut jc = c0;
    while jc < c1 {
        let nc = ncols.min(c1 - jc);
        let mut pc = 0;
        loop {
            let kc = kb.min(k - pc);
            let last = pc + kc >= k;
            let bblk: &[f32] = match b.packed(pc, kc, jc, nc) {
                Some(blk) => blk,
                None => {
                    let len = kc * nc.next_multiple_of(NR);
                    b.pack(pc, kc, jc, nc, &mut bpack[..len]);
                    &bpack[..len]
                }
            };
            let (bm, bn) = micro::block_dims(isa);
            for ir in (r0..r1).step_by(bm) {
                let mr = (r1 - ir).min(bm);
                // A single row (a matrix-vector product) in one-row strips where the ISA
                // has them: a 12-row block would compute eleven rows of padding.
                let bn = match micro::strip_cols(isa) {
                    Some(strip) if mr == 1 => strip,
                    _ => bn,
                };
                let mut tep = TileEp {
                    alpha: ep.alpha,
                    add: ep.accumulate || pc > 0,
                    bias: match (last, ep.row_bias) {
                        (true, Some(bias)) => bias[ir..].as_ptr(),
                        _ => core::ptr::null(),
                    },
                    res: core::ptr::null(),
                    ldr: 0,
                    act: if last { ep.act } else { TileAct::None },
                };
                // With k = 0 nothing of A is read; point at a valid element anyway. A second
                // panel is read only when the block has more than `MR` rows.
                let panel = |i: usize| {
                    let (at, rs, cs) = al.at(m, k, i, pc);
                    let ap = if k == 0 { a.as_ptr() } else { a[at..].as_ptr() };
                    (ap, rs, cs)
                };
                let (a0, rs, cs0) = panel(ir);
                let (a1, _, cs1) = if mr > MR {
                    panel(ir + MR)
                } else {
                    (a0, rs, cs0)
                };
                let ablk = micro::BlockA {
                    a: [a0, a1],
                    rs,
                    cs: [cs0, cs1],
                };
                // Pre-packed weights (panels) of the next rows' K block, prefetched to L2
                // while this block runs: read once a run, they arrive cold from L3 or
                // memory and stalled the block's first tile.
                #[cfg(all(feature = "std", target_arch = "x86_64"))]
                if al == ALayout::Panels && k > 0 {
                    for i in (ir + bm..(ir + 2 * bm).min(r1)).step_by(MR) {
                        let (at, _, w) = al.at(m, k, i, pc);
                        crate::arch::x86::prefetch::l2(a[at..].as_ptr(), kc * w);
                    }
                }
                for jr in (0..nc).step_by(bn) {
                    let nr = (nc - jr).min(bn);
                    if let (true, Some((r, ldr))) = (last, ep.residual) {
                        tep.res = r[ir * ldr + jc + jr..].as_ptr();
                        tep.ldr = ldr;
                    }
                    let blk = micro::Block {
                        kc,
                        a: ablk,
                        b: micro::BlockB::Packed {
                            bp: bblk[jr * kc..].as_ptr(),
                            stride: kc * NR,
                        },
                        c: c.wrapping_add(ir * ldc + jc + jr),
                        ldc,
                        mr,
                        nr,
                        ep: &tep,
                        flat: None,
                    };
                    // SAFETY: per this function's contract and the packing layout (column
                    // panel `v` of the block at `bblk[(jr + v·NR)·kc..]`).
                    unsafe { micro::block(isa, &blk) };
                }
            }
            pc += kc;
            if last {
                break;
            }
        }
        jc += nc;
    }
}

/// `C = alpha · op(A) · op(B) (+ C if accumulate)`, row-major with leading dimensions.
/// `op(A)` is `m × k` (A stored `k × m` when `trans_a`), `op(B)` is `k × n`.
/// `ws` needs [`sgemm_ws_len`]`(m, n, k)` elements. Operand extents are validated.
#[allow(clippy::too_many_arguments)]
pub fn sgemm(
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    lda: usize,
    trans_a: bool,
    b: &[f32],
    ldb: usize,
    trans_b: bool,
    accumulate: bool,
    c: &mut [f32],
    ldc: usize,
    ws: &mut [f32],
) -> Result<(), KernelError> {
    sgemm_on(
        m, n, k, alpha, a, lda, trans_a, b, ldb, trans_b, accumulate, c, ldc, ws, &Serial,
    )
}

/// [`sgemm`] split between the slots of `par`.
#[allow(clippy::too_many_arguments)]
pub fn sgemm_on(
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    lda: usize,
    trans_a: bool,
    b: &[f32],
    ldb: usize,
    trans_b: bool,
    accumulate: bool,
    c: &mut [f32],
    ldc: usize,
    ws: &mut [f32],
    par: &dyn Parallel,
) -> Result<(), KernelError> {
    if trans_a {
        check_operand(a.len(), k, m, lda)?
    } else {
        check_operand(a.len(), m, k, lda)?
    }
    if trans_b {
        check_operand(b.len(), n, k, ldb)?
    } else {
        check_operand(b.len(), k, n, ldb)?
    }
    check_operand(c.len(), m, n, ldc)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                c[i * ldc..i * ldc + n].fill(0.0);
            }
        }
        return Ok(());
    }
    if m == 1 {
        let inc_a = if trans_a { lda } else { 1 };
        gemv_row(
            n,
            k,
            alpha,
            a,
            inc_a,
            b,
            ldb,
            trans_b,
            accumulate,
            &mut c[..n],
        );
        return Ok(());
    }
    let (rs, cs) = if trans_a { (1, lda) } else { (lda, 1) };
    let ep = Epilogue {
        alpha,
        residual: None,
        accumulate,
        row_bias: None,
        act: TileAct::None,
    };
    let src = MatB {
        b,
        ld: ldb,
        trans: trans_b,
    };
    gemm_packed(
        m,
        n,
        k,
        a,
        ALayout::Strided { rs, cs },
        &src,
        c,
        ldc,
        &ep,
        ws,
        par,
    )
}

/// `c (+)= alpha · a · op(B)` for a single row `a` with element stride `inc_a`.
#[allow(clippy::too_many_arguments)]
fn gemv_row(
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    inc_a: usize,
    b: &[f32],
    ldb: usize,
    trans_b: bool,
    accumulate: bool,
    c: &mut [f32],
) {
    // The loops vectorize at the CPU's width (the closure inlined into `with_simd`'s
    // target-feature function; not inlined, it ran at the baseline's 4 lanes); sums keep
    // their order on every ISA.
    crate::arch::isa::with_simd(
        #[inline(always)]
        || {
            if trans_b {
                for (j, cj) in c.iter_mut().enumerate() {
                    let row = &b[j * ldb..j * ldb + k];
                    let d = if inc_a == 1 {
                        dot(&a[..k], row)
                    } else {
                        row.iter().enumerate().map(|(p, v)| a[p * inc_a] * v).sum()
                    };
                    *cj = if accumulate {
                        *cj + alpha * d
                    } else {
                        alpha * d
                    };
                }
            } else {
                if !accumulate {
                    c.fill(0.0);
                }
                // Four rows of B per pass over c (a quarter of c's loads and stores); each
                // element still adds its products in row order, so the sums are the same as
                // one row at a time. Firmware (no `std`) keeps the one-row loop: less code.
                let quads = if cfg!(feature = "std") { k / 4 } else { 0 };
                for q in 0..quads {
                    let p = 4 * q;
                    let s = [0, 1, 2, 3].map(|i| alpha * a[(p + i) * inc_a]);
                    let r = [0, 1, 2, 3].map(|i| &b[(p + i) * ldb..(p + i) * ldb + n]);
                    for ((((cj, &b0), &b1), &b2), &b3) in
                        c.iter_mut().zip(r[0]).zip(r[1]).zip(r[2]).zip(r[3])
                    {
                        *cj = *cj + s[0] * b0 + s[1] * b1 + s[2] * b2 + s[3] * b3;
                    }
                }
                for p in 4 * quads..k {
                    let s = alpha * a[p * inc_a];
                    let row = &b[p * ldb..p * ldb + n];
                    for (cj, bj) in c.iter_mut().zip(row) {
                        *cj += s * *bj;
                    }
                }
            }
        },
    )
}

/// Dot product with independent partial sums so it vectorizes.
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    const L: usize = 16;
    let mut acc = [0.0f32; L];
    let (ac, ar) = a.as_chunks::<L>();
    let (bc, br) = b.as_chunks::<L>();
    for (x, y) in ac.iter().zip(bc) {
        for l in 0..L {
            acc[l] += x[l] * y[l];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ar.iter().zip(br) {
        s += x * y;
    }
    s
}

/// Gemm: `Y = alpha · op(A) · op(B) + beta · C (+ R)`, C unidirectionally broadcast to
/// `[M, N]`, R (a fused residual) shaped like Y, then the fused activation.
pub fn run_gemm(
    p: &GemmParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    gemm_task::<B_F32>(p, ins, outs, ws, par)
}

/// GemmW8: the Gemm of f32 A and a weight-only int8/uint8 B (inputs A, B, B's scales — one,
/// or one per column —, optional C), B dequantized while it is packed ([`Int8B`]). Its own
/// kind, so that a device linking only f32 Gemm links none of it.
pub fn run_gemm_w8(
    p: &GemmParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    gemm_task::<B_INT8>(p, ins, outs, ws, par)
}

/// GemmPacked: a Gemm whose constant f32 B the compiler stored in the GEMM's panel order
/// ([`PanelB`]): read in place, never packed on the run. Its own kind, like GemmW8.
pub fn run_gemm_packed(
    p: &GemmParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    gemm_task::<B_PANELS>(p, ins, outs, ws, par)
}

/// A Gemm task's B: f32 as ONNX stores it, …
const B_F32: u8 = 0;
/// … int8/uint8 with scales (GemmW8), …
const B_INT8: u8 = 1;
/// … or f32 pre-packed (GemmPacked).
const B_PANELS: u8 = 2;

/// Gemm, GemmW8 and GemmPacked (by `B`) on the shared checks, C broadcast and residual.
fn gemm_task<const B: u8>(
    p: &GemmParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    let w8 = B == B_INT8;
    let at = input(ins, 0, "gemm A")?;
    let bt = input(ins, 1, "gemm B")?;
    let ct = ins.get(if w8 { 3 } else { 2 }).and_then(|t| t.as_ref());
    let yt = output(outs, 0, "gemm output")?;
    let a = f32_in(at)?;
    let (b, scales) = if w8 {
        if !matches!(bt.dtype, DType::I8 | DType::U8) {
            return Err(KernelError::UnsupportedDType("GemmW8's B is int8 or uint8"));
        }
        checked_len(&bt.shape, bt.dtype, bt.data.len())?;
        (&[][..], f32_in(input(ins, 2, "gemm B scales")?)?)
    } else {
        (f32_in(bt)?, &[][..])
    };
    let (ta, tb, panels) = (p.trans_a != 0, p.b_transposed(), p.b_panels());
    if (tb && panels) || ((B == B_PANELS) != panels && !w8) {
        return Err(KernelError::BadParams(
            "a pre-packed B (GEMM_B_PANELS, untransposed) is read by GemmW8 and GemmPacked \
             only, and GemmPacked reads no other",
        ));
    }
    let ra = at.shape.rank();
    // ONNX Gemm is 2-D; the compiler also emits `[…, M, K] · [K, N]` (MatMul + bias on
    // activations with batch axes), which is the same GEMM with the leading axes folded into M.
    if ra < 2 || (ta && ra != 2) || bt.shape.rank() != 2 || yt.shape.rank() != ra {
        return Err(KernelError::Shape(
            "gemm operands must be 2-D (A may have leading axes when not transposed)",
        ));
    }
    let (ad, bd, yd) = (at.shape.dims(), bt.shape.dims(), yt.shape.dims());
    let lda = ad[ra - 1];
    let (m, k) = if ta {
        (ad[1], ad[0])
    } else {
        (ad[..ra - 1].iter().product(), lda)
    };
    let (k2, n) = if tb { (bd[1], bd[0]) } else { (bd[0], bd[1]) };
    let rows_agree = if ta {
        yd[0] == m
    } else {
        yd[..ra - 1] == ad[..ra - 1]
    };
    if k != k2 || !rows_agree || yd[ra - 1] != n {
        return Err(KernelError::Shape("gemm operand shapes do not agree"));
    }
    let yshape = yt.shape;
    let y = f32_out(yt)?;
    let mut accumulate = match ct {
        Some(ct) if p.beta != 0.0 => {
            let c = f32_in(ct)?;
            let beta = p.beta;
            for_each_row(&yshape, [&ct.shape], |start, [off], [inc], len| {
                let dst = &mut y[start..start + len];
                if inc == 0 {
                    dst.fill(beta * c[off]);
                } else {
                    for (d, s) in dst.iter_mut().zip(&c[off..off + len]) {
                        *d = beta * *s;
                    }
                }
            })?;
            true
        }
        _ => false,
    };
    // Input 3 (GemmW8: 4; compiler-fused): a residual shaped like Y, added before the
    // activation.
    if let Some(rt) = ins.get(if w8 { 4 } else { 3 }).and_then(|t| t.as_ref()) {
        let r = f32_in(rt)?;
        if r.len() != y.len() {
            return Err(KernelError::Shape(
                "gemm residual differs from the output in size",
            ));
        }
        if accumulate {
            y.iter_mut().zip(r).for_each(|(d, r)| *d += r);
        } else {
            y.copy_from_slice(r);
        }
        accumulate = true;
    }
    // GemmW8's B: its bytes, dequantized while they are packed.
    let int8 = if w8 {
        if scales.len() != 1 && scales.len() != n {
            return Err(KernelError::Shape(
                "int8 gemm B scales: one, or one per column",
            ));
        }
        if tb {
            return Err(KernelError::BadParams("GemmW8 takes B untransposed"));
        }
        Some(Int8B {
            b: bt.data,
            unsigned: bt.dtype == DType::U8,
            scale: scales,
            ld: bd[1],
            panels: panels.then_some(k),
        })
    } else {
        None
    };
    // GemmPacked's B: its panels, read in place.
    let panel = PanelB { b, k, n };
    if B == B_PANELS && b.len() != k * n {
        return Err(KernelError::Shape("gemm pre-packed B is not K x N"));
    }
    // Packed, with the activation in the register tile: GemmW8 and GemmPacked always; f32 B
    // for several rows under a tile activation (else sgemm, which takes one row unpacked).
    let fused = if m > 1 || B != B_F32 {
        tile_act(&p.act)
    } else {
        None
    };
    let ws_len = if B != B_F32 {
        gemm_packed_ws_len(n, k)
    } else {
        sgemm_ws_len(m, n, k)
    };
    let wsf = ws_f32(ws, ws_len)?;
    if B != B_F32 || fused.is_some() {
        check_operand(a.len(), if ta { k } else { m }, if ta { m } else { k }, lda)?;
        let mat = MatB {
            b,
            ld: bd[1],
            trans: tb,
        };
        let src: &dyn PackB = match &int8 {
            Some(q) => q,
            None if B == B_PANELS => &panel,
            None => {
                check_operand(
                    b.len(),
                    if tb { n } else { k },
                    if tb { k } else { n },
                    bd[1],
                )?;
                &mat
            }
        };
        let (rs, cs) = if ta { (1, lda) } else { (lda, 1) };
        let ep = Epilogue {
            residual: None,
            alpha: p.alpha,
            accumulate,
            row_bias: None,
            act: fused.unwrap_or(TileAct::None),
        };
        gemm_packed(
            m,
            n,
            k,
            a,
            ALayout::Strided { rs, cs },
            src,
            y,
            n,
            &ep,
            wsf,
            par,
        )?;
    } else {
        sgemm_on(
            m, n, k, p.alpha, a, lda, ta, b, bd[1], tb, accumulate, y, n, wsf, par,
        )?;
    }
    if p.act.op != 0 && fused.is_none() {
        super::unary::apply_activation(&p.act, y)?;
    }
    Ok(())
}

/// MatMul geometry: batch shapes (as [`Shape`]s) and the matrix sizes.
pub(crate) struct MatMulDims {
    pub(crate) a_batch: Shape,
    pub(crate) b_batch: Shape,
    pub(crate) y_batch: Shape,
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) k: usize,
}

pub(crate) fn matmul_dims(a: &Shape, b: &Shape, y: &Shape) -> Result<MatMulDims, KernelError> {
    let (ad, bd, yd) = (a.dims(), b.dims(), y.dims());
    if ad.is_empty() || bd.is_empty() {
        return Err(KernelError::Shape("matmul operands must have rank >= 1"));
    }
    let (m, k, ab) = if ad.len() == 1 {
        (1, ad[0], &ad[..0])
    } else {
        (ad[ad.len() - 2], ad[ad.len() - 1], &ad[..ad.len() - 2])
    };
    let (k2, n, bb) = if bd.len() == 1 {
        (bd[0], 1, &bd[..0])
    } else {
        (bd[bd.len() - 2], bd[bd.len() - 1], &bd[..bd.len() - 2])
    };
    if k != k2 {
        return Err(KernelError::Shape("matmul inner dimensions differ"));
    }
    let nb = ab.len().max(bb.len());
    let tail = usize::from(ad.len() > 1) + usize::from(bd.len() > 1);
    if yd.len() != nb + tail {
        return Err(KernelError::Shape("matmul output rank is wrong"));
    }
    let yb = &yd[..nb];
    let mut expect = [m, n];
    let want: &[usize] = match (ad.len() > 1, bd.len() > 1) {
        (true, true) => &expect[..],
        (true, false) => &expect[..1],
        (false, true) => {
            expect[0] = n;
            &expect[..1]
        }
        (false, false) => &expect[..0],
    };
    if &yd[nb..] != want {
        return Err(KernelError::Shape("matmul output matrix shape is wrong"));
    }
    let bad = || KernelError::Shape("matmul batch shape too large");
    let (a_batch, b_batch, y_batch) = (
        Shape::new(ab).ok_or_else(bad)?,
        Shape::new(bb).ok_or_else(bad)?,
        Shape::new(yb).ok_or_else(bad)?,
    );
    // Batch dims must broadcast exactly to the output's.
    broadcast_strides(&a_batch, &y_batch)?;
    broadcast_strides(&b_batch, &y_batch)?;
    for i in 0..nb {
        let da = if i + ab.len() >= nb {
            ab[i + ab.len() - nb]
        } else {
            1
        };
        let db = if i + bb.len() >= nb {
            bb[i + bb.len() - nb]
        } else {
            1
        };
        if yb[i] != if da == 1 { db } else { da } {
            return Err(KernelError::Shape(
                "matmul batch dims do not broadcast to the output",
            ));
        }
    }
    Ok(MatMulDims {
        a_batch,
        b_batch,
        y_batch,
        m,
        n,
        k,
    })
}

/// Element offsets (in matrices) of A and B for output batch `i`.
pub(crate) fn batch_offsets(
    d: &MatMulDims,
    sa: &[usize; MAX_RANK],
    sb: &[usize; MAX_RANK],
    mut i: usize,
) -> (usize, usize) {
    let (mut oa, mut ob) = (0, 0);
    for ax in (0..d.y_batch.rank()).rev() {
        let dim = d.y_batch.dims()[ax];
        let idx = i % dim;
        i /= dim;
        oa += idx * sa[ax];
        ob += idx * sb[ax];
    }
    (oa, ob)
}

/// MatMul with numpy semantics (1-D operands, broadcast batch dims). f32 through [`sgemm`];
/// f64, i32 and i64 with a plain loop (integers wrap).
pub fn run_matmul(
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    let at = input(ins, 0, "matmul A")?;
    let bt = input(ins, 1, "matmul B")?;
    let yt = output(outs, 0, "matmul output")?;
    if at.dtype != bt.dtype || at.dtype != yt.dtype {
        return Err(KernelError::Shape("matmul operands differ in dtype"));
    }
    let d = matmul_dims(&at.shape, &bt.shape, &yt.shape)?;
    checked_len(&at.shape, at.dtype, at.data.len())?;
    checked_len(&bt.shape, bt.dtype, bt.data.len())?;
    let ny = checked_len(&yt.shape, yt.dtype, yt.data.len())?;
    let (m, n, k) = (d.m, d.n, d.k);
    let batches = d.y_batch.numel();
    if ny == 0 {
        return Ok(());
    }
    let sa = broadcast_strides(&d.a_batch, &d.y_batch)?;
    let sb = broadcast_strides(&d.b_batch, &d.y_batch)?;
    let (amat, bmat, ymat) = (m * k, k * n, m * n);
    match at.dtype {
        DType::F32 => {
            let (a, b) = (at.as_slice::<f32>()?, bt.as_slice::<f32>()?);
            let y = yt.as_slice_mut::<f32>()?;
            if d.b_batch.numel() == 1 && d.a_batch.numel() == batches && m > 0 {
                // B shared by every batch and A's batches contiguous: one tall GEMM.
                let mm = batches * m;
                let wsf = ws_f32(ws, sgemm_ws_len(mm, n, k))?;
                sgemm_on(
                    mm, n, k, 1.0, a, k, false, b, n, false, false, y, n, wsf, par,
                )?;
                return Ok(());
            }
            let wsf = ws_f32(ws, sgemm_ws_len(m, n, k))?;
            for i in 0..batches {
                let (oa, ob) = batch_offsets(&d, &sa, &sb, i);
                let a = &a[oa * amat..(oa + 1) * amat];
                let b = &b[ob * bmat..(ob + 1) * bmat];
                let y = &mut y[i * ymat..(i + 1) * ymat];
                sgemm_on(
                    m, n, k, 1.0, a, k, false, b, n, false, false, y, n, wsf, par,
                )?;
            }
        }
        DType::F64 => naive_batches::<f64>(&d, &sa, &sb, at, bt, yt, |x, y| x * y, |x, y| x + y)?,
        DType::I32 => naive_batches::<i32>(
            &d,
            &sa,
            &sb,
            at,
            bt,
            yt,
            i32::wrapping_mul,
            i32::wrapping_add,
        )?,
        DType::I64 => naive_batches::<i64>(
            &d,
            &sa,
            &sb,
            at,
            bt,
            yt,
            i64::wrapping_mul,
            i64::wrapping_add,
        )?,
        _ => {
            return Err(KernelError::UnsupportedDType(
                "matmul supports float32, float64, int32, int64",
            ));
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn naive_batches<T: ge_runtime::format::Element + Default>(
    d: &MatMulDims,
    sa: &[usize; MAX_RANK],
    sb: &[usize; MAX_RANK],
    at: &TensorRef<'_>,
    bt: &TensorRef<'_>,
    yt: &mut TensorMut<'_>,
    mul: impl Fn(T, T) -> T,
    add: impl Fn(T, T) -> T,
) -> Result<(), KernelError> {
    let (a, b) = (at.as_slice::<T>()?, bt.as_slice::<T>()?);
    let y = yt.as_slice_mut::<T>()?;
    let (m, n, k) = (d.m, d.n, d.k);
    for i in 0..d.y_batch.numel() {
        let (oa, ob) = batch_offsets(d, sa, sb, i);
        let a = &a[oa * m * k..(oa + 1) * m * k];
        let b = &b[ob * k * n..(ob + 1) * k * n];
        let y = &mut y[i * m * n..(i + 1) * m * n];
        for r in 0..m {
            let yr = &mut y[r * n..(r + 1) * n];
            yr.fill(T::default());
            for p in 0..k {
                let av = a[r * k + p];
                for (yv, bv) in yr.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                    *yv = add(*yv, mul(av, *bv));
                }
            }
        }
    }
    Ok(())
}

/// The Gemm a plain MatMul is: `Y = A·B`.
pub const PLAIN_GEMM: GemmParams = GemmParams {
    trans_a: 0,
    trans_b: 0,
    alpha: 1.0,
    beta: 0.0,
    act: Activation {
        op: 0,
        alpha: 0.0,
        beta: 0.0,
    },
};

/// Scratch bytes of a GemmW8 or GemmPacked: they always run packed, even for one row
/// (GemmPacked uses its slots for a block holding B's narrower last panel only).
pub fn gemm_kn_workspace_bytes(in_shapes: &[Option<Shape>], out_shapes: &[Shape]) -> usize {
    let base = gemm_workspace_bytes(in_shapes, out_shapes);
    match in_shapes.get(1) {
        // B is `[K, N]`: GemmW8 and GemmPacked refuse a transposed one.
        Some(Some(b)) if b.rank() == 2 => base.max(gemm_packed_ws_len(b.dim(1), b.dim(0)) * 4),
        _ => base,
    }
}

/// Scratch bytes Gemm/MatMul need (packing), from the input shapes. The kind is not known
/// here, so this bounds both readings (Gemm with either transpose, MatMul with or without
/// folding the batch into M); [`sgemm_ws_len`] caps the result at one packed block pair.
pub fn gemm_workspace_bytes(in_shapes: &[Option<Shape>], out_shapes: &[Shape]) -> usize {
    let (Some(Some(a)), Some(Some(b)), Some(y)) =
        (in_shapes.first(), in_shapes.get(1), out_shapes.first())
    else {
        return 0;
    };
    let (ad, bd, yd) = (a.dims(), b.dims(), y.dims());
    let last = |d: &[usize], i: usize| if d.len() > i { d[d.len() - 1 - i] } else { 1 };
    let k = last(ad, 0).max(if ad.len() >= 2 { last(ad, 1) } else { 1 });
    let m_fold = if ad.len() >= 2 && last(ad, 0) > 0 {
        a.numel() / last(ad, 0)
    } else {
        1
    };
    let m = m_fold.max(if yd.len() >= 2 { last(yd, 1) } else { 1 });
    let n = last(yd, 0)
        .max(last(bd, 0))
        .max(if bd.len() >= 2 { last(bd, 1) } else { 1 });
    sgemm_ws_len(m, n, k) * 4
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use ge_runtime::format::Activation;
    use std::vec::Vec;

    fn lcg(seed: &mut u32) -> f32 {
        *seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        (*seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
    }

    fn rand_vec(n: usize, seed: &mut u32) -> Vec<f32> {
        (0..n).map(|_| lcg(seed)).collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn naive(
        m: usize,
        n: usize,
        k: usize,
        alpha: f32,
        a: &[f32],
        ta: bool,
        b: &[f32],
        tb: bool,
        c: &mut [f32],
    ) {
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0f64;
                for p in 0..k {
                    let av = if ta { a[p * m + i] } else { a[i * k + p] };
                    let bv = if tb { b[j * k + p] } else { b[p * n + j] };
                    s += av as f64 * bv as f64;
                }
                c[i * n + j] += alpha * s as f32;
            }
        }
    }

    fn max_err(x: &[f32], y: &[f32]) -> f32 {
        assert_eq!(x.len(), y.len());
        x.iter()
            .zip(y)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max)
    }

    #[test]
    fn sgemm_matches_naive_odd_sizes() {
        let mut seed = 7;
        for &(m, n, k) in &[
            (1, 7, 5),
            (2, 1, 3),
            (7, 13, 9),
            (37, 41, 300),
            (100, 2100, 20),
            (5, 3, 1),
            (97, 17, 513),
            (13, 2049, 3),
        ] {
            for ta in [false, true] {
                for tb in [false, true] {
                    for acc in [false, true] {
                        let a = rand_vec(m * k, &mut seed);
                        let b = rand_vec(k * n, &mut seed);
                        let c0 = rand_vec(m * n, &mut seed);
                        let mut c1 = c0.clone();
                        let mut c2 = if acc {
                            c0.clone()
                        } else {
                            std::vec![0.0; m * n]
                        };
                        let mut ws = std::vec![0.0; sgemm_ws_len(m, n, k)];
                        let (lda, ldb) = (if ta { m } else { k }, if tb { k } else { n });
                        sgemm(
                            m, n, k, 1.5, &a, lda, ta, &b, ldb, tb, acc, &mut c1, n, &mut ws,
                        )
                        .unwrap();
                        naive(m, n, k, 1.5, &a, ta, &b, tb, &mut c2);
                        let e = max_err(&c1, &c2);
                        assert!(e < 1e-3, "m{m} n{n} k{k} ta{ta} tb{tb} acc{acc}: err {e}");
                    }
                }
            }
        }
    }

    #[test]
    fn residual_epilogue_matches_naive() {
        let mut seed = 11;
        for &(m, n, k) in &[(7, 13, 9), (37, 41, 300), (6, 16, 600), (13, 35, 1)] {
            let ldr = n + 3;
            let a = rand_vec(m * k, &mut seed);
            let b = rand_vec(k * n, &mut seed);
            let bias = rand_vec(m, &mut seed);
            let r = rand_vec(m * ldr, &mut seed);
            let mut want = std::vec![0.0; m * n];
            naive(m, n, k, 1.0, &a, false, &b, false, &mut want);
            for i in 0..m {
                for j in 0..n {
                    let v = want[i * n + j] + bias[i] + r[i * ldr + j];
                    want[i * n + j] = v.max(0.0);
                }
            }
            let ep = Epilogue {
                row_bias: Some(&bias),
                residual: Some((&r, ldr)),
                act: TileAct::Clamp {
                    lo: 0.0,
                    hi: f32::INFINITY,
                },
                ..Epilogue::PLAIN
            };
            let mut c = std::vec![f32::NAN; m * n];
            let mut ws = std::vec![0.0; gemm_packed_ws_len(n, k)];
            let rows = ALayout::Strided { rs: k, cs: 1 };
            let mb = MatB {
                b: &b,
                ld: n,
                trans: false,
            };
            gemm_packed(m, n, k, &a, rows, &mb, &mut c, n, &ep, &mut ws, &Serial).unwrap();
            let e = max_err(&c, &want);
            assert!(e < 1e-3, "m{m} n{n} k{k}: err {e}");
            // The same product on A pre-packed in panels: bitwise the same.
            let mut panels = std::vec![0.0; m * k];
            ge_runtime::format::pack_panels(&a, m, k, &mut panels);
            let mut cp = std::vec![f32::NAN; m * n];
            gemm_packed(
                m,
                n,
                k,
                &panels,
                ALayout::Panels,
                &mb,
                &mut cp,
                n,
                &ep,
                &mut ws,
                &Serial,
            )
            .unwrap();
            assert!(
                cp.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()),
                "m{m} n{n} k{k}: panels differ from rows"
            );
            // A residual shorter than C is refused.
            let short = Epilogue {
                residual: Some((&r[..r.len() - 4], ldr)),
                ..ep
            };
            let err = gemm_packed(m, n, k, &a, rows, &mb, &mut c, n, &short, &mut ws, &Serial);
            assert!(err.is_err());
        }
    }

    /// One column (`n = 1`) from panel-packed A takes [`column`] on AVX2: bitwise the tile's
    /// values (a sigmoid within 4 ulp: the AVX-512 tile's own form), which column 0 of the same product with two columns gives; K blocks (k 700),
    /// partial and several panels in flight, every epilogue, serial and on two threads.
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    #[test]
    fn one_column_is_the_tiles_values() {
        if micro::isa() == micro::Isa::Portable {
            std::println!("skipping the one-column path: this CPU lacks AVX2");
            return;
        }
        let pool = crate::threads::ThreadPool::shared(2);
        let mut seed = 41;
        for (m, k) in [
            (1, 1),
            (5, 3),
            (6, 40),
            (7, 700),
            (13, 9),
            (31, 300),
            (1280, 512),
        ] {
            let a = rand_vec(m * k, &mut seed);
            let x = rand_vec(2 * k, &mut seed);
            let bias = rand_vec(m, &mut seed);
            let res = rand_vec(2 * m, &mut seed);
            let c0 = rand_vec(2 * m, &mut seed);
            let mut panels = std::vec![0.0; m * k];
            ge_runtime::format::pack_panels(&a, m, k, &mut panels);
            for (alpha, accumulate, act) in [
                (1.0, false, TileAct::None),
                (0.5, true, TileAct::Clamp { lo: 0.0, hi: 0.3 }),
                (1.0, false, TileAct::Silu),
                (1.0, true, TileAct::HardSwish),
            ] {
                let ep = |ldr: usize| Epilogue {
                    alpha,
                    accumulate,
                    row_bias: Some(&bias),
                    residual: Some((&res[..], ldr)),
                    act,
                };
                // The tile: B with two columns, x in column 0.
                let mut c2 = c0.clone();
                let mut ws = std::vec![0.0; gemm_packed_ws_len(2, k)];
                let b2 = MatB {
                    b: &x,
                    ld: 2,
                    trans: false,
                };
                let al = ALayout::Panels;
                gemm_packed(
                    m,
                    2,
                    k,
                    &panels,
                    al,
                    &b2,
                    &mut c2,
                    2,
                    &ep(2),
                    &mut ws,
                    &Serial,
                )
                .unwrap();
                let xs: Vec<f32> = (0..k).map(|p| x[2 * p]).collect();
                let b1 = MatB {
                    b: &xs,
                    ld: 1,
                    trans: false,
                };
                for par in [&Serial as &dyn Parallel, pool] {
                    let mut c1: Vec<f32> = (0..m).map(|i| c0[2 * i]).collect();
                    let mut ws = std::vec![0.0; gemm_packed_ws_len(1, k)];
                    gemm_packed(m, 1, k, &panels, al, &b1, &mut c1, 1, &ep(2), &mut ws, par)
                        .unwrap();
                    let sigmoid = matches!(act, TileAct::Sigmoid | TileAct::Silu);
                    for i in 0..m {
                        assert!(
                            crate::kernels::test_util::same_value(c1[i], c2[2 * i], sigmoid),
                            "m{m} k{k} row {i} alpha {alpha} {act:?}: {} vs {}",
                            c1[i],
                            c2[2 * i]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn sgemm_leading_dims_and_errors() {
        // 2x2 block of a 3x4 A times 2x3 block of B (ld 5), into C with ldc 4.
        let a: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let b: Vec<f32> = (0..10).map(|v| v as f32).collect();
        let mut c = std::vec![0.0f32; 8];
        sgemm(
            2,
            3,
            2,
            1.0,
            &a,
            4,
            false,
            &b,
            5,
            false,
            false,
            &mut c,
            4,
            &mut [0.0; 64],
        )
        .unwrap();
        // A = [[0,1],[4,5]], B = [[0,1,2],[5,6,7]]
        assert_eq!(c, [5., 6., 7., 0., 25., 34., 43., 0.]);
        assert!(
            sgemm(
                2,
                3,
                2,
                1.0,
                &a[..4],
                4,
                false,
                &b,
                5,
                false,
                false,
                &mut c,
                4,
                &mut [0.0; 64]
            )
            .is_err()
        );
        assert_eq!(
            sgemm(
                2,
                3,
                2,
                1.0,
                &a,
                4,
                false,
                &b,
                5,
                false,
                false,
                &mut c,
                4,
                &mut []
            ),
            Err(KernelError::Workspace)
        );
    }

    /// Runs one GemmW8 task (B bytes, one scale or one per column) on `threads`.
    fn gemm_w8_run(
        p: &GemmParams,
        a: (&[usize], &[f32]),
        b: (&[usize], DType, &[u8]),
        scales: &[f32],
        y_dims: &[usize],
        threads: usize,
    ) -> Vec<f32> {
        let ins = [
            tref(a.0, a.1),
            Some(TensorRef {
                dtype: b.1,
                shape: Shape::new(b.0).unwrap(),
                data: b.2,
            }),
            tref(&[scales.len()], scales),
        ];
        run_on(run_gemm_w8, p, &ins, y_dims, threads)
    }

    /// A Gemm-kind kernel function.
    type GemmRun = fn(
        &GemmParams,
        &[Option<TensorRef<'_>>],
        &mut [TensorMut<'_>],
        &mut [u8],
        &dyn Parallel,
    ) -> KernelResult;

    /// The kernel `run` on `ins` (a GemmW8 or GemmPacked task's) on `threads`: its output.
    fn run_on(
        run: GemmRun,
        p: &GemmParams,
        ins: &[Option<TensorRef<'_>>],
        y_dims: &[usize],
        threads: usize,
    ) -> Vec<f32> {
        let shapes: Vec<Option<Shape>> = ins.iter().map(|t| t.map(|t| t.shape)).collect();
        let ys = Shape::new(y_dims).unwrap();
        let mut ws = std::vec![0u8; gemm_kn_workspace_bytes(&shapes, &[ys])];
        let mut y = std::vec![0.0f32; ys.numel()];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: ys,
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        let pool = crate::threads::ThreadPool::shared(threads);
        let par: &dyn Parallel = if threads > 1 { pool } else { &Serial };
        run(p, ins, &mut outs, &mut ws, par).unwrap();
        y
    }

    /// GemmW8's B pre-packed at compile time ([`ge_runtime::format::pack_gemm_b`]) gives
    /// bitwise the values of B in ONNX order, on 1 and 2 threads: K blocks, whole and narrow
    /// panels, one row and several, int8 per column and uint8 with one scale, a tile
    /// activation. A pre-packed f32 (Gemm) or transposed B is refused.
    #[test]
    fn prepacked_int8_b_gives_the_values_of_onnx_order() {
        use ge_runtime::format::{GEMM_B_PANELS, pack_gemm_b};
        let mut seed = 7;
        let relu = Activation {
            op: UnaryOp::Relu as u32,
            ..Activation::default()
        };
        for (m, n, k) in [
            (3, 37, 300),
            (13, 16, 7),
            (100, 130, 513),
            (1, 40, 260),
            (2, 5, 1),
        ] {
            let a = rand_vec(m * k, &mut seed);
            let q: Vec<u8> = rand_vec(k * n, &mut seed)
                .iter()
                .map(|v| (v * 127.0) as i8 as u8)
                .collect();
            let mut qp = std::vec![0u8; k * n];
            pack_gemm_b(&q, k, n, false, &mut qp);
            let cols = rand_vec(n, &mut seed);
            for (dtype, scales, act) in [
                (DType::I8, &cols[..], Activation::default()),
                (DType::U8, &cols[..1], relu),
            ] {
                let p = GemmParams { act, ..PLAIN_GEMM };
                let pp = GemmParams {
                    trans_b: GEMM_B_PANELS,
                    ..p
                };
                let run = |p: &GemmParams, bytes: &[u8], threads| {
                    gemm_w8_run(
                        p,
                        (&[m, k], &a),
                        (&[k, n], dtype, bytes),
                        scales,
                        &[m, n],
                        threads,
                    )
                };
                let want = run(&p, &q, 1);
                for threads in [1, 2] {
                    assert_eq!(run(&pp, &qp, threads), want, "{m}x{n}x{k} {dtype:?}");
                }
            }
        }
        // The f32 Gemm and a transposed B take no pre-packed B.
        let (a, b) = ([1.0f32; 4], [1.0f32; 4]);
        let mut y = [0.0f32; 4];
        let p = GemmParams {
            trans_b: GEMM_B_PANELS,
            ..PLAIN_GEMM
        };
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        let ins = [tref(&[2, 2], &a), tref(&[2, 2], &b)];
        let mut ws = std::vec![0u8; 1 << 16];
        assert!(matches!(
            run_gemm(&p, &ins, &mut outs, &mut ws, &Serial),
            Err(KernelError::BadParams(_))
        ));
        let pt = GemmParams {
            trans_b: GEMM_B_PANELS | 1,
            ..p
        };
        let ins = [
            tref(&[2, 2], &a),
            Some(TensorRef {
                dtype: DType::I8,
                shape: Shape::new(&[2, 2]).unwrap(),
                data: &[1, 2, 3, 4],
            }),
            tref(&[1], &[0.5]),
        ];
        assert!(matches!(
            run_gemm_w8(&pt, &ins, &mut outs, &mut ws, &Serial),
            Err(KernelError::BadParams(_))
        ));
    }

    /// Runs one f32 Gemm task (`packed`: GemmPacked) on `threads`: A `m × k`, B as given, C
    /// one value per column (beta 1).
    #[allow(clippy::too_many_arguments)]
    fn gemm_f32_run(
        packed: bool,
        p: &GemmParams,
        (m, n, k): (usize, usize, usize),
        a: &[f32],
        (b_dims, b): (&[usize], &[f32]),
        c: &[f32],
        threads: usize,
    ) -> Vec<f32> {
        let ins = [tref(&[m, k], a), tref(b_dims, b), tref(&[n], c)];
        let run = if packed { run_gemm_packed } else { run_gemm };
        run_on(run, p, &ins, &[m, n], threads)
    }

    /// GemmPacked's B, pre-packed at compile time from either ONNX order (`transB` 0 or 1),
    /// gives bitwise the Gemm's values when A has several rows (both run the same register
    /// tiles on the same panels: whole panels read in place, the narrow last one copied), on
    /// 1 and 2 threads: K blocks, whole and narrow panels, with and without a tile
    /// activation. One row (the plain Gemm's matrix-vector path sums in another order):
    /// within 1e-5. GemmPacked refuses a B that is not pre-packed.
    #[test]
    fn prepacked_f32_b_gives_the_values_of_onnx_order() {
        use ge_runtime::format::{GEMM_B_PANELS, pack_gemm_b};
        let mut seed = 11;
        let relu = Activation {
            op: UnaryOp::Relu as u32,
            ..Activation::default()
        };
        for (m, n, k) in [
            (3, 37, 300),
            (13, 16, 7),
            (100, 130, 513),
            (20, 400, 600),
            (2, 5, 1),
            (1, 40, 260),
        ] {
            let a = rand_vec(m * k, &mut seed);
            let b = rand_vec(k * n, &mut seed);
            let c = rand_vec(n, &mut seed);
            let mut bt = std::vec![0.0f32; k * n];
            for p in 0..k {
                for j in 0..n {
                    bt[j * k + p] = b[p * n + j];
                }
            }
            let mut packed = std::vec![0.0f32; k * n];
            pack_gemm_b(&b, k, n, false, &mut packed);
            for act in [Activation::default(), relu] {
                let p = GemmParams {
                    act,
                    beta: 1.0,
                    ..PLAIN_GEMM
                };
                let pt = GemmParams { trans_b: 1, ..p };
                let pp = GemmParams {
                    trans_b: GEMM_B_PANELS,
                    ..p
                };
                let want = gemm_f32_run(false, &p, (m, n, k), &a, (&[k, n], &b), &c, 1);
                let want_t = gemm_f32_run(false, &pt, (m, n, k), &a, (&[n, k], &bt), &c, 1);
                for threads in [1, 2] {
                    let got =
                        gemm_f32_run(true, &pp, (m, n, k), &a, (&[k, n], &packed), &c, threads);
                    if m > 1 {
                        assert_eq!(got, want, "{m}x{n}x{k} {threads} threads");
                        assert_eq!(got, want_t, "{m}x{n}x{k} from B transposed");
                    } else {
                        for (g, w) in got.iter().zip(&want) {
                            assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
                        }
                    }
                }
            }
        }
        // A B in ONNX order (no GEMM_B_PANELS) is refused.
        let (a, b) = ([1.0f32; 4], [1.0f32; 4]);
        let mut y = [0.0f32; 4];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        let ins = [tref(&[2, 2], &a), tref(&[2, 2], &b)];
        let mut ws = std::vec![0u8; 1 << 16];
        assert!(matches!(
            run_gemm_packed(&PLAIN_GEMM, &ins, &mut outs, &mut ws, &Serial),
            Err(KernelError::BadParams(_))
        ));
    }

    fn tref<'a>(d: &[usize], v: &'a [f32]) -> Option<TensorRef<'a>> {
        Some(TensorRef {
            dtype: DType::F32,
            shape: Shape::new(d).unwrap(),
            data: bytemuck::cast_slice(v),
        })
    }

    #[test]
    fn gemm_op_with_bias_broadcast() {
        // A [2,3] transposed in storage ([3,2]), B [3,2], C [2] broadcast as a row; alpha 2, beta 0.5
        let a_t = [1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0]; // A = [[1,2,3],[4,5,6]]
        let b = [1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0];
        let c = [10.0f32, 20.0];
        let mut y = [0.0f32; 4];
        let p = GemmParams {
            trans_a: 1,
            trans_b: 0,
            alpha: 2.0,
            beta: 0.5,
            act: Activation::default(),
        };
        let ins = [tref(&[3, 2], &a_t), tref(&[3, 2], &b), tref(&[2], &c)];
        let shapes: Vec<Option<Shape>> = ins.iter().map(|t| t.map(|t| t.shape)).collect();
        let mut ws = std::vec![0u8; gemm_workspace_bytes(&shapes, &[Shape::new(&[2, 2]).unwrap()])];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_gemm(&p, &ins, &mut outs, &mut ws, &Serial).unwrap();
        // A·B = [[4,5],[10,11]] -> 2x + [5,10]
        assert_eq!(y, [13., 20., 25., 32.]);
        // C as a column [2,1], no C
        let c = [1.0f32, 2.0];
        let ins = [tref(&[3, 2], &a_t), tref(&[3, 2], &b), tref(&[2, 1], &c)];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_gemm(&p, &ins, &mut outs, &mut ws, &Serial).unwrap();
        assert_eq!(y, [8.5, 10.5, 21., 23.]);
        let ins = [tref(&[3, 2], &a_t), tref(&[3, 2], &b), None];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_gemm(&p, &ins, &mut outs, &mut ws, &Serial).unwrap();
        assert_eq!(y, [8., 10., 20., 22.]);
        // bad C
        let c3 = [1.0f32, 2.0, 3.0];
        let ins = [tref(&[3, 2], &a_t), tref(&[3, 2], &b), tref(&[3], &c3)];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_gemm(&p, &ins, &mut outs, &mut ws, &Serial).is_err());
        // shape mismatch
        let ins = [tref(&[2, 3], &a_t), tref(&[3, 2], &b), None];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_gemm(&p, &ins, &mut outs, &mut ws, &Serial).is_err());
    }

    fn matmul(
        ad: &[usize],
        a: &[f32],
        bd: &[usize],
        b: &[f32],
        yd: &[usize],
    ) -> Result<Vec<f32>, KernelError> {
        let mut y = std::vec![0.0f32; yd.iter().product()];
        let ins = [tref(ad, a), tref(bd, b)];
        let ys = Shape::new(yd).unwrap();
        let mut ws = std::vec![0u8; gemm_workspace_bytes(&[Some(Shape::new(ad).unwrap()), Some(Shape::new(bd).unwrap())], &[ys])];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: ys,
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_matmul(&ins, &mut outs, &mut ws, &Serial)?;
        Ok(y)
    }

    #[test]
    fn matmul_numpy_semantics() {
        let a: Vec<f32> = (0..6).map(|v| v as f32).collect(); // [2,3]
        let b: Vec<f32> = (0..6).map(|v| v as f32).collect(); // [3,2]
        // np.arange(6).reshape(2,3) @ np.arange(6).reshape(3,2) = [[10,13],[28,40]]
        assert_eq!(
            matmul(&[2, 3], &a, &[3, 2], &b, &[2, 2]).unwrap(),
            [10., 13., 28., 40.]
        );
        // 1-D @ 2-D: [0,1,2] @ B = [10,13]
        assert_eq!(
            matmul(&[3], &a[..3], &[3, 2], &b, &[2]).unwrap(),
            [10., 13.]
        );
        // 2-D @ 1-D: A @ [0,1,2] = [5,14]
        assert_eq!(matmul(&[2, 3], &a, &[3], &b[..3], &[2]).unwrap(), [5., 14.]);
        // 1-D @ 1-D
        assert_eq!(matmul(&[3], &a[..3], &[3], &b[..3], &[]).unwrap(), [5.]);
        assert!(matmul(&[2, 3], &a, &[2, 3], &b, &[2, 3]).is_err());
    }

    #[test]
    fn matmul_broadcast_batches() {
        let mut seed = 3;
        // [2,1,4,5] @ [3,5,6] -> [2,3,4,6]; and [2,3,4,5] @ [5,6] (folded path)
        for (ad, bd, yd) in [
            (
                std::vec![2usize, 1, 4, 5],
                std::vec![3usize, 5, 6],
                std::vec![2usize, 3, 4, 6],
            ),
            (
                std::vec![2, 3, 4, 5],
                std::vec![5, 6],
                std::vec![2, 3, 4, 6],
            ),
            (
                std::vec![3, 1, 5],
                std::vec![2, 1, 5, 7],
                std::vec![2, 3, 1, 7],
            ),
        ] {
            let a = rand_vec(ad.iter().product(), &mut seed);
            let b = rand_vec(bd.iter().product(), &mut seed);
            let y = matmul(&ad, &a, &bd, &b, &yd).unwrap();
            let (m, k, n) = (ad[ad.len() - 2], ad[ad.len() - 1], bd[bd.len() - 1]);
            let nb = yd.len() - 2;
            let batches: usize = yd[..nb].iter().product();
            for i in 0..batches {
                // decompose i over yd[..nb] and map into a/b batch indices
                let mut idx = std::vec![0usize; nb];
                let mut r = i;
                for ax in (0..nb).rev() {
                    idx[ax] = r % yd[ax];
                    r /= yd[ax];
                }
                let off = |d: &[usize]| {
                    let db = &d[..d.len() - 2];
                    let mut o = 0;
                    for (j, &dim) in db.iter().enumerate() {
                        let ix = idx[nb - db.len() + j];
                        o = o * dim + if dim == 1 { 0 } else { ix };
                    }
                    o
                };
                let (oa, ob) = (off(&ad), off(&bd));
                let mut want = std::vec![0.0f32; m * n];
                naive(
                    m,
                    n,
                    k,
                    1.0,
                    &a[oa * m * k..][..m * k],
                    false,
                    &b[ob * k * n..][..k * n],
                    false,
                    &mut want,
                );
                assert!(max_err(&y[i * m * n..][..m * n], &want) < 1e-5);
            }
        }
    }

    #[test]
    fn matmul_integers() {
        let a = [1i64, 2, 3, 4];
        let b = [5i64, 6, 7, 8];
        let mut y = [0i64; 4];
        let ins = [
            Some(TensorRef {
                dtype: DType::I64,
                shape: Shape::new(&[2, 2]).unwrap(),
                data: bytemuck::cast_slice(&a),
            }),
            Some(TensorRef {
                dtype: DType::I64,
                shape: Shape::new(&[2, 2]).unwrap(),
                data: bytemuck::cast_slice(&b),
            }),
        ];
        let mut outs = [TensorMut {
            dtype: DType::I64,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_matmul(&ins, &mut outs, &mut [], &Serial).unwrap();
        assert_eq!(y, [19, 22, 43, 50]);
    }

    /// Random MatMul / Gemm shapes must give a result or an error, never a panic.
    #[test]
    fn malformed_never_panics() {
        let mut seed = 9u32;
        let mut r = |n: u32| {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            ((seed >> 8) % n.max(1)) as usize
        };
        let mut oks = 0;
        for _ in 0..3000 {
            let (ra, rb) = (1 + r(4), 1 + r(4));
            let k = r(4);
            let mut ad: Vec<usize> = (0..ra).map(|_| r(3)).collect();
            let mut bd: Vec<usize> = (0..rb).map(|_| r(3)).collect();
            if r(4) != 0 {
                *ad.last_mut().unwrap() = k;
                let i = if rb == 1 { 0 } else { rb - 2 };
                bd[i] = k;
            }
            // numpy result shape, sometimes perturbed
            let (ab, bb) = (&ad[..ra.saturating_sub(2)], &bd[..rb.saturating_sub(2)]);
            let nb = ab.len().max(bb.len());
            let mut yd: Vec<usize> = (0..nb)
                .map(|i| {
                    let da = if i + ab.len() >= nb {
                        ab[i + ab.len() - nb]
                    } else {
                        1
                    };
                    let db = if i + bb.len() >= nb {
                        bb[i + bb.len() - nb]
                    } else {
                        1
                    };
                    if da == 1 { db } else { da }
                })
                .collect();
            if ra > 1 {
                yd.push(ad[ra - 2]);
            }
            if rb > 1 {
                yd.push(bd[rb - 1]);
            }
            if r(8) == 0 && !yd.is_empty() {
                yd[0] += 1;
            }
            let (sa, sb, sy) = (
                Shape::new(&ad).unwrap(),
                Shape::new(&bd).unwrap(),
                Shape::new(&yd).unwrap(),
            );
            let a = std::vec![1.0f32; sa.numel()];
            let b = std::vec![1.0f32; sb.numel()];
            let mut y = std::vec![0.0f32; sy.numel()];
            let mut ws = std::vec![0u32; gemm_workspace_bytes(&[Some(sa), Some(sb)], &[sy]) / 4];
            let c = std::vec![1.0f32; yd.last().copied().unwrap_or(1)];
            let ins = [
                tref(&ad, &a),
                tref(&bd, &b),
                if r(2) == 0 {
                    tref(&yd[yd.len().saturating_sub(1)..], &c)
                } else {
                    None
                },
            ];
            let mut outs = [TensorMut {
                dtype: DType::F32,
                shape: sy,
                data: bytemuck::cast_slice_mut(&mut y),
            }];
            let ok = run_matmul(
                &ins[..2],
                &mut outs,
                bytemuck::cast_slice_mut(&mut ws),
                &Serial,
            )
            .is_ok();
            oks += usize::from(ok);
            let p = GemmParams {
                trans_a: r(2) as u32,
                trans_b: r(2) as u32,
                alpha: 1.0,
                beta: 1.0,
                act: Activation::default(),
            };
            let _ = run_gemm(
                &p,
                &ins,
                &mut outs,
                bytemuck::cast_slice_mut(&mut ws),
                &Serial,
            );
        }
        assert!(oks > 1000, "only {oks} well-formed cases ran");
    }
}
