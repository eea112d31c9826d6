//! The `MR × NR` register tile and its epilogue, in three builds of the same arithmetic:
//! AVX2+FMA (x86-64, chosen at run time with `std`, or at compile time by
//! `target_feature`), and a portable fallback. Every output element is computed by the same
//! sequence of operations whatever tile, thread or block position it falls in (lanes are
//! independent; edge tiles run the full tile and store part of it), so results do not depend
//! on how the work is split.

/// Rows of the register tile.
pub const MR: usize = 6;
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
}

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

/// Which build of the tile to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
}

/// The best tile build for this CPU (detected once with `std`; fixed at compile time
/// without it).
pub fn isa() -> Isa {
    #[cfg(all(
        target_arch = "x86_64",
        target_feature = "avx2",
        target_feature = "fma"
    ))]
    {
        Isa::Avx2Fma
    }
    #[cfg(all(
        target_arch = "x86_64",
        feature = "std",
        not(all(target_feature = "avx2", target_feature = "fma"))
    ))]
    {
        use core::sync::atomic::{AtomicU8, Ordering};
        static DETECTED: AtomicU8 = AtomicU8::new(0);
        match DETECTED.load(Ordering::Relaxed) {
            1 => Isa::Portable,
            2 => Isa::Avx2Fma,
            _ => {
                let avx2 =
                    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
                DETECTED.store(if avx2 { 2 } else { 1 }, Ordering::Relaxed);
                if avx2 { Isa::Avx2Fma } else { Isa::Portable }
            }
        }
    }
    #[cfg(not(all(
        target_arch = "x86_64",
        any(feature = "std", all(target_feature = "avx2", target_feature = "fma"))
    )))]
    {
        Isa::Portable
    }
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
        Isa::Avx2Fma => unsafe { super::avx2::tile(kc, a, rs, cs, bp, c, ldc, mr, nr, ep) },
        // SAFETY: forwarded contract.
        Isa::Portable => unsafe { tile_portable(kc, a, rs, cs, bp, c, ldc, mr, nr, ep) },
    }
}

/// Row pointers of a tile: rows past `mr` repeat row 0 (computed, never stored).
#[inline(always)]
pub(super) fn row_offsets(rs: usize, mr: usize) -> [usize; MR] {
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
    for (i, row) in acc.iter().enumerate().take(mr) {
        for (j, &s) in row.iter().enumerate().take(nr) {
            // SAFETY: in bounds per the contract.
            unsafe {
                let d = c.add(i * ldc + j);
                let mut v = s * ep.alpha;
                if ep.add {
                    v += *d;
                }
                if !ep.bias.is_null() {
                    v += *ep.bias.add(i);
                }
                if !ep.res.is_null() {
                    v += *ep.res.add(i * ep.ldr + j);
                }
                *d = act_scalar(ep.act, v);
            }
        }
    }
}
