//! Arena storage without the heap: a 64-byte aligned byte array, for a `static` (through
//! [`StaticArena`]), a stack frame or a field.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};

/// The alignment the runtime needs for arenas and blobs.
pub const ALIGN: usize = 64;

/// `N` bytes aligned to 64: exactly what a model with `ARENA_BYTES = N` needs. Dereferences
/// to `[u8]`, so `&mut arena` can be passed where the runtime wants `&mut [u8]`.
#[derive(Clone)]
#[repr(C, align(64))]
pub struct Arena<const N: usize>([u8; N]);

impl<const N: usize> Arena<N> {
    /// A zeroed arena (in `.bss` when used in a `static`).
    pub const fn new() -> Self {
        Arena([0; N])
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

/// An [`Arena`] to put in a `static`: [`StaticArena::take`] hands out its `&'static mut`
/// bytes once, so no `static mut` (and no `unsafe`) is needed.
///
/// ```
/// static ARENA: ge::StaticArena<4096> = ge::StaticArena::new();
/// let bytes: &'static mut [u8] = ARENA.take().unwrap();
/// assert_eq!(bytes.len(), 4096);
/// assert!(ARENA.take().is_none());
/// ```
#[cfg(target_has_atomic = "8")]
pub struct StaticArena<const N: usize> {
    taken: core::sync::atomic::AtomicBool,
    arena: UnsafeCell<Arena<N>>,
}

// SAFETY: the bytes are only reachable through `take`, which hands out one reference, once.
#[cfg(target_has_atomic = "8")]
unsafe impl<const N: usize> Sync for StaticArena<N> {}

#[cfg(target_has_atomic = "8")]
impl<const N: usize> StaticArena<N> {
    /// A zeroed, untaken arena.
    pub const fn new() -> Self {
        StaticArena {
            taken: core::sync::atomic::AtomicBool::new(false),
            arena: UnsafeCell::new(Arena::new()),
        }
    }

    /// The arena's bytes the first time; `None` after.
    // A `&mut` from `&self` is the point: the flag makes it unique.
    #[allow(clippy::mut_from_ref)]
    pub fn take(&'static self) -> Option<&'static mut [u8]> {
        if self.taken.swap(true, core::sync::atomic::Ordering::AcqRel) {
            return None;
        }
        // SAFETY: the flag was false, so no reference to the bytes exists and none will be
        // made again; the arena lives for 'static.
        let arena: &'static mut Arena<N> = unsafe { &mut *self.arena.get() };
        Some(&mut arena.0[..])
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
}
