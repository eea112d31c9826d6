//! Order-dependent reductions along an axis: TopK (selection, no scratch memory) and
//! cumulative sum / product.

use ge_runtime::format::{CumulativeParams, DType, TensorMut, TensorRef, TopKParams};

use super::cast::Scalar;
use super::copy::checked_len;
use super::{KernelError, KernelResult, input, output};

/// (outer, axis length, inner) of `dims` around `axis`.
fn split(dims: &[usize], axis: usize) -> (usize, usize, usize) {
    (
        dims[..axis].iter().product(),
        dims[axis],
        dims[axis + 1..].iter().product(),
    )
}

/// True when element (a, ia) comes before (b, ib) in TopK order: larger (or smaller) value
/// first, NaN counted as the largest, ties by the lower index.
#[inline]
fn before<T: Scalar>(a: T, ia: usize, b: T, ib: usize, largest: bool) -> bool {
    let (an, bn) = (a.nan(), b.nan());
    let ord = if an || bn {
        match (an, bn) {
            (true, true) => core::cmp::Ordering::Equal,
            (true, false) => core::cmp::Ordering::Greater,
            _ => core::cmp::Ordering::Less,
        }
    } else {
        a.partial_cmp(&b).unwrap_or(core::cmp::Ordering::Equal)
    };
    let ord = if largest { ord.reverse() } else { ord };
    match ord {
        core::cmp::Ordering::Less => true,
        core::cmp::Ordering::Greater => false,
        core::cmp::Ordering::Equal => ia < ib,
    }
}

fn top_k_t<T: Scalar>(
    p: &TopKParams,
    x: &TensorRef<'_>,
    v: &mut TensorMut<'_>,
    ix: &mut [i64],
) -> Result<(), KernelError> {
    let xs = x.as_slice::<T>()?;
    let vs = v.as_slice_mut::<T>()?;
    let (outer, n, inner) = split(x.shape.dims(), p.axis as usize);
    let k = p.k as usize;
    let largest = p.largest != 0;
    if vs.len() != outer * k * inner || ix.len() != vs.len() || xs.len() != outer * n * inner {
        return Err(KernelError::Shape("TopK output shapes do not match"));
    }
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| xs[(o * n + j) * inner + i];
            let mut prev: Option<(T, usize)> = None;
            for r in 0..k {
                let mut best: Option<(T, usize)> = None;
                for j in 0..n {
                    let e = at(j);
                    if let Some((pv, pi)) = prev
                        && !before(pv, pi, e, j, largest)
                    {
                        continue; // already taken
                    }
                    if best.is_none_or(|(bv, bi)| before(e, j, bv, bi, largest)) {
                        best = Some((e, j));
                    }
                }
                let (bv, bi) = best.ok_or(KernelError::Shape("k exceeds the axis length"))?;
                let out = (o * k + r) * inner + i;
                vs[out] = bv;
                ix[out] = bi as i64;
                prev = Some((bv, bi));
            }
        }
    }
    Ok(())
}

/// TopK: values (input dtype) and int64 indices of the `k` largest / smallest elements
/// along `axis`, sorted, ties by lower index. Numeric dtypes except halves.
pub fn run_top_k(
    p: &TopKParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "TopK input")?;
    if outs.len() < 2 {
        return Err(KernelError::MissingTensor("TopK indices output"));
    }
    let (vo, io) = outs.split_at_mut(1);
    let (v, i) = (&mut vo[0], &mut io[0]);
    let axis = p.axis as usize;
    let xd = x.shape.dims();
    if axis >= xd.len() || p.k as usize > xd[axis] || v.dtype != x.dtype || i.dtype != DType::I64 {
        return Err(KernelError::Shape("TopK axis, k or output dtypes invalid"));
    }
    let mut want = [0usize; ge_runtime::format::MAX_RANK];
    want[..xd.len()].copy_from_slice(xd);
    want[axis] = p.k as usize;
    if v.shape.dims() != &want[..xd.len()] || i.shape.dims() != v.shape.dims() {
        return Err(KernelError::Shape("TopK output shapes do not match"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    checked_len(&v.shape, v.dtype, v.data.len())?;
    let ix = i.as_slice_mut::<i64>()?;
    match x.dtype {
        DType::F32 => top_k_t::<f32>(p, x, v, ix)?,
        DType::F64 => top_k_t::<f64>(p, x, v, ix)?,
        DType::I8 => top_k_t::<i8>(p, x, v, ix)?,
        DType::I16 => top_k_t::<i16>(p, x, v, ix)?,
        DType::I32 => top_k_t::<i32>(p, x, v, ix)?,
        DType::I64 => top_k_t::<i64>(p, x, v, ix)?,
        DType::U8 => top_k_t::<u8>(p, x, v, ix)?,
        DType::U16 => top_k_t::<u16>(p, x, v, ix)?,
        DType::U32 => top_k_t::<u32>(p, x, v, ix)?,
        DType::U64 => top_k_t::<u64>(p, x, v, ix)?,
        _ => return Err(KernelError::UnsupportedDType("TopK on this element type")),
    };
    Ok(())
}

trait Acc: Copy + bytemuck::Pod + ge_runtime::format::Element {
    const ZERO: Self;
    const ONE: Self;
    fn add(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
}

macro_rules! acc_int {
    ($($t:ty),*) => {$(
        impl Acc for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            fn add(self, b: Self) -> Self { self.wrapping_add(b) }
            fn mul(self, b: Self) -> Self { self.wrapping_mul(b) }
        }
    )*};
}
acc_int!(i8, i16, i32, i64, u8, u16, u32, u64);
macro_rules! acc_float {
    ($($t:ty),*) => {$(
        impl Acc for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            fn add(self, b: Self) -> Self { self + b }
            fn mul(self, b: Self) -> Self { self * b }
        }
    )*};
}
acc_float!(f32, f64);

fn cumulative_t<T: Acc>(
    p: &CumulativeParams,
    x: &TensorRef<'_>,
    y: &mut TensorMut<'_>,
) -> Result<(), KernelError> {
    let xs = x.as_slice::<T>()?;
    let ys = y.as_slice_mut::<T>()?;
    let (outer, n, inner) = split(x.shape.dims(), p.axis as usize);
    if xs.len() != outer * n * inner || ys.len() != xs.len() {
        return Err(KernelError::Shape("cumulative output shape differs"));
    }
    let prod = p.product != 0;
    for o in 0..outer {
        for i in 0..inner {
            let mut acc = if prod { T::ONE } else { T::ZERO };
            for s in 0..n {
                let j = if p.reverse != 0 { n - 1 - s } else { s };
                let at = (o * n + j) * inner + i;
                let e = xs[at];
                if p.exclusive != 0 {
                    ys[at] = acc;
                }
                acc = if prod { acc.mul(e) } else { acc.add(e) };
                if p.exclusive == 0 {
                    ys[at] = acc;
                }
            }
        }
    }
    Ok(())
}

/// CumSum / CumProd along `axis` (exclusive and reverse variants), numeric dtypes except
/// halves (which the compiler widens).
pub fn run_cumulative(
    p: &CumulativeParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "cumulative input")?;
    let y = output(outs, 0, "cumulative output")?;
    if p.axis as usize >= x.shape.rank() || x.shape.dims() != y.shape.dims() || x.dtype != y.dtype {
        return Err(KernelError::Shape(
            "cumulative axis, shape or dtype invalid",
        ));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    match x.dtype {
        DType::F32 => cumulative_t::<f32>(p, x, y)?,
        DType::F64 => cumulative_t::<f64>(p, x, y)?,
        DType::I8 => cumulative_t::<i8>(p, x, y)?,
        DType::I16 => cumulative_t::<i16>(p, x, y)?,
        DType::I32 => cumulative_t::<i32>(p, x, y)?,
        DType::I64 => cumulative_t::<i64>(p, x, y)?,
        DType::U8 => cumulative_t::<u8>(p, x, y)?,
        DType::U16 => cumulative_t::<u16>(p, x, y)?,
        DType::U32 => cumulative_t::<u32>(p, x, y)?,
        DType::U64 => cumulative_t::<u64>(p, x, y)?,
        _ => {
            return Err(KernelError::UnsupportedDType(
                "cumulative op on this element type",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{t, tm};
    use super::*;

    #[test]
    fn top_k_largest_and_smallest_with_ties() {
        // x = [[0,1,2,3],[4,5,6,7],[8,9,10,11]], k=3 along axis 1
        let x: [f32; 12] = core::array::from_fn(|i| i as f32);
        let (mut v, mut i) = ([0f32; 9], [0i64; 9]);
        run_top_k(
            &TopKParams {
                axis: 1,
                k: 3,
                largest: 1,
                reserved: 0,
            },
            &[Some(t(&[3, 4], &x))],
            &mut [tm(&[3, 3], &mut v), tm(&[3, 3], &mut i)],
        )
        .unwrap();
        assert_eq!(v, [3.0, 2.0, 1.0, 7.0, 6.0, 5.0, 11.0, 10.0, 9.0]);
        assert_eq!(i, [3, 2, 1, 3, 2, 1, 3, 2, 1]);
        // ties resolve to the lower index; smallest first
        let x = [2i32, 1, 1, 2];
        let (mut v, mut i) = ([0i32; 3], [0i64; 3]);
        run_top_k(
            &TopKParams {
                axis: 0,
                k: 3,
                largest: 0,
                reserved: 0,
            },
            &[Some(t(&[4], &x))],
            &mut [tm(&[3], &mut v), tm(&[3], &mut i)],
        )
        .unwrap();
        assert_eq!((v, i), ([1, 1, 2], [1, 2, 0]));
    }

    #[test]
    fn cumsum_variants() {
        let x = [1.0f64, 2.0, 3.0, 4.0, 5.0];
        let mut y = [0f64; 5];
        let p = |exclusive, reverse, product| CumulativeParams {
            axis: 0,
            exclusive,
            reverse,
            product,
        };
        let mut run = |pp: CumulativeParams| {
            run_cumulative(&pp, &[Some(t(&[5], &x))], &mut [tm(&[5], &mut y)]).unwrap();
            y
        };
        assert_eq!(run(p(0, 0, 0)), [1.0, 3.0, 6.0, 10.0, 15.0]);
        assert_eq!(run(p(1, 0, 0)), [0.0, 1.0, 3.0, 6.0, 10.0]);
        assert_eq!(run(p(0, 1, 0)), [15.0, 14.0, 12.0, 9.0, 5.0]);
        assert_eq!(run(p(1, 1, 0)), [14.0, 12.0, 9.0, 5.0, 0.0]);
        assert_eq!(run(p(0, 0, 1)), [1.0, 2.0, 6.0, 24.0, 120.0]);
        assert_eq!(run(p(1, 1, 1)), [120.0, 60.0, 20.0, 5.0, 1.0]);
    }
}
