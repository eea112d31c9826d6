//! Gather along an axis.

use ge_runtime::format::{AxisParams, DType, TensorMut, TensorRef};

use super::copy::checked_len;
use super::{KernelError, KernelResult, input, output};

/// Gather: `out = data[:axis] ++ indices.shape ++ data[axis+1:]`; indices are i64 or i32,
/// negative ones count from the end, out-of-range ones are an error. Any data dtype.
pub fn run_gather(
    p: &AxisParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "gather data")?;
    let idx = input(ins, 1, "gather indices")?;
    let y = output(outs, 0, "gather output")?;
    if x.dtype != y.dtype {
        return Err(KernelError::Shape("gather changes the dtype"));
    }
    let axis = p.axis as usize;
    let xd = x.shape.dims();
    if axis >= xd.len() {
        return Err(KernelError::BadParams("gather axis out of range"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    let total = checked_len(&y.shape, y.dtype, y.data.len())?;
    let nidx = checked_len(&idx.shape, idx.dtype, idx.data.len())?;
    // Expected output shape.
    let (yd, id) = (y.shape.dims(), idx.shape.dims());
    if yd.len() != xd.len() - 1 + id.len()
        || yd[..axis] != xd[..axis]
        || yd[axis..axis + id.len()] != *id
        || yd[axis + id.len()..] != xd[axis + 1..]
    {
        return Err(KernelError::Shape(
            "gather output shape does not match data and indices",
        ));
    }
    let dim = xd[axis];
    let outer: usize = xd[..axis].iter().product();
    let inner = xd[axis + 1..].iter().product::<usize>() * x.dtype.size();
    let (i64s, i32s) = match idx.dtype {
        DType::I64 => (idx.as_slice::<i64>()?, &[][..]),
        DType::I32 => (&[][..], idx.as_slice::<i32>()?),
        _ => {
            return Err(KernelError::UnsupportedDType(
                "gather indices must be int64 or int32",
            ));
        }
    };
    if total == 0 {
        return Ok(());
    }
    let mut at = 0usize;
    for o in 0..outer {
        let base = o * dim * inner;
        for j in 0..nidx {
            let raw = if i64s.is_empty() {
                i32s[j] as i64
            } else {
                i64s[j]
            };
            let v = if raw < 0 {
                raw.wrapping_add(dim as i64)
            } else {
                raw
            };
            if v < 0 || v >= dim as i64 {
                return Err(KernelError::BadParams("gather index out of range"));
            }
            let s = base + v as usize * inner;
            y.data[at..at + inner].copy_from_slice(&x.data[s..s + inner]);
            at += inner;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use ge_runtime::format::Shape;

    #[test]
    fn gathers_rows_and_columns() {
        // data [3,2]; indices [[0,1],[1,2]] on axis 0 -> [2,2,2]
        let x = [1.0f32, 1.2, 2.3, 3.4, 4.5, 5.7];
        let ind = [0i64, 1, 1, 2];
        let mut y = [0f32; 8];
        let ins = [
            Some(TensorRef {
                dtype: DType::F32,
                shape: Shape::new(&[3, 2]).unwrap(),
                data: bytemuck::cast_slice(&x),
            }),
            Some(TensorRef {
                dtype: DType::I64,
                shape: Shape::new(&[2, 2]).unwrap(),
                data: bytemuck::cast_slice(&ind),
            }),
        ];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[2, 2, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_gather(&AxisParams { axis: 0 }, &ins, &mut outs).unwrap();
        assert_eq!(y, [1.0, 1.2, 2.3, 3.4, 2.3, 3.4, 4.5, 5.7]);
        // axis 1 with i32 negative index, scalar-shaped indices
        let ind = [-1i32];
        let mut y = [0f32; 3];
        let ins = [
            Some(TensorRef {
                dtype: DType::F32,
                shape: Shape::new(&[3, 2]).unwrap(),
                data: bytemuck::cast_slice(&x),
            }),
            Some(TensorRef {
                dtype: DType::I32,
                shape: Shape::new(&[]).unwrap(),
                data: bytemuck::cast_slice(&ind),
            }),
        ];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[3]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_gather(&AxisParams { axis: 1 }, &ins, &mut outs).unwrap();
        assert_eq!(y, [1.2, 3.4, 5.7]);
        // out of range
        let ind = [2i32];
        let ins = [
            ins[0],
            Some(TensorRef {
                dtype: DType::I32,
                shape: Shape::new(&[]).unwrap(),
                data: bytemuck::cast_slice(&ind),
            }),
        ];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[3]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_gather(&AxisParams { axis: 1 }, &ins, &mut outs).is_err());
        let ind = [-3i32];
        let ins = [
            ins[0],
            Some(TensorRef {
                dtype: DType::I32,
                shape: Shape::new(&[]).unwrap(),
                data: bytemuck::cast_slice(&ind),
            }),
        ];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[3]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_gather(&AxisParams { axis: 1 }, &ins, &mut outs).is_err());
    }
}
