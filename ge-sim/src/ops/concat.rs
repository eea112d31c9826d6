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
            place(x.data, y.data, chunk, row, col, outer);
        }
        col += chunk;
    }
    Ok(())
}

/// Copies `outer` chunks of `chunk` bytes from `packed` (one after another) into the rows
/// of `rows` (`row` bytes each, the chunk at byte `col`). Chunks of one to four f32 get
/// fixed-size copies: a concat along a last axis of one value (basic-pitch's harmonic stack,
/// 8 × 53,000 values) ran a variable-length copy per value, 3.5 ns each. O(bytes).
fn place(packed: &[u8], rows: &mut [u8], chunk: usize, row: usize, col: usize, outer: usize) {
    fn fixed<const N: usize>(packed: &[u8], rows: &mut [u8], row: usize, col: usize, outer: usize) {
        for (r, c) in rows[col..]
            .chunks_mut(row)
            .zip(packed.as_chunks::<N>().0)
            .take(outer)
        {
            r[..N].copy_from_slice(c);
        }
    }
    match chunk {
        4 => fixed::<4>(packed, rows, row, col, outer),
        8 => fixed::<8>(packed, rows, row, col, outer),
        12 => fixed::<12>(packed, rows, row, col, outer),
        16 => fixed::<16>(packed, rows, row, col, outer),
        _ => {
            for (o, src) in packed.chunks_exact(chunk).take(outer).enumerate() {
                let at = o * row + col;
                rows[at..at + chunk].copy_from_slice(src);
            }
        }
    }
}

/// [`place`]'s inverse: the rows' chunks out into `packed`. O(bytes).
fn take(rows: &[u8], packed: &mut [u8], chunk: usize, row: usize, col: usize, outer: usize) {
    fn fixed<const N: usize>(rows: &[u8], packed: &mut [u8], row: usize, col: usize, outer: usize) {
        for (r, c) in rows[col..]
            .chunks(row)
            .zip(packed.as_chunks_mut::<N>().0)
            .take(outer)
        {
            c.copy_from_slice(&r[..N]);
        }
    }
    match chunk {
        4 => fixed::<4>(rows, packed, row, col, outer),
        8 => fixed::<8>(rows, packed, row, col, outer),
        12 => fixed::<12>(rows, packed, row, col, outer),
        16 => fixed::<16>(rows, packed, row, col, outer),
        _ => {
            for (o, dst) in packed.chunks_exact_mut(chunk).take(outer).enumerate() {
                let at = o * row + col;
                dst.copy_from_slice(&rows[at..at + chunk]);
            }
        }
    }
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
            take(x.data, y.data, chunk, row, col, outer);
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

    /// Every chunk width (the fixed-size copies and the general one) against an element
    /// by element concat, and split as its inverse.
    #[test]
    fn chunk_widths_round_trip() {
        let outer = 7;
        for widths in [[1, 1, 1], [2, 1, 3], [4, 5, 1], [3, 3, 6]] {
            let parts: std::vec::Vec<std::vec::Vec<f32>> = widths
                .iter()
                .enumerate()
                .map(|(i, &w)| (0..outer * w).map(|v| (i * 100 + v) as f32).collect())
                .collect();
            let total: usize = widths.iter().sum();
            let shape = |w: usize| Shape::new(&[outer, w, 1]).unwrap();
            let ins: std::vec::Vec<_> = parts
                .iter()
                .zip(widths)
                .map(|(p, w)| {
                    Some(TensorRef {
                        dtype: DType::F32,
                        shape: shape(w),
                        data: bytemuck::cast_slice(p),
                    })
                })
                .collect();
            let mut y = std::vec![0f32; outer * total];
            let mut outs = [TensorMut {
                dtype: DType::F32,
                shape: shape(total),
                data: bytemuck::cast_slice_mut(&mut y),
            }];
            run_concat(&AxisParams { axis: 1 }, &ins, &mut outs).unwrap();
            let want: std::vec::Vec<f32> = (0..outer)
                .flat_map(|o| {
                    parts
                        .iter()
                        .zip(widths)
                        .flat_map(move |(p, w)| p[o * w..(o + 1) * w].iter().copied())
                })
                .collect();
            assert_eq!(y, want, "{widths:?}");
            let mut back: std::vec::Vec<std::vec::Vec<f32>> =
                widths.iter().map(|&w| std::vec![0f32; outer * w]).collect();
            let x = [Some(TensorRef {
                dtype: DType::F32,
                shape: shape(total),
                data: bytemuck::cast_slice(&y),
            })];
            let mut outs: std::vec::Vec<_> = back
                .iter_mut()
                .zip(widths)
                .map(|(b, w)| TensorMut {
                    dtype: DType::F32,
                    shape: shape(w),
                    data: bytemuck::cast_slice_mut(b),
                })
                .collect();
            run_split(&AxisParams { axis: 1 }, &x, &mut outs).unwrap();
            assert_eq!(back, parts, "{widths:?}");
        }
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
