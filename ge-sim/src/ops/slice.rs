//! Strided windows (Slice), dtype-agnostic.

use ge_runtime::format::{MAX_RANK, SliceParams, TensorMut, TensorRef};

use super::copy::checked_len;
use super::transpose::strided_copy;
use super::{KernelError, KernelResult, input, output};

/// Slice: `out[i] = in[start + i * step]` per axis (starts/steps already normalized by the
/// compiler; every touched index is re-checked here).
pub fn run_slice(
    p: &SliceParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "slice input")?;
    let y = output(outs, 0, "slice output")?;
    if x.dtype != y.dtype {
        return Err(KernelError::Shape("slice changes the dtype"));
    }
    let rank = x.shape.rank();
    if y.shape.rank() != rank {
        return Err(KernelError::Shape("slice changes the rank"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    let in_strides = x.shape.strides();
    let mut strides = [0isize; MAX_RANK];
    let mut base: i128 = 0;
    let empty = y.shape.dims().contains(&0);
    for i in 0..rank {
        let (d, o) = (x.shape.dims()[i] as i128, y.shape.dims()[i] as i128);
        let (start, step) = (p.starts[i] as i128, p.steps[i] as i128);
        if step == 0 {
            return Err(KernelError::BadParams("slice step is zero"));
        }
        if !empty {
            let last = start + (o - 1) * step;
            if start < 0 || start >= d || last < 0 || last >= d {
                return Err(KernelError::BadParams("slice window leaves the input"));
            }
            base += start * in_strides[i] as i128;
            strides[i] = isize::try_from(step * in_strides[i] as i128)
                .map_err(|_| KernelError::BadParams("slice step too large"))?;
        }
    }
    let base =
        isize::try_from(base).map_err(|_| KernelError::BadParams("slice start too large"))?;
    strided_copy(
        y.data,
        x.data,
        x.dtype.size(),
        y.shape.dims(),
        &strides[..rank],
        base,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use ge_runtime::format::{DType, Shape};
    use std::vec::Vec;

    fn slice(
        x: &[i32],
        xd: &[usize],
        starts: &[i64],
        steps: &[i64],
        yd: &[usize],
    ) -> Result<Vec<i32>, KernelError> {
        let mut p = SliceParams {
            starts: [0; MAX_RANK],
            steps: [1; MAX_RANK],
        };
        p.starts[..starts.len()].copy_from_slice(starts);
        p.steps[..steps.len()].copy_from_slice(steps);
        let mut y = std::vec![0i32; yd.iter().product()];
        let ins = [Some(TensorRef {
            dtype: DType::I32,
            shape: Shape::new(xd).unwrap(),
            data: bytemuck::cast_slice(x),
        })];
        let mut outs = [TensorMut {
            dtype: DType::I32,
            shape: Shape::new(yd).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_slice(&p, &ins, &mut outs)?;
        Ok(y)
    }

    #[test]
    fn slices() {
        let x: Vec<i32> = (0..20).collect(); // [4,5]
        // x[1:3, 0:5:2]
        assert_eq!(
            slice(&x, &[4, 5], &[1, 0], &[1, 2], &[2, 3]).unwrap(),
            [5, 7, 9, 10, 12, 14]
        );
        // x[::-1, 3:0:-2] -> rows 3..0, cols 3,1
        assert_eq!(
            slice(&x, &[4, 5], &[3, 3], &[-1, -2], &[4, 2]).unwrap(),
            [18, 16, 13, 11, 8, 6, 3, 1]
        );
        // contiguous inner runs: x[2:4, :]
        assert_eq!(
            slice(&x, &[4, 5], &[2, 0], &[1, 1], &[2, 5]).unwrap(),
            (10..20).collect::<Vec<_>>()
        );
        // empty output
        assert_eq!(
            slice(&x, &[4, 5], &[9, 0], &[1, 1], &[0, 5]).unwrap(),
            Vec::<i32>::new()
        );
    }

    #[test]
    fn rejects_out_of_range() {
        let x: Vec<i32> = (0..20).collect();
        assert!(slice(&x, &[4, 5], &[3, 0], &[1, 1], &[2, 5]).is_err());
        assert!(slice(&x, &[4, 5], &[0, 0], &[1, 0], &[2, 5]).is_err());
        assert!(slice(&x, &[4, 5], &[-1, 0], &[1, 1], &[1, 5]).is_err());
        assert!(slice(&x, &[4, 5], &[0, 4], &[1, 2], &[1, 2]).is_err());
    }

    /// Random descriptions must give a result or an error, never a panic.
    #[test]
    fn malformed_never_panics() {
        let mut seed = 9u32;
        let mut r = |n: u32| {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            ((seed >> 8) % n.max(1)) as usize
        };
        let mut oks = 0;
        for _ in 0..3000 {
            let rank = r(4);
            let xd: Vec<usize> = (0..rank).map(|_| r(5)).collect();
            let yd: Vec<usize> = (0..rank).map(|_| r(4)).collect();
            let mut starts = [0i64; MAX_RANK];
            let mut steps = [1i64; MAX_RANK];
            for a in 0..rank {
                starts[a] = r(7) as i64 - 1;
                steps[a] = [1, 2, -1, -2, 0, i64::MAX, i64::MIN][r(7)];
            }
            let x = std::vec![0i32; xd.iter().product()];
            let mut y = std::vec![0i32; yd.iter().product()];
            let p = SliceParams { starts, steps };
            let ins = [Some(TensorRef {
                dtype: DType::I32,
                shape: Shape::new(&xd).unwrap(),
                data: bytemuck::cast_slice(&x),
            })];
            let mut outs = [TensorMut {
                dtype: DType::I32,
                shape: Shape::new(&yd).unwrap(),
                data: bytemuck::cast_slice_mut(&mut y),
            }];
            oks += usize::from(run_slice(&p, &ins, &mut outs).is_ok());
        }
        assert!(oks > 300, "only {oks} well-formed cases ran");
    }
}
