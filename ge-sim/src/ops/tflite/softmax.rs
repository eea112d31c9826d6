//! The `QSoftmax` task: TFLite Micro's int8 Softmax (`reference_ops::Softmax` on int8;
//! CMSIS-NN's `arm_softmax_s8` computes the same): differences from the row maximum scaled
//! into Q5.26, gemmlowp's exponential, a Q12.19 sum, its reciprocal by Newton–Raphson, and
//! the products rounded onto the scale 1/256. O(input), no workspace.

use ge_runtime::format::{DType, QSoftmaxParams, TensorMut, TensorRef};

use super::fixed::{exp_on_negative_values_q5, one_over_one_plus_x, rdbpot, srdhm};
use crate::ops::{KernelError, KernelResult, input, output};

/// One row: `x` raw values, `y` their outputs (`to` narrows a result); `out_min` is the
/// output type's lowest value (−128 or 0), its zero point on the scale 1/256.
fn row<T: Copy + Into<i32>>(
    p: &QSoftmaxParams,
    x: &[T],
    y: &mut [T],
    to: impl Fn(i32) -> T,
    out_min: i32,
) {
    let Some(mx) = x.iter().map(|&v| v.into()).max() else {
        return;
    };
    let lshift = p.in_lshift.clamp(0, 31) as u32;
    // `MultiplyByQuantizedMultiplierGreaterThanOne`; `d ≥ diff_min` keeps `d·2^lshift` in
    // range for every record the compiler writes.
    let exp = |d: i32| exp_on_negative_values_q5(srdhm(d.wrapping_shl(lshift), p.in_mult));
    let mut sum = 0i32;
    for &v in x {
        let d = v.into() - mx;
        if d >= p.diff_min {
            sum = sum.wrapping_add(rdbpot(exp(d), 12));
        }
    }
    // `GetReciprocal(sum, 12)`.
    let h = (sum as u32).leading_zeros();
    let bits_over_unit = 12 - h as i32;
    let shifted = (sum as u32)
        .checked_shl(h)
        .unwrap_or(0)
        .wrapping_sub(1 << 31) as i32;
    let scale = one_over_one_plus_x(shifted);
    let e = (bits_over_unit + 31 - 8).clamp(0, 31) as u32;
    for (o, &v) in y.iter_mut().zip(x) {
        let d = v.into() - mx;
        *o = to(if d >= p.diff_min {
            (rdbpot(srdhm(scale, exp(d)), e) + out_min).clamp(out_min, out_min + 255)
        } else {
            out_min
        });
    }
}

/// Runs a `QSoftmax` task: rows of `p.n` elements, int8 → int8 or uint8 → uint8. (A row
/// of more than 4,096 equal maxima wraps TFLite's Q12.19 sum, here as there.)
pub fn run_qsoftmax(
    p: &QSoftmaxParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "QSoftmax input")?;
    let y = output(outs, 0, "QSoftmax output")?;
    let n = p.n as usize;
    if x.dtype != y.dtype || x.shape != y.shape {
        return Err(KernelError::Shape(
            "QSoftmax keeps its input's type and shape",
        ));
    }
    if n == 0 {
        return Err(KernelError::BadParams("QSoftmax rows are empty"));
    }
    fn rows<T: Copy + Into<i32>>(
        p: &QSoftmaxParams,
        xs: &[T],
        ys: &mut [T],
        to: impl Fn(i32) -> T + Copy,
        out_min: i32,
    ) -> KernelResult {
        let n = p.n as usize;
        if xs.len() != ys.len() || !xs.len().is_multiple_of(n) {
            return Err(KernelError::Shape("QSoftmax: data is not whole rows"));
        }
        for (xr, yr) in xs.chunks_exact(n).zip(ys.chunks_exact_mut(n)) {
            row(p, xr, yr, to, out_min);
        }
        Ok(())
    }
    match x.dtype {
        DType::I8 => rows(
            p,
            x.as_slice::<i8>()?,
            y.as_slice_mut::<i8>()?,
            |v| v as i8,
            -128,
        ),
        DType::U8 => rows(
            p,
            x.as_slice::<u8>()?,
            y.as_slice_mut::<u8>()?,
            |v| v as u8,
            0,
        ),
        _ => Err(KernelError::UnsupportedDType(
            "QSoftmax takes int8 or uint8",
        )),
    }
}
