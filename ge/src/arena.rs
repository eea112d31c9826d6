//! Arena storage: a 64-byte aligned byte array, for a `static` (through [`StaticArena`]), the
//! heap (through [`Arena::boxed`], never built on the stack), a stack frame or a field; and
//! [`StaticCell`], which hands out a `static`'s value once as `&'static mut`.

#[cfg(target_has_atomic = "8")]
use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};

/// The alignment the runtime needs for arenas and blobs.
pub const ALIGN: usize = 64;

/// `N` bytes aligned to 64: exactly what a model with `ARENA_BYTES = N` needs. Dereferences
/// to `[u8]`, so `&mut arena` can be passed where the runtime wants `&mut [u8]`.
#[derive(Clone)]
#[repr(C, align(64))]
pub struct Arena<const N: usize>([u8; N]);

// SAFETY: an array of bytes (and the alignment padding after it) is valid all zeros.
unsafe impl<const N: usize> bytemuck::Zeroable for Arena<N> {}

impl<const N: usize> Arena<N> {
    /// A zeroed arena, by value (in `.bss` when used in a `static`). As a local it is built
    /// on the stack — `Box::new(Arena::new())` too, in a debug build — so use it for arenas
    /// well under the stack (a main thread's is often 8 MiB), and [`Arena::boxed`] or a
    /// [`StaticArena`] for bigger ones.
    pub const fn new() -> Self {
        Arena([0; N])
    }

    /// A zeroed arena on the heap, allocated zeroed in place: it never passes through the
    /// stack, whatever the optimization level (unlike `Box::new(Arena::new())`).
    #[cfg(feature = "alloc")]
    pub fn boxed() -> alloc::boxed::Box<Self> {
        crate::bytes::zeroed_box()
    }

    /// The bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl<const N: usize> Default for Arena<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Deref for Arena<N> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl<const N: usize> DerefMut for Arena<N> {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl<const N: usize> AsMut<[u8]> for Arena<N> {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

/// A value in a `static` that [`StaticCell::take`] hands out once as `&'static mut`: a
/// model's inputs or outputs in `.bss` on firmware, without `static mut` (and without
/// `unsafe` in the caller). The initializer is const-evaluated, so nothing is built on the
/// stack.
///
/// ```
/// static VALUE: ge::StaticCell<[f32; 1024]> = ge::StaticCell::new([0.0; 1024]);
/// let v: &'static mut [f32; 1024] = VALUE.take().unwrap();
/// v[0] = 1.0;
/// assert!(VALUE.take().is_none());
/// ```
#[cfg(target_has_atomic = "8")]
pub struct StaticCell<T> {
    taken: core::sync::atomic::AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reachable through `take`, which hands out one reference, once,
// so sharing the cell between threads shares no access to the value; handing that
// reference to another thread moves a `&mut T`, which needs `T: Send`.
#[cfg(target_has_atomic = "8")]
unsafe impl<T: Send> Sync for StaticCell<T> {}

#[cfg(target_has_atomic = "8")]
impl<T> StaticCell<T> {
    /// An untaken cell holding `value`.
    pub const fn new(value: T) -> Self {
        StaticCell {
            taken: core::sync::atomic::AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// The value the first time; `None` after.
    // A `&mut` from `&self` is the point: the flag makes it unique.
    #[allow(clippy::mut_from_ref)]
    pub fn take(&'static self) -> Option<&'static mut T> {
        if self.taken.swap(true, core::sync::atomic::Ordering::AcqRel) {
            return None;
        }
        // SAFETY: the flag was false, so no reference to the value exists and none will be
        // made again; the cell lives for 'static.
        Some(unsafe { &mut *self.value.get() })
    }
}

/// An [`Arena`] to put in a `static` (in `.bss`, sized by the model's `ARENA_BYTES`):
/// [`StaticArena::take`] hands out its `&'static mut` bytes once, so no `static mut` (and no
/// `unsafe`) is needed.
///
/// ```
/// static ARENA: ge::StaticArena<4096> = ge::StaticArena::new();
/// let bytes: &'static mut [u8] = ARENA.take().unwrap();
/// assert_eq!(bytes.len(), 4096);
/// assert!(ARENA.take().is_none());
/// ```
#[cfg(target_has_atomic = "8")]
pub struct StaticArena<const N: usize>(StaticCell<Arena<N>>);

#[cfg(target_has_atomic = "8")]
impl<const N: usize> StaticArena<N> {
    /// A zeroed, untaken arena.
    pub const fn new() -> Self {
        StaticArena(StaticCell::new(Arena::new()))
    }

    /// The arena's bytes the first time; `None` after.
    pub fn take(&'static self) -> Option<&'static mut [u8]> {
        self.0.take().map(|a| &mut a.0[..])
    }
}

#[cfg(target_has_atomic = "8")]
impl<const N: usize> Default for StaticArena<N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_is_aligned_and_sized() {
        let a = Arena::<100>::new();
        assert_eq!(a.as_ptr() as usize % ALIGN, 0);
        assert_eq!(a.len(), 100);
        assert_eq!(core::mem::align_of::<Arena<1>>(), ALIGN);
    }

    #[test]
    fn static_arena_takes_once() {
        static A: StaticArena<128> = StaticArena::new();
        let b = A.take().unwrap();
        assert_eq!(b.len(), 128);
        assert_eq!(b.as_ptr() as usize % ALIGN, 0);
        assert!(A.take().is_none());
    }

    #[cfg(feature = "alloc")]
    #[test]
    fn boxed_arena_is_zeroed_and_aligned() {
        // 64 MiB: far over a test thread's stack, so this fails if it is built there.
        let a = Arena::<{ 64 << 20 }>::boxed();
        assert_eq!(a.as_ptr() as usize % ALIGN, 0);
        assert!(a.iter().step_by(4096).all(|&b| b == 0));
    }
}
