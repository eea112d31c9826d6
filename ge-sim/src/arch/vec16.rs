//! 16 f32 lanes — one channel block of one pixel — as generic kernel bodies use them,
//! with a plain-array build for every target; the x86 builds (one AVX-512 register, two
//! AVX ones) are in `x86::vec16`.

use ge_runtime::format::BLOCK;

/// The 16 lanes as an array.
type Lanes = [f32; BLOCK];

/// 16 f32 lanes (one block of one pixel) as the kernel uses them: every operation reads or
/// writes exactly 16 values.
pub(crate) trait Vec16: Copy {
    fn zero() -> Self;
    /// The 16 values at `p`.
    ///
    /// # Safety
    /// `p..p + 16` readable; the implementation's ISA enabled on the caller.
    unsafe fn load(p: *const f32) -> Self;
    /// # Safety
    /// `p..p + 16` writable; as [`Self::load`].
    unsafe fn store(p: *mut f32, v: Self);
    /// `a + x·w`: one rounding where the ISA has FMA, two on plain arrays.
    fn mul_add(a: Self, x: Self, w: Self) -> Self;
}

/// Plain arrays: any target.
#[derive(Clone, Copy)]
pub(crate) struct Scalar(Lanes);

impl Vec16 for Scalar {
    #[inline(always)]
    fn zero() -> Self {
        Scalar([0.0; BLOCK])
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: contract.
        Scalar(unsafe { p.cast::<Lanes>().read_unaligned() })
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: Self) {
        // SAFETY: contract.
        unsafe { p.cast::<Lanes>().write_unaligned(v.0) }
    }
    #[inline(always)]
    fn mul_add(mut a: Self, x: Self, w: Self) -> Self {
        for ((a, x), w) in a.0.iter_mut().zip(x.0).zip(w.0) {
            *a += x * w;
        }
        a
    }
}
