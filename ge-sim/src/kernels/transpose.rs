//! Axis permutation (dtype-agnostic, by element size), plus the strided-copy engine shared by
//! Transpose, Slice, Expand and Tile: the output is walked in row-major order while the source
//! offset advances by per-axis (possibly zero or negative) element strides.

use ge_runtime::format::{MAX_RANK, TensorMut, TensorRef, TransposeParams};

use super::copy::checked_len;
use super::{KernelError, KernelResult, Work, input, output};

/// Most axes [`strided_copy`] accepts (Tile views a rank-8 tensor as 16 axes).
pub const MAX_AXES: usize = 2 * MAX_RANK;

/// Fills `dst` (row-major over `dims`, elements of `esize` bytes) with
/// `dst[i] = src[base + Σ i_d * strides[d]]` (offsets in elements). Every source offset is
/// checked to lie inside `src` before anything is copied. Returns the element count.
pub fn strided_copy(
    dst: &mut [u8],
    src: &[u8],
    esize: usize,
    dims: &[usize],
    strides: &[isize],
    base: isize,
) -> Result<usize, KernelError> {
    if dims.len() != strides.len() || dims.len() > MAX_AXES || esize == 0 {
        return Err(KernelError::Shape("strided copy: bad axis description"));
    }
    let numel = dims
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or(KernelError::Shape("element count overflows"))?;
    if numel.checked_mul(esize) != Some(dst.len()) {
        return Err(KernelError::Shape(
            "output byte length does not match its shape",
        ));
    }
    if numel == 0 {
        return Ok(0);
    }
    let src_elems = (src.len() / esize) as i128;
    // Range of source offsets touched.
    let (mut lo, mut hi) = (base as i128, base as i128);
    for (&d, &s) in dims.iter().zip(strides) {
        let span = (d as i128 - 1) * s as i128;
        if span < 0 {
            lo += span;
        } else {
            hi += span;
        }
    }
    if lo < 0 || hi >= src_elems {
        return Err(KernelError::Shape("source index out of range"));
    }
    // Coalesce: drop unit axes, merge an axis into its outer neighbour when contiguous.
    let mut cd = [0usize; MAX_AXES];
    let mut cs = [0isize; MAX_AXES];
    let mut n = 0usize;
    for (&d, &s) in dims.iter().zip(strides) {
        if d == 1 {
            continue;
        }
        if n > 0 && cs[n - 1] == s * d as isize {
            // previous (outer) axis steps exactly over this one: merge
            cd[n - 1] *= d;
            cs[n - 1] = s;
        } else {
            cd[n] = d;
            cs[n] = s;
            n += 1;
        }
    }
    if n == 0 {
        let o = base as usize * esize;
        dst.copy_from_slice(&src[o..o + esize]);
        return Ok(numel);
    }
    let len = cd[n - 1];
    let inner_stride = cs[n - 1];
    let row_bytes = len * esize;
    let outer = n - 1;
    let mut index = [0usize; MAX_AXES];
    let mut off = base;
    for row in dst.chunks_exact_mut(row_bytes) {
        copy_run(row, src, esize, off, inner_stride, len);
        // advance the odometer over the outer axes
        let mut a = outer;
        while a > 0 {
            a -= 1;
            index[a] += 1;
            off += cs[a];
            if index[a] < cd[a] {
                break;
            }
            off -= cs[a] * cd[a] as isize;
            index[a] = 0;
        }
    }
    Ok(numel)
}

/// Copies `len` elements starting at element `start` of `src` with element stride `stride`.
fn copy_run(dst: &mut [u8], src: &[u8], esize: usize, start: isize, stride: isize, len: usize) {
    let s0 = start as usize * esize;
    if stride == 1 {
        dst.copy_from_slice(&src[s0..s0 + len * esize]);
        return;
    }
    match esize {
        1 => run_fixed::<1>(dst, src, start, stride),
        2 => run_fixed::<2>(dst, src, start, stride),
        4 => run_fixed::<4>(dst, src, start, stride),
        8 => run_fixed::<8>(dst, src, start, stride),
        _ => {
            for (i, d) in dst.chunks_exact_mut(esize).enumerate() {
                let s = (start + i as isize * stride) as usize * esize;
                d.copy_from_slice(&src[s..s + esize]);
            }
        }
    }
}

fn run_fixed<const ES: usize>(dst: &mut [u8], src: &[u8], start: isize, stride: isize) {
    let (chunks, _) = dst.as_chunks_mut::<ES>();
    if stride == 0 {
        let s = start as usize * ES;
        let mut v = [0u8; ES];
        v.copy_from_slice(&src[s..s + ES]);
        chunks.fill(v);
        return;
    }
    let mut s = start;
    for d in chunks {
        let o = s as usize * ES;
        d.copy_from_slice(&src[o..o + ES]);
        s += stride;
    }
}

/// Transpose: output axis `i` is input axis `perm[i]`.
pub fn run_transpose(
    p: &TransposeParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "transpose input")?;
    let y = output(outs, 0, "transpose output")?;
    if x.dtype != y.dtype {
        return Err(KernelError::Shape("transpose changes the dtype"));
    }
    let rank = x.shape.rank();
    if y.shape.rank() != rank {
        return Err(KernelError::Shape("transpose changes the rank"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    let in_strides = x.shape.strides();
    let mut seen = [false; MAX_RANK];
    let mut strides = [0isize; MAX_RANK];
    for (i, stride) in strides.iter_mut().enumerate().take(rank) {
        let a = p.perm[i] as usize;
        if a >= rank || seen[a] {
            return Err(KernelError::BadParams(
                "transpose perm is not a permutation",
            ));
        }
        seen[a] = true;
        if y.shape.dims()[i] != x.shape.dims()[a] {
            return Err(KernelError::Shape(
                "transpose output shape does not match perm",
            ));
        }
        *stride = in_strides[a] as isize;
    }
    let n = strided_copy(
        y.data,
        x.data,
        x.dtype.size(),
        y.shape.dims(),
        &strides[..rank],
        0,
    )?;
    Ok(Work {
        cube_macs: 0,
        vector_ops: n as u64,
    })
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use ge_runtime::format::{DType, Shape};
    use std::vec::Vec;

    fn perm(p: &[u32]) -> TransposeParams {
        let mut t = TransposeParams {
            perm: [0; MAX_RANK],
        };
        t.perm[..p.len()].copy_from_slice(p);
        t
    }

    fn transpose_i32(
        x: &[i32],
        xd: &[usize],
        p: &[u32],
        yd: &[usize],
    ) -> Result<Vec<i32>, KernelError> {
        let n: usize = yd.iter().product();
        let mut y = std::vec![0i32; n];
        let xs = [Some(TensorRef {
            dtype: DType::I32,
            shape: Shape::new(xd).unwrap(),
            data: bytemuck::cast_slice(x),
        })];
        let mut ys = [TensorMut {
            dtype: DType::I32,
            shape: Shape::new(yd).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_transpose(&perm(p), &xs, &mut ys)?;
        Ok(y)
    }

    #[test]
    fn transpose_2d_and_4d() {
        let x: Vec<i32> = (0..6).collect();
        assert_eq!(
            transpose_i32(&x, &[2, 3], &[1, 0], &[3, 2]).unwrap(),
            [0, 3, 1, 4, 2, 5]
        );
        // NCHW -> NHWC vs a naive loop
        let (n, c, h, w) = (2, 3, 4, 5);
        let x: Vec<i32> = (0..(n * c * h * w) as i32).collect();
        let y = transpose_i32(&x, &[n, c, h, w], &[0, 2, 3, 1], &[n, h, w, c]).unwrap();
        for a in 0..n {
            for b in 0..h {
                for d in 0..w {
                    for e in 0..c {
                        assert_eq!(
                            y[((a * h + b) * w + d) * c + e],
                            x[((a * c + e) * h + b) * w + d]
                        );
                    }
                }
            }
        }
        // keeps the inner axis: [2,3,4] perm [1,0,2]
        let x: Vec<i32> = (0..24).collect();
        let y = transpose_i32(&x, &[2, 3, 4], &[1, 0, 2], &[3, 2, 4]).unwrap();
        assert_eq!(&y[..8], &[0, 1, 2, 3, 12, 13, 14, 15]);
    }

    #[test]
    fn transpose_other_sizes() {
        let x: Vec<u8> = (0..6).collect();
        let mut y = [0u8; 6];
        let xs = [Some(TensorRef {
            dtype: DType::U8,
            shape: Shape::new(&[2, 3]).unwrap(),
            data: &x,
        })];
        let mut ys = [TensorMut {
            dtype: DType::U8,
            shape: Shape::new(&[3, 2]).unwrap(),
            data: &mut y,
        }];
        run_transpose(&perm(&[1, 0]), &xs, &mut ys).unwrap();
        assert_eq!(y, [0, 3, 1, 4, 2, 5]);
        let x: Vec<i64> = (0..6).collect();
        let mut y = [0i64; 6];
        let xs = [Some(TensorRef {
            dtype: DType::I64,
            shape: Shape::new(&[2, 3]).unwrap(),
            data: bytemuck::cast_slice(&x),
        })];
        let mut ys = [TensorMut {
            dtype: DType::I64,
            shape: Shape::new(&[3, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_transpose(&perm(&[1, 0]), &xs, &mut ys).unwrap();
        assert_eq!(y, [0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn transpose_rejects_bad_perm_and_shape() {
        let x: Vec<i32> = (0..6).collect();
        assert!(transpose_i32(&x, &[2, 3], &[0, 0], &[2, 2]).is_err());
        assert!(transpose_i32(&x, &[2, 3], &[1, 2], &[3, 2]).is_err());
        assert!(transpose_i32(&x, &[2, 3], &[1, 0], &[2, 3]).is_err());
        assert!(transpose_i32(&x[..5], &[2, 3], &[1, 0], &[3, 2]).is_err());
    }

    #[test]
    fn strided_copy_bounds() {
        let src = [1u8, 2, 3, 4];
        let mut dst = [0u8; 3];
        assert!(strided_copy(&mut dst, &src, 1, &[3], &[2], 0).is_err());
        assert_eq!(strided_copy(&mut dst, &src, 1, &[3], &[-1], 3).unwrap(), 3);
        assert_eq!(dst, [4, 3, 2]);
        assert!(strided_copy(&mut dst, &src, 1, &[3], &[-1], 1).is_err());
    }
}
