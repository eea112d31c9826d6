//! Plain copies (reshape-like ops), Expand and Tile, plus small validation helpers shared by
//! the data-movement, GEMM, convolution, pooling and resize kernels.

use ge_runtime::format::{DType, MAX_RANK, Shape, TensorMut, TensorRef};

use super::broadcast::broadcast_strides;
use super::transpose::{MAX_AXES, strided_copy};
use super::{KernelError, KernelResult, input, output};

/// Element count of `shape`, checked against a buffer of `len` bytes of `dtype`.
pub fn checked_len(shape: &Shape, dtype: DType, len: usize) -> Result<usize, KernelError> {
    let n = shape
        .checked_numel()
        .ok_or(KernelError::Shape("element count overflows"))?;
    if n.checked_mul(dtype.size()) != Some(len) {
        return Err(KernelError::Shape(
            "tensor byte length does not match its shape",
        ));
    }
    Ok(n)
}

/// An f32 input whose length matches its shape.
pub fn f32_in<'a>(t: &TensorRef<'a>) -> Result<&'a [f32], KernelError> {
    checked_len(&t.shape, t.dtype, t.data.len())?;
    Ok(t.as_slice::<f32>()?)
}

/// An f32 output whose length matches its shape.
pub fn f32_out<'b>(t: &'b mut TensorMut<'_>) -> Result<&'b mut [f32], KernelError> {
    checked_len(&t.shape, t.dtype, t.data.len())?;
    Ok(t.as_slice_mut::<f32>()?)
}

/// `dst.copy_from_slice(src)` without a `memmove` call for runs shorter than 64 elements:
/// the run is split into fixed-size moves of 32, 16, 8, 4, 2 and 1 (no loop the compiler
/// could turn back into a call). A call costs more than copying a 14-wide row, and small
/// planes copy thousands of them (depthwise bands, im2col window rows). Lengths must match.
#[inline(always)]
pub fn copy_short<T: Copy>(dst: &mut [T], src: &[T]) {
    let n = dst.len();
    if n >= 64 || src.len() != n {
        dst.copy_from_slice(src);
        return;
    }
    #[inline(always)]
    fn piece<const W: usize, T: Copy>(dst: &mut [T], src: &[T], n: usize, at: &mut usize) {
        if n & W != 0 {
            if let (Some(d), Some(s)) = (
                dst.get_mut(*at..*at + W)
                    .and_then(|d| <&mut [T; W]>::try_from(d).ok()),
                src.get(*at..*at + W)
                    .and_then(|s| <&[T; W]>::try_from(s).ok()),
            ) {
                *d = *s;
            }
            *at += W;
        }
    }
    let mut at = 0;
    piece::<32, T>(dst, src, n, &mut at);
    piece::<16, T>(dst, src, n, &mut at);
    piece::<8, T>(dst, src, n, &mut at);
    piece::<4, T>(dst, src, n, &mut at);
    piece::<2, T>(dst, src, n, &mut at);
    piece::<1, T>(dst, src, n, &mut at);
}

/// Byte copy for Reshape / Flatten / Squeeze / Unsqueeze / Identity / Dropout / BitCast: same
/// element count and width (BitCast reinterprets the bytes as another dtype); extra inputs
/// (e.g. Reshape's shape) are ignored.
pub fn run_copy(ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let x = input(ins, 0, "copy input")?;
    let y = output(outs, 0, "copy output")?;
    if x.dtype.size() != y.dtype.size() {
        return Err(KernelError::Shape("copy changes the element width"));
    }
    let n = checked_len(&x.shape, x.dtype, x.data.len())?;
    let m = checked_len(&y.shape, y.dtype, y.data.len())?;
    if n != m {
        return Err(KernelError::Shape("copy changes the element count"));
    }
    y.data.copy_from_slice(x.data);
    Ok(())
}

/// Expand: numpy-broadcasts the input to the output shape (any dtype).
pub fn run_expand(ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let x = input(ins, 0, "expand input")?;
    let y = output(outs, 0, "expand output")?;
    if x.dtype != y.dtype {
        return Err(KernelError::Shape("expand changes the dtype"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    let bs = broadcast_strides(&x.shape, &y.shape)?;
    let rank = y.shape.rank();
    let mut strides = [0isize; MAX_RANK];
    for (s, &b) in strides.iter_mut().zip(&bs).take(rank) {
        *s = b as isize;
    }
    strided_copy(
        y.data,
        x.data,
        x.dtype.size(),
        y.shape.dims(),
        &strides[..rank],
        0,
    )?;
    Ok(())
}

/// Tile: output axis `i` is input axis `i` repeated `out[i] / in[i]` times (the repeats input,
/// if present, is implied by the shapes and ignored).
pub fn run_tile(ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let x = input(ins, 0, "tile input")?;
    let y = output(outs, 0, "tile output")?;
    if x.dtype != y.dtype {
        return Err(KernelError::Shape("tile changes the dtype"));
    }
    let rank = x.shape.rank();
    if y.shape.rank() != rank {
        return Err(KernelError::Shape("tile changes the rank"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    // View the output as [r0, d0, r1, d1, ...] reading the input with strides [0, s0, 0, s1, ...].
    let in_strides = x.shape.strides();
    let mut dims = [0usize; MAX_AXES];
    let mut strides = [0isize; MAX_AXES];
    for i in 0..rank {
        let (d, o) = (x.shape.dims()[i], y.shape.dims()[i]);
        let reps = if d == 0 {
            if o != 0 {
                return Err(KernelError::Shape("tile of an empty axis must be empty"));
            }
            0
        } else {
            if o % d != 0 {
                return Err(KernelError::Shape(
                    "tile output is not a multiple of the input",
                ));
            }
            o / d
        };
        dims[2 * i] = reps;
        dims[2 * i + 1] = d;
        strides[2 * i + 1] = in_strides[i] as isize;
    }
    strided_copy(
        y.data,
        x.data,
        x.dtype.size(),
        &dims[..2 * rank],
        &strides[..2 * rank],
        0,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn t<'a>(dt: DType, d: &[usize], data: &'a [u8]) -> Option<TensorRef<'a>> {
        Some(TensorRef {
            dtype: dt,
            shape: Shape::new(d).unwrap(),
            data,
        })
    }

    #[test]
    fn copy_short_copies_every_length() {
        let src: [u32; 80] = core::array::from_fn(|v| v as u32 * 7 + 1);
        for n in 0..80usize {
            let mut dst = [0u32; 80];
            super::copy_short(&mut dst[..n], &src[..n]);
            assert_eq!(dst[..n], src[..n], "{n}");
            assert!(dst[n..].iter().all(|&v| v == 0), "{n}: wrote past the run");
        }
    }

    #[test]
    fn copy_checks_counts() {
        let x: Vec<f32> = (0..6).map(|v| v as f32).collect();
        let mut y = [0f32; 6];
        let ins = [t(DType::F32, &[2, 3], bytemuck::cast_slice(&x))];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[6]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_copy(&ins, &mut outs).unwrap();
        assert_eq!(y, [0., 1., 2., 3., 4., 5.]);
        let mut y = [0f32; 5];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[5]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_copy(&ins, &mut outs).is_err());
    }

    #[test]
    fn expand_broadcasts() {
        // np.broadcast_to([[1],[2]], (2,2,3))
        let x = [1i32, 2];
        let mut y = [0i32; 12];
        let ins = [t(DType::I32, &[2, 1], bytemuck::cast_slice(&x))];
        let mut outs = [TensorMut {
            dtype: DType::I32,
            shape: Shape::new(&[2, 2, 3]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_expand(&ins, &mut outs).unwrap();
        assert_eq!(y, [1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2]);
        // [3] -> [2,3] (u8), scalar -> [4]
        let x = [7u8, 8, 9];
        let mut y = [0u8; 6];
        let ins = [t(DType::U8, &[3], &x)];
        let mut outs = [TensorMut {
            dtype: DType::U8,
            shape: Shape::new(&[2, 3]).unwrap(),
            data: &mut y,
        }];
        run_expand(&ins, &mut outs).unwrap();
        assert_eq!(y, [7, 8, 9, 7, 8, 9]);
        let x = [5i64];
        let mut y = [0i64; 4];
        let ins = [t(DType::I64, &[], bytemuck::cast_slice(&x))];
        let mut outs = [TensorMut {
            dtype: DType::I64,
            shape: Shape::new(&[4]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_expand(&ins, &mut outs).unwrap();
        assert_eq!(y, [5; 4]);
        let mut y = [0i64; 4];
        let ins = [t(DType::I64, &[2], bytemuck::cast_slice(&[1i64, 2]))];
        let mut outs = [TensorMut {
            dtype: DType::I64,
            shape: Shape::new(&[4]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_expand(&ins, &mut outs).is_err());
    }

    #[test]
    fn tile_repeats() {
        // np.tile([[1,2],[3,4]], (2,3))
        let x = [1i32, 2, 3, 4];
        let mut y = [0i32; 24];
        let ins = [t(DType::I32, &[2, 2], bytemuck::cast_slice(&x))];
        let mut outs = [TensorMut {
            dtype: DType::I32,
            shape: Shape::new(&[4, 6]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_tile(&ins, &mut outs).unwrap();
        assert_eq!(
            y,
            [
                1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4
            ]
        );
        let mut y = [0i32; 10];
        let mut outs = [TensorMut {
            dtype: DType::I32,
            shape: Shape::new(&[2, 5]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_tile(&ins, &mut outs).is_err());
    }
}
