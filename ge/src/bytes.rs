//! Byte views of typed tensors: how the typed bindings hand nested arrays and slices to the
//! byte-level runtime without copying. Only plain-old-data element types qualify
//! (`bytemuck::Pod`: every bit pattern valid, no padding), so writing outputs through the
//! byte view is sound.

pub use bytemuck::Pod;

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
}
