//! MatMul: batch broadcasting over the GEMM core (f32), and the element-wise reference for
//! other element types; the Gemm a plain MatMul is.

use super::*;

/// MatMul geometry: batch shapes (as [`Shape`]s) and the matrix sizes.
pub(crate) struct MatMulDims {
    pub(crate) a_batch: Shape,
    pub(crate) b_batch: Shape,
    pub(crate) y_batch: Shape,
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) k: usize,
}

pub(crate) fn matmul_dims(a: &Shape, b: &Shape, y: &Shape) -> Result<MatMulDims, KernelError> {
    let (ad, bd, yd) = (a.dims(), b.dims(), y.dims());
    if ad.is_empty() || bd.is_empty() {
        return Err(KernelError::Shape("matmul operands must have rank >= 1"));
    }
    let (m, k, ab) = if ad.len() == 1 {
        (1, ad[0], &ad[..0])
    } else {
        (ad[ad.len() - 2], ad[ad.len() - 1], &ad[..ad.len() - 2])
    };
    let (k2, n, bb) = if bd.len() == 1 {
        (bd[0], 1, &bd[..0])
    } else {
        (bd[bd.len() - 2], bd[bd.len() - 1], &bd[..bd.len() - 2])
    };
    if k != k2 {
        return Err(KernelError::Shape("matmul inner dimensions differ"));
    }
    let nb = ab.len().max(bb.len());
    let tail = usize::from(ad.len() > 1) + usize::from(bd.len() > 1);
    if yd.len() != nb + tail {
        return Err(KernelError::Shape("matmul output rank is wrong"));
    }
    let yb = &yd[..nb];
    let mut expect = [m, n];
    let want: &[usize] = match (ad.len() > 1, bd.len() > 1) {
        (true, true) => &expect[..],
        (true, false) => &expect[..1],
        (false, true) => {
            expect[0] = n;
            &expect[..1]
        }
        (false, false) => &expect[..0],
    };
    if &yd[nb..] != want {
        return Err(KernelError::Shape("matmul output matrix shape is wrong"));
    }
    let bad = || KernelError::Shape("matmul batch shape too large");
    let (a_batch, b_batch, y_batch) = (
        Shape::new(ab).ok_or_else(bad)?,
        Shape::new(bb).ok_or_else(bad)?,
        Shape::new(yb).ok_or_else(bad)?,
    );
    // Batch dims must broadcast exactly to the output's.
    broadcast_strides(&a_batch, &y_batch)?;
    broadcast_strides(&b_batch, &y_batch)?;
    for i in 0..nb {
        let da = if i + ab.len() >= nb {
            ab[i + ab.len() - nb]
        } else {
            1
        };
        let db = if i + bb.len() >= nb {
            bb[i + bb.len() - nb]
        } else {
            1
        };
        if yb[i] != if da == 1 { db } else { da } {
            return Err(KernelError::Shape(
                "matmul batch dims do not broadcast to the output",
            ));
        }
    }
    Ok(MatMulDims {
        a_batch,
        b_batch,
        y_batch,
        m,
        n,
        k,
    })
}

/// Element offsets (in matrices) of A and B for output batch `i`.
pub(crate) fn batch_offsets(
    d: &MatMulDims,
    sa: &[usize; MAX_RANK],
    sb: &[usize; MAX_RANK],
    mut i: usize,
) -> (usize, usize) {
    let (mut oa, mut ob) = (0, 0);
    for ax in (0..d.y_batch.rank()).rev() {
        let dim = d.y_batch.dims()[ax];
        let idx = i % dim;
        i /= dim;
        oa += idx * sa[ax];
        ob += idx * sb[ax];
    }
    (oa, ob)
}

/// MatMul with numpy semantics (1-D operands, broadcast batch dims). f32 through [`sgemm`];
/// f64, i32 and i64 with a plain loop (integers wrap).
pub fn run_matmul(
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    let at = input(ins, 0, "matmul A")?;
    let bt = input(ins, 1, "matmul B")?;
    let yt = output(outs, 0, "matmul output")?;
    if at.dtype != bt.dtype || at.dtype != yt.dtype {
        return Err(KernelError::Shape("matmul operands differ in dtype"));
    }
    let d = matmul_dims(&at.shape, &bt.shape, &yt.shape)?;
    checked_len(&at.shape, at.dtype, at.data.len())?;
    checked_len(&bt.shape, bt.dtype, bt.data.len())?;
    let ny = checked_len(&yt.shape, yt.dtype, yt.data.len())?;
    let (m, n, k) = (d.m, d.n, d.k);
    let batches = d.y_batch.numel();
    if ny == 0 {
        return Ok(());
    }
    let sa = broadcast_strides(&d.a_batch, &d.y_batch)?;
    let sb = broadcast_strides(&d.b_batch, &d.y_batch)?;
    let (amat, bmat, ymat) = (m * k, k * n, m * n);
    match at.dtype {
        DType::F32 => {
            let (a, b) = (at.as_slice::<f32>()?, bt.as_slice::<f32>()?);
            let y = yt.as_slice_mut::<f32>()?;
            if d.b_batch.numel() == 1 && d.a_batch.numel() == batches && m > 0 {
                // B shared by every batch and A's batches contiguous: one tall GEMM.
                let mm = batches * m;
                let wsf = ws_f32(ws, sgemm_ws_len(mm, n, k))?;
                sgemm_on(
                    mm, n, k, 1.0, a, k, false, b, n, false, false, y, n, wsf, par,
                )?;
                return Ok(());
            }
            let wsf = ws_f32(ws, sgemm_ws_len(m, n, k))?;
            for i in 0..batches {
                let (oa, ob) = batch_offsets(&d, &sa, &sb, i);
                let a = &a[oa * amat..(oa + 1) * amat];
                let b = &b[ob * bmat..(ob + 1) * bmat];
                let y = &mut y[i * ymat..(i + 1) * ymat];
                sgemm_on(
                    m, n, k, 1.0, a, k, false, b, n, false, false, y, n, wsf, par,
                )?;
            }
        }
        DType::F64 => naive_batches::<f64>(&d, &sa, &sb, at, bt, yt, |x, y| x * y, |x, y| x + y)?,
        DType::I32 => naive_batches::<i32>(
            &d,
            &sa,
            &sb,
            at,
            bt,
            yt,
            i32::wrapping_mul,
            i32::wrapping_add,
        )?,
        DType::I64 => naive_batches::<i64>(
            &d,
            &sa,
            &sb,
            at,
            bt,
            yt,
            i64::wrapping_mul,
            i64::wrapping_add,
        )?,
        _ => {
            return Err(KernelError::UnsupportedDType(
                "matmul supports float32, float64, int32, int64",
            ));
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(super) fn naive_batches<T: ge_runtime::format::Element + Default>(
    d: &MatMulDims,
    sa: &[usize; MAX_RANK],
    sb: &[usize; MAX_RANK],
    at: &TensorRef<'_>,
    bt: &TensorRef<'_>,
    yt: &mut TensorMut<'_>,
    mul: impl Fn(T, T) -> T,
    add: impl Fn(T, T) -> T,
) -> Result<(), KernelError> {
    let (a, b) = (at.as_slice::<T>()?, bt.as_slice::<T>()?);
    let y = yt.as_slice_mut::<T>()?;
    let (m, n, k) = (d.m, d.n, d.k);
    for i in 0..d.y_batch.numel() {
        let (oa, ob) = batch_offsets(d, sa, sb, i);
        let a = &a[oa * m * k..(oa + 1) * m * k];
        let b = &b[ob * k * n..(ob + 1) * k * n];
        let y = &mut y[i * m * n..(i + 1) * m * n];
        for r in 0..m {
            let yr = &mut y[r * n..(r + 1) * n];
            yr.fill(T::default());
            for p in 0..k {
                let av = a[r * k + p];
                for (yv, bv) in yr.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                    *yv = add(*yv, mul(av, *bv));
                }
            }
        }
    }
    Ok(())
}

/// The Gemm a plain MatMul is: `Y = A·B`.
pub const PLAIN_GEMM: GemmParams = GemmParams {
    trans_a: 0,
    trans_b: 0,
    alpha: 1.0,
    beta: 0.0,
    act: Activation {
        op: 0,
        alpha: 0.0,
        beta: 0.0,
    },
};
