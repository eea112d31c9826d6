//! Concat and Split along an axis, dtype-agnostic.

use ge_runtime::format::{AxisParams, DType, Shape, TensorMut, TensorRef};

use super::copy::checked_len;
use super::{KernelError, KernelResult, input};

/// `(outer, inner_bytes)` of `shape` around `axis` for elements of `dtype`.
fn split_dims(shape: &Shape, axis: usize, dtype: DType) -> (usize, usize) {
    let d = shape.dims();
    let outer = d[..axis].iter().product::<usize>();
    let inner = d[axis + 1..].iter().product::<usize>() * dtype.size();
    (outer, inner)
}

/// Checks that `part` equals `whole` on every axis but `axis`.
fn check_part(part: &Shape, whole: &Shape, axis: usize) -> Result<(), KernelError> {
    if part.rank() != whole.rank() {
        return Err(KernelError::Shape("concat/split operands differ in rank"));
    }
    for (i, (&a, &b)) in part.dims().iter().zip(whole.dims()).enumerate() {
        if i != axis && a != b {
            return Err(KernelError::Shape(
                "concat/split operands differ off the axis",
            ));
        }
    }
    Ok(())
}

/// Concatenates all inputs along `axis` into the output.
pub fn run_concat(
    p: &AxisParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let y = outs
        .get_mut(0)
        .ok_or(KernelError::MissingTensor("concat output"))?;
    let axis = p.axis as usize;
    if axis >= y.shape.rank() {
        return Err(KernelError::BadParams("concat axis out of range"));
    }
    checked_len(&y.shape, y.dtype, y.data.len())?;
    let mut sum = 0usize;
    for i in 0..ins.len() {
        let x = input(ins, i, "concat input")?;
        if x.dtype != y.dtype {
            return Err(KernelError::Shape("concat inputs differ in dtype"));
        }
        check_part(&x.shape, &y.shape, axis)?;
        checked_len(&x.shape, x.dtype, x.data.len())?;
        sum += x.shape.dims()[axis];
    }
    if sum != y.shape.dims()[axis] {
        return Err(KernelError::Shape(
            "concat input sizes do not add up to the output",
        ));
    }
    let (outer, inner) = split_dims(&y.shape, axis, y.dtype);
    let row = y.shape.dims()[axis] * inner;
    let mut col = 0usize;
    for x in ins.iter().flatten() {
        let chunk = x.shape.dims()[axis] * inner;
        if chunk > 0 {
            for (o, src) in x.data.chunks_exact(chunk).take(outer).enumerate() {
                let at = o * row + col;
                y.data[at..at + chunk].copy_from_slice(src);
            }
        }
        col += chunk;
    }
    Ok(())
}

/// Splits the input along `axis` into the outputs, sized by their shapes.
pub fn run_split(
    p: &AxisParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "split input")?;
    let axis = p.axis as usize;
    if axis >= x.shape.rank() {
        return Err(KernelError::BadParams("split axis out of range"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    if outs.is_empty() {
        return Err(KernelError::MissingTensor("split output"));
    }
    let mut sum = 0usize;
    for y in outs.iter() {
        if x.dtype != y.dtype {
            return Err(KernelError::Shape("split outputs differ in dtype"));
        }
        check_part(&y.shape, &x.shape, axis)?;
        checked_len(&y.shape, y.dtype, y.data.len())?;
        sum += y.shape.dims()[axis];
    }
    if sum != x.shape.dims()[axis] {
        return Err(KernelError::Shape(
            "split output sizes do not add up to the input",
        ));
    }
    let (outer, inner) = split_dims(&x.shape, axis, x.dtype);
    let row = x.shape.dims()[axis] * inner;
    let mut col = 0usize;
    for y in outs.iter_mut() {
        let chunk = y.shape.dims()[axis] * inner;
        if chunk > 0 {
            for (o, dst) in y.data.chunks_exact_mut(chunk).take(outer).enumerate() {
                let at = o * row + col;
                dst.copy_from_slice(&x.data[at..at + chunk]);
            }
        }
        col += chunk;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn concat_axis1() {
        let a = [1i32, 2, 3, 4]; // [2,2]
        let b = [5i32, 6, 7, 8, 9, 10]; // [2,3]
        let mut y = [0i32; 10];
        let ins = [
            Some(TensorRef {
                dtype: DType::I32,
                shape: Shape::new(&[2, 2]).unwrap(),
                data: bytemuck::cast_slice(&a),
            }),
            Some(TensorRef {
                dtype: DType::I32,
                shape: Shape::new(&[2, 0]).unwrap(),
                data: &[],
            }),
            Some(TensorRef {
                dtype: DType::I32,
                shape: Shape::new(&[2, 3]).unwrap(),
                data: bytemuck::cast_slice(&b),
            }),
        ];
        let mut outs = [TensorMut {
            dtype: DType::I32,
            shape: Shape::new(&[2, 5]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_concat(&AxisParams { axis: 1 }, &ins, &mut outs).unwrap();
        assert_eq!(y, [1, 2, 5, 6, 7, 3, 4, 8, 9, 10]);
        // axis 0
        let mut y = [0i32; 8];
        let ins2 = [ins[0], ins[0]];
        let mut outs = [TensorMut {
            dtype: DType::I32,
            shape: Shape::new(&[4, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_concat(&AxisParams { axis: 0 }, &ins2, &mut outs).unwrap();
        assert_eq!(y, [1, 2, 3, 4, 1, 2, 3, 4]);
        // mismatched sizes
        let mut outs = [TensorMut {
            dtype: DType::I32,
            shape: Shape::new(&[2, 4]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_concat(&AxisParams { axis: 1 }, &ins2, &mut outs).is_ok());
        let mut outs = [TensorMut {
            dtype: DType::I32,
            shape: Shape::new(&[2, 4]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_concat(&AxisParams { axis: 1 }, &ins, &mut outs).is_err());
        let mut outs = [TensorMut {
            dtype: DType::I32,
            shape: Shape::new(&[2, 4]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_concat(&AxisParams { axis: 2 }, &ins2, &mut outs).is_err());
    }

    #[test]
    fn split_axis1() {
        let x = [1u16, 2, 3, 4, 5, 6, 7, 8, 9, 10]; // [2,5]
        let mut a = [0u16; 4];
        let mut b = [0u16; 6];
        let ins = [Some(TensorRef {
            dtype: DType::U16,
            shape: Shape::new(&[2, 5]).unwrap(),
            data: bytemuck::cast_slice(&x),
        })];
        let mut outs = [
            TensorMut {
                dtype: DType::U16,
                shape: Shape::new(&[2, 2]).unwrap(),
                data: bytemuck::cast_slice_mut(&mut a),
            },
            TensorMut {
                dtype: DType::U16,
                shape: Shape::new(&[2, 3]).unwrap(),
                data: bytemuck::cast_slice_mut(&mut b),
            },
        ];
        run_split(&AxisParams { axis: 1 }, &ins, &mut outs).unwrap();
        assert_eq!(a, [1, 2, 6, 7]);
        assert_eq!(b, [3, 4, 5, 8, 9, 10]);
        let mut outs = [TensorMut {
            dtype: DType::U16,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut a),
        }];
        assert!(run_split(&AxisParams { axis: 1 }, &ins, &mut outs).is_err());
    }
}
