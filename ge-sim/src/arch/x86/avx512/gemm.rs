//! The AVX-512 register blocks: up to two `MR`-row A panels × two `NR`-column B panels
//! (12 × 32) in up to 24 zmm accumulators, on packed B panels (GEMM) or on B rows read in
//! place (direct convolution). Each output element gets the same operations in the same
//! order as in the AVX2 tile (one FMA per K step, then the same epilogue), so the two builds
//! give bitwise the same results; partial rows and columns are handled with lane masks.

use core::arch::x86_64::*;

use crate::arch::x86::avx2::gemm::prefetch_rows;
use crate::ops::gemm::micro::{Block, BlockA, BlockB, MR, NR, STRIP, TileAct};

/// K steps ahead at which the A panels are prefetched.
const A_AHEAD: usize = 32;

/// AVX-512 build of [`crate::ops::gemm::micro::block`].
///
/// # Safety
/// As [`crate::ops::gemm::micro::block`]; the CPU must support AVX-512 F/BW/VL, AVX2 and FMA.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
pub unsafe fn block(blk: &Block<'_>) {
    // SAFETY: forwarded contract.
    unsafe {
        match (blk.b, blk.nr > 2 * NR) {
            (BlockB::Packed { bp, stride }, false) => shaped(blk, Packed(bp, stride)),
            (BlockB::Taps { x, offs }, false) => shaped(blk, Taps(x, offs)),
            (BlockB::Packed { bp, stride }, true) => strip_shaped(blk, Packed(bp, stride)),
            (BlockB::Taps { x, offs }, true) => strip_shaped(blk, Taps(x, offs)),
        }
    }
}

/// [`strip`] with unmasked loads where the strip is whole.
///
/// # Safety
/// As [`block`] for a one-row block up to [`STRIP`] columns wide.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn strip_shaped<R: Rows>(blk: &Block<'_>, b: R) {
    // SAFETY: forwarded contract.
    unsafe {
        if blk.nr == STRIP {
            strip::<true, _>(blk, b);
        } else {
            strip::<false, _>(blk, b);
        }
    }
}

/// A one-row block over up to [`STRIP`] columns (a single output channel: basic-pitch's
/// 256-tap filters and 1-channel heads, U²-Net's side outputs): eight accumulators on the
/// row, where the 12 × 32 block computed six rows for one (a sixth of its FMAs used). One
/// broadcast and eight loads feed eight FMAs per K step. Each element gets the block's
/// operations in the block's order (one FMA per K step from zero, then the block's
/// [`store_block`]), so the values are bitwise the same. `WHOLE`: all [`STRIP`] columns, plain
/// loads; otherwise masked loads read only the block's `nr` columns.
///
/// # Safety
/// As [`block`] with `mr == 1` and `nr ≤ STRIP`: B reads stop at column `nr`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
// Index loops on purpose: a borrow of the whole accumulator array kept it in memory.
#[allow(clippy::needless_range_loop)]
unsafe fn strip<const WHOLE: bool, R: Rows>(blk: &Block<'_>, b: R) {
    const V: usize = STRIP / NR;
    let (a, cs) = (blk.a.a[0], blk.a.cs[0]);
    let step = b.next_panel();
    let masks: [__mmask16; V] = core::array::from_fn(|v| lanes_mask(blk.nr.saturating_sub(v * NR)));
    let mut acc = [_mm512_setzero_ps(); V];
    // SAFETY: step `p < kc` reads `a[p·cs]` and the row's columns below `nr` (masked
    // loads read no others), readable per the contract; AVX-512F is enabled here.
    unsafe {
        for p in 0..blk.kc {
            let av = _mm512_set1_ps(*a.add(p * cs));
            let row = b.row(p);
            for v in 0..V {
                let at = row.add(v * step);
                let bv = if WHOLE {
                    _mm512_loadu_ps(at)
                } else {
                    _mm512_maskz_loadu_ps(masks[v], at)
                };
                acc[v] = _mm512_fmadd_ps(av, bv, acc[v]);
            }
        }
    }
    // SAFETY: the row's columns below `nr` of C, `bias[0]` and the residual (contract);
    // AVX-512F is enabled here.
    unsafe { store_block([[acc]], blk) };
}

/// The first `lanes` lanes (all for 16 or more).
#[inline(always)]
fn lanes_mask(lanes: usize) -> __mmask16 {
    if lanes >= NR { !0 } else { (1u16 << lanes) - 1 }
}

/// [`kernel`] of the const shape `mr` and `nr` need.
///
/// # Safety
/// As [`block`], with `b` the block's B source.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn shaped<R: Rows>(blk: &Block<'_>, b: R) {
    let BlockA { rs, cs, .. } = blk.a;
    let two = blk.mr > MR;
    // Dense panels (`[p][MR]`, every row readable: packed weights, or a Taps block whose
    // contract says so) get compile-time row offsets: the loop then needs no offset
    // registers (the generic one spilled them and reloaded three per K step).
    let dense = rs == 1
        && cs[0] == MR
        && (!two || cs[1] == MR)
        && (b.dense_a() || blk.mr == if two { 2 * MR } else { MR });
    // SAFETY: forwarded contract; each shape covers `mr` rows and `nr` columns.
    unsafe {
        match (dense, two, blk.nr > NR) {
            (true, true, true) => kernel::<2, 2, true, _>(blk, b),
            (true, true, false) => kernel::<2, 1, true, _>(blk, b),
            (true, false, true) => kernel::<1, 2, true, _>(blk, b),
            (true, false, false) => kernel::<1, 1, true, _>(blk, b),
            (false, true, true) => kernel::<2, 2, false, _>(blk, b),
            (false, true, false) => kernel::<2, 1, false, _>(blk, b),
            (false, false, true) => kernel::<1, 2, false, _>(blk, b),
            (false, false, false) => kernel::<1, 1, false, _>(blk, b),
        }
    }
}

/// Where step `p`'s B row of column panel 0 is, and how far panel 1's row lies past it.
trait Rows: Copy {
    /// Offset (in f32) from panel 0's row to panel 1's.
    fn next_panel(self) -> usize;
    /// Whether blocks on this source always come with dense `[p][MR]` A panels.
    fn dense_a(self) -> bool;
    /// # Safety
    /// `p < kc` of the block this source was made for.
    unsafe fn row(self, p: usize) -> *const f32;
}

/// Packed panels: row `p` at `bp + p·NR`, panel 1 `stride` values on.
#[derive(Clone, Copy)]
struct Packed(*const f32, usize);

impl Rows for Packed {
    #[inline(always)]
    fn next_panel(self) -> usize {
        self.1
    }
    #[inline(always)]
    fn dense_a(self) -> bool {
        false
    }
    #[inline(always)]
    unsafe fn row(self, p: usize) -> *const f32 {
        self.0.wrapping_add(p * NR)
    }
}

/// Rows read in place: row `p` at `x + offs[p]`, both panels' columns consecutive.
#[derive(Clone, Copy)]
struct Taps(*const f32, *const u32);

impl Rows for Taps {
    #[inline(always)]
    fn next_panel(self) -> usize {
        NR
    }
    #[inline(always)]
    fn dense_a(self) -> bool {
        // BlockB::Taps' contract: A is `[p][MR]` panels.
        true
    }
    #[inline(always)]
    unsafe fn row(self, p: usize) -> *const f32 {
        // SAFETY: `offs` holds `kc` offsets (contract).
        self.0.wrapping_add(unsafe { *self.1.add(p) } as usize)
    }
}

/// `P` A panels × `V` column panels: `P·MR·V` accumulators. `D`: the panels are dense
/// (`rs = 1`, `cs = MR`, all `MR` rows readable), so row offsets are constants.
///
/// # Safety
/// As [`block`], with `mr ≤ P·MR` and `nr ≤ V·NR`; with `D`, `MR` values readable per step
/// of each panel.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn kernel<const P: usize, const V: usize, const D: bool, R: Rows>(blk: &Block<'_>, b: R) {
    let BlockA { a, rs, cs } = blk.a;
    let (rs, cs) = if D { (1, [MR; 2]) } else { (rs, cs) };
    prefetch_rows(blk.c, blk.ldc, blk.mr.min(P * MR));
    if V == 2 {
        prefetch_rows(blk.c.wrapping_add(NR), blk.ldc, blk.mr.min(P * MR));
    }
    // Rows past a panel's real ones repeat its row 0 (computed, never stored).
    // Dense panels read every row (the extra ones are zero padding or the next rows).
    let off: [[usize; MR]; P] = core::array::from_fn(|q| {
        let rows = if D { MR } else { blk.mr.saturating_sub(q * MR) };
        core::array::from_fn(|i| if i < rows { i * rs } else { 0 })
    });
    let step = b.next_panel();
    let z = _mm512_setzero_ps();
    let mut acc = [[[z; V]; MR]; P];
    let mut ap: [*const f32; P] = core::array::from_fn(|q| a[q]);
    // SAFETY: (whole loop) step `p < kc` reads row `p` of each A panel (`a[q] + off + p·cs`)
    // and `V·NR` values of B at `row(p)` (panel 1 at `+ step`), all readable per the
    // contract; the features are enabled on this function.
    unsafe {
        for p in 0..blk.kc {
            // Weights stream from memory once per block (deep layers have little reuse):
            // fetch each A panel a few lines ahead, where the hardware prefetcher has not
            // yet caught on to a short run.
            for q in 0..P {
                _mm_prefetch::<_MM_HINT_T0>(ap[q].wrapping_add(A_AHEAD * cs[q]).cast());
            }
            let row = b.row(p);
            let bv: [__m512; V] = core::array::from_fn(|v| _mm512_loadu_ps(row.add(v * step)));
            for q in 0..P {
                for i in 0..MR {
                    let av = _mm512_set1_ps(*ap[q].add(off[q][i]));
                    for v in 0..V {
                        acc[q][i][v] = _mm512_fmadd_ps(av, bv[v], acc[q][i][v]);
                    }
                }
                ap[q] = ap[q].add(cs[q]);
            }
        }
    }
    // SAFETY: rows below `mr` and columns below `nr` (or the flat columns) of C, the bias
    // and the residual, per the contract; the features are enabled on this function.
    unsafe { store_block(acc, blk) };
}

/// The epilogue of a block (`P` panels of `R ≤ MR` rows: the `MR`-row blocks and the
/// one-row strips), its accumulators kept in registers: a flat block's lanes
/// packed to the front first, then each step (alpha, C, bias, residual; then a Clamp)
/// unrolled over every accumulator, other activations through [`act_each`], then masked
/// stores; per element `act(alpha·acc + C + bias[row] + R)` in that order, as the AVX2 and
/// portable tiles. A loop through one accumulator's epilogue at a time spilled all 24
/// registers and took a quarter of a block's time when K is short (ShuffleNet's grouped 1×1
/// convs).
///
/// # Safety
/// For every row below `blk.mr` and column below `blk.nr` (or the lanes and columns of
/// `blk.flat`): C writable (and readable with `ep.add`), `ep.bias[row]` and the residual
/// readable when not null; AVX-512F.
#[inline(always)]
// Index loops on purpose: see the note in the body.
#[allow(clippy::needless_range_loop)]
unsafe fn store_block<const P: usize, const R: usize, const V: usize>(
    mut acc: [[[__m512; V]; R]; P],
    blk: &Block<'_>,
) {
    let ep = blk.ep;
    let front = lanes_mask;
    // Per column panel: its first column of C and the mask of its stored lanes.
    let (cols, masks): ([usize; V], [__mmask16; V]) = match blk.flat {
        Some(f) => (
            core::array::from_fn(|v| f.col[v]),
            core::array::from_fn(|v| front(f.mask[v].count_ones() as usize)),
        ),
        None => (
            core::array::from_fn(|v| v * NR),
            core::array::from_fn(|v| front(blk.nr.saturating_sub(v * NR).min(NR))),
        ),
    };
    let live = |q: usize, i: usize, v: usize| q * MR + i < blk.mr && masks[v] != 0;
    let at = |q: usize, i: usize, v: usize| (q * MR + i) * blk.ldc + cols[v];
    // SAFETY: register-only, then only live accumulators touch memory, inside the
    // contract's extents.
    unsafe {
        // Index loops over `acc`, never a reference to all of it: a borrow of the whole
        // array made LLVM keep it in memory, storing every accumulator on every K step.
        if let Some(f) = blk.flat {
            for q in 0..P {
                for i in 0..R {
                    for v in 0..V {
                        acc[q][i][v] = _mm512_maskz_compress_ps(f.mask[v], acc[q][i][v]);
                    }
                }
            }
        }
        for q in 0..P {
            for i in 0..R {
                for v in 0..V {
                    if !live(q, i, v) {
                        continue;
                    }
                    let (r, k) = (q * MR + i, masks[v]);
                    let mut x = acc[q][i][v];
                    if ep.alpha != 1.0 {
                        x = _mm512_mul_ps(x, _mm512_set1_ps(ep.alpha));
                    }
                    if ep.add {
                        x = _mm512_add_ps(_mm512_maskz_loadu_ps(k, blk.c.add(at(q, i, v))), x);
                    }
                    if !ep.bias.is_null() {
                        x = _mm512_add_ps(x, _mm512_set1_ps(*ep.bias.add(r)));
                    }
                    if !ep.res.is_null() {
                        let res = ep.res.add(r * ep.ldr + cols[v]);
                        x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(k, res));
                    }
                    acc[q][i][v] = x;
                }
            }
        }
        match ep.act {
            TileAct::None => {}
            TileAct::Clamp { .. } => {
                for q in 0..P {
                    for i in 0..R {
                        for v in 0..V {
                            acc[q][i][v] = act(acc[q][i][v], ep.act);
                        }
                    }
                }
            }
            _ => {
                // A copy goes through memory, `acc` stays in registers.
                let mut spill = acc;
                act_each(spill.as_flattened_mut().as_flattened_mut(), ep.act);
                acc = spill;
            }
        }
        for q in 0..P {
            for i in 0..R {
                for v in 0..V {
                    if live(q, i, v) {
                        _mm512_mask_storeu_ps(blk.c.add(at(q, i, v)), masks[v], acc[q][i][v]);
                    }
                }
            }
        }
    }
}

/// [`act`] on every register of `v`, four at a time ([`act4`]); out of line, so the
/// sigmoid's code is not unrolled into every block shape.
///
/// # Safety
/// AVX-512F.
#[inline(never)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn act_each(v: &mut [__m512], a: TileAct) {
    // SAFETY: register-only AVX-512F operations.
    unsafe {
        let (quads, rest) = v.as_chunks_mut::<4>();
        for q in quads {
            *q = act4(*q, a);
        }
        for x in rest {
            *x = act(*x, a);
        }
    }
}

/// `act` applied to every lane, as [`crate::ops::gemm::micro::act_scalar`] applies it: bitwise, the
/// sigmoids within 4 ulp ([`crate::arch::x86::avx512::sigmoid`]).
///
/// # Safety
/// AVX-512F.
#[inline(always)]
pub(crate) unsafe fn act(v: __m512, act: TileAct) -> __m512 {
    // SAFETY: register-only AVX-512F operations.
    unsafe {
        match act {
            TileAct::None => v,
            TileAct::Clamp { lo, hi } => {
                // max(lo, v) returns v when v is NaN, as `v < lo ? lo : v` does.
                _mm512_min_ps(_mm512_set1_ps(hi), _mm512_max_ps(_mm512_set1_ps(lo), v))
            }
            TileAct::Leaky { alpha } => {
                let neg = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(v, _mm512_setzero_ps());
                _mm512_mask_mul_ps(v, neg, v, _mm512_set1_ps(alpha))
            }
            #[cfg(feature = "std")]
            TileAct::HardSwish => {
                let (a, b) = crate::ops::gemm::micro::HARD_SWISH;
                let t = _mm512_add_ps(_mm512_mul_ps(v, _mm512_set1_ps(a)), _mm512_set1_ps(b));
                // clamp01 as a Clamp to [0, 1] (a NaN stays), then times x.
                let c = _mm512_min_ps(_mm512_set1_ps(1.0), _mm512_max_ps(_mm512_setzero_ps(), t));
                _mm512_mul_ps(v, c)
            }
            #[cfg(feature = "std")]
            TileAct::Sigmoid | TileAct::Silu => {
                crate::arch::x86::avx512::sigmoid::sigmoid([v], act == TileAct::Silu)[0]
            }
        }
    }
}

/// [`act`] on four registers at once: a sigmoid's dependent steps run on the four side by
/// side. [`act`]'s values.
///
/// # Safety
/// AVX-512F.
#[inline(always)]
pub(crate) unsafe fn act4(v: [__m512; 4], act: TileAct) -> [__m512; 4] {
    // SAFETY: register-only AVX-512F operations.
    unsafe {
        #[cfg(feature = "std")]
        if let TileAct::Sigmoid | TileAct::Silu = act {
            return crate::arch::x86::avx512::sigmoid::sigmoid(v, act == TileAct::Silu);
        }
        // Loops, not closures: a closure would compile without the caller's AVX-512.
        let mut out = v;
        for o in &mut out {
            *o = self::act(*o, act);
        }
        out
    }
}
