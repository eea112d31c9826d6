//! Borrowed tensor views handed to kernels: dtype, shape and the raw bytes.

use super::{dtype::DType, shape::Shape};

/// Why a view could not be read as the requested element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewError {
    pub expected: DType,
    pub found: DType,
}

/// A read-only tensor.
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'a> {
    pub dtype: DType,
    pub shape: Shape,
    pub data: &'a [u8],
}

/// A writable tensor.
#[derive(Debug)]
pub struct TensorMut<'a> {
    pub dtype: DType,
    pub shape: Shape,
    pub data: &'a mut [u8],
}

/// Element types a view can be cast to.
pub trait Element: bytemuck::Pod {
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => { $(impl Element for $t { const DTYPE: DType = DType::$d; })* };
}
element!(f32 => F32, f64 => F64, i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32,
    u32 => U32, i64 => I64, u64 => U64);

impl<'a> TensorRef<'a> {
    /// The elements as `T`; errors if the dtype differs or the bytes are misaligned.
    pub fn as_slice<T: Element>(&self) -> Result<&'a [T], ViewError> {
        if self.dtype != T::DTYPE {
            return Err(ViewError {
                expected: T::DTYPE,
                found: self.dtype,
            });
        }
        if self.data.is_empty() {
            return Ok(&[]); // empty tensors may sit at any offset
        }
        bytemuck::try_cast_slice(self.data).map_err(|_| ViewError {
            expected: T::DTYPE,
            found: self.dtype,
        })
    }

    /// Bool tensors as bytes (0 or 1).
    pub fn as_bool(&self) -> Result<&'a [u8], ViewError> {
        if self.dtype != DType::Bool {
            return Err(ViewError {
                expected: DType::Bool,
                found: self.dtype,
            });
        }
        Ok(self.data)
    }
}

impl<'a> TensorMut<'a> {
    /// The elements as `T`; errors if the dtype differs or the bytes are misaligned.
    pub fn as_slice_mut<T: Element>(&mut self) -> Result<&mut [T], ViewError> {
        if self.dtype != T::DTYPE {
            return Err(ViewError {
                expected: T::DTYPE,
                found: self.dtype,
            });
        }
        let found = self.dtype;
        if self.data.is_empty() {
            return Ok(&mut []); // empty tensors may sit at any offset
        }
        bytemuck::try_cast_slice_mut(self.data).map_err(|_| ViewError {
            expected: T::DTYPE,
            found,
        })
    }

    /// Bool tensors as bytes (0 or 1).
    pub fn as_bool_mut(&mut self) -> Result<&mut [u8], ViewError> {
        if self.dtype != DType::Bool {
            return Err(ViewError {
                expected: DType::Bool,
                found: self.dtype,
            });
        }
        Ok(self.data)
    }

    /// A read-only view of the same tensor.
    pub fn as_ref(&self) -> TensorRef<'_> {
        TensorRef {
            dtype: self.dtype,
            shape: self.shape,
            data: self.data,
        }
    }
}
