//! Softmax, LogSoftmax and Hardmax.

use ge_runtime::format::{
    DType, Element, SoftmaxKind, SoftmaxParams, TensorMut, TensorRef, ViewError,
};

use super::real::Real;
use super::{KernelError, KernelResult, input, output};

const LAYOUT_ERR: KernelError = KernelError::Shape("softmax data does not match its shape");

/// Columns processed together when the normalized axis is not innermost.
const COLS: usize = 64;

/// Partial results kept per lane so the row loops vectorize (a fixed order: the result does
/// not depend on the ISA or the thread count).
const LANES: usize = 8;

/// The largest value of `x` (NaNs skipped, as `v > m` skips them; −∞ for none), in
/// [`LANES`] partial maxima.
#[inline(always)]
fn row_max<T: Real>(x: &[T]) -> T {
    let pick = |m: T, v: T| if v > m { v } else { m };
    let mut acc = [T::NEG_INFINITY; LANES];
    let (c, r) = x.as_chunks::<LANES>();
    for ch in c {
        for l in 0..LANES {
            acc[l] = pick(acc[l], ch[l]);
        }
    }
    r.iter()
        .copied()
        .fold(acc.into_iter().fold(T::NEG_INFINITY, pick), pick)
}

/// `Σ e^(x − m)` in [`LANES`] partial sums, `y` receiving the terms when given. The
/// exponentials are one plain map loop (the loop vectorizer if-converts `vmath::exp`'s
/// range tests; an unrolled lane loop kept it scalar), the sum a second pass.
#[inline(always)]
fn exp_sum<T: Real>(x: &[T], m: T, y: &mut [T]) -> T {
    for (o, &v) in y.iter_mut().zip(x) {
        *o = (v - m).exp();
    }
    let mut acc = [T::ZERO; LANES];
    let (c, r) = y.as_chunks::<LANES>();
    for ch in c {
        for l in 0..LANES {
            acc[l] = acc[l] + ch[l];
        }
    }
    let add = |a: T, b: T| a + b;
    acc.into_iter().fold(T::ZERO, add) + r.iter().copied().fold(T::ZERO, add)
}

/// Every contiguous row of `block` values.
#[inline(always)]
fn rows<T: Real>(kind: SoftmaxKind, x: &[T], y: &mut [T], block: usize) {
    for (xb, yb) in x.chunks_exact(block).zip(y.chunks_exact_mut(block)) {
        row(kind, xb, yb);
    }
}

/// One contiguous row in lanes (Hardmax: [`row_serial`]).
#[inline(always)]
fn row<T: Real>(kind: SoftmaxKind, x: &[T], y: &mut [T]) {
    match kind {
        SoftmaxKind::Softmax => {
            let m = row_max(x);
            let s = exp_sum(x, m, y);
            for o in y.iter_mut() {
                *o = *o / s;
            }
        }
        SoftmaxKind::LogSoftmax => {
            let m = row_max(x);
            // `y` holds the terms until the outputs overwrite them.
            let ls = exp_sum(x, m, y).ln();
            for (o, &v) in y.iter_mut().zip(x) {
                *o = (v - m) - ls;
            }
        }
        SoftmaxKind::Hardmax => row_serial(kind, x, y),
    }
}

/// One contiguous row, one running maximum and sum: the firmware's (about 1 KB less code than
/// [`row`]'s lane form, which is 6× faster on the host) and Hardmax's (the first maximum wins).
fn row_serial<T: Real>(kind: SoftmaxKind, x: &[T], y: &mut [T]) {
    let mut m = T::NEG_INFINITY;
    let mut arg = 0;
    for (k, &v) in x.iter().enumerate() {
        if v > m {
            m = v;
            arg = k;
        }
    }
    match kind {
        SoftmaxKind::Softmax => {
            let mut s = T::ZERO;
            for (o, &v) in y.iter_mut().zip(x) {
                let e = (v - m).exp();
                *o = e;
                s = s + e;
            }
            for o in y.iter_mut() {
                *o = *o / s;
            }
        }
        SoftmaxKind::LogSoftmax => {
            let mut s = T::ZERO;
            for &v in x {
                s = s + (v - m).exp();
            }
            let ls = s.ln();
            for (o, &v) in y.iter_mut().zip(x) {
                *o = (v - m) - ls;
            }
        }
        SoftmaxKind::Hardmax => {
            for (k, o) in y.iter_mut().enumerate() {
                *o = if k == arg { T::ONE } else { T::ZERO };
            }
        }
    }
}

/// One `[n, inner]` block normalized along `n`, a few columns at a time.
fn strided<T: Real>(
    kind: SoftmaxKind,
    x: &[T],
    y: &mut [T],
    n: usize,
    inner: usize,
) -> Result<(), KernelError> {
    let mut i0 = 0;
    while i0 < inner {
        let w = COLS.min(inner - i0);
        let at = |k: usize| k * inner + i0..k * inner + i0 + w;
        let mut mbuf = [T::NEG_INFINITY; COLS];
        let mut sbuf = [T::ZERO; COLS];
        let mut abuf = [0usize; COLS];
        let (m, s, arg) = (&mut mbuf[..w], &mut sbuf[..w], &mut abuf[..w]);
        for k in 0..n {
            let xr = x.get(at(k)).ok_or(LAYOUT_ERR)?;
            for ((mm, a), &v) in m.iter_mut().zip(arg.iter_mut()).zip(xr) {
                if v > *mm {
                    *mm = v;
                    *a = k;
                }
            }
        }
        match kind {
            SoftmaxKind::Softmax => {
                for k in 0..n {
                    let xr = x.get(at(k)).ok_or(LAYOUT_ERR)?;
                    let yr = y.get_mut(at(k)).ok_or(LAYOUT_ERR)?;
                    for (((o, &v), &mm), ss) in
                        yr.iter_mut().zip(xr).zip(m.iter()).zip(s.iter_mut())
                    {
                        let e = (v - mm).exp();
                        *o = e;
                        *ss = *ss + e;
                    }
                }
                for k in 0..n {
                    let yr = y.get_mut(at(k)).ok_or(LAYOUT_ERR)?;
                    for (o, &ss) in yr.iter_mut().zip(s.iter()) {
                        *o = *o / ss;
                    }
                }
            }
            SoftmaxKind::LogSoftmax => {
                for k in 0..n {
                    let xr = x.get(at(k)).ok_or(LAYOUT_ERR)?;
                    for ((&v, &mm), ss) in xr.iter().zip(m.iter()).zip(s.iter_mut()) {
                        *ss = *ss + (v - mm).exp();
                    }
                }
                for ss in s.iter_mut() {
                    *ss = ss.ln();
                }
                for k in 0..n {
                    let xr = x.get(at(k)).ok_or(LAYOUT_ERR)?;
                    let yr = y.get_mut(at(k)).ok_or(LAYOUT_ERR)?;
                    for (((o, &v), &mm), &ls) in yr.iter_mut().zip(xr).zip(m.iter()).zip(s.iter()) {
                        *o = (v - mm) - ls;
                    }
                }
            }
            SoftmaxKind::Hardmax => {
                for k in 0..n {
                    let yr = y.get_mut(at(k)).ok_or(LAYOUT_ERR)?;
                    for (o, &a) in yr.iter_mut().zip(arg.iter()) {
                        *o = if a == k { T::ONE } else { T::ZERO };
                    }
                }
            }
        }
        i0 += w;
    }
    Ok(())
}

fn softmax_t<T: Real>(
    kind: SoftmaxKind,
    x: &[T],
    y: &mut [T],
    (outer, n, inner): (usize, usize, usize),
) -> Result<(), KernelError> {
    let block = n.checked_mul(inner).ok_or(LAYOUT_ERR)?;
    let total = outer.checked_mul(block).ok_or(LAYOUT_ERR)?;
    if x.len() != total || y.len() != total {
        return Err(LAYOUT_ERR);
    }
    if total == 0 {
        return Ok(());
    }
    // Firmware keeps the serial rows (one copy, no lanes) and the loop as it was.
    if cfg!(feature = "std") && inner == 1 {
        crate::arch::isa::with_simd(
            #[inline(always)]
            || rows(kind, x, y, block),
        );
        return Ok(());
    }
    for (xb, yb) in x.chunks_exact(block).zip(y.chunks_exact_mut(block)) {
        if inner == 1 {
            row_serial(kind, xb, yb);
        } else {
            strided(kind, xb, yb, n, inner)?;
        }
    }
    Ok(())
}

/// Softmax / LogSoftmax / Hardmax (first maximum wins) over `axis` (or, with `coerce_2d`,
/// over all axes from `axis` on), on f32 and f64. Numerically stable (subtracts the max).
pub fn run_softmax(
    p: &SoftmaxParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    match ins.first().and_then(Option::as_ref).map(|x| x.dtype) {
        Some(DType::F64) => run_softmax_of::<f64>(p, ins, outs),
        _ => run_softmax_of::<f32>(p, ins, outs),
    }
}

/// [`run_softmax`] on element type `T` only (any other is refused), so that a binary
/// running f32 softmax alone links no f64 code.
pub fn run_softmax_of<T: Real + Element>(
    p: &SoftmaxParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let kind =
        SoftmaxKind::from_u32(p.kind).ok_or(KernelError::BadParams("unknown softmax kind"))?;
    let x = input(ins, 0, "softmax input")?;
    let y = output(outs, 0, "softmax output")?;
    if x.shape.dims() != y.shape.dims() {
        return Err(KernelError::Shape(
            "softmax output shape differs from the input's",
        ));
    }
    if x.dtype != y.dtype {
        return Err(KernelError::DType(ViewError {
            expected: x.dtype,
            found: y.dtype,
        }));
    }
    let dims = x.shape.dims();
    let axis = p.axis as usize;
    let prod = |d: &[usize]| {
        d.iter()
            .try_fold(1usize, |a, &v| a.checked_mul(v))
            .ok_or(LAYOUT_ERR)
    };
    let layout = if dims.is_empty() {
        if axis != 0 {
            return Err(KernelError::BadParams("softmax axis out of range"));
        }
        (1, 1, 1)
    } else if p.coerce_2d != 0 {
        let (lo, hi) = dims
            .split_at_checked(axis)
            .ok_or(KernelError::BadParams("softmax axis out of range"))?;
        (prod(lo)?, prod(hi)?, 1)
    } else {
        if axis >= dims.len() {
            return Err(KernelError::BadParams("softmax axis out of range"));
        }
        (prod(&dims[..axis])?, dims[axis], prod(&dims[axis + 1..])?)
    };
    if x.dtype != T::DTYPE {
        return Err(KernelError::UnsupportedDType("softmax needs f32 or f64"));
    }
    softmax_t::<T>(kind, x.as_slice::<T>()?, y.as_slice_mut::<T>()?, layout)
}

#[cfg(test)]
#[allow(clippy::excessive_precision)] // expected values pasted from numpy
mod tests {
    extern crate std;
    use super::super::test_util::*;
    use super::*;
    use std::vec::Vec;

    fn sm(kind: SoftmaxKind, axis: u32, coerce: bool, d: &[usize], x: &[f32]) -> Vec<f32> {
        let p = SoftmaxParams {
            kind: kind as u32,
            axis,
            coerce_2d: coerce as u32,
        };
        let mut y = std::vec![f32::NAN; x.len()];
        run_softmax(&p, &[Some(t(d, x))], &mut [tm(d, &mut y)]).unwrap();
        y
    }

    const X: [f32; 6] = [1.0, 2.0, 3.0, -1.0, 0.0, 5.0];

    #[test]
    fn last_axis_matches_onnx_reference() {
        #[rustfmt::skip]
        let want = [0.09003057330846786, 0.2447284609079361, 0.6652409434318542, 0.002456114860251546, 0.006676412187516689, 0.9908674955368042];
        close(
            &sm(SoftmaxKind::Softmax, 1, false, &[2, 3], &X),
            &want,
            1e-6,
        );
        close(&sm(SoftmaxKind::Softmax, 1, true, &[2, 3], &X), &want, 1e-6);
        #[rustfmt::skip]
        let want = [-2.4076058864593506, -1.4076060056686401, -0.40760597586631775, -6.009174346923828, -5.009174346923828, -0.009174461476504803];
        close(
            &sm(SoftmaxKind::LogSoftmax, 1, false, &[2, 3], &X),
            &want,
            1e-6,
        );
        // Ties: the first maximum wins.
        assert_eq!(
            sm(
                SoftmaxKind::Hardmax,
                1,
                false,
                &[2, 3],
                &[1.0, 3.0, 3.0, 2.0, 1.0, 0.0]
            ),
            [0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
        );
    }

    #[test]
    fn outer_axis_uses_strided_path() {
        #[rustfmt::skip]
        let want = [0.8807970285415649, 0.8807970285415649, 0.11920291930437088, 0.11920291930437088, 0.11920291930437088, 0.8807970285415649];
        close(
            &sm(SoftmaxKind::Softmax, 0, false, &[2, 3], &X),
            &want,
            1e-6,
        );
        assert_eq!(
            sm(
                SoftmaxKind::Hardmax,
                0,
                false,
                &[3, 2],
                &[1.0, 5.0, 4.0, 5.0, 4.0, 2.0]
            ),
            [0.0, 1.0, 1.0, 0.0, 0.0, 0.0]
        );
    }

    #[test]
    fn coerce_2d_flattens_trailing_axes() {
        let z = [0.5f32, 1.0, -1.0, 2.0, 0.0, 3.0, 1.0, 1.0];
        // numpy over the [2, 4] view.
        #[rustfmt::skip]
        let want = [0.13598890602588654, 0.224207803606987, 0.030343227088451385, 0.6094600558280945, 0.03770440071821213, 0.7573131918907166, 0.10249119251966476, 0.10249119251966476];
        close(
            &sm(SoftmaxKind::Softmax, 1, true, &[2, 2, 2], &z),
            &want,
            1e-6,
        );
        #[rustfmt::skip]
        let want = [-1.995181918144226, -1.495181918144226, -3.4951820373535156, -0.4951819181442261, -3.2779784202575684, -0.27797842025756836, -2.2779784202575684, -2.2779784202575684];
        close(
            &sm(SoftmaxKind::LogSoftmax, 1, true, &[2, 2, 2], &z),
            &want,
            1e-6,
        );
        // Without coercion axis 1 of [2, 2, 2] (onnx.reference, opset 13+).
        #[rustfmt::skip]
        let want = [0.8175745010375977, 0.26894140243530273, 0.18242552876472473, 0.7310585975646973, 0.26894140243530273, 0.8807970285415649, 0.7310585975646973, 0.11920291930437088];
        close(
            &sm(SoftmaxKind::Softmax, 1, false, &[2, 2, 2], &z),
            &want,
            1e-6,
        );
        // coerce with axis 0: one row of everything.
        let y = sm(SoftmaxKind::Softmax, 0, true, &[2, 2, 2], &z);
        close(&[y.iter().sum::<f32>()], &[1.0], 1e-6);
    }

    #[test]
    fn stable_for_large_inputs() {
        let x = [1000.0f32, 1001.0, 1002.0];
        close(
            &sm(SoftmaxKind::Softmax, 0, false, &[3], &x),
            &[0.09003057330846786, 0.2447284609079361, 0.6652409434318542],
            1e-6,
        );
        close(
            &sm(SoftmaxKind::LogSoftmax, 0, false, &[3], &x),
            &[
                -2.4076058864593506,
                -1.4076060056686401,
                -0.40760597586631775,
            ],
            1e-6,
        );
        let y = sm(SoftmaxKind::Softmax, 0, false, &[2], &[-1e30, 0.0]);
        assert_eq!(y, [0.0, 1.0]);
    }

    /// Wide inner dims (more than one column chunk) against a naive per-column softmax.
    #[test]
    fn wide_inner_matches_naive() {
        let (o, n, inner) = (2, 3, 70);
        let x: Vec<f32> = (0..o * n * inner)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.3)
            .collect();
        let y = sm(SoftmaxKind::Softmax, 1, false, &[o, n, inner], &x);
        let ly = sm(SoftmaxKind::LogSoftmax, 1, false, &[o, n, inner], &x);
        let hy = sm(SoftmaxKind::Hardmax, 1, false, &[o, n, inner], &x);
        for a in 0..o {
            for i in 0..inner {
                let at = |k: usize| a * n * inner + k * inner + i;
                let denom: f64 = (0..n).map(|k| libm::exp(x[at(k)] as f64)).sum();
                let mut best = 0;
                for k in 0..n {
                    let want = libm::exp(x[at(k)] as f64) / denom;
                    close(&[y[at(k)]], &[want as f32], 1e-6);
                    close(&[ly[at(k)]], &[libm::log(want) as f32], 1e-5);
                    if x[at(k)] > x[at(best)] {
                        best = k;
                    }
                }
                for k in 0..n {
                    assert_eq!(hy[at(k)], if k == best { 1.0 } else { 0.0 });
                }
            }
        }
    }

    #[test]
    fn f64_scalar_empty_and_errors() {
        let p = SoftmaxParams {
            kind: SoftmaxKind::Softmax as u32,
            axis: 1,
            coerce_2d: 0,
        };
        let mut y = [0f64; 2];
        run_softmax(
            &p,
            &[Some(t(&[1, 2], &[0.0f64, 0.0]))],
            &mut [tm(&[1, 2], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [0.5, 0.5]);
        let p0 = SoftmaxParams { axis: 0, ..p };
        let mut s = [0f32; 1];
        run_softmax(&p0, &[Some(t(&[], &[7.0f32]))], &mut [tm(&[], &mut s)]).unwrap();
        assert_eq!(s, [1.0]);
        let mut e: [f32; 0] = [];
        run_softmax(
            &p,
            &[Some(t::<f32>(&[3, 0], &[]))],
            &mut [tm(&[3, 0], &mut e)],
        )
        .unwrap();
        run_softmax(
            &p0,
            &[Some(t::<f32>(&[0, 3], &[]))],
            &mut [tm(&[0, 3], &mut e)],
        )
        .unwrap();
        let mut y3 = [0f32; 3];
        let bad_axis = SoftmaxParams { axis: 2, ..p };
        assert!(matches!(
            run_softmax(
                &bad_axis,
                &[Some(t(&[1, 3], &[1.0f32; 3]))],
                &mut [tm(&[1, 3], &mut y3)]
            ),
            Err(KernelError::BadParams(_))
        ));
        assert!(matches!(
            run_softmax(
                &p,
                &[Some(t(&[1, 3], &[1.0f32; 3]))],
                &mut [tm(&[3], &mut y3)]
            ),
            Err(KernelError::Shape(_))
        ));
        let bad_kind = SoftmaxParams { kind: 9, ..p };
        assert!(
            run_softmax(
                &bad_kind,
                &[Some(t(&[1, 3], &[1.0f32; 3]))],
                &mut [tm(&[1, 3], &mut y3)]
            )
            .is_err()
        );
        let mut yi = [0i32; 3];
        assert!(
            run_softmax(
                &p,
                &[Some(t(&[1, 3], &[1i32; 3]))],
                &mut [tm(&[1, 3], &mut yi)]
            )
            .is_err()
        );
    }
}
