//! Which instruction-set build of the host kernels runs: chosen once per process.
//!
//! With `std` the CPU is probed once (`is_x86_feature_detected!`) and `GE_ISA=avx512|avx2|
//! portable` can force a narrower path for tests and comparisons; without `std` the choice is
//! fixed at compile time by the target's `target_feature`s (firmware builds the portable path
//! unless it enables AVX2). Kernels either call a hand-written build (the GEMM register tile)
//! or wrap their element loops in [`with_simd`], which compiles the same loop for the chosen
//! ISA: lanes are independent and the order of every reduction is fixed in the source, so the
//! AVX2 and AVX-512 builds of a `with_simd` loop give bitwise the same results as the
//! portable one. Only the hand-written GEMM tile uses FMA (one rounding instead of two), so
//! GEMM and convolution results differ between the portable and x86 paths by rounding.

/// An instruction-set class of the host kernels, widest last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    /// Plain Rust, whatever the target's baseline vectors are (SSE2 on x86-64, NEON on AArch64).
    Portable,
    /// x86-64 with AVX2 and FMA: the 6×16 register tile, 8-wide element loops. Named on
    /// every target (so kernels' dispatch needs no `cfg`), supported only on x86-64.
    Avx2Fma,
    /// x86-64 with AVX-512 F/BW/VL (and AVX2+FMA): element loops and the f32 GEMM blocks at
    /// 16 lanes, VNNI int8 tiles where the CPU has it. Supported only on x86-64.
    Avx512,
}

/// Why a forced ISA cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsaError {
    /// `GE_ISA` is not one of `avx512`, `avx2`, `portable`.
    Unknown,
    /// The CPU (or the target, without `std`) lacks the forced ISA.
    Unsupported(Isa),
}

impl Isa {
    /// Every class this build knows, narrowest first.
    pub const ALL: &[Isa] = &[
        Isa::Portable,
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma,
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512,
    ];

    /// The name `GE_ISA` and the reports use.
    pub const fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2Fma => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// Whether this is the AVX-512 class (never what [`isa`] returns off x86-64).
    pub const fn is_avx512(self) -> bool {
        matches!(self, Isa::Avx512)
    }

    /// Parses a `GE_ISA` value.
    pub fn parse(s: &str) -> Result<Isa, IsaError> {
        Isa::ALL
            .iter()
            .copied()
            .find(|i| i.name() == s)
            .ok_or(IsaError::Unknown)
    }

    /// Whether this CPU can run the class (probed with `std`; the compile-time features
    /// without it).
    pub fn supported(self) -> bool {
        match self {
            Isa::Portable => true,
            Isa::Avx2Fma => has_avx2_fma(),
            Isa::Avx512 => has_avx2_fma() && has_avx512(),
        }
    }

    /// The widest class this CPU runs.
    pub fn detected() -> Isa {
        Isa::ALL
            .iter()
            .rev()
            .copied()
            .find(|i| i.supported())
            .unwrap_or(Isa::Portable)
    }
}

#[cfg(all(target_arch = "x86_64", feature = "std"))]
fn has_avx2_fma() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

#[cfg(all(target_arch = "x86_64", not(feature = "std")))]
fn has_avx2_fma() -> bool {
    cfg!(all(target_feature = "avx2", target_feature = "fma"))
}

#[cfg(all(target_arch = "x86_64", feature = "std"))]
fn has_avx512() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vl")
}

#[cfg(all(target_arch = "x86_64", not(feature = "std")))]
fn has_avx512() -> bool {
    cfg!(all(
        target_feature = "avx512f",
        target_feature = "avx512bw",
        target_feature = "avx512vl"
    ))
}

#[cfg(not(target_arch = "x86_64"))]
fn has_avx2_fma() -> bool {
    false
}

#[cfg(not(target_arch = "x86_64"))]
fn has_avx512() -> bool {
    false
}

/// The ISA `GE_ISA` asks for: `Ok(None)` when unset (or without `std`), an error when the
/// value is unknown or the CPU lacks it. Front ends call this first to refuse a bad value
/// with a message; [`isa`] itself never fails.
pub fn forced() -> Result<Option<Isa>, IsaError> {
    #[cfg(feature = "std")]
    {
        let Ok(v) = std::env::var("GE_ISA") else {
            return Ok(None);
        };
        let want = Isa::parse(v.trim())?;
        if want.supported() {
            Ok(Some(want))
        } else {
            Err(IsaError::Unsupported(want))
        }
    }
    #[cfg(not(feature = "std"))]
    {
        Ok(None)
    }
}

/// The ISA the kernels run: without `std`, the widest the target's compile-time features
/// allow — a constant, so the other builds of every kernel are dead code and firmware links
/// only one.
#[cfg(not(feature = "std"))]
#[inline(always)]
pub fn isa() -> Isa {
    #[cfg(all(
        target_arch = "x86_64",
        target_feature = "avx512f",
        target_feature = "avx512bw",
        target_feature = "avx512vl",
        target_feature = "avx2",
        target_feature = "fma"
    ))]
    {
        Isa::Avx512
    }
    #[cfg(all(
        target_arch = "x86_64",
        target_feature = "avx2",
        target_feature = "fma",
        not(all(
            target_feature = "avx512f",
            target_feature = "avx512bw",
            target_feature = "avx512vl"
        ))
    ))]
    {
        Isa::Avx2Fma
    }
    #[cfg(not(all(
        target_arch = "x86_64",
        target_feature = "avx2",
        target_feature = "fma"
    )))]
    {
        Isa::Portable
    }
}

/// The ISA the kernels run: `GE_ISA` when set and usable, else the widest the CPU has.
/// Decided once per process (a relaxed atomic afterwards).
#[cfg(feature = "std")]
#[inline]
pub fn isa() -> Isa {
    let i = CHOSEN.load(core::sync::atomic::Ordering::Relaxed) as usize;
    match Isa::ALL.get(i) {
        Some(&isa) => isa,
        None => choose(),
    }
}

/// Index in [`Isa::ALL`] of the ISA [`isa`] chose (`u8::MAX` until the first call).
#[cfg(feature = "std")]
static CHOSEN: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(u8::MAX);

/// [`isa`]'s first call: reads `GE_ISA`, detects the CPU, records the choice. Out of line,
/// so the per-call check inlines into kernels' row loops.
#[cfg(feature = "std")]
#[cold]
fn choose() -> Isa {
    use core::sync::atomic::Ordering;
    let isa = match forced() {
        Ok(Some(isa)) => isa,
        _ => Isa::detected(),
    };
    let idx = Isa::ALL.iter().position(|&x| x == isa).unwrap_or(0);
    CHOSEN.store(idx as u8, Ordering::Relaxed);
    isa
}

/// Runs `f` compiled for the chosen ISA, so the element loops inside it get that ISA's
/// vectors; `f` must be small and inlined into here (its callees `#[inline(always)]` or
/// inlinable), or it runs at the baseline.
#[inline(always)]
pub fn with_simd<R>(f: impl FnOnce() -> R) -> R {
    match isa() {
        // SAFETY: `isa()` only returns classes the CPU supports.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { avx512(f) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma => unsafe { avx2(f) },
        Isa::Portable => f(),
        // Off x86-64 `isa()` is always portable.
        #[cfg(not(target_arch = "x86_64"))]
        _ => f(),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &i in Isa::ALL {
            assert_eq!(Isa::parse(i.name()), Ok(i));
        }
        assert_eq!(Isa::parse("sse9"), Err(IsaError::Unknown));
        assert!(Isa::Portable.supported());
        assert!(Isa::detected().supported());
        assert!(isa().supported());
    }
}
