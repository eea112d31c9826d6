//! The `QMean` task: TFLite Micro's int8 Mean (`reference_ops::QuantizedMeanOrSum`, the
//! kernel since 2023: `EvalIntegerMean`), over rows of `n` contiguous elements — a Keras
//! `GlobalAveragePooling2D` as tf2onnx writes it (QLinearGlobalAveragePool, or a quantized
//! ReduceMean over the innermost axes). The raw sum, less `n · in_zp`, requantized once by a
//! multiplier with `1/n` folded in (`mult`, `shift`: [`super::params::mean_params`]), plus
//! the output zero point, saturated. No fused activation. O(input), no workspace.

use ge_runtime::format::{DType, QMeanParams, TensorMut, TensorRef};

use super::fixed::mbqm;
use crate::ops::{KernelError, KernelResult, input, output};

/// One output from one row.
fn mean<T: Copy + Into<i32>>(p: &QMeanParams, row: &[T], lo: i32, hi: i32) -> i32 {
    let sum = row.iter().fold(0i32, |a, &v| a.wrapping_add(v.into()));
    let n = row.len() as i32;
    let y = mbqm(sum.wrapping_sub(p.in_zp.wrapping_mul(n)), p.mult, p.shift);
    y.saturating_add(p.out_zp).clamp(lo, hi)
}

/// Runs a `QMean` task: input rows of `p.n`, one output each, int8 or uint8 (one type).
pub fn run_qmean(
    p: &QMeanParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "QMean input")?;
    let y = output(outs, 0, "QMean output")?;
    if x.dtype != y.dtype {
        return Err(KernelError::UnsupportedDType(
            "QMean keeps its input's type",
        ));
    }
    fn rows<T: Copy + Into<i32>>(
        p: &QMeanParams,
        xs: &[T],
        ys: &mut [T],
        to: impl Fn(i32) -> T,
        (lo, hi): (i32, i32),
    ) -> KernelResult {
        let n = p.n as usize;
        if n == 0 || xs.len() != ys.len().saturating_mul(n) {
            return Err(KernelError::Shape("QMean: one output per row of n inputs"));
        }
        for (r, o) in xs.chunks_exact(n).zip(ys) {
            *o = to(mean(p, r, lo, hi));
        }
        Ok(())
    }
    match x.dtype {
        DType::I8 => rows(
            p,
            x.as_slice::<i8>()?,
            y.as_slice_mut::<i8>()?,
            |v| v as i8,
            (-128, 127),
        ),
        DType::U8 => rows(
            p,
            x.as_slice::<u8>()?,
            y.as_slice_mut::<u8>()?,
            |v| v as u8,
            (0, 255),
        ),
        _ => Err(KernelError::UnsupportedDType("QMean takes int8 or uint8")),
    }
}
