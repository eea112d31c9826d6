//! Reductions over axes, and ArgMax/ArgMin.
//!
//! Reductions stream over the input in row-major order once, accumulating into the output
//! (which is its own keepdims-shaped accumulator, broadcast back over the reduced axes), then
//! finish each output element. Float sums along a contiguous innermost row accumulate in f64.

use ge_runtime::format::{
    ArgReduceParams, DType, MAX_RANK, ReduceOp, ReduceParams, Shape, TensorMut, TensorRef,
    ViewError,
};

use super::broadcast::for_each_row;
use super::cast::Scalar;
use super::{KernelError, KernelResult, input, output};

const LAYOUT_ERR: KernelError = KernelError::Shape("reduce data does not match its shape");

/// Folds every input element into its output slot: `out[o] = store(comb(load(out[o]),
/// map(load(x))))`, keeping the accumulator in `A` along contiguous reduced rows.
fn stream<T: Copy, A: Copy>(
    x: &[T],
    sx: &Shape,
    keep: &Shape,
    out: &mut [T],
    (load, store): (impl Fn(T) -> A, impl Fn(A) -> T),
    map: impl Fn(A) -> A,
    comb: impl Fn(A, A) -> A,
) -> Result<(), KernelError> {
    let mut bad = false;
    for_each_row(sx, [keep], |start, [oo], [os], len| {
        let Some(row) = x.get(start..start + len) else {
            bad = true;
            return;
        };
        if os == 0 {
            let Some(slot) = out.get_mut(oo) else {
                bad = true;
                return;
            };
            let mut acc = load(*slot);
            for &v in row {
                acc = comb(acc, map(load(v)));
            }
            *slot = store(acc);
        } else {
            let Some(dst) = out.get_mut(oo..oo + len) else {
                bad = true;
                return;
            };
            for (d, &v) in dst.iter_mut().zip(row) {
                *d = store(comb(load(*d), map(load(v))));
            }
        }
    })?;
    if bad { Err(LAYOUT_ERR) } else { Ok(()) }
}

#[inline]
fn max_nan(a: f64, b: f64) -> f64 {
    if a >= b || a.is_nan() { a } else { b }
}

#[inline]
fn min_nan(a: f64, b: f64) -> f64 {
    if a <= b || a.is_nan() { a } else { b }
}

/// `log(exp(a) + exp(b))`, exact at infinities.
#[inline]
fn log_add_exp(a: f64, b: f64) -> f64 {
    let m = max_nan(a, b);
    if m.is_infinite() || m.is_nan() {
        return if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            m
        };
    }
    m + libm::log1p(libm::exp(-libm::fabs(a - b)))
}

/// Reduction through f64 (all float types; L2/LogSum on integers).
fn reduce_f64<T: Scalar>(
    op: ReduceOp,
    x: &[T],
    sx: &Shape,
    keep: &Shape,
    out: &mut [T],
    count: usize,
) -> Result<(), KernelError> {
    use ReduceOp::*;
    let init = match op {
        Max => T::LOWEST,
        Min => T::HIGHEST,
        Prod => T::from_f64(1.0),
        LogSumExp => T::from_f64(f64::NEG_INFINITY),
        _ => T::from_f64(0.0),
    };
    out.fill(init);
    let (ld, st) = (T::to_f64, T::from_f64);
    let add = |a: f64, b: f64| a + b;
    match op {
        Sum | Mean | LogSum => stream(x, sx, keep, out, (ld, st), |v| v, add)?,
        Max => stream(x, sx, keep, out, (ld, st), |v| v, max_nan)?,
        Min => stream(x, sx, keep, out, (ld, st), |v| v, min_nan)?,
        Prod => stream(x, sx, keep, out, (ld, st), |v| v, |a, b| a * b)?,
        L1 => stream(x, sx, keep, out, (ld, st), libm::fabs, add)?,
        L2 | SumSquare => stream(x, sx, keep, out, (ld, st), |v| v * v, add)?,
        LogSumExp => stream(x, sx, keep, out, (ld, st), |v| v, log_add_exp)?,
    }
    let finish = |f: &dyn Fn(f64) -> f64, out: &mut [T]| {
        for v in out.iter_mut() {
            *v = T::from_f64(f(v.to_f64()));
        }
    };
    match op {
        Mean => {
            let c = count as f64;
            finish(&|v| v / c, out);
        }
        L2 => finish(&libm::sqrt, out),
        LogSum => finish(&libm::log, out),
        _ => {}
    }
    Ok(())
}

/// Reduction through i128 with wrapping (integers and bool).
fn reduce_int<T: Scalar>(
    op: ReduceOp,
    x: &[T],
    sx: &Shape,
    keep: &Shape,
    out: &mut [T],
    count: usize,
) -> Result<(), KernelError> {
    use ReduceOp::*;
    let init = match op {
        Max => T::LOWEST,
        Min => T::HIGHEST,
        Prod => T::from_i128(1),
        _ => T::from_i128(0),
    };
    out.fill(init);
    let (ld, st) = (T::to_i128, T::from_i128);
    let add = |a: i128, b: i128| a.wrapping_add(b);
    match op {
        Sum | Mean => stream(x, sx, keep, out, (ld, st), |v| v, add)?,
        Max => stream(x, sx, keep, out, (ld, st), |v| v, |a, b| a.max(b))?,
        Min => stream(x, sx, keep, out, (ld, st), |v| v, |a, b| a.min(b))?,
        Prod => stream(x, sx, keep, out, (ld, st), |v| v, |a, b| a.wrapping_mul(b))?,
        L1 => stream(x, sx, keep, out, (ld, st), |v| v.wrapping_abs(), add)?,
        SumSquare => stream(x, sx, keep, out, (ld, st), |v| v.wrapping_mul(v), add)?,
        L2 | LogSum => return reduce_f64(op, x, sx, keep, out, count),
        LogSumExp => {
            return Err(KernelError::UnsupportedDType(
                "ReduceLogSumExp needs a float input",
            ));
        }
    }
    if op == Mean {
        let c = count as i128;
        for v in out.iter_mut() {
            *v = T::from_i128(if c == 0 { 0 } else { v.to_i128() / c });
        }
    }
    Ok(())
}

fn reduce_t<T: Scalar>(
    op: ReduceOp,
    x: &[T],
    sx: &Shape,
    keep: &Shape,
    out: &mut [T],
    count: usize,
) -> Result<(), KernelError> {
    if x.len() != sx.checked_numel().ok_or(LAYOUT_ERR)?
        || out.len() != keep.checked_numel().ok_or(LAYOUT_ERR)?
    {
        return Err(LAYOUT_ERR);
    }
    if T::IS_FLOAT {
        reduce_f64(op, x, sx, keep, out, count)
    } else {
        reduce_int(op, x, sx, keep, out, count)
    }
}

/// f16 / bf16 are not reduced here (no_std, no half type in the reduction paths).
macro_rules! reduce_dispatch {
    ($dt:expr, $x:expr, $y:expr, |$xs:ident, $ys:ident| $body:expr) => {
        match $dt {
            DType::F32 => {
                let ($xs, $ys) = ($x.as_slice::<f32>()?, $y.as_slice_mut::<f32>()?);
                $body
            }
            DType::F64 => {
                let ($xs, $ys) = ($x.as_slice::<f64>()?, $y.as_slice_mut::<f64>()?);
                $body
            }
            DType::I8 => {
                let ($xs, $ys) = ($x.as_slice::<i8>()?, $y.as_slice_mut::<i8>()?);
                $body
            }
            DType::I16 => {
                let ($xs, $ys) = ($x.as_slice::<i16>()?, $y.as_slice_mut::<i16>()?);
                $body
            }
            DType::I32 => {
                let ($xs, $ys) = ($x.as_slice::<i32>()?, $y.as_slice_mut::<i32>()?);
                $body
            }
            DType::I64 => {
                let ($xs, $ys) = ($x.as_slice::<i64>()?, $y.as_slice_mut::<i64>()?);
                $body
            }
            DType::U8 => {
                let ($xs, $ys) = ($x.as_slice::<u8>()?, $y.as_slice_mut::<u8>()?);
                $body
            }
            DType::U16 => {
                let ($xs, $ys) = ($x.as_slice::<u16>()?, $y.as_slice_mut::<u16>()?);
                $body
            }
            DType::U32 => {
                let ($xs, $ys) = ($x.as_slice::<u32>()?, $y.as_slice_mut::<u32>()?);
                $body
            }
            DType::U64 => {
                let ($xs, $ys) = ($x.as_slice::<u64>()?, $y.as_slice_mut::<u64>()?);
                $body
            }
            DType::Bool => {
                let ($xs, $ys) = ($x.as_bool()?, $y.as_bool_mut()?);
                $body
            }
            _ => return Err(KernelError::UnsupportedDType("reduction element type")),
        }
    };
}

/// Reduces over the axes in `axes_mask` (none: each element alone, i.e. an elementwise
/// map). The output may be keepdims-shaped or squeezed. Every op on f32/f64; on integers
/// everything but LogSumExp (L2/LogSum via f64, truncated); Max/Min on bool. Empty
/// reductions give Sum 0, Prod 1, Max -inf (or MIN), Min +inf (or MAX).
pub fn run_reduce(
    p: &ReduceParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let Checked {
        op,
        x,
        y,
        keep,
        count,
    } = checked(p, ins, outs)?;
    reduce_dispatch!(x.dtype, x, y, |xs, ys| reduce_t(
        op, xs, &x.shape, &keep, ys, count
    )?);
    if x.dtype == DType::Bool {
        for v in y.as_bool_mut()?.iter_mut() {
            *v = (*v != 0) as u8;
        }
    }
    Ok(())
}

/// [`run_reduce`] for f32 (the registry's `Reduce/float32` entry): the same checks and
/// the same f32 code, without the other element types' (firmware links only this).
pub fn run_reduce_f32(
    p: &ReduceParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let Checked {
        op,
        x,
        y,
        keep,
        count,
    } = checked(p, ins, outs)?;
    let (xs, ys) = (x.as_slice::<f32>()?, y.as_slice_mut::<f32>()?);
    reduce_t(op, xs, &x.shape, &keep, ys, count)
}

/// A reduction's operands, checked against its params.
struct Checked<'s, 'a, 'o> {
    op: ReduceOp,
    x: &'s TensorRef<'a>,
    y: &'s mut TensorMut<'o>,
    /// The input's shape with the reduced axes at 1.
    keep: Shape,
    /// Elements reduced into each output.
    count: usize,
}

fn checked<'s, 'a, 'o>(
    p: &ReduceParams,
    ins: &'s [Option<TensorRef<'a>>],
    outs: &'s mut [TensorMut<'o>],
) -> Result<Checked<'s, 'a, 'o>, KernelError> {
    let op = ReduceOp::from_u32(p.op).ok_or(KernelError::BadParams("unknown reduce op"))?;
    let x = input(ins, 0, "reduce input")?;
    let y = output(outs, 0, "reduce output")?;
    let dims = x.shape.dims();
    let rank = dims.len();
    if p.axes_mask >> rank != 0 {
        return Err(KernelError::BadParams(
            "reduce axes_mask names an axis beyond the input rank",
        ));
    }
    let mut keep = [1usize; MAX_RANK];
    let mut squeezed = [0usize; MAX_RANK];
    let mut n_kept = 0;
    let mut count = 1usize;
    for (i, &d) in dims.iter().enumerate() {
        if p.axes_mask & (1 << i) != 0 {
            count = count.checked_mul(d).ok_or(LAYOUT_ERR)?;
        } else {
            keep[i] = d;
            squeezed[n_kept] = d;
            n_kept += 1;
        }
    }
    let yd = y.shape.dims();
    // No axes: an elementwise map, so any output of the same element count will do.
    let flat_ok = p.axes_mask == 0 && y.shape.checked_numel() == x.shape.checked_numel();
    if !flat_ok && yd != &keep[..rank] && yd != &squeezed[..n_kept] {
        return Err(KernelError::Shape(
            "reduce output shape does not match the reduced axes",
        ));
    }
    if x.dtype != y.dtype {
        return Err(KernelError::DType(ViewError {
            expected: x.dtype,
            found: y.dtype,
        }));
    }
    if x.dtype == DType::Bool && !matches!(op, ReduceOp::Max | ReduceOp::Min) {
        return Err(KernelError::UnsupportedDType(
            "only ReduceMax/ReduceMin apply to bool",
        ));
    }
    let keep = Shape::new(&keep[..rank]).ok_or(LAYOUT_ERR)?;
    Ok(Checked {
        op,
        x,
        y,
        keep,
        count,
    })
}

const ARG_COLS: usize = 64;

fn arg_t<T: Scalar>(
    x: &[T],
    out: &mut [i64],
    (outer, n, inner): (usize, usize, usize),
    argmax: bool,
    last: bool,
) -> Result<(), KernelError> {
    // Whether `v` replaces the current best `b`; NaN wins (first NaN, or last with `last`).
    let better = |v: T, b: T| -> bool {
        if b.nan() {
            return last && v.nan();
        }
        if v.nan() {
            return true;
        }
        match (argmax, last) {
            (true, false) => v > b,
            (true, true) => v >= b,
            (false, false) => v < b,
            (false, true) => v <= b,
        }
    };
    for o in 0..outer {
        let base = o * n * inner;
        let mut i0 = 0;
        while i0 < inner {
            let w = ARG_COLS.min(inner - i0);
            let first = x.get(base + i0..base + i0 + w).ok_or(LAYOUT_ERR)?;
            let mut best = [T::LOWEST; ARG_COLS];
            let mut idx = [0i64; ARG_COLS];
            best[..w].copy_from_slice(first);
            for k in 1..n {
                let s = base + k * inner + i0;
                let row = x.get(s..s + w).ok_or(LAYOUT_ERR)?;
                for ((b, i), &v) in best.iter_mut().zip(idx.iter_mut()).zip(row) {
                    if better(v, *b) {
                        *b = v;
                        *i = k as i64;
                    }
                }
            }
            let s = o * inner + i0;
            out.get_mut(s..s + w)
                .ok_or(LAYOUT_ERR)?
                .copy_from_slice(&idx[..w]);
            i0 += w;
        }
    }
    Ok(())
}

/// ArgMax (kind 1) / ArgMin (kind 2) along `axis` into i64 indices, honoring
/// `select_last_index`; NaN counts as the extreme. Inputs: f32, f64, all integers, bool.
pub fn run_arg_reduce(
    p: &ArgReduceParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let argmax = match p.kind {
        1 => true,
        2 => false,
        _ => {
            return Err(KernelError::BadParams(
                "arg reduce kind must be 1 (max) or 2 (min)",
            ));
        }
    };
    let last = p.select_last_index != 0;
    let x = input(ins, 0, "arg reduce input")?;
    let y = output(outs, 0, "arg reduce output")?;
    let dims = x.shape.dims();
    let axis = p.axis as usize;
    if axis >= dims.len() {
        return Err(KernelError::BadParams("arg reduce axis out of range"));
    }
    let prod = |d: &[usize]| {
        d.iter()
            .try_fold(1usize, |a, &v| a.checked_mul(v))
            .ok_or(LAYOUT_ERR)
    };
    let (outer, n, inner) = (prod(&dims[..axis])?, dims[axis], prod(&dims[axis + 1..])?);
    let m = outer.checked_mul(inner).ok_or(LAYOUT_ERR)?;
    if y.shape.checked_numel() != Some(m) {
        return Err(KernelError::Shape(
            "arg reduce output size does not match the input",
        ));
    }
    let out = y.as_slice_mut::<i64>()?;
    if out.len() != m
        || m.checked_mul(n).and_then(|v| v.checked_mul(x.dtype.size())) != Some(x.data.len())
    {
        return Err(LAYOUT_ERR);
    }
    if m == 0 {
        return Ok(());
    }
    if n == 0 {
        return Err(KernelError::Shape("arg reduce over an empty axis"));
    }
    let l = (outer, n, inner);
    match x.dtype {
        DType::F32 => arg_t(x.as_slice::<f32>()?, out, l, argmax, last)?,
        DType::F64 => arg_t(x.as_slice::<f64>()?, out, l, argmax, last)?,
        DType::I8 => arg_t(x.as_slice::<i8>()?, out, l, argmax, last)?,
        DType::I16 => arg_t(x.as_slice::<i16>()?, out, l, argmax, last)?,
        DType::I32 => arg_t(x.as_slice::<i32>()?, out, l, argmax, last)?,
        DType::I64 => arg_t(x.as_slice::<i64>()?, out, l, argmax, last)?,
        DType::U8 => arg_t(x.as_slice::<u8>()?, out, l, argmax, last)?,
        DType::U16 => arg_t(x.as_slice::<u16>()?, out, l, argmax, last)?,
        DType::U32 => arg_t(x.as_slice::<u32>()?, out, l, argmax, last)?,
        DType::U64 => arg_t(x.as_slice::<u64>()?, out, l, argmax, last)?,
        DType::Bool => arg_t(x.as_bool()?, out, l, argmax, last)?,
        _ => return Err(KernelError::UnsupportedDType("arg reduce element type")),
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::excessive_precision)] // expected values pasted from numpy
mod tests {
    extern crate std;
    use super::super::test_util::*;
    use super::*;
    use ge_runtime::format::Element;
    use std::vec::Vec;

    fn red<T: Element + Default + Clone>(
        op: ReduceOp,
        mask: u32,
        d: &[usize],
        x: &[T],
        od: &[usize],
    ) -> Vec<T> {
        let mut y = std::vec![T::default(); shape(od).numel()];
        run_reduce(
            &ReduceParams {
                op: op as u32,
                axes_mask: mask,
            },
            &[Some(t(d, x))],
            &mut [tm(od, &mut y)],
        )
        .unwrap();
        y
    }

    const D: [usize; 3] = [2, 3, 2];
    #[rustfmt::skip]
    const X: [f32; 12] = [1.0, -2.0, 3.0, 4.0, -5.0, 6.0, 0.5, 1.5, -2.5, 2.0, 3.0, -1.0];

    #[test]
    fn float_ops_match_numpy() {
        // keepdims and squeezed output shapes give the same values.
        assert_eq!(
            red(ReduceOp::Sum, 0b010, &D, &X, &[2, 1, 2]),
            [-1.0, 8.0, 1.0, 2.5]
        );
        assert_eq!(
            red(ReduceOp::Sum, 0b010, &D, &X, &[2, 2]),
            [-1.0, 8.0, 1.0, 2.5]
        );
        assert_eq!(
            red(ReduceOp::Mean, 0b101, &D, &X, &[3]),
            [0.25, 1.625, 0.75]
        );
        assert_eq!(
            red(ReduceOp::Max, 0b100, &D, &X, &[2, 3, 1]),
            [1.0, 4.0, 6.0, 1.5, 2.0, 3.0]
        );
        assert_eq!(
            red(ReduceOp::Min, 0b001, &D, &X, &[3, 2]),
            [0.5, -2.0, -2.5, 2.0, -5.0, -1.0]
        );
        assert_eq!(
            red(ReduceOp::Prod, 0b010, &D, &X, &[2, 2]),
            [-15.0, -48.0, -3.75, -3.0]
        );
        assert_eq!(red(ReduceOp::L1, 0b111, &D, &X, &[]), [31.5]);
        assert_eq!(red(ReduceOp::L1, 0b111, &D, &X, &[1, 1, 1]), [31.5]);
        close(
            &red(ReduceOp::L2, 0b010, &D, &X, &[2, 2]),
            &[
                5.916079998016357,
                7.4833149909973145,
                3.9370038509368896,
                2.692582368850708,
            ],
            1e-7,
        );
        let ax: Vec<f32> = X.iter().map(|v| v.abs()).collect();
        #[rustfmt::skip]
        let want = [1.0986123085021973, 1.9459102153778076, 2.397895336151123, 0.6931471824645996, 1.504077434539795, 1.3862943649291992];
        close(&red(ReduceOp::LogSum, 0b100, &D, &ax, &[2, 3]), &want, 1e-7);
        close(
            &red(ReduceOp::LogSumExp, 0b010, &D, &X, &[2, 2]),
            &[
                3.127223491668701,
                6.127223491668701,
                3.0826594829559326,
                2.5045969486236572,
            ],
            1e-6,
        );
        assert_eq!(
            red(ReduceOp::SumSquare, 0b001, &D, &X, &[1, 3, 2]),
            [1.25, 6.25, 15.25, 20.0, 34.0, 37.0]
        );
        // Stable log-sum-exp and NaN propagation.
        close(
            &red(ReduceOp::LogSumExp, 1, &[2], &[1000.0f32, 1000.0], &[]),
            &[1000.6931471805599],
            1e-7,
        );
        close(
            &red(ReduceOp::Max, 1, &[3], &[1.0f32, f32::NAN, 2.0], &[]),
            &[f32::NAN],
            0.0,
        );
        close(
            &red(ReduceOp::Min, 1, &[3], &[f32::NAN, 1.0, 2.0], &[]),
            &[f32::NAN],
            0.0,
        );
        let y: Vec<f64> = red(
            ReduceOp::Mean,
            0b10,
            &[2, 2],
            &[1.0f64, 2.0, 3.0, 5.0],
            &[2, 1],
        );
        assert_eq!(y, [1.5, 4.0]);
    }

    #[test]
    fn empty_and_no_axes() {
        let e: [f32; 0] = [];
        assert_eq!(red(ReduceOp::Sum, 0b10, &[2, 0], &e, &[2]), [0.0, 0.0]);
        assert_eq!(red(ReduceOp::Prod, 0b10, &[2, 0], &e, &[2, 1]), [1.0, 1.0]);
        assert_eq!(
            red(ReduceOp::Max, 0b10, &[2, 0], &e, &[2]),
            [f32::NEG_INFINITY; 2]
        );
        assert_eq!(
            red(ReduceOp::Min, 0b10, &[2, 0], &e, &[2]),
            [f32::INFINITY; 2]
        );
        assert_eq!(
            red(ReduceOp::LogSumExp, 0b10, &[2, 0], &e, &[2]),
            [f32::NEG_INFINITY; 2]
        );
        assert_eq!(red(ReduceOp::L2, 0b10, &[2, 0], &e, &[2]), [0.0; 2]);
        assert!(
            red(ReduceOp::Mean, 0b10, &[2, 0], &e, &[2])
                .iter()
                .all(|v| v.is_nan())
        );
        // Reducing the non-empty axis of an empty tensor gives an empty result.
        assert_eq!(red(ReduceOp::Sum, 0b01, &[2, 0], &e, &[0]).len(), 0);
        let ei: [i32; 0] = [];
        assert_eq!(red(ReduceOp::Max, 1, &[0], &ei, &[]), [i32::MIN]);
        // No axes: each element reduced alone (identity for Sum, squares for SumSquare).
        assert_eq!(
            red(
                ReduceOp::Sum,
                0,
                &[2, 2],
                &[1.0f32, -2.0, 3.0, 4.0],
                &[2, 2]
            ),
            [1.0, -2.0, 3.0, 4.0]
        );
        assert_eq!(
            red(
                ReduceOp::SumSquare,
                0,
                &[2, 2],
                &[1.0f32, -2.0, 3.0, 4.0],
                &[2, 2]
            ),
            [1.0, 4.0, 9.0, 16.0]
        );
        assert_eq!(red(ReduceOp::Sum, 0, &[], &[5.0f32], &[]), [5.0]);
        assert_eq!(
            red(ReduceOp::Max, 0, &[2, 2], &[1.0f32, -2.0, 3.0, 4.0], &[4]),
            [1.0, -2.0, 3.0, 4.0]
        );
    }

    #[test]
    fn integer_and_bool_reductions() {
        let i = [3i64, -7, 2, 5, 1, -4];
        assert_eq!(red(ReduceOp::Sum, 0b10, &[2, 3], &i, &[2]), [-2, 2]);
        assert_eq!(red(ReduceOp::Max, 0b01, &[2, 3], &i, &[3]), [5, 1, 2]);
        assert_eq!(red(ReduceOp::Prod, 0b11, &[2, 3], &i, &[]), [840]);
        assert_eq!(red(ReduceOp::L1, 0b11, &[2, 3], &i, &[]), [22]);
        assert_eq!(red(ReduceOp::SumSquare, 0b10, &[2, 3], &i, &[2]), [62, 42]);
        assert_eq!(red(ReduceOp::L2, 0b10, &[2, 3], &i, &[2]), [7, 6]); // sqrt(62), sqrt(42) truncated
        assert_eq!(
            red(ReduceOp::Mean, 0b10, &[2, 2], &[1i32, 2, 3, 5], &[2]),
            [1, 4]
        );
        assert_eq!(red(ReduceOp::Min, 0b1, &[3], &[200u8, 7, 255], &[]), [7]);
        // Wrapping like int32 arithmetic.
        assert_eq!(
            red(ReduceOp::Sum, 0b1, &[2], &[i32::MAX, 1], &[]),
            [i32::MIN]
        );
        let mut y = [9u8; 2];
        run_reduce(
            &ReduceParams {
                op: ReduceOp::Max as u32,
                axes_mask: 0b10,
            },
            &[Some(tb(&[2, 2], &[0, 1, 0, 0]))],
            &mut [tmb(&[2], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [1, 0]);
        run_reduce(
            &ReduceParams {
                op: ReduceOp::Min as u32,
                axes_mask: 0b10,
            },
            &[Some(tb(&[2, 0], &[]))],
            &mut [tmb(&[2], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [1, 1]);
        let mut yi = [0i32; 1];
        let r = run_reduce(
            &ReduceParams {
                op: ReduceOp::LogSumExp as u32,
                axes_mask: 1,
            },
            &[Some(t(&[2], &[1i32, 2]))],
            &mut [tm(&[], &mut yi)],
        );
        assert!(matches!(r, Err(KernelError::UnsupportedDType(_))));
    }

    #[test]
    fn reduce_errors() {
        let mut y = [0f32; 4];
        let p = |m| ReduceParams {
            op: ReduceOp::Sum as u32,
            axes_mask: m,
        };
        assert!(matches!(
            run_reduce(
                &p(0b1000),
                &[Some(t(&D, &X))],
                &mut [tm(&[2, 3, 2], &mut y)]
            ),
            Err(KernelError::BadParams(_))
        ));
        assert!(matches!(
            run_reduce(&p(0b010), &[Some(t(&D, &X))], &mut [tm(&[4], &mut y)]),
            Err(KernelError::Shape(_))
        ));
        assert!(matches!(
            run_reduce(&p(0b010), &[Some(t(&D, &X))], &mut [tm(&[2, 2, 1], &mut y)]),
            Err(KernelError::Shape(_))
        ));
        let mut yi = [0i32; 4];
        assert!(matches!(
            run_reduce(&p(0b010), &[Some(t(&D, &X))], &mut [tm(&[2, 2], &mut yi)]),
            Err(KernelError::DType(_))
        ));
        assert!(
            run_reduce(
                &p(0b010),
                &[Some(t(&D, &X[..10]))],
                &mut [tm(&[2, 2], &mut y)]
            )
            .is_err()
        );
        assert!(
            run_reduce(
                &ReduceParams {
                    op: 0,
                    axes_mask: 1
                },
                &[Some(t(&D, &X))],
                &mut [tm(&[3, 2], &mut y)]
            )
            .is_err()
        );
    }

    fn arg<T: Element>(
        kind: u32,
        axis: u32,
        last: bool,
        d: &[usize],
        x: &[T],
        od: &[usize],
    ) -> Vec<i64> {
        let mut y = std::vec![-1i64; shape(od).numel()];
        let p = ArgReduceParams {
            kind,
            axis,
            select_last_index: last as u32,
        };
        run_arg_reduce(&p, &[Some(t(d, x))], &mut [tm(od, &mut y)]).unwrap();
        y
    }

    #[test]
    fn arg_max_min() {
        let a = [1.0f32, 5.0, 5.0, 7.0, 7.0, 2.0];
        assert_eq!(arg(1, 1, false, &[2, 3], &a, &[2, 1]), [1, 0]);
        assert_eq!(arg(1, 1, true, &[2, 3], &a, &[2]), [2, 1]);
        assert_eq!(arg(2, 0, false, &[2, 3], &a, &[3]), [0, 0, 1]);
        assert_eq!(arg(2, 0, true, &[2, 3], &a, &[1, 3]), [0, 0, 1]);
        // NaN wins (first, or last with select_last_index), like numpy.
        let n = [1.0f32, f32::NAN, 3.0, f32::NAN];
        assert_eq!(arg(1, 0, false, &[4], &n, &[]), [1]);
        assert_eq!(arg(2, 0, false, &[4], &n, &[]), [1]);
        assert_eq!(arg(1, 0, true, &[4], &n, &[]), [3]);
        assert_eq!(arg(1, 0, false, &[3], &[i64::MIN, -1, i64::MIN], &[1]), [1]);
        assert_eq!(arg(2, 0, true, &[3], &[i64::MIN, -1, i64::MIN], &[1]), [2]);
        assert_eq!(
            arg(1, 2, false, &[1, 2, 2], &[3u8, 9, 9, 3], &[1, 2]),
            [1, 0]
        );
        assert_eq!(arg(2, 0, false, &[3], &[-1i8, -9, 4], &[]), [1]);
        // Inner wider than one column chunk.
        let wide: Vec<i32> = (0..2 * 100)
            .map(|i: i32| if i >= 100 { i % 7 } else { 3 })
            .collect();
        let want: Vec<i64> = (0..100)
            .map(|i| if (i + 100) % 7 > 3 { 1 } else { 0 })
            .collect();
        assert_eq!(arg(1, 0, false, &[2, 100], &wide, &[100]), want);
    }

    #[test]
    fn arg_errors_and_empty() {
        let mut y = [0i64; 2];
        let p = ArgReduceParams {
            kind: 1,
            axis: 1,
            select_last_index: 0,
        };
        let x = [1.0f32; 6];
        assert!(
            run_arg_reduce(
                &ArgReduceParams { kind: 3, ..p },
                &[Some(t(&[2, 3], &x))],
                &mut [tm(&[2], &mut y)]
            )
            .is_err()
        );
        assert!(
            run_arg_reduce(
                &ArgReduceParams { axis: 2, ..p },
                &[Some(t(&[2, 3], &x))],
                &mut [tm(&[2], &mut y)]
            )
            .is_err()
        );
        assert!(
            run_arg_reduce(&p, &[Some(t(&[2, 3], &x))], &mut [tm(&[3], &mut [0i64; 3])]).is_err()
        );
        let mut yi = [0i32; 2];
        assert!(run_arg_reduce(&p, &[Some(t(&[2, 3], &x))], &mut [tm(&[2], &mut yi)]).is_err());
        assert!(matches!(
            run_arg_reduce(&p, &[Some(t::<f32>(&[2, 0], &[]))], &mut [tm(&[2], &mut y)]),
            Err(KernelError::Shape(_))
        ));
        let mut e: [i64; 0] = [];
        run_arg_reduce(
            &ArgReduceParams { axis: 0, ..p },
            &[Some(t::<f32>(&[3, 0], &[]))],
            &mut [tm(&[0], &mut e)],
        )
        .unwrap();
    }
}
