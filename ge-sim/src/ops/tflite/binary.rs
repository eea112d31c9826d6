//! The `QBinary` task: TFLite Micro's int8 Add and Mul (onnxruntime's Add is
//! [`crate::ops::qlinear_add`]'s) (`reference_integer_ops::Add`,
//! `MulElementwise`; CMSIS-NN's `arm_elementwise_{add,mul}_s8` compute the same), with
//! numpy broadcasting. O(output).

use ge_runtime::format::{
    DType, QBINARY_ADD, QBINARY_ADD_F32, QBINARY_MUL, QBinaryParams, TensorMut, TensorRef,
};

use super::fixed::mbqm;
use crate::ops::broadcast::broadcast2;
use crate::ops::{KernelError, KernelResult, input, output};

/// One output value from the two operands' raw values. (The range is applied with max/min,
/// not `clamp`, which panics on a malformed record's `act_min > act_max`.)
#[inline(always)]
pub(crate) fn add(p: &QBinaryParams, a: i32, b: i32) -> i32 {
    let sa = mbqm(
        a.wrapping_sub(p.a_zp)
            .wrapping_shl(p.left_shift.clamp(0, 31) as u32),
        p.a_mult,
        p.a_shift,
    );
    let sb = mbqm(
        b.wrapping_sub(p.b_zp)
            .wrapping_shl(p.left_shift.clamp(0, 31) as u32),
        p.b_mult,
        p.b_shift,
    );
    let y = mbqm(sa.wrapping_add(sb), p.out_mult, p.out_shift);
    y.saturating_add(p.out_zp).max(p.act_min).min(p.act_max)
}

#[inline(always)]
fn mul(p: &QBinaryParams, a: i32, b: i32) -> i32 {
    let y = mbqm(
        (a - p.a_zp).wrapping_mul(b - p.b_zp),
        p.out_mult,
        p.out_shift,
    );
    y.saturating_add(p.out_zp).max(p.act_min).min(p.act_max)
}

/// Runs a `QBinary` task: inputs A and B and the output share one 8-bit type.
pub fn run_qbinary(
    p: &QBinaryParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let a = input(ins, 0, "QBinary A")?;
    let b = input(ins, 1, "QBinary B")?;
    let y = output(outs, 0, "QBinary output")?;
    if a.dtype != y.dtype || b.dtype != y.dtype {
        return Err(KernelError::UnsupportedDType(
            "QBinary takes and gives one 8-bit type",
        ));
    }
    let (lo, hi) = match y.dtype {
        DType::I8 => (-128, 127),
        DType::U8 => (0, 255),
        _ => {
            return Err(KernelError::UnsupportedDType(
                "QBinary takes and gives one 8-bit type",
            ));
        }
    };
    if p.op == QBINARY_ADD_F32 {
        return crate::ops::qlinear_add::run(p, a, b, y, (lo, hi));
    }
    let p = QBinaryParams {
        act_min: p.act_min.max(lo),
        act_max: p.act_max.min(hi),
        ..*p
    };
    let f: fn(&QBinaryParams, i32, i32) -> i32 = match p.op {
        QBINARY_ADD => add,
        QBINARY_MUL => mul,
        _ => return Err(KernelError::BadParams("QBinary op is not Add or Mul")),
    };
    let (sa, sb, sy) = (a.shape, b.shape, y.shape);
    // Equal shapes (a residual Add): sixteen at a time on AVX-512, eight on AVX2, the same
    // bytes.
    if crate::arch::kernels::QADD_I8
        && p.op == QBINARY_ADD
        && y.dtype == DType::I8
        && sa == sy
        && sb == sy
    {
        let (xa, xb, out) = (a.as_slice::<i8>()?, b.as_slice::<i8>()?, y.as_slice_mut()?);
        if crate::arch::kernels::qadd_i8(&p, xa, xb, out) {
            return Ok(());
        }
    }
    match y.dtype {
        DType::I8 => broadcast2(
            y.as_slice_mut::<i8>()?,
            &sy,
            a.as_slice::<i8>()?,
            &sa,
            b.as_slice::<i8>()?,
            &sb,
            |x, z| f(&p, i32::from(x), i32::from(z)) as i8,
        ),
        _ => broadcast2(
            y.as_slice_mut::<u8>()?,
            &sy,
            a.as_slice::<u8>()?,
            &sa,
            b.as_slice::<u8>()?,
            &sb,
            |x, z| f(&p, i32::from(x), i32::from(z)) as u8,
        ),
    }
}
