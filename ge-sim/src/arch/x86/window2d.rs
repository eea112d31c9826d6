//! 2-D f32 max and average pooling in vector registers (AVX-512 and AVX2): the host path
//! for the pools
//! every CNN stem and stage boundary has (3 × 3 stride 2, 2 × 2 stride 2). Per output row
//! the window's input rows fold column by column in registers into a stack row, then each
//! tap's columns (for stride 2, the even lanes of two registers) fold into a register of
//! outputs at a time. The generic separable path did the same work through closures that
//! compiled to masked stack stores and a library copy per output row (a 64 × 112 × 112
//! pool: 2.6 ns per output on AVX-512; onnxruntime's NCHW kernel 2.1; on AVX2 SqueezeNet's
//! three pools ran 4–11× onnxruntime's).
//!
//! Average pools take the same registers without the row fold: each interior output's taps
//! summed in row-major order, then one division ([`avg_pool_2d`]).
//!
//! One algorithm, two register widths ([`Lanes`]: [`Zmm`], [`Ymm`]). Values equal
//! [`crate::ops::pool::fold_windows`]'s bitwise: interior outputs fold rows then taps in its separable
//! order, border outputs take its per-tap order, with the same NaN-keeping [`max_step`].
//! O(output rows · (window rows · columns + outputs · k)).

use core::arch::x86_64::*;

use crate::arch::isa::{self, Isa};
use crate::ops::pool::{Axis, max_step};

/// Stack row of folded columns (f32), slack for the last register's reads included.
const ROW: usize = 1024;
/// Columns read past a chunk's last needed one (a stride-2 tap reads two registers).
const SLACK: usize = 32;
/// Stack of folded chunks awaiting their taps (f32; at least `ROW`).
const STACK: usize = 4096;
/// Chunks awaiting their taps at most.
const PENDING: usize = 64;
/// Window rows at most (taller windows take the generic path).
const WINDOW_ROWS: usize = 32;

/// One register width's operations as the pool uses them. Every method is register-only
/// or reads/writes exactly the lanes its arguments say, and needs its ISA enabled on the
/// (inlining) caller.
pub(crate) trait Lanes {
    /// f32 lanes per register (at most `SLACK / 2`).
    const N: usize;
    type V: Copy;
    /// Loads lanes `..n` (`n ≤ N`) at `p`, zeros above.
    unsafe fn load_first(p: *const f32, n: usize) -> Self::V;
    unsafe fn load(p: *const f32) -> Self::V;
    /// Stores all `N` lanes.
    unsafe fn store(p: *mut f32, v: Self::V);
    /// Stores lanes `..n` (`n ≤ N`) only.
    unsafe fn store_first(p: *mut f32, v: Self::V, n: usize);
    /// `a` where `v` is not larger (or NaN), else `v`: [`max_step`]'s choice per lane.
    unsafe fn keep_max(a: Self::V, v: Self::V) -> Self::V;
    /// Lane `j` = lane `2j` of the `2N` lanes `lo:hi`.
    unsafe fn evens(lo: Self::V, hi: Self::V) -> Self::V;
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn div(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn splat(v: f32) -> Self::V;
}

/// AVX-512F: 16 lanes, lane masks.
struct Zmm;

impl Lanes for Zmm {
    const N: usize = 16;
    type V = __m512;
    #[inline(always)]
    unsafe fn load_first(p: *const f32, n: usize) -> __m512 {
        // SAFETY: lanes `..n` readable (contract); AVX-512F enabled on the caller.
        unsafe { _mm512_maskz_loadu_ps(((1u32 << n) - 1) as __mmask16, p) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m512 {
        // SAFETY: as above, all lanes.
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m512) {
        // SAFETY: as above.
        unsafe { _mm512_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn store_first(p: *mut f32, v: __m512, n: usize) {
        // SAFETY: lanes `..n` writable (contract).
        unsafe { _mm512_mask_storeu_ps(p, ((1u32 << n) - 1) as __mmask16, v) }
    }
    #[inline(always)]
    unsafe fn keep_max(a: __m512, v: __m512) -> __m512 {
        // SAFETY: register-only.
        unsafe {
            let take =
                _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, a) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
            _mm512_mask_mov_ps(a, take, v)
        }
    }
    #[inline(always)]
    unsafe fn evens(lo: __m512, hi: __m512) -> __m512 {
        // SAFETY: register-only.
        unsafe {
            let idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
            _mm512_permutex2var_ps(lo, idx, hi)
        }
    }
    #[inline(always)]
    unsafe fn add(a: __m512, b: __m512) -> __m512 {
        // SAFETY: register-only.
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn div(a: __m512, b: __m512) -> __m512 {
        // SAFETY: register-only.
        unsafe { _mm512_div_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn splat(v: f32) -> __m512 {
        // SAFETY: register-only.
        unsafe { _mm512_set1_ps(v) }
    }
}

/// AVX2: 8 lanes, vector masks for loads; partial stores go lane by lane (AMD's masked
/// stores are microcoded).
pub(crate) struct Ymm;

impl Ymm {
    /// All-ones in lanes `..n`.
    #[inline(always)]
    unsafe fn first(n: usize) -> __m256i {
        // SAFETY: register-only AVX2.
        unsafe {
            _mm256_cmpgt_epi32(
                _mm256_set1_epi32(n as i32),
                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
            )
        }
    }
}

impl Lanes for Ymm {
    const N: usize = 8;
    type V = __m256;
    #[inline(always)]
    unsafe fn load_first(p: *const f32, n: usize) -> __m256 {
        // SAFETY: lanes `..n` readable (contract; masked-off lanes are not read); AVX2
        // enabled on the caller.
        unsafe { _mm256_maskload_ps(p, Self::first(n)) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m256 {
        // SAFETY: as above, all lanes.
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m256) {
        // SAFETY: as above.
        unsafe { _mm256_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn store_first(p: *mut f32, v: __m256, n: usize) {
        let mut lanes = [0.0f32; 8];
        // SAFETY: `lanes` holds 8; lanes `..n ≤ 8` of `p` writable (contract).
        unsafe {
            _mm256_storeu_ps(lanes.as_mut_ptr(), v);
            for (i, &l) in lanes.iter().enumerate().take(n) {
                *p.add(i) = l;
            }
        }
    }
    #[inline(always)]
    unsafe fn keep_max(a: __m256, v: __m256) -> __m256 {
        // SAFETY: register-only.
        unsafe {
            let take = _mm256_or_ps(
                _mm256_cmp_ps::<_CMP_GT_OQ>(v, a),
                _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v),
            );
            _mm256_blendv_ps(a, v, take)
        }
    }
    #[inline(always)]
    unsafe fn evens(lo: __m256, hi: __m256) -> __m256 {
        // SAFETY: register-only. Per 128-bit half: lo0 lo2 hi0 hi2; then the 64-bit pairs
        // reordered (0, 2, 1, 3).
        unsafe {
            let pairs = _mm256_shuffle_ps::<0b10_00_10_00>(lo, hi);
            _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(
                pairs,
            )))
        }
    }
    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 {
        // SAFETY: register-only.
        unsafe { _mm256_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn div(a: __m256, b: __m256) -> __m256 {
        // SAFETY: register-only.
        unsafe { _mm256_div_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn splat(v: f32) -> __m256 {
        // SAFETY: register-only.
        unsafe { _mm256_set1_ps(v) }
    }
}

/// Max pooling on the widest registers this CPU has ([`max_pool_2d`]); `false` (nothing
/// written) on the portable class or for shapes the generic path takes.
pub(crate) fn max_pool(x: &[f32], y: &mut [f32], ax: &[Axis; 3]) -> bool {
    match isa::isa() {
        // SAFETY: `isa()` only returns classes the CPU has.
        Isa::Avx512 => unsafe { max_pool_2d_avx512(x, y, ax) },
        // SAFETY: as above.
        Isa::Avx2Fma => unsafe { max_pool_2d_avx2(x, y, ax) },
        Isa::Portable => false,
    }
}

/// Average pooling on the widest registers this CPU has ([`avg_pool_2d`]); `false` as
/// [`max_pool`].
pub(crate) fn avg_pool(x: &[f32], y: &mut [f32], ax: &[Axis; 3], include_pad: bool) -> bool {
    match isa::isa() {
        // SAFETY: `isa()` only returns classes the CPU has.
        Isa::Avx512 => unsafe { avg_pool_2d_avx512(x, y, ax, include_pad) },
        // SAFETY: as above.
        Isa::Avx2Fma => unsafe { avg_pool_2d_avx2(x, y, ax, include_pad) },
        Isa::Portable => false,
    }
}

/// [`max_pool_2d`] on AVX-512 registers.
///
/// # Safety
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn max_pool_2d_avx512(x: &[f32], y: &mut [f32], ax: &[Axis; 3]) -> bool {
    // SAFETY: AVX-512F is enabled here.
    unsafe { max_pool_2d::<Zmm>(x, y, ax) }
}

/// [`max_pool_2d`] on AVX2 registers.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
unsafe fn max_pool_2d_avx2(x: &[f32], y: &mut [f32], ax: &[Axis; 3]) -> bool {
    // SAFETY: AVX2 is enabled here.
    unsafe { max_pool_2d::<Ymm>(x, y, ax) }
}

/// Max pooling of 2-D planes (`ax[0]` a unit axis) with horizontal stride 1 or 2; `false`
/// (nothing written) for other shapes, which the generic path takes.
///
/// # Safety
/// `L`'s ISA enabled on the caller.
#[inline(always)]
unsafe fn max_pool_2d<L: Lanes>(x: &[f32], y: &mut [f32], ax: &[Axis; 3]) -> bool {
    let [a0, a1, a2] = ax;
    if (a0.inp, a0.out, a0.k) != (1, 1, 1)
        || !(1..=2).contains(&a2.s)
        || a2.d == 0
        || a1.k > WINDOW_ROWS
    {
        return false;
    }
    let span = (a2.k - 1) * a2.d;
    let (c_lo, c_hi) = a2.interior();
    // Outputs per chunk whose columns fit the stack row.
    let Some(chunk) = (ROW - SLACK).checked_sub(span + 1).map(|r| r / a2.s + 1) else {
        return false;
    };
    let (xp, yp) = (a1.inp * a2.inp, a1.out * a2.out);
    if c_hi == c_lo || chunk < L::N || xp == 0 || yp == 0 {
        return false;
    }
    // Folded columns of several chunks (rows) wait in `stack` before their taps fold, so a
    // chunk's stores have retired when its taps load them: on narrow planes (13 outputs a
    // row) folding one row then loading it at once stalled on store forwarding every row.
    let mut stack = [f32::NEG_INFINITY; STACK];
    // (slot start, output row, first output, outputs) of the chunks folded into `stack`.
    let mut pending = [(0usize, 0usize, 0usize, 0usize); PENDING];
    for (xpl, ypl) in x.chunks_exact(xp).zip(y.chunks_exact_mut(yp)) {
        let (mut used, mut np) = (0, 0);
        for o1 in 0..a1.out {
            let (l1, h1, _) = a1.taps(o1);
            let row = |t1: usize| {
                let r = a1.index(o1, t1);
                &xpl[r * a2.inp..(r + 1) * a2.inp]
            };
            let yrow = &mut ypl[o1 * a2.out..(o1 + 1) * a2.out];
            // Border outputs: the generic path's per-tap loop.
            for o2 in (0..c_lo).chain(c_hi..a2.out) {
                let (l2, h2, _) = a2.taps(o2);
                let mut acc = f32::NEG_INFINITY;
                for t1 in l1..h1 {
                    let r = row(t1);
                    for t2 in l2..h2 {
                        acc = max_step(acc, r[a2.index(o2, t2)]);
                    }
                }
                yrow[o2] = if (h1 - l1) * (h2 - l2) == 0 { 0.0 } else { acc };
            }
            if h1 == l1 {
                yrow[c_lo..c_hi].fill(0.0);
                continue;
            }
            let mut o = c_lo;
            while o < c_hi {
                let n = chunk.min(c_hi - o);
                let base = o * a2.s - a2.pb;
                let need = (n - 1) * a2.s + span + 1;
                if used + need + SLACK > STACK || np == PENDING {
                    // SAFETY: `L`'s ISA is enabled (contract).
                    unsafe { fold_pending::<L>(&stack, &pending[..np], a2, span, ypl) };
                    (used, np) = (0, 0);
                }
                // The window's rows (`h1 − l1 ≤ k ≤ WINDOW_ROWS`), each `need` columns.
                // The window's rows are `d` input rows apart; from the first, the slice
                // runs on to the plane's end, so the last register of columns may read
                // past `need` (whole loads; masked AVX2 loads are slow on AMD).
                let rows = Rows {
                    src: &xpl[a1.index(o1, l1) * a2.inp + base..],
                    pitch: a1.d * a2.inp,
                    count: h1 - l1,
                    need,
                };
                // SAFETY: `L`'s ISA is enabled; the slot holds `need + SLACK`.
                unsafe { fold_rows::<L>(&rows, &mut stack[used..used + need + SLACK]) };
                pending[np] = (used, o1, o, n);
                np += 1;
                used += need + SLACK;
                o += n;
            }
        }
        // SAFETY: `L`'s ISA is enabled (contract).
        unsafe { fold_pending::<L>(&stack, &pending[..np], a2, span, ypl) };
    }
    true
}

/// Folds the taps of the chunks in `pending` (slot start, output row, first output,
/// outputs) from their folded columns in `stack` into the plane `ypl`.
///
/// # Safety
/// `L`'s ISA; each chunk's slot holds its folded columns and `SLACK` more within `stack`.
#[inline(always)]
unsafe fn fold_pending<L: Lanes>(
    stack: &[f32; STACK],
    pending: &[(usize, usize, usize, usize)],
    a2: &Axis,
    span: usize,
    ypl: &mut [f32],
) {
    for &(slot, o1, o, n) in pending {
        let len = (n - 1) * a2.s + span + 1 + SLACK;
        let y = &mut ypl[o1 * a2.out + o..][..n];
        // SAFETY: forwarded contract; the slot is `len` long.
        unsafe { fold_taps::<L>(&stack[slot..slot + len], a2, n, y) };
    }
}

/// A window's input rows: `count ≥ 1` rows `pitch` apart from the start of `src`, the
/// first `need` columns of each folded.
struct Rows<'x> {
    src: &'x [f32],
    pitch: usize,
    count: usize,
    need: usize,
}

/// Folds the window's input rows into `cols[..need]`: per register of columns, the rows
/// in order, in registers (folding a row at a time into `cols` read each register back
/// right after its masked store, a store-forwarding stall per row on narrow planes). The
/// last register is stored whole (`cols` has the slack) and loaded whole where `src` runs
/// on far enough (the lanes past `need` fold values no kept output reads), masked only at
/// the input's end.
///
/// # Safety
/// `L`'s ISA.
#[inline(always)]
unsafe fn fold_rows<L: Lanes>(rows: &Rows<'_>, cols: &mut [f32]) {
    let Rows {
        src,
        pitch,
        count,
        need,
    } = *rows;
    assert!(count >= 1 && need + L::N <= cols.len());
    // Columns readable in every row.
    let avail = src.len().saturating_sub((count - 1) * pitch);
    assert!(avail >= need);
    let p = src.as_ptr();
    let mut c = 0;
    // SAFETY: whole registers read `c + N ≤ avail` columns of every row, the masked tail
    // `need − c` of them; every store lies below `need + N ≤ cols.len()`.
    unsafe {
        while c + L::N <= need {
            L::store(
                cols.as_mut_ptr().add(c),
                fold_column::<L>(p.add(c), pitch, count, L::N),
            );
            c += L::N;
        }
        if c < need {
            let lanes = if c + L::N <= avail { L::N } else { need - c };
            L::store(
                cols.as_mut_ptr().add(c),
                fold_column::<L>(p.add(c), pitch, count, lanes),
            );
        }
    }
}

/// The max over `count` rows `pitch` apart of the `lanes` columns at `p` (whole loads at
/// `lanes = N`, zeros above `lanes` else).
///
/// # Safety
/// `L`'s ISA; `lanes` values readable at `p + r·pitch` for each `r < count`.
#[inline(always)]
unsafe fn fold_column<L: Lanes>(p: *const f32, pitch: usize, count: usize, lanes: usize) -> L::V {
    // SAFETY: forwarded contract.
    unsafe {
        let mut acc = load_lanes::<L>(p, lanes);
        for r in 1..count {
            acc = L::keep_max(acc, load_lanes::<L>(p.add(r * pitch), lanes));
        }
        acc
    }
}

/// `lanes` values at `p`: a whole load at `lanes = N`, else masked (zeros above). A function,
/// not a closure: a closure is compiled without the caller's target features, where the
/// intrinsics could stay calls.
///
/// # Safety
/// `L`'s ISA; `lanes ≤ N` values readable at `p`.
#[inline(always)]
unsafe fn load_lanes<L: Lanes>(p: *const f32, lanes: usize) -> L::V {
    // SAFETY: forwarded contract.
    unsafe {
        if lanes == L::N {
            L::load(p)
        } else {
            L::load_first(p, lanes)
        }
    }
}

/// Tap `t`'s columns for outputs `j..j + N`: `cols[(j + i)·s + t·d]`.
///
/// # Safety
/// `L`'s ISA; `2·N` values readable at the tap's first column when `s = 2`, `N` else.
#[inline(always)]
unsafe fn tap<L: Lanes>(cols: &[f32], a2: &Axis, j: usize, t: usize) -> L::V {
    // SAFETY: forwarded contract.
    unsafe {
        let at = cols.as_ptr().add(j * a2.s + t * a2.d);
        if a2.s == 1 {
            L::load(at)
        } else {
            L::evens(L::load(at), L::load(at.add(L::N)))
        }
    }
}

/// `y[j] = max over taps t (in order) of cols[j·s + t·d]`, `N` outputs per register.
///
/// # Safety
/// `L`'s ISA; `cols` holds the `(n − 1)·s + span + 1` folded columns and `SLACK` more.
#[inline(always)]
unsafe fn fold_taps<L: Lanes>(cols: &[f32], a2: &Axis, n: usize, y: &mut [f32]) {
    debug_assert!(cols.len() >= (n - 1) * a2.s + (a2.k - 1) * a2.d + 1 + SLACK);
    let mut j = 0;
    while j < n {
        let lanes = (n - j).min(L::N);
        // SAFETY: reads stay below `(j + N − 1)·s + span + N + 1 ≤ need + SLACK`; `lanes`
        // outputs from `j` are inside `y`.
        unsafe {
            let mut acc = tap::<L>(cols, a2, j, 0);
            for t in 1..a2.k {
                acc = L::keep_max(acc, tap::<L>(cols, a2, j, t));
            }
            if lanes == L::N {
                L::store(y.as_mut_ptr().add(j), acc);
            } else {
                L::store_first(y.as_mut_ptr().add(j), acc, lanes);
            }
        }
        j += L::N;
    }
}

/// [`avg_pool_2d`] on AVX-512 registers.
///
/// # Safety
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn avg_pool_2d_avx512(x: &[f32], y: &mut [f32], ax: &[Axis; 3], include_pad: bool) -> bool {
    // SAFETY: AVX-512F is enabled here.
    unsafe { avg_pool_2d::<Zmm>(x, y, ax, include_pad) }
}

/// [`avg_pool_2d`] on AVX2 registers.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
unsafe fn avg_pool_2d_avx2(x: &[f32], y: &mut [f32], ax: &[Axis; 3], include_pad: bool) -> bool {
    // SAFETY: AVX2 is enabled here.
    unsafe { avg_pool_2d::<Ymm>(x, y, ax, include_pad) }
}

/// Average pooling of 2-D planes (`ax[0]` a unit axis) with horizontal stride 1 or 2, as
/// [`crate::ops::pool::fold_windows`] computes it, bitwise: per output the in-input taps summed in
/// row-major order from 0, then one division by the tap count (`include_pad`: the taps
/// inside the padded extent); interior outputs a register at a time (their taps all in the
/// input, one count per output row), border outputs by the generic per-tap loop. `false`
/// (nothing written) for other shapes. O(output · taps / lanes).
///
/// # Safety
/// `L`'s ISA enabled on the caller.
#[inline(always)]
unsafe fn avg_pool_2d<L: Lanes>(
    x: &[f32],
    y: &mut [f32],
    ax: &[Axis; 3],
    include_pad: bool,
) -> bool {
    let [a0, a1, a2] = ax;
    if (a0.inp, a0.out, a0.k) != (1, 1, 1) || !(1..=2).contains(&a2.s) || a2.d == 0 {
        return false;
    }
    let (c_lo, c_hi) = a2.interior();
    let (xp, yp) = (a1.inp * a2.inp, a1.out * a2.out);
    if c_hi == c_lo || xp == 0 || yp == 0 {
        return false;
    }
    let count = |valid: usize, padded: usize| if include_pad { padded } else { valid };
    for (xpl, ypl) in x.chunks_exact(xp).zip(y.chunks_exact_mut(yp)) {
        for o1 in 0..a1.out {
            let (l1, h1, p1) = a1.taps(o1);
            // A window row runs on to the plane's end, so the interior's taps load whole
            // registers (masked AVX2 loads are slow on AMD) but at the plane's end; the
            // lanes read past the row belong to outputs not stored.
            let row = |t1: usize| &xpl[a1.index(o1, t1) * a2.inp..];
            let yrow = &mut ypl[o1 * a2.out..(o1 + 1) * a2.out];
            for o2 in (0..c_lo).chain(c_hi..a2.out) {
                let (l2, h2, p2) = a2.taps(o2);
                let mut acc = 0.0f32;
                for t1 in l1..h1 {
                    let r = row(t1);
                    for t2 in l2..h2 {
                        acc += r[a2.index(o2, t2)];
                    }
                }
                let n = count((h1 - l1) * (h2 - l2), p1 * p2);
                yrow[o2] = if n == 0 { 0.0 } else { acc / n as f32 };
            }
            let n = count((h1 - l1) * a2.k, p1 * a2.k);
            if n == 0 {
                // No tap in the input: every sum is 0 (and 0 / padded is 0).
                yrow[c_lo..c_hi].fill(0.0);
                continue;
            }
            let mut j = c_lo;
            while j < c_hi {
                let lanes = (c_hi - j).min(L::N);
                // SAFETY: `L`'s ISA is enabled (contract); each load reads inside its input
                // row (`tap_lanes` bounds them), the store writes `lanes` outputs of `yrow`.
                unsafe {
                    let mut acc = L::splat(0.0);
                    for t1 in l1..h1 {
                        let r = row(t1);
                        for t2 in 0..a2.k {
                            acc = L::add(acc, tap_lanes::<L>(r, a2.index(j, t2), a2.s));
                        }
                    }
                    let v = L::div(acc, L::splat(n as f32));
                    if lanes == L::N {
                        L::store(yrow.as_mut_ptr().add(j), v);
                    } else {
                        L::store_first(yrow.as_mut_ptr().add(j), v, lanes);
                    }
                }
                j += lanes;
            }
        }
    }
    true
}

/// `row[at + i·s]` in lane `i` (`s` 1 or 2), reading nothing past the slice (a window row
/// and the rest of its plane): the lanes whose value lies past it hold anything.
///
/// # Safety
/// `L`'s ISA; `at < row.len()`.
#[inline(always)]
unsafe fn tap_lanes<L: Lanes>(row: &[f32], at: usize, s: usize) -> L::V {
    let avail = row.len() - at;
    // SAFETY: every load reads at most `avail` values from `at`, all inside `row`.
    unsafe {
        let p = row.as_ptr().add(at);
        if s == 1 {
            if avail >= L::N {
                L::load(p)
            } else {
                L::load_first(p, avail)
            }
        } else if avail >= 2 * L::N {
            L::evens(L::load(p), L::load(p.add(L::N)))
        } else {
            let lo = L::load_first(p, avail.min(L::N));
            let hi = L::load_first(p.add(L::N.min(avail)), avail.saturating_sub(L::N));
            L::evens(lo, hi)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::arch::isa::Isa;
    use crate::ops::pool::{Axis, WINDOWS, fold_windows, max_fin, max_step, separable};

    /// A row axis of `inp` inputs: window `k`, stride `s`, dilation `d`, pads `pb`/`pe`
    /// (floor-mode output size).
    fn axis(inp: usize, k: usize, s: usize, d: usize, pb: usize, pe: usize) -> Axis {
        let out = (inp + pb + pe - (k - 1) * d - 1) / s + 1;
        Axis {
            inp,
            out,
            k,
            s,
            d,
            pb,
            pe,
        }
    }

    /// The (AVX-512, AVX2) builds of a pool the CPU runs, named; the others skipped with a
    /// printed reason.
    fn supported<P>(what: &str, pools: [P; 2]) -> std::vec::Vec<(&'static str, P)> {
        [Isa::Avx512, Isa::Avx2Fma]
            .into_iter()
            .zip(pools)
            .filter_map(|(isa, pool)| {
                let ok = isa.supported();
                if !ok {
                    std::println!("skipping the {} {what} pool: this CPU lacks it", isa.name());
                }
                ok.then(|| (isa.name(), pool))
            })
            .collect()
    }

    /// Bitwise the generic path's values (its separable interior, its per-tap borders) on
    /// planes with NaNs, signed zeros and infinities, several chunks per row, strides 1
    /// and 2, dilation and asymmetric pads (the windows of the pool tests).
    #[test]
    fn vector_max_pools_are_bitwise_the_generic_path() {
        type Pool = unsafe fn(&[f32], &mut [f32], &[Axis; 3]) -> bool;
        let paths = supported::<Pool>("max", [super::max_pool_2d_avx512, super::max_pool_2d_avx2]);
        let special = [f32::NAN, -0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY];
        // Narrow rows (fewer than 16 interior outputs), more rows than `PENDING`, rows past
        // `STACK` in chunks.
        for (h, w) in [
            (9, 37),
            (5, 64),
            (3, 200),
            (4, 1700),
            (27, 27),
            (13, 13),
            (150, 9),
        ] {
            let x: std::vec::Vec<f32> = (0..2 * h * w)
                .map(|i| match i % 97 {
                    3 | 40 | 41 | 77 | 90 => special[(i / 97) % special.len()],
                    _ => ((i * 7919) % 211) as f32 - 100.0,
                })
                .collect();
            for (k, s, d, pb, pe) in WINDOWS {
                let unit = axis(1, 1, 1, 1, 0, 0);
                let ax = [
                    unit,
                    axis(h, k[0], s[0], d[0], pb[0], pe[0]),
                    axis(w, k[1], s[1], d[1], pb[1], pe[1]),
                ];
                let n = 2 * ax[1].out * ax[2].out;
                let mut want = std::vec![7.0f32; n];
                fold_windows(
                    &x,
                    &mut want,
                    &ax,
                    f32::NEG_INFINITY,
                    max_step,
                    separable(max_step),
                    max_fin,
                );
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<std::vec::Vec<_>>();
                for &(name, pool) in &paths {
                    let mut got = std::vec![7.0f32; n];
                    // SAFETY: the CPU supports this path's ISA (checked above).
                    if !unsafe { pool(&x, &mut got, &ax) } {
                        // No interior output in a row, or stride 3: the generic path's.
                        assert!(
                            s[1] > 2 || ax[2].interior().0 == ax[2].interior().1,
                            "{name} {h}x{w} k {k:?} s {s:?}: not taken"
                        );
                        continue;
                    }
                    assert_eq!(
                        bits(&got),
                        bits(&want),
                        "{name} {h}x{w} k {k:?} s {s:?} d {d:?}"
                    );
                }
            }
        }
    }

    /// Bitwise the generic path's averages (its per-tap sums and one division) with and
    /// without the padding counted, on the windows and planes of the max test.
    #[test]
    fn vector_avg_pools_are_bitwise_the_generic_path() {
        type Pool = unsafe fn(&[f32], &mut [f32], &[Axis; 3], bool) -> bool;
        let paths = supported::<Pool>(
            "average",
            [super::avg_pool_2d_avx512, super::avg_pool_2d_avx2],
        );
        for (h, w) in [
            (9, 37),
            (5, 64),
            (4, 1700),
            (27, 27),
            (13, 13),
            (150, 9),
            (7, 56),
        ] {
            let x: std::vec::Vec<f32> = (0..2 * h * w)
                .map(|i| match i % 211 {
                    3 => f32::INFINITY,
                    90 => f32::NAN,
                    _ => ((i * 7919) % 211) as f32 * 0.37 - 39.0,
                })
                .collect();
            for (k, s, d, pb, pe) in WINDOWS {
                let unit = axis(1, 1, 1, 1, 0, 0);
                let ax = [
                    unit,
                    axis(h, k[0], s[0], d[0], pb[0], pe[0]),
                    axis(w, k[1], s[1], d[1], pb[1], pe[1]),
                ];
                let n = 2 * ax[1].out * ax[2].out;
                for include_pad in [false, true] {
                    let fin = |a: f32, n: usize, padded: usize| {
                        let n = if include_pad { padded } else { n };
                        if n == 0 { 0.0 } else { a / n as f32 }
                    };
                    let mut want = std::vec![7.0f32; n];
                    let none: Option<fn(f32, f32) -> f32> = None;
                    fold_windows(&x, &mut want, &ax, 0.0, |a, v| a + v, none, fin);
                    let bits =
                        |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<std::vec::Vec<_>>();
                    for &(name, pool) in &paths {
                        let mut got = std::vec![7.0f32; n];
                        // SAFETY: the CPU supports this path's ISA (checked above).
                        if !unsafe { pool(&x, &mut got, &ax, include_pad) } {
                            assert!(
                                s[1] > 2 || ax[2].interior().0 == ax[2].interior().1,
                                "{name} {h}x{w} k {k:?} s {s:?}: not taken"
                            );
                            continue;
                        }
                        assert_eq!(
                            bits(&got),
                            bits(&want),
                            "{name} {h}x{w} k {k:?} s {s:?} d {d:?} pad counted {include_pad}"
                        );
                    }
                }
            }
        }
    }
}
