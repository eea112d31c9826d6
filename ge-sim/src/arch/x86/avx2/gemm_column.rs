//! One output column (`n = 1`) from pre-packed weight panels, on AVX2: the register tile's
//! values without its wasted lanes.
//!
//! A 1 × 1 convolution on a 1 × 1 plane (a classifier head, a squeeze-excitation block)
//! is `y = W·x` with `n = 1`: the tile computes 16 columns (8 on its narrow form) to keep one,
//! and streams its weights at a sixteenth of the FMA rate. Here a register holds one panel's
//! rows (`w ≤ MR` lanes of 8 used, the rest read from the next column of the panel and
//! dropped): each step is one load, one broadcast of `x[p]` and one FMA, four panels in
//! flight. Every output gets the tile's operations in the tile's order — per K block
//! ([`crate::ops::gemm::k_block`]) an FMA chain from zero over the block's `p`, then `alpha`, the
//! previous block's sum, the bias, the residual and the activation — so the values are the
//! tile's, bitwise (tested). Memory-bound: O(m·k) reads of the weights, once.

use core::arch::x86_64::*;

use crate::arch::tile::{MR, NR, TileAct, act_scalar};
use crate::ops::KernelError;
use crate::ops::gemm::{Epilogue, PAR_MIN_MACS, PackB, SendPtr, WS_SLOTS, k_block};
use crate::threads::Parallel;

/// Panels whose FMA chains run at once (Zen 1: FMA latency 5, two pipes).
const WAYS: usize = 4;

/// [`crate::ops::gemm::gemm_packed`] for one column of C from panel-packed A, on AVX2 ([`column`]: the tile's
/// values). Slots take whole panels of rows; each packs B's K blocks into its own part of
/// `ws` (`slot` f32 each). The caller has validated the extents.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm(
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
    let cep = ColumnEp {
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
                column(
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

/// What [`column`] adds after the products: as the tile's [`crate::ops::gemm::micro::TileEp`].
pub(crate) struct ColumnEp<'a> {
    pub(crate) alpha: f32,
    /// `y` holds a sum to add to (GEMM `accumulate`).
    pub(crate) accumulate: bool,
    pub(crate) bias: Option<&'a [f32]>,
    /// Row `i`'s residual at `res.0[i·res.1]`.
    pub(crate) res: Option<(&'a [f32], usize)>,
    pub(crate) act: TileAct,
}

/// One K block (`pc..pc + kc`) of `y[i·ldy] = act(alpha·Σ_p A[i][p]·x[p] (+ y) + bias[i] +
/// res[i])` for rows `i0..i1` (`i0` a multiple of [`MR`]) of the `m × k` panel-packed `a`
/// ([`crate::ops::gemm::ALayout::Panels`]): `xb[q·NR]` holds `x[pc + q]` (the tile's packed B panel of
/// one column). Blocks after the first add to `y`; the bias, residual and activation come
/// with the `last`.
///
/// # Safety
/// AVX2 and FMA on the CPU; `a` holds `m·k` values, `xb` `(kc − 1)·NR + 1`; `pc + kc ≤ k`;
/// `y` row `i1 − 1` at `(i1 − 1)·ldy`; bias and residual (when given) rows `< i1`.
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn column(
    m: usize,
    k: usize,
    a: &[f32],
    xb: &[f32],
    (pc, kc, last): (usize, usize, bool),
    (i0, i1): (usize, usize),
    y: *mut f32,
    ldy: usize,
    ep: &ColumnEp<'_>,
) {
    let mut i = i0;
    while i < i1 {
        let left = (i1 - i).div_ceil(MR);
        // SAFETY: forwarded contract; the group's panels are rows `i..` below `i1`.
        let sums = unsafe {
            if left >= WAYS {
                group::<WAYS>(m, k, a, xb, pc, kc, i)
            } else {
                let [s] = group::<1>(m, k, a, xb, pc, kc, i);
                let mut out = [_mm256_setzero_ps(); WAYS];
                out[0] = s;
                out
            }
        };
        let ways = if left >= WAYS { WAYS } else { 1 };
        for (w, acc) in sums.iter().enumerate().take(ways) {
            let r = i + w * MR;
            let mut sums = [0.0f32; 8];
            // SAFETY: a stack array of 8.
            unsafe { _mm256_storeu_ps(sums.as_mut_ptr(), *acc) };
            for (l, &s) in sums.iter().enumerate().take((m - r).min(MR)) {
                let row = r + l;
                // SAFETY: `row < i1`: inside `y` per the contract.
                let out = unsafe { &mut *y.add(row * ldy) };
                let mut v = if ep.alpha != 1.0 { ep.alpha * s } else { s };
                if ep.accumulate || pc > 0 {
                    v += *out;
                }
                if last {
                    if let Some(b) = ep.bias {
                        v += b[row];
                    }
                    if let Some((res, ldr)) = ep.res {
                        v += res[row * ldr];
                    }
                    v = act_scalar(ep.act, v);
                }
                *out = v;
            }
        }
        i += ways * MR;
    }
}

/// The K block's sums of `W` panels from row `i` on, their FMA chains interleaved (the
/// accumulators stay in registers: a loop over a run-time count kept them on the stack).
///
/// # Safety
/// As [`column`], with `W` panels from row `i` below `m`; AVX2 and FMA on the caller.
#[inline(always)]
unsafe fn group<const W: usize>(
    m: usize,
    k: usize,
    a: &[f32],
    xb: &[f32],
    pc: usize,
    kc: usize,
    i: usize,
) -> [__m256; W] {
    // SAFETY: AVX on the caller (contract).
    let mut acc = [unsafe { _mm256_setzero_ps() }; W];
    let mut at = [0usize; W];
    let mut width = [0usize; W];
    for w in 0..W {
        let r = i + w * MR;
        width[w] = (m - r).min(MR);
        at[w] = r * k + pc * width[w];
    }
    // Only the last panel's last columns can read past `a`: whole loads up to there.
    let safe = (a.len().saturating_sub(8) + 1).saturating_sub(at[W - 1]) / width[W - 1];
    let fast = kc.min(safe);
    // SAFETY: `q·NR < xb.len()` (contract); in the fast steps every panel's 8 values from
    // `at[w] + q·width[w] ≤ at[W − 1] + q·width[W − 1]` lie inside `a` (panels are laid out
    // in row order, the last has the largest offset), the rest go through `lanes`.
    unsafe {
        for q in 0..fast {
            let xv = _mm256_broadcast_ss(xb.get_unchecked(q * NR));
            for w in 0..W {
                let av = _mm256_loadu_ps(a.as_ptr().add(at[w] + q * width[w]));
                acc[w] = _mm256_fmadd_ps(av, xv, acc[w]);
            }
        }
        for q in fast..kc {
            let xv = _mm256_broadcast_ss(xb.get_unchecked(q * NR));
            for w in 0..W {
                let av = lanes(a, at[w] + q * width[w]);
                acc[w] = _mm256_fmadd_ps(av, xv, acc[w]);
            }
        }
    }
    acc
}

/// Eight values of `a` from `at`, those past its end as zeros (only a panel's lanes
/// `< width` are kept, and only the last column of the last panel reaches the end).
///
/// # Safety
/// `at < a.len()`; AVX on the caller.
#[inline(always)]
unsafe fn lanes(a: &[f32], at: usize) -> __m256 {
    // SAFETY: 8 values from `at` are inside `a`, or copied through a stack block.
    unsafe {
        if at + 8 <= a.len() {
            _mm256_loadu_ps(a.as_ptr().add(at))
        } else {
            let mut tail = [0.0f32; 8];
            let n = a.len() - at;
            core::ptr::copy_nonoverlapping(a.as_ptr().add(at), tail.as_mut_ptr(), n);
            _mm256_loadu_ps(tail.as_ptr())
        }
    }
}
