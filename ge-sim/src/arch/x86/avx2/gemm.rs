//! The AVX2+FMA register tiles (GEMM on packed panels, direct convolution on the padded
//! input): 6 rows × 16 columns in 12 ymm accumulators.

use core::arch::x86_64::*;

use crate::ops::gemm::micro::{MR, NR, TileAct, TileEp, row_offsets};

/// Starts fetching the tile's rows of C into L1 while its K loop runs: the store reads them
/// (K blocks accumulate; a write allocates the line anyway), and rows `ldc` apart are streams
/// the hardware prefetcher does not follow. A prefetch never faults, so the addresses are
/// formed with wrapping arithmetic and need not be inside C.
#[inline(always)]
pub(crate) fn prefetch_rows(c: *const f32, ldc: usize, rows: usize) {
    for i in 0..rows {
        let row = c.wrapping_add(i * ldc);
        // SAFETY: a prefetch reads nothing architecturally and never faults.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(row.cast());
            _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(NR - 1).cast());
        }
    }
}

/// AVX2+FMA build of [`crate::ops::gemm::micro::tile`].
///
/// # Safety
/// As [`crate::ops::gemm::micro::tile`]; the CPU must support AVX2 and FMA.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub unsafe fn tile(
    kc: usize,
    a: *const f32,
    rs: usize,
    cs: usize,
    bp: *const f32,
    c: *mut f32,
    ldc: usize,
    mr: usize,
    nr: usize,
    ep: &TileEp,
) {
    if nr <= 8 {
        // SAFETY: forwarded contract (the narrow tile reads the first 8 columns of B).
        unsafe { tile8(kc, a, rs, cs, bp, c, ldc, mr, nr, ep) };
        return;
    }
    prefetch_rows(c, ldc, mr.min(MR));
    let off = row_offsets(rs, mr);
    let z = _mm256_setzero_ps();
    let (mut c00, mut c01, mut c10, mut c11, mut c20, mut c21) = (z, z, z, z, z, z);
    let (mut c30, mut c31, mut c40, mut c41, mut c50, mut c51) = (z, z, z, z, z, z);
    let (r1, r2, r3, r4, r5) = (off[1], off[2], off[3], off[4], off[5]);
    let mut ap = a;
    let mut b = bp;
    // SAFETY: (whole loop) step `p < kc` reads `a[off[i] + p·cs]` for rows `i < mr` (rows past
    // `mr` repeat row 0, see `row_offsets`) and `bp[p·NR..p·NR + 16]`, all readable per the
    // contract (`NR` = 16); AVX2 and FMA are enabled on this function.
    unsafe {
        for _ in 0..kc {
            let b0 = _mm256_loadu_ps(b);
            let b1 = _mm256_loadu_ps(b.add(8));
            let a0 = _mm256_broadcast_ss(&*ap);
            c00 = _mm256_fmadd_ps(a0, b0, c00);
            c01 = _mm256_fmadd_ps(a0, b1, c01);
            let a1 = _mm256_broadcast_ss(&*ap.add(r1));
            c10 = _mm256_fmadd_ps(a1, b0, c10);
            c11 = _mm256_fmadd_ps(a1, b1, c11);
            let a2 = _mm256_broadcast_ss(&*ap.add(r2));
            c20 = _mm256_fmadd_ps(a2, b0, c20);
            c21 = _mm256_fmadd_ps(a2, b1, c21);
            let a3 = _mm256_broadcast_ss(&*ap.add(r3));
            c30 = _mm256_fmadd_ps(a3, b0, c30);
            c31 = _mm256_fmadd_ps(a3, b1, c31);
            let a4 = _mm256_broadcast_ss(&*ap.add(r4));
            c40 = _mm256_fmadd_ps(a4, b0, c40);
            c41 = _mm256_fmadd_ps(a4, b1, c41);
            let a5 = _mm256_broadcast_ss(&*ap.add(r5));
            c50 = _mm256_fmadd_ps(a5, b0, c50);
            c51 = _mm256_fmadd_ps(a5, b1, c51);
            ap = ap.add(cs);
            b = b.add(NR);
        }
    }
    let acc = [
        [c00, c01],
        [c10, c11],
        [c20, c21],
        [c30, c31],
        [c40, c41],
        [c50, c51],
    ];
    // SAFETY: forwarded contract.
    unsafe { store(&acc, c, ldc, mr, nr, ep) };
}

/// The 6 × 8 tile for the last ≤ 8 columns: per element the same operations as [`tile`].
///
/// # Safety
/// As [`tile`], with `nr ≤ 8`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile8(
    kc: usize,
    a: *const f32,
    rs: usize,
    cs: usize,
    bp: *const f32,
    c: *mut f32,
    ldc: usize,
    mr: usize,
    nr: usize,
    ep: &TileEp,
) {
    prefetch_rows(c, ldc, mr.min(MR));
    let off = row_offsets(rs, mr);
    let z = _mm256_setzero_ps();
    let (mut c0, mut c1, mut c2, mut c3, mut c4, mut c5) = (z, z, z, z, z, z);
    let (r1, r2, r3, r4, r5) = (off[1], off[2], off[3], off[4], off[5]);
    let mut ap = a;
    let mut b = bp;
    // SAFETY: (whole loop) as in `tile`, reading only the first 8 of each step's `NR` panel
    // values of `bp`.
    unsafe {
        for _ in 0..kc {
            let b0 = _mm256_loadu_ps(b);
            c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(&*ap), b0, c0);
            c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(&*ap.add(r1)), b0, c1);
            c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(&*ap.add(r2)), b0, c2);
            c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(&*ap.add(r3)), b0, c3);
            c4 = _mm256_fmadd_ps(_mm256_broadcast_ss(&*ap.add(r4)), b0, c4);
            c5 = _mm256_fmadd_ps(_mm256_broadcast_ss(&*ap.add(r5)), b0, c5);
            ap = ap.add(cs);
            b = b.add(NR);
        }
    }
    let acc = [[c0, z], [c1, z], [c2, z], [c3, z], [c4, z], [c5, z]];
    // SAFETY: forwarded contract.
    unsafe { store(&acc, c, ldc, mr, nr, ep) };
}

/// AVX2+FMA build of [`crate::ops::gemm::micro::conv_tile`].
///
/// # Safety
/// As [`crate::ops::gemm::micro::conv_tile`]; the CPU must support AVX2 and FMA.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub unsafe fn conv_tile(
    kc: usize,
    a: *const f32,
    x: *const f32,
    offs: *const u32,
    c: *mut f32,
    ldc: usize,
    mr: usize,
    nr: usize,
    ep: &TileEp,
) {
    if nr <= 8 {
        // SAFETY: forwarded contract.
        unsafe { conv_narrow::<1>(kc, [a], x, offs, c, ldc, mr, nr, ep) };
        return;
    }
    prefetch_rows(c, ldc, mr.min(MR));
    let z = _mm256_setzero_ps();
    let (mut c00, mut c01, mut c10, mut c11, mut c20, mut c21) = (z, z, z, z, z, z);
    let (mut c30, mut c31, mut c40, mut c41, mut c50, mut c51) = (z, z, z, z, z, z);
    let mut ap = a;
    // SAFETY: (whole loop) step `p < kc` reads `a[p·MR..p·MR + MR]` and the `NR` = 16 values
    // at `x + offs[p]`, per the contract; AVX2 and FMA are enabled.
    unsafe {
        for p in 0..kc {
            let b = x.add(*offs.add(p) as usize);
            let b0 = _mm256_loadu_ps(b);
            let b1 = _mm256_loadu_ps(b.add(8));
            let a0 = _mm256_broadcast_ss(&*ap);
            c00 = _mm256_fmadd_ps(a0, b0, c00);
            c01 = _mm256_fmadd_ps(a0, b1, c01);
            let a1 = _mm256_broadcast_ss(&*ap.add(1));
            c10 = _mm256_fmadd_ps(a1, b0, c10);
            c11 = _mm256_fmadd_ps(a1, b1, c11);
            let a2 = _mm256_broadcast_ss(&*ap.add(2));
            c20 = _mm256_fmadd_ps(a2, b0, c20);
            c21 = _mm256_fmadd_ps(a2, b1, c21);
            let a3 = _mm256_broadcast_ss(&*ap.add(3));
            c30 = _mm256_fmadd_ps(a3, b0, c30);
            c31 = _mm256_fmadd_ps(a3, b1, c31);
            let a4 = _mm256_broadcast_ss(&*ap.add(4));
            c40 = _mm256_fmadd_ps(a4, b0, c40);
            c41 = _mm256_fmadd_ps(a4, b1, c41);
            let a5 = _mm256_broadcast_ss(&*ap.add(5));
            c50 = _mm256_fmadd_ps(a5, b0, c50);
            c51 = _mm256_fmadd_ps(a5, b1, c51);
            ap = ap.add(MR);
        }
    }
    let acc = [
        [c00, c01],
        [c10, c11],
        [c20, c21],
        [c30, c31],
        [c40, c41],
        [c50, c51],
    ];
    // SAFETY: forwarded contract.
    unsafe { store(&acc, c, ldc, mr, nr, ep) };
}

/// AVX2+FMA build of [`crate::ops::gemm::micro::conv_tile_pair`]: two `MR`-row panels over the same
/// ≤ 8 columns in 12 accumulators, so narrow rows (a 7×7 stage) keep both FMA pipes busy
/// where one 6 × 8 tile would wait on FMA latency. Per element the same operations as
/// [`conv_tile`].
///
/// # Safety
/// As [`crate::ops::gemm::micro::conv_tile_pair`]; the CPU must support AVX2 and FMA.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub unsafe fn conv_tile_pair(
    kc: usize,
    a0: *const f32,
    a1: *const f32,
    x: *const f32,
    offs: *const u32,
    c: *mut f32,
    ldc: usize,
    mr: usize,
    nr: usize,
    ep: &TileEp,
) {
    // SAFETY: forwarded contract.
    unsafe { conv_narrow::<2>(kc, [a0, a1], x, offs, c, ldc, mr, nr, ep) };
}

/// `P` channel panels (`P·MR` rows) over ≤ 8 columns read in place: `P·MR` accumulators.
///
/// # Safety
/// As [`conv_tile`] for each panel `a[q]` (rows `q·MR..`), with `c`, `ep.bias` and
/// `ep.res` covering `mr ≤ P·MR` rows and every panel but the last full.
#[allow(clippy::too_many_arguments)]
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn conv_narrow<const P: usize>(
    kc: usize,
    a: [*const f32; P],
    x: *const f32,
    offs: *const u32,
    c: *mut f32,
    ldc: usize,
    mr: usize,
    nr: usize,
    ep: &TileEp,
) {
    prefetch_rows(c, ldc, mr.min(P * MR));
    let z = _mm256_setzero_ps();
    let mut acc = [[z; MR]; P];
    // SAFETY: (whole loop) step `p < kc` reads `a[q][p·MR..p·MR + MR]` and 8 of the `NR`
    // readable values at `x + offs[p]`, per the contract; AVX2 and FMA are enabled.
    unsafe {
        for p in 0..kc {
            let b = _mm256_loadu_ps(x.add(*offs.add(p) as usize));
            for (rows, panel) in acc.iter_mut().zip(a) {
                let ap = panel.add(p * MR);
                for (i, v) in rows.iter_mut().enumerate() {
                    *v = _mm256_fmadd_ps(_mm256_broadcast_ss(&*ap.add(i)), b, *v);
                }
            }
        }
    }
    let mut ep = *ep;
    for (q, rows) in acc.iter().enumerate() {
        let rows = rows.map(|v| [v, z]);
        let m = mr.saturating_sub(q * MR).min(MR);
        // SAFETY: forwarded contract: rows `q·MR..q·MR + m` of C, bias and residual.
        unsafe { store(&rows, c.add(q * MR * ldc), ldc, m, nr, &ep) };
        ep = crate::ops::gemm::micro::lower_half(&ep);
    }
}

/// The epilogue and store of a tile's accumulators (rows `< mr`, columns `< nr`): tiles of
/// whole rows without scaling in line in the tile's code ([`store_full`], the activation
/// chosen once per tile), any other through [`store_any`]. A call with the accumulators spilled
/// and a per-row dispatch on the epilogue weighed on short K loops: Zen 1, the 6 × 16
/// block at K = 16 with bias and ReLU 19 → 26 GFLOP/s, a 1 × 1 16 → 64 conv on 55 × 55
/// 17.5 → 20.4.
///
/// # Safety
/// As [`tile`]; AVX2 and FMA on the caller.
#[inline(always)]
unsafe fn store(
    acc: &[[__m256; 2]; MR],
    c: *mut f32,
    ldc: usize,
    mr: usize,
    nr: usize,
    ep: &TileEp,
) {
    // SAFETY: forwarded contract.
    unsafe {
        if nr < NR || ep.alpha != 1.0 {
            store_any(acc, c, ldc, mr, nr, ep);
            return;
        }
        match ep.act {
            TileAct::None => store_full(acc, c, ldc, mr, ep, Identity),
            TileAct::Clamp { lo, hi } => {
                let (lo, hi) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi));
                store_full(acc, c, ldc, mr, ep, Clamp { lo, hi })
            }
            #[cfg(feature = "std")]
            TileAct::Sigmoid => store_full(acc, c, ldc, mr, ep, Sigmoid { times_x: false }),
            #[cfg(feature = "std")]
            TileAct::Silu => store_full(acc, c, ldc, mr, ep, Sigmoid { times_x: true }),
            other => store_full(acc, c, ldc, mr, ep, Other(other)),
        }
    }
}

/// An activation on a tile row's two registers, as [`act`] computes it. Its
/// `#[inline(always)]` method inlines into the tile's AVX2 code: a closure is a function of
/// its own without the target features, where every intrinsic stayed a call (HardSwish
/// tiles ran 2–4× slower).
trait LaneAct: Copy {
    /// # Safety
    /// AVX2 on the caller.
    unsafe fn apply(self, v: [__m256; 2]) -> [__m256; 2];

    /// Two rows at once (SiLU's long dependent chains overlap four registers).
    ///
    /// # Safety
    /// AVX2 on the caller.
    #[inline(always)]
    unsafe fn apply_rows(self, [a, b, c, d]: [__m256; 4]) -> [__m256; 4] {
        // SAFETY: forwarded contract.
        unsafe {
            let ([a, b], [c, d]) = (self.apply([a, b]), self.apply([c, d]));
            [a, b, c, d]
        }
    }
}

#[derive(Clone, Copy)]
struct Identity;

impl LaneAct for Identity {
    #[inline(always)]
    unsafe fn apply(self, v: [__m256; 2]) -> [__m256; 2] {
        v
    }
}

/// [`TileAct::Clamp`] with its bounds splatted once per tile.
#[derive(Clone, Copy)]
struct Clamp {
    lo: __m256,
    hi: __m256,
}

impl LaneAct for Clamp {
    #[inline(always)]
    unsafe fn apply(self, [v0, v1]: [__m256; 2]) -> [__m256; 2] {
        // SAFETY: register-only AVX (contract). As `act`: max(lo, v) keeps a NaN v.
        unsafe {
            [
                _mm256_min_ps(self.hi, _mm256_max_ps(self.lo, v0)),
                _mm256_min_ps(self.hi, _mm256_max_ps(self.lo, v1)),
            ]
        }
    }
}

/// [`TileAct::Sigmoid`] (or SiLU) with the row's two registers' chains interleaved.
#[cfg(feature = "std")]
#[derive(Clone, Copy)]
struct Sigmoid {
    times_x: bool,
}

#[cfg(feature = "std")]
impl LaneAct for Sigmoid {
    #[inline(always)]
    unsafe fn apply(self, v: [__m256; 2]) -> [__m256; 2] {
        // SAFETY: AVX2 on the caller (contract).
        unsafe { crate::arch::x86::avx2::sigmoid::sigmoid(v, self.times_x) }
    }

    #[inline(always)]
    unsafe fn apply_rows(self, v: [__m256; 4]) -> [__m256; 4] {
        // SAFETY: AVX2 on the caller (contract).
        unsafe { crate::arch::x86::avx2::sigmoid::sigmoid(v, self.times_x) }
    }
}

/// Any other activation, through [`act`]'s match.
#[derive(Clone, Copy)]
struct Other(TileAct);

impl LaneAct for Other {
    #[inline(always)]
    unsafe fn apply(self, [v0, v1]: [__m256; 2]) -> [__m256; 2] {
        // SAFETY: AVX2 on the caller (contract).
        unsafe { [act(v0, self.0), act(v1, self.0)] }
    }
}

/// Rows `< mr` of whole `NR` columns with `alpha = 1`: per row `c + acc`, `+ bias`,
/// `+ residual`, then `act`, in [`store_any`]'s order (the same values, bitwise).
///
/// # Safety
/// As [`tile`] with `nr = NR`; AVX2 on the caller.
#[inline(always)]
unsafe fn store_full(
    acc: &[[__m256; 2]; MR],
    c: *mut f32,
    ldc: usize,
    mr: usize,
    ep: &TileEp,
    act: impl LaneAct,
) {
    let mut i = 0;
    // SAFETY: rows `< mr` of C (16 values), of the bias and of the residual are inside them
    // per the contract.
    unsafe {
        while i + 1 < mr {
            let (c0, c1) = (c.add(i * ldc), c.add((i + 1) * ldc));
            let [a, b] = row_sums(acc[i], c0, i, res_row(ep, i), ep);
            let [d, e] = row_sums(acc[i + 1], c1, i + 1, res_row(ep, i + 1), ep);
            let [a, b, d, e] = act.apply_rows([a, b, d, e]);
            _mm256_storeu_ps(c0, a);
            _mm256_storeu_ps(c0.add(8), b);
            _mm256_storeu_ps(c1, d);
            _mm256_storeu_ps(c1.add(8), e);
            i += 2;
        }
        if i < mr {
            let crow = c.add(i * ldc);
            let [v0, v1] = act.apply(row_sums(acc[i], crow, i, res_row(ep, i), ep));
            _mm256_storeu_ps(crow, v0);
            _mm256_storeu_ps(crow.add(8), v1);
        }
    }
}

/// [`store`] for any tile: partial rows or columns, `alpha` scaling.
///
/// # Safety
/// As [`tile`].
#[inline(never)]
#[target_feature(enable = "avx2,fma")]
unsafe fn store_any(
    acc: &[[__m256; 2]; MR],
    c: *mut f32,
    ldc: usize,
    mr: usize,
    nr: usize,
    ep: &TileEp,
) {
    let alpha = _mm256_set1_ps(ep.alpha);
    let scale = ep.alpha != 1.0;
    for (i, &[v0, v1]) in acc.iter().enumerate().take(mr.min(MR)) {
        // SAFETY: row `i < mr` of C and bias per the contract; partial rows go through a
        // stack buffer so only `nr` values are touched.
        unsafe {
            let crow = c.add(i * ldc);
            let mut tmp = [0.0f32; NR];
            let full = nr == NR;
            let dst: *mut f32 = if full { crow } else { tmp.as_mut_ptr() };
            if !full && ep.add {
                core::ptr::copy_nonoverlapping(crow, dst, nr);
            }
            let (mut v0, mut v1) = (v0, v1);
            if scale {
                v0 = _mm256_mul_ps(v0, alpha);
                v1 = _mm256_mul_ps(v1, alpha);
            }
            // The residual's row, through a stack copy when partial.
            let mut rt = [0.0f32; NR];
            let mut res = res_row(ep, i);
            if !full && !res.is_null() {
                core::ptr::copy_nonoverlapping(res, rt.as_mut_ptr(), nr);
                res = rt.as_ptr();
            }
            let [mut v0, mut v1] = row_sums([v0, v1], dst, i, res, ep);
            v0 = act(v0, ep.act);
            v1 = act(v1, ep.act);
            _mm256_storeu_ps(dst, v0);
            _mm256_storeu_ps(dst.add(8), v1);
            if !full {
                core::ptr::copy_nonoverlapping(dst, crow, nr);
            }
        }
    }
}

/// Row `i` of the tile's residual, or null when it has none.
///
/// # Safety
/// Row `i` (`i·ldr` values on) lies inside the residual when it is not null.
#[inline(always)]
unsafe fn res_row(ep: &TileEp, i: usize) -> *const f32 {
    if ep.res.is_null() {
        ep.res
    } else {
        // SAFETY: per the contract.
        unsafe { ep.res.add(i * ep.ldr) }
    }
}

/// A row's sums before the activation, in the tiles' order: `prev + v` (when `ep.add`),
/// `+ bias[i]`, `+ res` (when not null).
///
/// # Safety
/// `prev` (when adding) and `res` (when not null) hold `NR` readable values, `ep.bias` (when
/// not null) `i + 1`; AVX2 on the caller.
#[inline(always)]
unsafe fn row_sums(
    v: [__m256; 2],
    prev: *const f32,
    i: usize,
    res: *const f32,
    ep: &TileEp,
) -> [__m256; 2] {
    let [mut v0, mut v1] = v;
    // SAFETY: per the contract.
    unsafe {
        if ep.add {
            v0 = _mm256_add_ps(_mm256_loadu_ps(prev), v0);
            v1 = _mm256_add_ps(_mm256_loadu_ps(prev.add(8)), v1);
        }
        if !ep.bias.is_null() {
            let bv = _mm256_broadcast_ss(&*ep.bias.add(i));
            v0 = _mm256_add_ps(v0, bv);
            v1 = _mm256_add_ps(v1, bv);
        }
        if !res.is_null() {
            v0 = _mm256_add_ps(v0, _mm256_loadu_ps(res));
            v1 = _mm256_add_ps(v1, _mm256_loadu_ps(res.add(8)));
        }
    }
    [v0, v1]
}

/// `act` applied to every lane, as [`crate::ops::gemm::micro::act_scalar`] applies it, bitwise.
///
/// # Safety
/// AVX2 on the caller.
#[inline(always)]
pub(crate) unsafe fn act(v: __m256, act: TileAct) -> __m256 {
    // SAFETY: register-only AVX operations.
    unsafe {
        match act {
            TileAct::None => v,
            TileAct::Clamp { lo, hi } => {
                // max(lo, v) returns v when v is NaN, as `v < lo ? lo : v` does.
                _mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(lo), v))
            }
            TileAct::Leaky { alpha } => {
                let neg = _mm256_cmp_ps::<_CMP_LT_OQ>(v, _mm256_setzero_ps());
                _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(alpha)), neg)
            }
            #[cfg(feature = "std")]
            TileAct::HardSwish => hard_swish(v),
            #[cfg(feature = "std")]
            TileAct::Sigmoid | TileAct::Silu => {
                crate::arch::x86::avx2::sigmoid::sigmoid([v], act == TileAct::Silu)[0]
            }
        }
    }
}

/// [`act`] on four registers; Sigmoid and SiLU run their chains side by side.
///
/// # Safety
/// AVX2 on the caller.
#[cfg(feature = "std")] // The blocked convolution's tile (a `std` kernel) is its one user.
#[inline(always)]
pub(crate) unsafe fn acts(v: [__m256; 4], a: TileAct) -> [__m256; 4] {
    // SAFETY: AVX2 on the caller (contract).
    unsafe {
        match a {
            #[cfg(feature = "std")]
            TileAct::Sigmoid | TileAct::Silu => {
                crate::arch::x86::avx2::sigmoid::sigmoid(v, a == TileAct::Silu)
            }
            _ => {
                let mut v = v;
                for r in &mut v {
                    *r = act(*r, a);
                }
                v
            }
        }
    }
}

/// [`TileAct::HardSwish`] on 8 lanes, as [`crate::ops::gemm::micro::act_scalar`] computes it, bitwise.
///
/// # Safety
/// AVX2.
#[cfg(feature = "std")]
#[inline(always)]
unsafe fn hard_swish(v: __m256) -> __m256 {
    let (a, b) = crate::ops::gemm::micro::HARD_SWISH;
    // SAFETY: register-only AVX operations.
    unsafe {
        let t = _mm256_add_ps(_mm256_mul_ps(v, _mm256_set1_ps(a)), _mm256_set1_ps(b));
        let c = _mm256_min_ps(_mm256_set1_ps(1.0), _mm256_max_ps(_mm256_setzero_ps(), t));
        _mm256_mul_ps(v, c)
    }
}
