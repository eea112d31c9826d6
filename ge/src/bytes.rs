//! Byte views of typed tensors: how the typed bindings hand nested arrays and slices to the
//! byte-level runtime without copying. Only plain-old-data element types qualify
//! (`bytemuck::Pod`: every bit pattern valid, no padding), so writing outputs through the
//! byte view is sound.

pub use bytemuck::{Pod, Zeroable};

/// A zeroed `T` on the heap, allocated zeroed in place (`alloc_zeroed` with `T`'s layout):
/// it never passes through the stack, unlike `Box::new(value)` in a debug build, where a
/// multi-megabyte value overflows it. Allocation failure aborts, as `Box::new`'s does.
///
/// No path of this function holds a `T` by value, not even for a zero-sized `T`: an
/// unoptimized build reserves a frame slot for every local of every branch, so a
/// `Box::new(T::zeroed())` kept for the zero-sized case made each call's frame as large as
/// `T` (issue 57: a 31 MB arena overflowed the 8 MiB main stack in `Arena::boxed()`). A
/// zero-sized `T` gets a dangling, aligned pointer, which is what `Box` itself holds for one.
#[cfg(feature = "alloc")]
pub fn zeroed_box<T: Zeroable>() -> alloc::boxed::Box<T> {
    use alloc::alloc::{Layout, alloc_zeroed, handle_alloc_error};
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        // SAFETY: for a zero-sized `T`, `Box` owns no allocation and accepts any non-null,
        // aligned pointer (`Box`'s memory-layout rules); `T: Zeroable` makes its one
        // (empty) bit pattern a valid `T`.
        return unsafe {
            alloc::boxed::Box::from_raw(core::ptr::NonNull::<T>::dangling().as_ptr())
        };
    }
    // SAFETY: the layout's size is not zero (checked above).
    let ptr = unsafe { alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        handle_alloc_error(layout);
    }
    // SAFETY: `ptr` is a live allocation from the global allocator with `T`'s layout, as
    // `Box` requires, and its bytes are all zero, which `T: Zeroable` says is a valid `T`.
    unsafe { alloc::boxed::Box::from_raw(ptr) }
}

/// Makes a struct of tensors (the generated `Inputs` / `Outputs`) [`Zeroable`] — which lets
/// [`zeroed_box`] build it on the heap — after checking that every field's type is
/// [`Zeroable`] itself: a struct of such fields is valid as all zeros. The fields are named
/// in a struct pattern without `..`, which only compiles when it names all of them, and each
/// one's own type is checked (not a type the caller claims), so no invocation can vouch for
/// an unchecked field. It is a `macro_rules!` of this crate rather than code the proc macro
/// emits, so the `unsafe impl` is this crate's and not the user's (whose crate may forbid
/// `unsafe_code`). With the `alloc` feature it also adds `boxed()`.
///
/// A struct generic over the batch of batch gears is written `Inputs<const N: usize> where
/// Batch<N>: Fits { … }`.
#[doc(hidden)]
#[macro_export]
macro_rules! __zeroable {
    ($name:ident $(< const $n:ident : usize > where $b:ty : $t:path)? { $($field:ident),* $(,)? }) => {
        // Fails to compile unless the pattern names every field and each is `Zeroable`.
        const _: () = {
            #[allow(dead_code)]
            fn fields_are_zeroable $(<const $n: usize>)? (value: &$name $(<$n>)?)
            $(where $b: $t)?
            {
                fn zeroable<T: $crate::bytes::Zeroable>(_: &T) {}
                let $name { $($field),* } = value;
                $( zeroable($field); )*
            }
        };

        // SAFETY: every field of the struct is `Zeroable` (checked just above, for all of
        // them and every `N`), so all-zero bytes are a valid value of it; padding needs none.
        unsafe impl $(<const $n: usize>)? $crate::bytes::Zeroable for $name $(<$n>)?
        $(where $b: $t)? {}

        $crate::__boxed_ctor!($name $(< const $n : usize > where $b : $t)?);
    };
}

/// `boxed()` for a [`__zeroable!`] struct when the `alloc` feature is on (the `cfg` is this
/// crate's, so it is decided here, not in the user's crate).
#[cfg(feature = "alloc")]
#[doc(hidden)]
#[macro_export]
macro_rules! __boxed_ctor {
    ($name:ident $(< const $n:ident : usize > where $b:ty : $t:path)?) => {
        impl $(<const $n: usize>)? $name $(<$n>)? $(where $b: $t)? {
            /// All zeros, on the heap, allocated zeroed in place: never on the stack, unlike
            /// `Box::new(Self::zeroed())` in a debug build. For big tensors.
            pub fn boxed() -> $crate::alloc::boxed::Box<Self> {
                $crate::bytes::zeroed_box()
            }
        }
    };
}

#[cfg(not(feature = "alloc"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __boxed_ctor {
    ($($t:tt)*) => {};
}

/// The bytes of a tensor value (e.g. `[[[[f32; 8]; 8]; 1]; 1]`).
pub fn of<T: Pod>(value: &T) -> &[u8] {
    bytemuck::bytes_of(value)
}

/// The bytes of a tensor value, writable.
pub fn of_mut<T: Pod>(value: &mut T) -> &mut [u8] {
    bytemuck::bytes_of_mut(value)
}

/// The bytes of a flat slice of elements.
pub fn of_slice<T: Pod>(values: &[T]) -> &[u8] {
    bytemuck::cast_slice(values)
}

/// The bytes of a flat slice of elements, writable.
pub fn of_slice_mut<T: Pod>(values: &mut [T]) -> &mut [u8] {
    bytemuck::cast_slice_mut(values)
}

#[cfg(test)]
mod tests {
    #[test]
    fn nested_arrays_are_flat_bytes() {
        let mut v = [[1.0f32; 3]; 2];
        assert_eq!(super::of(&v).len(), 24);
        super::of_mut(&mut v)[..4].copy_from_slice(&2.0f32.to_le_bytes());
        assert_eq!(v[0][0], 2.0);
        assert_eq!(super::of_slice(&[1u16, 2]).len(), 4);
    }

    /// Two fields of another size and alignment, so the struct has padding.
    struct Pair {
        big: [[f32; 512]; 1024],
        small: u8,
    }
    crate::__zeroable!(Pair { big, small });

    #[cfg(feature = "alloc")]
    #[test]
    fn tensor_structs_box_zeroed() {
        let p = Pair::boxed();
        assert_eq!(p.big[1023][511], 0.0);
        assert_eq!(p.small, 0);
        let empty: alloc::boxed::Box<()> = super::zeroed_box();
        assert_eq!(*empty, ());
    }
}
