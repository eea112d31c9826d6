//! The f32 tile contract — the `MR × NR` register tile, its epilogue and activations, the
//! AVX-512 strips and blocks — and the dispatch to its builds: AVX2+FMA (x86-64, the 6×16
//! tile the AVX-512 class also runs for single tiles), AVX-512 (2·MR × 2·NR blocks and
//! strips) and the portable Rust here, chosen by [`crate::arch::isa`]. Every output element is computed by the same
//! sequence of operations whatever tile, thread or block position it falls in (lanes are
//! independent; edge tiles run the full tile and store part of it), so results do not depend
//! on how the work is split.

pub use crate::arch::isa::{Isa, isa};

/// Whether the x86 tiles can ever run: with `std` (detected at run time) or when the target
/// enables AVX2+FMA. Otherwise their match arms are dead and firmware does not link them.
#[cfg(target_arch = "x86_64")]
const X86_TILES: bool = cfg!(any(
    feature = "std",
    all(target_feature = "avx2", target_feature = "fma")
));

/// Rows of the register tile.
pub const MR: usize = 6;
// Weights the compiler pre-packs are in panels of the tile's rows.
const _: () = assert!(MR == ge_runtime::format::PANEL_ROWS);
/// Columns of the register tile (packed B panels are this wide).
pub const NR: usize = 16;

/// An activation the tile applies in registers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TileAct {
    None,
    /// `min(max(x, lo), hi)` with the scalar kernels' NaN behaviour (Relu: `lo = 0, hi = ∞`).
    Clamp {
        lo: f32,
        hi: f32,
    },
    /// `x < 0 ? alpha·x : x`.
    Leaky {
        alpha: f32,
    },
    /// `x · clamp01(x · ⅙ + ½)`, the unary kernel's HardSwish (MobileNetV3's activation,
    /// which ran as a pass over every conv's output). Host builds only: firmware's
    /// epilogues keep to the three above.
    #[cfg(feature = "std")]
    HardSwish,
    /// The unary kernel's Sigmoid (`exp` based, accurate on both sides). Host builds only.
    #[cfg(feature = "std")]
    Sigmoid,
    /// `x · sigmoid(x)`, the unary kernel's SiLU (YOLO's activation). Host builds only.
    #[cfg(feature = "std")]
    Silu,
}

/// HardSwish's slope and offset as the unary kernel rounds them.
#[cfg(feature = "std")]
pub(crate) const HARD_SWISH: (f32, f32) = ((1.0f64 / 6.0) as f32, 0.5);

/// What a tile does with its accumulator `acc` before storing to C:
/// `v = alpha·acc; if add { v = c + v }; if bias { v = v + bias[row] };
/// if res { v = v + res[row·ldr + col] }; v = act(v)`.
/// `bias`, `res` and `act` are only applied on the last K block.
#[derive(Clone, Copy, Debug)]
pub struct TileEp {
    pub alpha: f32,
    pub add: bool,
    /// Per-row bias of the tile's first row (`MR` readable values, or fewer when `mr` is), or null.
    pub bias: *const f32,
    /// The residual's element at the tile's first row and column (`mr` rows of `nr` values,
    /// `ldr` apart), or null.
    pub res: *const f32,
    pub ldr: usize,
    pub act: TileAct,
}

/// One tile: `acc[i][j] = Σ_{p<kc} a[i·rs + p·cs] · bp[p·NR + j]`, stored into
/// `c[i·ldc + j]` for `i < mr`, `j < nr` through `ep`.
///
/// # Safety
/// `a[i·rs + p·cs]` must be readable for `i < mr`, `p < kc`; `bp` must hold `kc·NR` values;
/// `c[i·ldc + j]` must be writable (and readable) for `i < mr`, `j < nr`, and not aliased by
/// anything else for the duration; `ep.bias`, if not null, readable for `mr` values;
/// `ep.res`, if not null, readable at `i·ldr + j` for `i < mr`, `j < nr`;
/// `1 ≤ mr ≤ MR`, `1 ≤ nr ≤ NR`; `isa` must be supported by the CPU.
#[allow(clippy::too_many_arguments)]
#[inline]
pub unsafe fn tile(
    isa: Isa,
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
    match isa {
        // SAFETY: forwarded contract; the ISA was detected (or enabled at compile time).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma | Isa::Avx512 if X86_TILES => unsafe {
            super::x86::avx2::gemm::tile(kc, a, rs, cs, bp, c, ldc, mr, nr, ep)
        },
        // SAFETY: forwarded contract.
        _ => unsafe { tile_portable(kc, a, rs, cs, bp, c, ldc, mr, nr, ep) },
    }
}

/// Row pointers of a tile: rows past `mr` repeat row 0 (computed, never stored).
#[inline(always)]
pub(crate) fn row_offsets(rs: usize, mr: usize) -> [usize; MR] {
    core::array::from_fn(|i| if i < mr { i * rs } else { 0 })
}

#[inline(always)]
pub(crate) fn act_scalar(act: TileAct, v: f32) -> f32 {
    match act {
        TileAct::None => v,
        TileAct::Clamp { lo, hi } => {
            let y = if v < lo { lo } else { v };
            if y > hi { hi } else { y }
        }
        TileAct::Leaky { alpha } => {
            if v < 0.0 {
                alpha * v
            } else {
                v
            }
        }
        #[cfg(feature = "std")]
        TileAct::HardSwish => {
            let t = v * HARD_SWISH.0 + HARD_SWISH.1;
            // `clamp` keeps a NaN and a −0, as the unary kernel's clamp01 does.
            v * t.clamp(0.0, 1.0)
        }
        #[cfg(feature = "std")]
        TileAct::Sigmoid => crate::ops::unary::sigmoid(v),
        #[cfg(feature = "std")]
        TileAct::Silu => v * crate::ops::unary::sigmoid(v),
    }
}

/// # Safety
/// As [`tile`].
#[allow(clippy::too_many_arguments)]
unsafe fn tile_portable(
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
    let off = row_offsets(rs, mr);
    let mut acc = [[0.0f32; NR]; MR];
    for p in 0..kc {
        // SAFETY: in bounds per the contract.
        let b: [f32; NR] = unsafe { *(bp.add(p * NR) as *const [f32; NR]) };
        for i in 0..MR {
            // SAFETY: in bounds per the contract.
            let av = unsafe { *a.add(off[i] + p * cs) };
            for j in 0..NR {
                acc[i][j] += av * b[j];
            }
        }
    }
    // SAFETY: forwarded contract.
    unsafe { store_portable(&acc, c, ldc, mr, nr, ep) };
}

/// The epilogue after alpha of the element at row `r`, column `col` of a tile (C at `d`):
/// `v = c + v` (accumulating), `+ bias[r]`, `+ res[r·ldr + col]`, the activation, stored.
///
/// # Safety
/// `d` readable and writable; `ep.bias` and `ep.res` readable there when not null.
#[inline(always)]
pub(crate) unsafe fn finish(ep: &TileEp, mut v: f32, d: *mut f32, r: usize, col: usize) {
    // SAFETY: forwarded contract.
    unsafe {
        if ep.add {
            v += *d;
        }
        if !ep.bias.is_null() {
            v += *ep.bias.add(r);
        }
        if !ep.res.is_null() {
            v += *ep.res.add(r * ep.ldr + col);
        }
        *d = act_scalar(ep.act, v);
    }
}

/// The epilogue and store of a portable tile's accumulators (rows `< mr`, columns `< nr`).
///
/// # Safety
/// As [`tile`].
unsafe fn store_portable(
    acc: &[[f32; NR]; MR],
    c: *mut f32,
    ldc: usize,
    mr: usize,
    nr: usize,
    ep: &TileEp,
) {
    for (i, row) in acc.iter().enumerate().take(mr) {
        for (j, &s) in row.iter().enumerate().take(nr) {
            // SAFETY: in bounds per the contract.
            unsafe { finish(ep, s * ep.alpha, c.add(i * ldc + j), i, j) };
        }
    }
}

/// A direct-convolution tile: as [`tile`], but A is packed `a[p·MR + i]` (all `MR` rows, zero
/// past the real ones) and step `p`'s B row is read in place, `NR` consecutive values at
/// `x + offs[p]` (a tap of the padded input, see `conv::direct`), so the input is never
/// expanded into im2col columns. Same arithmetic per element as [`tile`].
///
/// # Safety
/// `a` readable for `kc·MR` values; `x + offs[p]` readable for `NR` values for `p < kc`;
/// `c`, `ep` and `mr`, `nr` as in [`tile`]; `isa` supported by the CPU.
#[allow(clippy::too_many_arguments)]
#[inline]
pub unsafe fn conv_tile(
    isa: Isa,
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
    match isa {
        // SAFETY: forwarded contract; the ISA was detected (or enabled at compile time).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma | Isa::Avx512 if X86_TILES => unsafe {
            super::x86::avx2::gemm::conv_tile(kc, a, x, offs, c, ldc, mr, nr, ep)
        },
        // SAFETY: forwarded contract.
        _ => unsafe { conv_tile_portable(kc, a, x, offs, c, ldc, mr, nr, ep) },
    }
}

/// Two [`conv_tile`]s over the same `nr ≤ 8` columns: rows `0..MR` from panel `a0`, rows
/// `MR..mr` from panel `a1` (`MR < mr ≤ 2·MR`). The same values as two `conv_tile` calls,
/// computed in one pass on x86 (narrow rows keep both FMA pipes busy).
///
/// # Safety
/// As [`conv_tile`] for each half, with `c`, `ep.bias` and `ep.res` covering `mr` rows.
#[allow(clippy::too_many_arguments)]
#[inline]
pub unsafe fn conv_tile_pair(
    isa: Isa,
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
    match isa {
        // SAFETY: forwarded contract; the ISA was detected (or enabled at compile time).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma | Isa::Avx512 if X86_TILES => unsafe {
            super::x86::avx2::gemm::conv_tile_pair(kc, a0, a1, x, offs, c, ldc, mr, nr, ep)
        },
        // SAFETY: forwarded contract, one panel each.
        _ => unsafe {
            conv_tile_portable(kc, a0, x, offs, c, ldc, MR, nr, ep);
            let ep1 = lower_half(ep);
            conv_tile_portable(kc, a1, x, offs, c.add(MR * ldc), ldc, mr - MR, nr, &ep1);
        },
    }
}

/// The epilogue of a pair tile's second panel: bias and residual moved down `MR` rows.
pub(crate) fn lower_half(ep: &TileEp) -> TileEp {
    ep_at(ep, MR, 0)
}

/// The epilogue of the sub-tile `rows` rows and `cols` columns into a tile: bias and
/// residual moved there.
fn ep_at(ep: &TileEp, rows: usize, cols: usize) -> TileEp {
    TileEp {
        bias: if ep.bias.is_null() {
            ep.bias
        } else {
            ep.bias.wrapping_add(rows)
        },
        res: if ep.res.is_null() {
            ep.res
        } else {
            ep.res.wrapping_add(rows * ep.ldr + cols)
        },
        ..*ep
    }
}

/// A register block's A operand: up to two `MR`-row panels (`a[1]` is read only when the
/// block has more than `MR` rows); op(A)`[q·MR + i][p] = a[q][i·rs + p·cs[q]]`.
#[derive(Clone, Copy, Debug)]
pub struct BlockA {
    pub a: [*const f32; 2],
    pub rs: usize,
    pub cs: [usize; 2],
}

/// Where a register block's B rows come from.
#[derive(Clone, Copy, Debug)]
pub enum BlockB {
    /// Packed `NR`-column panels: row `p` of column panel `v` at `bp + v·stride + p·NR`.
    Packed { bp: *const f32, stride: usize },
    /// Rows read in place (direct convolution): row `p`'s columns at `x + offs[p]`,
    /// consecutive across both column panels. A must be `[p][MR]` panels (`rs = 1`,
    /// `cs = MR`).
    Taps { x: *const f32, offs: *const u32 },
}

/// Where a flat block's columns go: a direct convolution's block over whole band rows
/// (`conv::direct`), whose lanes past each output row's end are computed and dropped. Lane
/// `l` of column panel `v` is stored when bit `l` of `mask[v]` is set, the kept lanes in
/// order from column `col[v]` of C on (the output rows they belong to follow each other
/// in C, so the kept lanes of a panel are consecutive there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flat {
    pub mask: [u16; 2],
    pub col: [usize; 2],
}

/// One register block: rows `< mr ≤ 2·MR`, columns `< nr ≤ 2·NR` (a one-row block: up to
/// [`strip_cols`]) of
/// `C = ep(Σ_{p<kc} op(A)[i][p] · B[p][j])`, stored at `c[i·ldc + j]` (or, with `flat`, at
/// the columns it gives).
#[derive(Clone, Copy, Debug)]
pub struct Block<'a> {
    pub kc: usize,
    pub a: BlockA,
    pub b: BlockB,
    pub c: *mut f32,
    pub ldc: usize,
    pub mr: usize,
    pub nr: usize,
    pub ep: &'a TileEp,
    pub flat: Option<Flat>,
}

/// The register block the drivers should step by on `isa` (rows, columns): 12 × 32 where
/// AVX-512 gives 32 vector registers, one `MR × NR` tile elsewhere.
pub const fn block_dims(isa: Isa) -> (usize, usize) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 if X86_TILES => (2 * MR, 2 * NR),
        _ => (MR, NR),
    }
}

/// Columns of a one-row block on AVX-512 (a strip of eight column panels).
pub const STRIP: usize = 8 * NR;

/// How wide a one-row block may be on `isa` where that is wider than the block's `2·NR`:
/// [`STRIP`] where AVX-512 blocks run (one accumulator per column panel), else `None`.
pub const fn strip_cols(isa: Isa) -> Option<usize> {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 if X86_TILES => Some(STRIP),
        _ => None,
    }
}

/// Computes one [`Block`]: on AVX-512 in one pass over K (up to 24 accumulators), elsewhere
/// as its `MR × NR` tiles ([`tile`], [`conv_tile`], and [`conv_tile_pair`] for two panels
/// over ≤ `NR/2` columns). Every element gets the same operations on every split.
///
/// # Safety
/// For each panel `q` with rows (`q·MR < mr`) and each column panel `v` with columns
/// (`v·NR < nr`), the contract of [`tile`] (Packed) or [`conv_tile`] (Taps) for that
/// sub-tile, with `ep` moved to it; AVX-512 Taps blocks read `nr.next_multiple_of(NR)`
/// values at `x + offs[p]`; `isa` supported by the CPU. With `flat`, C (and the residual)
/// are written (read) at the kept lanes' columns instead of `0..nr`; without `std` only
/// AVX-512 builds honour `flat` (nothing else makes flat blocks there).
#[inline(always)]
pub unsafe fn block(isa: Isa, blk: &Block<'_>) {
    #[cfg(target_arch = "x86_64")]
    if X86_TILES && isa == Isa::Avx512 {
        // SAFETY: forwarded contract; the ISA was detected (or enabled at compile time).
        unsafe { super::x86::avx512::gemm::block(blk) };
        return;
    }
    // Flat blocks come from the direct path's host tiles only (`conv::direct::flat_here`):
    // firmware links no fallback for them.
    if cfg!(feature = "std")
        && let Some(flat) = blk.flat
    {
        // SAFETY: forwarded contract.
        unsafe { flat_via_tile(isa, blk, flat) };
        return;
    }
    // SAFETY: forwarded contract.
    unsafe { tiles(isa, blk) };
}

/// A flat block where the tiles have no compressing store (the AVX-512 block stores the
/// kept lanes itself): the alpha-scaled sums into a stack tile, then per kept lane the
/// rest of the epilogue in the order the tiles apply it, so the values are the same.
///
/// # Safety
/// As [`block`].
unsafe fn flat_via_tile(isa: Isa, blk: &Block<'_>, flat: Flat) {
    const W: usize = 2 * NR;
    let mut sums = [0.0f32; 2 * MR * W];
    let raw = TileEp {
        alpha: blk.ep.alpha,
        add: false,
        bias: core::ptr::null(),
        res: core::ptr::null(),
        ldr: 0,
        act: TileAct::None,
    };
    let inner = Block {
        c: sums.as_mut_ptr(),
        ldc: W,
        ep: &raw,
        flat: None,
        ..*blk
    };
    // SAFETY: forwarded contract, C being the stack tile (`mr ≤ 2·MR` rows, `nr ≤ W`).
    unsafe { tiles(isa, &inner) };
    let ep = blk.ep;
    for (r, row) in sums.chunks_exact(W).enumerate().take(blk.mr) {
        for (v, lanes) in row.chunks_exact(NR).enumerate() {
            let kept = (0..NR).filter(|l| flat.mask[v] >> l & 1 != 0);
            for (k, l) in kept.enumerate() {
                let col = flat.col[v] + k;
                // SAFETY: the kept lanes' columns of C, the bias and the residual are
                // inside them (contract).
                unsafe { finish(ep, lanes[l], blk.c.add(r * blk.ldc + col), r, col) };
            }
        }
    }
}

/// [`block`] as `MR × NR` tiles (every build but AVX-512's).
///
/// # Safety
/// As [`block`], without `flat`.
#[inline(always)]
unsafe fn tiles(isa: Isa, blk: &Block<'_>) {
    let Block {
        kc,
        a,
        b,
        c,
        ldc,
        mr,
        nr,
        ep,
        ..
    } = *blk;
    // The pair tile only with std: firmware keeps one tile build (the loop below gives the
    // same values).
    if let BlockB::Taps { x, offs } = b
        && cfg!(feature = "std")
        && mr > MR
        && nr <= NR / 2
    {
        // SAFETY: forwarded contract, both panels over the same columns.
        unsafe { conv_tile_pair(isa, kc, a.a[0], a.a[1], x, offs, c, ldc, mr, nr, ep) };
        return;
    }
    for q in 0..mr.div_ceil(MR).min(2) {
        let m = (mr - q * MR).min(MR);
        for v in 0..nr.div_ceil(NR).min(2) {
            let n = (nr - v * NR).min(NR);
            let sub = ep_at(ep, q * MR, v * NR);
            let cq = c.wrapping_add(q * MR * ldc + v * NR);
            // SAFETY: forwarded contract for sub-tile (q, v).
            unsafe {
                match b {
                    BlockB::Packed { bp, stride } => tile(
                        isa,
                        kc,
                        a.a[q],
                        a.rs,
                        a.cs[q],
                        bp.add(v * stride),
                        cq,
                        ldc,
                        m,
                        n,
                        &sub,
                    ),
                    BlockB::Taps { x, offs } => {
                        conv_tile(isa, kc, a.a[q], x.add(v * NR), offs, cq, ldc, m, n, &sub)
                    }
                }
            }
        }
    }
}

/// # Safety
/// As [`conv_tile`].
#[allow(clippy::too_many_arguments)]
unsafe fn conv_tile_portable(
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
    let mut acc = [[0.0f32; NR]; MR];
    for p in 0..kc {
        // SAFETY: in bounds per the contract.
        let (b, av) = unsafe {
            let b: [f32; NR] =
                core::ptr::read_unaligned(x.add(*offs.add(p) as usize) as *const [f32; NR]);
            let av: [f32; MR] = *(a.add(p * MR) as *const [f32; MR]);
            (b, av)
        };
        for i in 0..MR {
            for j in 0..NR {
                acc[i][j] += av[i] * b[j];
            }
        }
    }
    // SAFETY: forwarded contract.
    unsafe { store_portable(&acc, c, ldc, mr, nr, ep) };
}

/// [`crate::ops::gemm::gemm_packed`] for one column of C from panel-packed A on the
/// one-column kernel (the tile's values without its wasted lanes), where `isa` has one:
/// x86-64 with AVX2, std builds. `None` elsewhere: the caller runs the tiles.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_column(
    isa: Isa,
    m: usize,
    k: usize,
    a: &[f32],
    b: &dyn crate::ops::gemm::PackB,
    c: &mut [f32],
    ldc: usize,
    ep: &crate::ops::gemm::Epilogue<'_>,
    ws: &mut [f32],
    slot: usize,
    par: &dyn crate::threads::Parallel,
) -> Option<Result<(), crate::ops::KernelError>> {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if isa != Isa::Portable {
        return Some(super::x86::avx2::gemm_column::gemm(
            m, k, a, b, c, ldc, ep, ws, slot, par,
        ));
    }
    let _ = (isa, m, k, a, b, c, ldc, ep, ws, slot, par);
    None
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    /// A plain epilogue, or (`with`) one that scales, accumulates, adds the bias and the
    /// residual (rows `ldr` apart), then applies `act`.
    fn test_ep(with: bool, bias: &[f32], res: &[f32], ldr: usize, act: TileAct) -> TileEp {
        let or_null = |v: &[f32]| if with { v.as_ptr() } else { core::ptr::null() };
        TileEp {
            alpha: if with { 0.5 } else { 1.0 },
            add: with,
            bias: or_null(bias),
            res: or_null(res),
            ldr,
            act,
        }
    }

    fn lcg(seed: &mut u32) -> f32 {
        *seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        (*seed >> 9) as f32 / (1u32 << 23) as f32 - 0.5
    }

    /// Every ISA this CPU has against the portable build, on both tiles, every partial tile
    /// shape and every epilogue. Tolerance: FMA rounds once per step where the portable
    /// build rounds twice, so results agree to a few ulp of the sum's magnitude (1e-5
    /// relative to Σ|a·b|, K ≤ 300).
    #[test]
    fn every_isa_matches_portable() {
        let mut seed = 3;
        let kc = 297;
        let a: Vec<f32> = (0..kc * MR).map(|_| lcg(&mut seed)).collect();
        let bp: Vec<f32> = (0..kc * NR).map(|_| lcg(&mut seed)).collect();
        let x: Vec<f32> = (0..kc + 2 * NR).map(|_| lcg(&mut seed)).collect();
        let offs: Vec<u32> = (0..kc as u32).map(|p| (p * 7) % (kc as u32)).collect();
        let bias: Vec<f32> = (0..MR).map(|_| lcg(&mut seed)).collect();
        let res: Vec<f32> = (0..MR * NR).map(|_| lcg(&mut seed)).collect();
        let c0: Vec<f32> = (0..MR * NR).map(|_| lcg(&mut seed)).collect();
        let acts = [
            TileAct::None,
            TileAct::Clamp { lo: 0.0, hi: 0.2 },
            TileAct::Leaky { alpha: 0.1 },
            TileAct::HardSwish,
            TileAct::Sigmoid,
            TileAct::Silu,
        ];
        for &isa in Isa::ALL {
            if !isa.supported() {
                std::println!("skipping the {} tiles: this CPU lacks them", isa.name());
                continue;
            }
            for (mr, nr) in [(MR, NR), (1, 1), (4, 9), (6, 8), (3, 16), (5, 3)] {
                for act in acts {
                    for with in [false, true] {
                        let ep = test_ep(with, &bias, &res, NR, act);
                        for conv in [false, true] {
                            let run = |i: Isa| {
                                let mut c = c0.clone();
                                // SAFETY: every operand holds what the tile contracts ask
                                // (a: kc·MR, bp: kc·NR, x: max offset + NR, c/res: MR×NR).
                                unsafe {
                                    if conv {
                                        conv_tile(
                                            i,
                                            kc,
                                            a.as_ptr(),
                                            x.as_ptr(),
                                            offs.as_ptr(),
                                            c.as_mut_ptr(),
                                            NR,
                                            mr,
                                            nr,
                                            &ep,
                                        );
                                    } else {
                                        tile(
                                            i,
                                            kc,
                                            a.as_ptr(),
                                            1,
                                            MR,
                                            bp.as_ptr(),
                                            c.as_mut_ptr(),
                                            NR,
                                            mr,
                                            nr,
                                            &ep,
                                        );
                                    }
                                }
                                c
                            };
                            let (got, want) = (run(isa), run(Isa::Portable));
                            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                                let (row, col) = (i / NR, i % NR);
                                if row >= mr || col >= nr {
                                    assert_eq!(g, &c0[i], "{} wrote outside the tile", isa.name());
                                    continue;
                                }
                                // Σ|a·b| ≤ kc / 4 for values in [-0.5, 0.5).
                                assert!(
                                    (g - w).abs() <= 1e-5 * kc as f32 / 4.0,
                                    "{} {conv} {mr}x{nr} {act:?}: {g} vs {w}",
                                    isa.name()
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// The pair tile is bitwise two single tiles (rows `0..MR` and `MR..mr`), with every
    /// epilogue, on every ISA this CPU has.
    #[test]
    fn pair_tile_is_two_tiles() {
        let mut seed = 5;
        let kc = 131;
        let a0: Vec<f32> = (0..kc * MR).map(|_| lcg(&mut seed)).collect();
        let a1: Vec<f32> = (0..kc * MR).map(|_| lcg(&mut seed)).collect();
        let x: Vec<f32> = (0..kc + 2 * NR).map(|_| lcg(&mut seed)).collect();
        let offs: Vec<u32> = (0..kc as u32).map(|p| (p * 5) % (kc as u32)).collect();
        let bias: Vec<f32> = (0..2 * MR).map(|_| lcg(&mut seed)).collect();
        let res: Vec<f32> = (0..2 * MR * NR).map(|_| lcg(&mut seed)).collect();
        let c0: Vec<f32> = (0..2 * MR * NR).map(|_| lcg(&mut seed)).collect();
        for &isa in Isa::ALL {
            if !isa.supported() {
                std::println!("skipping the {} tiles: this CPU lacks them", isa.name());
                continue;
            }
            for (mr, nr) in [(2 * MR, 8), (MR + 1, 7), (11, 1)] {
                for act in [
                    TileAct::None,
                    TileAct::Leaky { alpha: 0.1 },
                    TileAct::HardSwish,
                    TileAct::Sigmoid,
                    TileAct::Silu,
                ] {
                    let ep = TileEp {
                        alpha: 1.0,
                        add: true,
                        bias: bias.as_ptr(),
                        res: res.as_ptr(),
                        ldr: NR,
                        act,
                    };
                    let (mut pair, mut two) = (c0.clone(), c0.clone());
                    // SAFETY: a0/a1 hold kc·MR values, x every offset + NR, c and res
                    // 2·MR rows of NR, bias 2·MR values.
                    unsafe {
                        conv_tile_pair(
                            isa,
                            kc,
                            a0.as_ptr(),
                            a1.as_ptr(),
                            x.as_ptr(),
                            offs.as_ptr(),
                            pair.as_mut_ptr(),
                            NR,
                            mr,
                            nr,
                            &ep,
                        );
                        let (x, o, c) = (x.as_ptr(), offs.as_ptr(), two.as_mut_ptr());
                        conv_tile(isa, kc, a0.as_ptr(), x, o, c, NR, MR, nr, &ep);
                        let ep1 = lower_half(&ep);
                        let c1 = c.add(MR * NR);
                        conv_tile(isa, kc, a1.as_ptr(), x, o, c1, NR, mr - MR, nr, &ep1);
                    }
                    assert_eq!(pair, two, "{} {mr}x{nr} {act:?}", isa.name());
                }
            }
        }
    }

    /// A 12 × 32 register block (both B sources, every partial shape, every epilogue) on
    /// every ISA this CPU has: within the FMA tolerance of the portable tiles, and bitwise
    /// equal to the AVX2 tiles (both fuse each multiply-add; only the register shape differs)
    /// but for the sigmoid family, whose AVX-512 form is within 4 ulp.
    #[test]
    fn blocks_match_tiles() {
        let mut seed = 11;
        let kc = 203;
        let (rows, cols) = (2 * MR, 2 * NR);
        let a: Vec<f32> = (0..2 * kc * MR).map(|_| lcg(&mut seed)).collect();
        let bp: Vec<f32> = (0..2 * kc * NR).map(|_| lcg(&mut seed)).collect();
        let x: Vec<f32> = (0..kc + 4 * NR).map(|_| lcg(&mut seed)).collect();
        let offs: Vec<u32> = (0..kc as u32).map(|p| (p * 3) % (kc as u32)).collect();
        let bias: Vec<f32> = (0..rows).map(|_| lcg(&mut seed)).collect();
        let res: Vec<f32> = (0..rows * cols).map(|_| lcg(&mut seed)).collect();
        let c0: Vec<f32> = (0..rows * cols).map(|_| lcg(&mut seed)).collect();
        let shapes = [
            (12, 32),
            (12, 17),
            (7, 32),
            (6, 16),
            (11, 8),
            (1, 1),
            (3, 29),
            (9, 5),
        ];
        for &isa in Isa::ALL {
            if !isa.supported() {
                std::println!("skipping the {} blocks: this CPU lacks them", isa.name());
                continue;
            }
            for (mr, nr) in shapes {
                for act in [
                    TileAct::None,
                    TileAct::Leaky { alpha: 0.1 },
                    TileAct::HardSwish,
                    TileAct::Sigmoid,
                    TileAct::Silu,
                    TileAct::Clamp { lo: 0.0, hi: 0.3 },
                ] {
                    for with in [false, true] {
                        let ep = test_ep(with, &bias, &res, cols, act);
                        for taps in [false, true] {
                            let run = |i: Isa| {
                                let mut c = c0.clone();
                                let blk = Block {
                                    kc,
                                    a: if taps {
                                        BlockA {
                                            a: [a.as_ptr(), a[kc * MR..].as_ptr()],
                                            rs: 1,
                                            cs: [MR, MR],
                                        }
                                    } else {
                                        // Row-major A (12 rows of kc): rows kc apart, steps 1.
                                        BlockA {
                                            a: [a.as_ptr(), a[MR * kc..].as_ptr()],
                                            rs: kc,
                                            cs: [1, 1],
                                        }
                                    },
                                    b: if taps {
                                        BlockB::Taps {
                                            x: x.as_ptr(),
                                            offs: offs.as_ptr(),
                                        }
                                    } else {
                                        BlockB::Packed {
                                            bp: bp.as_ptr(),
                                            stride: kc * NR,
                                        }
                                    },
                                    c: c.as_mut_ptr(),
                                    ldc: cols,
                                    mr,
                                    nr,
                                    ep: &ep,
                                    flat: None,
                                };
                                // SAFETY: a holds two panels of kc·MR, bp two panels of
                                // kc·NR, x every offset + 2·NR values, c/res 12 × 32.
                                unsafe { block(i, &blk) };
                                c
                            };
                            let got = run(isa);
                            let want = run(Isa::Portable);
                            #[cfg(target_arch = "x86_64")]
                            let avx2 = Isa::Avx2Fma.supported().then(|| run(Isa::Avx2Fma));
                            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                                let (row, col) = (i / cols, i % cols);
                                if row >= mr || col >= nr {
                                    assert_eq!(g, &c0[i], "{} wrote outside the block", isa.name());
                                    continue;
                                }
                                assert!(
                                    (g - w).abs() <= 1e-5 * kc as f32 / 4.0,
                                    "{} taps={taps} {mr}x{nr} {act:?}: {g} vs {w}",
                                    isa.name()
                                );
                            }
                            #[cfg(target_arch = "x86_64")]
                            if isa != Isa::Portable
                                && let Some(avx2) = avx2
                            {
                                let sigmoid = matches!(act, TileAct::Sigmoid | TileAct::Silu);
                                assert!(
                                    got.iter().zip(&avx2).all(|(&g, &w)| {
                                        crate::ops::test_util::same_value(g, w, sigmoid)
                                    }),
                                    "{} taps={taps} {mr}x{nr} {act:?}: {got:?} vs {avx2:?}",
                                    isa.name()
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// A one-row block wider than `2·NR` (a strip, where the ISA has them) on both B
    /// sources, whole and partial, every epilogue: bitwise the same row run as `2·NR`-wide
    /// blocks, nothing written past `nr`.
    #[test]
    fn strips_match_blocks() {
        let mut seed = 17;
        let kc = 150;
        let a: Vec<f32> = (0..kc * MR).map(|_| lcg(&mut seed)).collect();
        let bp: Vec<f32> = (0..kc * STRIP).map(|_| lcg(&mut seed)).collect();
        let x: Vec<f32> = (0..kc * 2 + STRIP).map(|_| lcg(&mut seed)).collect();
        let offs: Vec<u32> = (0..kc as u32).map(|p| (p * 7) % (2 * kc as u32)).collect();
        let bias = [0.25f32];
        let res: Vec<f32> = (0..STRIP).map(|_| lcg(&mut seed)).collect();
        let c0: Vec<f32> = (0..STRIP + 5).map(|_| lcg(&mut seed)).collect();
        let mut ran = false;
        for &isa in Isa::ALL {
            let Some(width) = strip_cols(isa).filter(|_| isa.supported()) else {
                continue;
            };
            ran = true;
            for nr in [STRIP, 100, 33] {
                for act in [
                    TileAct::None,
                    TileAct::Clamp { lo: 0.0, hi: 0.3 },
                    TileAct::Sigmoid,
                ] {
                    for with in [false, true] {
                        let ep = test_ep(with, &bias, &res, STRIP, act);
                        for taps in [false, true] {
                            // One block `nr` wide at column 0, or blocks of `2·NR` columns.
                            let run = |step: usize| {
                                let mut c = c0.clone();
                                for j in (0..nr).step_by(step) {
                                    let sub = ep_at(&ep, 0, j);
                                    let blk = Block {
                                        kc,
                                        a: BlockA {
                                            a: [a.as_ptr(); 2],
                                            rs: 1,
                                            cs: [MR, MR],
                                        },
                                        b: if taps {
                                            BlockB::Taps {
                                                x: x[j..].as_ptr(),
                                                offs: offs.as_ptr(),
                                            }
                                        } else {
                                            BlockB::Packed {
                                                bp: bp[j * kc..].as_ptr(),
                                                stride: kc * NR,
                                            }
                                        },
                                        c: c[j..].as_mut_ptr(),
                                        ldc: STRIP,
                                        mr: 1,
                                        nr: (nr - j).min(step),
                                        ep: &sub,
                                        flat: None,
                                    };
                                    // SAFETY: a holds kc·MR values, bp STRIP/NR panels of
                                    // kc·NR, x every offset + STRIP values, c and res one
                                    // row of STRIP; the ISA is supported.
                                    unsafe { block(isa, &blk) };
                                }
                                c
                            };
                            let (got, want) = (run(width), run(2 * NR));
                            assert!(
                                got.iter()
                                    .zip(&want)
                                    .all(|(g, w)| g.to_bits() == w.to_bits()),
                                "{} taps={taps} 1x{nr} {act:?}",
                                isa.name()
                            );
                            assert_eq!(got[nr..], c0[nr..], "{} wrote past nr", isa.name());
                        }
                    }
                }
            }
        }
        if !ran {
            std::println!("skipping the strips: this CPU has no ISA with them");
        }
    }

    /// A flat block (kept lanes packed to the front of each column panel) on every ISA:
    /// bitwise the plain block run on C and the residual spread out to the lane positions,
    /// kept lanes compacted back; nothing written past the kept lanes.
    #[test]
    fn flat_blocks_store_the_kept_lanes() {
        let mut seed = 5;
        let kc = 37;
        let (rows, w) = (2 * MR, 2 * NR);
        let a: Vec<f32> = (0..2 * kc * MR).map(|_| lcg(&mut seed)).collect();
        let x: Vec<f32> = (0..kc * 3 + 2 * NR).map(|_| lcg(&mut seed)).collect();
        let offs: Vec<u32> = (0..kc as u32).map(|p| p * 3).collect();
        let bias: Vec<f32> = (0..rows).map(|_| lcg(&mut seed)).collect();
        // Lanes dropped at a row end of 10 (like a 7-wide output on a 10-wide band row).
        let masks = [[0b1111_1110_0111_1111u16, 0b0011_1111_1001_1111], [0x7f, 0]];
        for &isa in Isa::ALL {
            if !isa.supported() {
                std::println!(
                    "skipping the {} flat blocks: this CPU lacks them",
                    isa.name()
                );
                continue;
            }
            for mask in masks {
                let kept = [mask[0].count_ones() as usize, mask[1].count_ones() as usize];
                let ncols = kept[0] + kept[1];
                let flat = Flat {
                    mask,
                    col: [0, kept[0]],
                };
                // Packed C and residual (`ncols` per row, 3 columns of slack) and their
                // spread-out copies at the lane positions.
                let ldc = ncols + 3;
                let c0: Vec<f32> = (0..rows * ldc).map(|_| lcg(&mut seed)).collect();
                let res: Vec<f32> = (0..rows * ldc).map(|_| lcg(&mut seed)).collect();
                let lanes: Vec<(usize, usize)> = (0..w)
                    .filter(|&l| mask[l / NR] >> (l % NR) & 1 != 0)
                    .enumerate()
                    .collect();
                let spread = |v: &[f32]| {
                    let mut out = std::vec![0.0f32; rows * w];
                    for r in 0..rows {
                        for &(k, l) in &lanes {
                            out[r * w + l] = v[r * ldc + k];
                        }
                    }
                    out
                };
                for act in [
                    TileAct::None,
                    TileAct::Clamp { lo: 0.0, hi: 0.3 },
                    TileAct::HardSwish,
                    TileAct::Sigmoid,
                    TileAct::Silu,
                ] {
                    for with in [false, true] {
                        let nr = if mask[1] == 0 { NR } else { w };
                        let run = |c: &mut [f32], ldc: usize, res: &[f32], flat| {
                            let ep = test_ep(with, &bias, res, ldc, act);
                            let blk = Block {
                                kc,
                                a: BlockA {
                                    a: [a.as_ptr(), a[kc * MR..].as_ptr()],
                                    rs: 1,
                                    cs: [MR, MR],
                                },
                                b: BlockB::Taps {
                                    x: x.as_ptr(),
                                    offs: offs.as_ptr(),
                                },
                                c: c.as_mut_ptr(),
                                ldc,
                                mr: rows,
                                nr,
                                ep: &ep,
                                flat,
                            };
                            // SAFETY: a holds two panels of kc·MR, x every offset + 2·NR
                            // values, c and res `rows` rows of `ldc` (flat: the kept lanes).
                            unsafe { block(isa, &blk) };
                        };
                        let mut got = c0.clone();
                        run(&mut got, ldc, &res, Some(flat));
                        let mut plain = spread(&c0);
                        run(&mut plain, w, &spread(&res), None);
                        for r in 0..rows {
                            for &(k, l) in &lanes {
                                assert_eq!(
                                    got[r * ldc + k].to_bits(),
                                    plain[r * w + l].to_bits(),
                                    "{} mask {mask:?} row {r} lane {l}",
                                    isa.name()
                                );
                            }
                            assert_eq!(
                                got[r * ldc + ncols..(r + 1) * ldc],
                                c0[r * ldc + ncols..(r + 1) * ldc]
                            );
                        }
                    }
                }
            }
        }
    }
}
