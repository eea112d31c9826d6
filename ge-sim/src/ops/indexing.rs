//! Index-driven data movement: GatherElements, GatherND, ScatterElements, ScatterND.
//! Elements are moved as raw bytes (any dtype); scatter reductions are typed. Indices are
//! i64 or i32, negative ones count from the end, out-of-range ones are an error.

use ge_runtime::format::{
    AxisParams, DType, MAX_RANK, ScatterParams, ScatterReduction, TensorMut, TensorRef,
};

use super::copy::checked_len;
use super::{KernelError, KernelResult, input, output};

const RANGE: KernelError = KernelError::Shape("index out of range");

/// Index `i` of an i64 / i32 index tensor, normalized against `dim`.
fn index_at(idx: &TensorRef<'_>, i: usize, dim: usize) -> Result<usize, KernelError> {
    let v = match idx.dtype {
        DType::I64 => {
            let b = idx.data.get(i * 8..i * 8 + 8).ok_or(RANGE)?;
            i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        }
        DType::I32 => {
            let b = idx.data.get(i * 4..i * 4 + 4).ok_or(RANGE)?;
            i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64
        }
        _ => {
            return Err(KernelError::UnsupportedDType(
                "indices must be int64 or int32",
            ));
        }
    };
    let d = dim as i64;
    let v = if v < 0 { v + d } else { v };
    if v < 0 || v >= d {
        return Err(RANGE);
    }
    Ok(v as usize)
}

/// Row-major strides of `dims`.
fn strides(dims: &[usize]) -> [usize; MAX_RANK] {
    let mut s = [0usize; MAX_RANK];
    let mut acc = 1usize;
    for i in (0..dims.len()).rev() {
        s[i] = acc;
        acc = acc.saturating_mul(dims[i]);
    }
    s
}

/// Calls `f(flat, coords)` for every position of `dims` in row-major order.
fn for_each_index(
    dims: &[usize],
    mut f: impl FnMut(usize, &[usize]) -> Result<(), KernelError>,
) -> Result<(), KernelError> {
    let n: usize = dims.iter().product();
    let mut c = [0usize; MAX_RANK];
    let r = dims.len();
    for flat in 0..n {
        f(flat, &c[..r])?;
        for d in (0..r).rev() {
            c[d] += 1;
            if c[d] < dims[d] {
                break;
            }
            c[d] = 0;
        }
    }
    Ok(())
}

fn copy_elem(
    dst: &mut [u8],
    di: usize,
    src: &[u8],
    si: usize,
    es: usize,
) -> Result<(), KernelError> {
    let s = src.get(si * es..si * es + es).ok_or(RANGE)?;
    dst.get_mut(di * es..di * es + es)
        .ok_or(RANGE)?
        .copy_from_slice(s);
    Ok(())
}

/// GatherElements: `out` has the indices' shape; `out[p] = data[p with axis := idx[p]]`.
pub fn run_gather_elements(
    p: &AxisParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "GatherElements data")?;
    let idx = input(ins, 1, "GatherElements indices")?;
    let y = output(outs, 0, "GatherElements output")?;
    let axis = p.axis as usize;
    let (xd, id) = (x.shape.dims(), idx.shape.dims());
    if x.dtype != y.dtype || y.shape.dims() != id || xd.len() != id.len() || axis >= xd.len() {
        return Err(KernelError::Shape(
            "GatherElements shapes or dtypes do not match",
        ));
    }
    if xd
        .iter()
        .zip(id)
        .enumerate()
        .any(|(i, (&a, &b))| i != axis && b > a)
    {
        return Err(KernelError::Shape("GatherElements indices exceed the data"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    checked_len(&y.shape, y.dtype, y.data.len())?;
    checked_len(&idx.shape, idx.dtype, idx.data.len())?;
    let xs = strides(xd);
    let es = x.dtype.size();
    let dim = xd[axis];
    for_each_index(id, |flat, c| {
        let mut off = 0usize;
        for (d, &ci) in c.iter().enumerate() {
            let v = if d == axis {
                index_at(idx, flat, dim)?
            } else {
                ci
            };
            off += v * xs[d];
        }
        copy_elem(y.data, flat, x.data, off, es)
    })?;
    Ok(())
}

/// GatherND with `p.axis` batch dims: `out = indices.shape[..-1] ++ data.shape[b + k..]`.
pub fn run_gather_nd(
    p: &AxisParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "GatherND data")?;
    let idx = input(ins, 1, "GatherND indices")?;
    let y = output(outs, 0, "GatherND output")?;
    let b = p.axis as usize;
    let (xd, id) = (x.shape.dims(), idx.shape.dims());
    let q = id.len();
    if q == 0 || x.dtype != y.dtype || b >= q || b > xd.len() || xd[..b] != id[..b] {
        return Err(KernelError::Shape("GatherND shapes do not match"));
    }
    let k = id[q - 1];
    if b + k > xd.len() {
        return Err(KernelError::Shape(
            "GatherND index tuples are longer than the data rank",
        ));
    }
    let yd = y.shape.dims();
    if yd.len() != q - 1 + xd.len() - b - k
        || yd[..q - 1] != id[..q - 1]
        || yd[q - 1..] != xd[b + k..]
    {
        return Err(KernelError::Shape("GatherND output shape does not match"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    checked_len(&y.shape, y.dtype, y.data.len())?;
    checked_len(&idx.shape, idx.dtype, idx.data.len())?;
    let es = x.dtype.size();
    let slice: usize = xd[b + k..].iter().product();
    let batch: usize = xd[..b].iter().product();
    let per_batch_data: usize = xd[b..].iter().product();
    let tuples_per_batch: usize = id[b..q - 1].iter().product();
    let xs = strides(&xd[b..]);
    for bi in 0..batch {
        for j in 0..tuples_per_batch {
            let t = bi * tuples_per_batch + j;
            let mut off = bi * per_batch_data;
            for m in 0..k {
                off += index_at(idx, t * k + m, xd[b + m])? * xs[m];
            }
            let src = x.data.get(off * es..(off + slice) * es).ok_or(RANGE)?;
            y.data
                .get_mut(t * slice * es..(t + 1) * slice * es)
                .ok_or(RANGE)?
                .copy_from_slice(src);
        }
    }
    Ok(())
}

/// Combines `old` and `new` per the reduction (typed).
trait Combine: Copy + PartialOrd + bytemuck::Pod {
    fn add(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
}

macro_rules! combine_int {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            fn add(self, b: Self) -> Self { self.wrapping_add(b) }
            fn mul(self, b: Self) -> Self { self.wrapping_mul(b) }
        }
    )*};
}
combine_int!(i8, i16, i32, i64, u8, u16, u32, u64);
impl Combine for f32 {
    fn add(self, b: Self) -> Self {
        self + b
    }
    fn mul(self, b: Self) -> Self {
        self * b
    }
}
impl Combine for f64 {
    fn add(self, b: Self) -> Self {
        self + b
    }
    fn mul(self, b: Self) -> Self {
        self * b
    }
}

fn combine_t<T: Combine>(
    red: ScatterReduction,
    dst: &mut [u8],
    di: usize,
    src: &[u8],
    si: usize,
) -> Result<(), KernelError> {
    let es = core::mem::size_of::<T>();
    let s = src.get(si * es..si * es + es).ok_or(RANGE)?;
    let d = dst.get_mut(di * es..di * es + es).ok_or(RANGE)?;
    let new: T = bytemuck::pod_read_unaligned(s);
    let old: T = bytemuck::pod_read_unaligned(d);
    let v = match red {
        ScatterReduction::None => new,
        ScatterReduction::Add => old.add(new),
        ScatterReduction::Mul => old.mul(new),
        ScatterReduction::Max => {
            if new > old {
                new
            } else {
                old
            }
        }
        ScatterReduction::Min => {
            if new < old {
                new
            } else {
                old
            }
        }
    };
    d.copy_from_slice(bytemuck::bytes_of(&v));
    Ok(())
}

/// Writes update element `si` into output element `di`, combining per `red`.
fn combine(
    red: ScatterReduction,
    dtype: DType,
    dst: &mut [u8],
    di: usize,
    src: &[u8],
    si: usize,
) -> Result<(), KernelError> {
    if red == ScatterReduction::None {
        return copy_elem(dst, di, src, si, dtype.size());
    }
    match dtype {
        DType::F32 => combine_t::<f32>(red, dst, di, src, si),
        DType::F64 => combine_t::<f64>(red, dst, di, src, si),
        DType::I8 => combine_t::<i8>(red, dst, di, src, si),
        DType::I16 => combine_t::<i16>(red, dst, di, src, si),
        DType::I32 => combine_t::<i32>(red, dst, di, src, si),
        DType::I64 => combine_t::<i64>(red, dst, di, src, si),
        DType::U8 => combine_t::<u8>(red, dst, di, src, si),
        DType::U16 => combine_t::<u16>(red, dst, di, src, si),
        DType::U32 => combine_t::<u32>(red, dst, di, src, si),
        DType::U64 => combine_t::<u64>(red, dst, di, src, si),
        _ => Err(KernelError::UnsupportedDType(
            "scatter reduction on this element type",
        )),
    }
}

/// Checks a scatter's operands and copies data to the output; returns the reduction.
fn scatter_prologue(
    p: &ScatterParams,
    x: &TensorRef<'_>,
    idx: &TensorRef<'_>,
    u: &TensorRef<'_>,
    y: &mut TensorMut<'_>,
) -> Result<ScatterReduction, KernelError> {
    let red = ScatterReduction::from_u32(p.reduction)
        .ok_or(KernelError::BadParams("unknown scatter reduction"))?;
    if x.dtype != y.dtype || u.dtype != x.dtype || x.shape.dims() != y.shape.dims() {
        return Err(KernelError::Shape("scatter shapes or dtypes do not match"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    checked_len(&y.shape, y.dtype, y.data.len())?;
    checked_len(&u.shape, u.dtype, u.data.len())?;
    checked_len(&idx.shape, idx.dtype, idx.data.len())?;
    y.data.copy_from_slice(x.data);
    Ok(red)
}

/// ScatterElements: `out = data`, then `out[p with axis := idx[p]] ⊕= updates[p]`.
pub fn run_scatter_elements(
    p: &ScatterParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "scatter data")?;
    let idx = input(ins, 1, "scatter indices")?;
    let u = input(ins, 2, "scatter updates")?;
    let y = output(outs, 0, "scatter output")?;
    let red = scatter_prologue(p, x, idx, u, y)?;
    let axis = p.axis as usize;
    let (xd, id) = (x.shape.dims(), idx.shape.dims());
    if u.shape.dims() != id || id.len() != xd.len() || axis >= xd.len() {
        return Err(KernelError::Shape(
            "ScatterElements indices and updates must share a shape of the data's rank",
        ));
    }
    if xd
        .iter()
        .zip(id)
        .enumerate()
        .any(|(i, (&a, &b))| i != axis && b > a)
    {
        return Err(KernelError::Shape(
            "ScatterElements indices exceed the data",
        ));
    }
    let xs = strides(xd);
    let dim = xd[axis];
    let dt = x.dtype;
    let mut n = 0u64;
    for_each_index(id, |flat, c| {
        let mut off = 0usize;
        for (d, &ci) in c.iter().enumerate() {
            let v = if d == axis {
                index_at(idx, flat, dim)?
            } else {
                ci
            };
            off += v * xs[d];
        }
        n += 1;
        combine(red, dt, y.data, off, u.data, flat)
    })?;
    Ok(())
}

/// ScatterND: `out = data`, then the slice at each index tuple ⊕= its update slice.
pub fn run_scatter_nd(
    p: &ScatterParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "scatter data")?;
    let idx = input(ins, 1, "scatter indices")?;
    let u = input(ins, 2, "scatter updates")?;
    let y = output(outs, 0, "scatter output")?;
    let red = scatter_prologue(p, x, idx, u, y)?;
    let (xd, id, ud) = (x.shape.dims(), idx.shape.dims(), u.shape.dims());
    let q = id.len();
    if q == 0 {
        return Err(KernelError::Shape("ScatterND indices need rank >= 1"));
    }
    let k = id[q - 1];
    if k > xd.len()
        || ud.len() != q - 1 + xd.len() - k
        || ud[..q - 1] != id[..q - 1]
        || ud[q - 1..] != xd[k..]
    {
        return Err(KernelError::Shape("ScatterND updates shape does not match"));
    }
    let slice: usize = xd[k..].iter().product();
    let tuples: usize = id[..q - 1].iter().product();
    let xs = strides(xd);
    let dt = x.dtype;
    for t in 0..tuples {
        let mut off = 0usize;
        for m in 0..k {
            off += index_at(idx, t * k + m, xd[m])? * xs[m];
        }
        for e in 0..slice {
            combine(red, dt, y.data, off + e, u.data, t * slice + e)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec;

    use super::super::test_util::{t, tm};
    use super::*;

    #[test]
    fn gather_elements_axis1_negative() {
        // numpy: np.take_along_axis([[1,2],[3,4]], [[0,0],[1,0]], 1) -> [[1,1],[4,3]]
        let x = [1.0f32, 2.0, 3.0, 4.0];
        let i = [0i64, 0, -1, 0];
        let mut y = [0f32; 4];
        run_gather_elements(
            &AxisParams { axis: 1 },
            &[Some(t(&[2, 2], &x)), Some(t(&[2, 2], &i))],
            &mut [tm(&[2, 2], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [1.0, 1.0, 4.0, 3.0]);
        // out of range is an error, not a panic
        let bad = [5i64, 0, 0, 0];
        let r = run_gather_elements(
            &AxisParams { axis: 1 },
            &[Some(t(&[2, 2], &x)), Some(t(&[2, 2], &bad))],
            &mut [tm(&[2, 2], &mut y)],
        );
        assert!(r.is_err());
    }

    #[test]
    fn scatter_elements_add_and_nd() {
        // data [[1,2,3,4,5]], indices [[1,3]], updates [[1.1,2.1]], axis 1, add
        let x = [1.0f32, 2.0, 3.0, 4.0, 5.0];
        let i = [1i64, 3];
        let u = [1.1f32, 2.1];
        let mut y = [0f32; 5];
        run_scatter_elements(
            &ScatterParams {
                axis: 1,
                reduction: ScatterReduction::Add as u32,
            },
            &[
                Some(t(&[1, 5], &x)),
                Some(t(&[1, 2], &i)),
                Some(t(&[1, 2], &u)),
            ],
            &mut [tm(&[1, 5], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [1.0, 3.1, 3.0, 6.1, 5.0]);
        // ScatterND: data [1..8], indices [[4],[3],[1],[7]], updates [9,10,11,12]
        let x: vec::Vec<i32> = (1..=8).collect();
        let i = [4i64, 3, 1, 7];
        let u = [9i32, 10, 11, 12];
        let mut y = [0i32; 8];
        run_scatter_nd(
            &ScatterParams {
                axis: 0,
                reduction: ScatterReduction::None as u32,
            },
            &[Some(t(&[8], &x)), Some(t(&[4, 1], &i)), Some(t(&[4], &u))],
            &mut [tm(&[8], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [1, 11, 3, 10, 9, 6, 7, 12]);
    }

    #[test]
    fn gather_nd_batch() {
        // data [[[0,1],[2,3]],[[4,5],[6,7]]], indices [[1],[0]], batch_dims 1 -> [[2,3],[4,5]]
        let x: vec::Vec<i32> = (0..8).collect();
        let i = [1i64, 0];
        let mut y = [0i32; 4];
        run_gather_nd(
            &AxisParams { axis: 1 },
            &[Some(t(&[2, 2, 2], &x)), Some(t(&[2, 1], &i))],
            &mut [tm(&[2, 2], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [2, 3, 4, 5]);
    }
}
