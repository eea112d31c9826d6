//! The cache-blocked driver: N blocks of packed B, `MR`-row panels of A read in place, the
//! register tile per block, and the split of output tiles between host threads (every element
//! computed by the same instructions whatever the thread count); one-column GEMMs in strips.

use super::*;

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
pub(super) enum Split {
    Cols,
    Rows,
}

pub(super) fn choose_split(m: usize, n: usize, k: usize, threads: usize) -> (Split, usize) {
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
    if n == 1
        && k > 0
        && al == ALayout::Panels
        && let Some(done) =
            crate::arch::tile::gemm_column(micro::isa(), m, k, a, b, c, ldc, ep, ws, slot, par)
    {
        return done;
    }
    let (split, slots) = choose_split(m, n, k, par.threads());
    // A workspace planned smaller than one slot per thread (where the arena peaks) runs on
    // as many slots as it holds.
    let slots = slots.min(ws.len() / slot.max(1)).max(1);
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

/// Rows `r0..r1`, columns `c0..c1` of C.
///
/// # Safety
/// A, C and bias extents validated by [`gemm_packed`]; nothing else touches this rectangle
/// of C meanwhile; `bpack` holds [`pack_slot_len`] values.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gemm_block(
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
                if crate::arch::PREFETCH && al == ALayout::Panels && k > 0 {
                    for i in (ir + bm..(ir + 2 * bm).min(r1)).step_by(MR) {
                        let (at, _, w) = al.at(m, k, i, pc);
                        crate::arch::prefetch_l2(a[at..].as_ptr(), kc * w);
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
