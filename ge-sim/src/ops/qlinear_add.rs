//! onnxruntime's QLinearAdd (a `QBinary` task with [`QBINARY_ADD_F32`]), in the arithmetic
//! of MLAS's kernel (`qladd_avx2.cpp`, the one x86 runs): the zero points are folded into
//! one f32 constant *before* rounding — `fixed = zy − (ra·za + rb·zb)`, `ra = sa/sy`,
//! `rb = sb/sy` — and each output is `round_half_even(fma(a, ra, fma(b, rb, fixed)))`
//! (with A one value, `fma(a, ra, fixed)` is formed first; B likewise: onnxruntime's GCC
//! build contracts the kernel's `add(mul)` into fused multiply-adds, which values on ties
//! show). Rounding `ra·(a − za) + rb·(b − zb)` and adding `zy` after, as the ONNX
//! decomposition reads, differs on ties: with an odd `zy` a `.5` rounds the other way
//! (0.17% of the values of random residual Adds). Fused multiply-adds are exact, so every
//! path gives the same bytes: 8 lanes of `vfmadd` on AVX2, `libm::fmaf` elsewhere.
//! O(output).

use ge_runtime::format::{DType, QBinaryParams, Shape, TensorMut, TensorRef};

use crate::ops::broadcast::broadcast2;
use crate::ops::real::Real;
use crate::ops::{KernelError, KernelResult};

/// The constants of one task, unpacked from the record's bit patterns.
#[derive(Clone, Copy)]
pub(crate) struct AddF32 {
    pub(crate) ra: f32,
    pub(crate) rb: f32,
    pub(crate) fixed: f32,
    pub(crate) lo: f32,
    pub(crate) hi: f32,
}

impl AddF32 {
    /// The record's constants with the output range `[lo, hi]` (the type's, narrowed by
    /// the record's).
    pub(crate) fn new(p: &QBinaryParams, lo: i32, hi: i32) -> Self {
        AddF32 {
            ra: f32::from_bits(p.a_mult as u32),
            rb: f32::from_bits(p.b_mult as u32),
            fixed: f32::from_bits(p.out_mult as u32),
            lo: p.act_min.max(lo) as f32,
            hi: p.act_max.min(hi) as f32,
        }
    }

    /// The rounded, clamped output for the fused sum `v`. (`max`/`min`, not `clamp`, which
    /// panics when a malformed record gives `lo > hi`; NaN cannot arise from finite
    /// constants and 8-bit operands, and `as` saturates if it did.)
    #[inline(always)]
    pub(crate) fn out(&self, v: f32) -> i32 {
        v.round_even().max(self.lo).min(self.hi) as i32
    }

    /// Both operands vary.
    #[inline(always)]
    pub(crate) fn general(&self, a: i32, b: i32) -> i32 {
        let t = libm::fmaf(b as f32, self.rb, self.fixed);
        self.out(libm::fmaf(a as f32, self.ra, t))
    }
}

/// Which operand, if either, is a single value (MLAS forms its product into the constant).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    General,
    ScalarA,
    ScalarB,
}

/// Runs the task on 8-bit `a`, `b` (one type, that of `y`), numpy broadcasting.
pub(crate) fn run(
    p: &QBinaryParams,
    a: &TensorRef<'_>,
    b: &TensorRef<'_>,
    y: &mut TensorMut<'_>,
    (lo, hi): (i32, i32),
) -> KernelResult {
    let k = AddF32::new(p, lo, hi);
    let (sa, sb, sy) = (a.shape, b.shape, y.shape);
    let form = if sa.numel() == 1 {
        Form::ScalarA
    } else if sb.numel() == 1 {
        Form::ScalarB
    } else {
        Form::General
    };
    match y.dtype {
        DType::I8 => {
            let (xa, xb) = (a.as_slice::<i8>()?, b.as_slice::<i8>()?);
            let out = y.as_slice_mut::<i8>()?;
            if form == Form::General
                && sa == sy
                && sb == sy
                && crate::arch::kernels::qlinear_add_i8(&k, xa, xb, out)
            {
                return Ok(());
            }
            apply(form, k, out, &sy, xa, &sa, xb, &sb, |v| v as i8, i32::from)
        }
        DType::U8 => {
            let (xa, xb) = (a.as_slice::<u8>()?, b.as_slice::<u8>()?);
            let out = y.as_slice_mut::<u8>()?;
            apply(form, k, out, &sy, xa, &sa, xb, &sb, |v| v as u8, i32::from)
        }
        _ => Err(KernelError::UnsupportedDType(
            "QBinary takes and gives one 8-bit type",
        )),
    }
}

/// The element loop of `form` over broadcast operands.
#[allow(clippy::too_many_arguments)]
fn apply<T: Copy>(
    form: Form,
    k: AddF32,
    out: &mut [T],
    sy: &Shape,
    a: &[T],
    sa: &Shape,
    b: &[T],
    sb: &Shape,
    store: impl Fn(i32) -> T,
    load: impl Fn(T) -> i32,
) -> KernelResult {
    match form {
        Form::General => broadcast2(out, sy, a, sa, b, sb, |x, z| {
            store(k.general(load(x), load(z)))
        }),
        Form::ScalarA | Form::ScalarB => {
            // The single value's product goes into the constant; the other operand's is
            // fused with it.
            let a_single = form == Form::ScalarA;
            let (single, rs, rv) = if a_single {
                (a.first(), k.ra, k.rb)
            } else {
                (b.first(), k.rb, k.ra)
            };
            let c = single.map_or(k.fixed, |&v| libm::fmaf(load(v) as f32, rs, k.fixed));
            broadcast2(out, sy, a, sa, b, sb, |x, z| {
                let v = if a_single { z } else { x };
                store(k.out(libm::fmaf(load(v) as f32, rv, c)))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// A record of onnxruntime's Add with the constants `ra`, `rb`, `fixed`.
    fn record(ra: f32, rb: f32, fixed: f32) -> QBinaryParams {
        QBinaryParams {
            op: ge_runtime::format::QBINARY_ADD_F32,
            a_mult: ra.to_bits() as i32,
            b_mult: rb.to_bits() as i32,
            out_mult: fixed.to_bits() as i32,
            act_min: -128,
            act_max: 127,
            ..bytemuck::Zeroable::zeroed()
        }
    }

    /// The fused sums agree with exact arithmetic: both products of an 8-bit value and an
    /// f32 are exact in f64, and so is their sum with `fixed` here, so one rounding to f32
    /// of the f64 value is the fused result.
    #[test]
    fn general_is_two_fused_multiply_adds() {
        let k = AddF32::new(&record(1.953_396_2, 0.521_450_04, 188.434_97), -128, 127);
        for a in -128..128 {
            for b in -128..128 {
                let t = (f64::from(b) * f64::from(k.rb) + f64::from(k.fixed)) as f32;
                let v = (f64::from(a) * f64::from(k.ra) + f64::from(t)) as f32;
                let want = v.round_ties_even().clamp(-128.0, 127.0) as i32;
                assert_eq!(k.general(a, b), want, "a {a} b {b}");
            }
        }
        // The tie onnxruntime's yolov8n shows: −110.49998 (not −110.50001) rounds to −110.
        assert_eq!(k.general(-121, -120), -110);
    }

    /// The AVX2 loop (eight at a time, then the tail) gives the portable bytes.
    #[test]
    fn avx2_loop_gives_the_portable_bytes() {
        use crate::arch::isa::{Isa, isa};
        if !matches!(isa(), Isa::Avx2Fma | Isa::Avx512) {
            return;
        }
        let k = AddF32::new(&record(0.75, 1.0, 7.5), -100, 90);
        let a: Vec<i8> = (0..1003).map(|i| ((i * 37) % 256) as u8 as i8).collect();
        let b: Vec<i8> = (0..1003)
            .map(|i| ((i * 91 + 5) % 256) as u8 as i8)
            .collect();
        let mut got = vec![0i8; a.len()];
        assert!(crate::arch::kernels::qlinear_add_i8(&k, &a, &b, &mut got));
        for i in 0..a.len() {
            let want = k.general(i32::from(a[i]), i32::from(b[i]));
            assert_eq!(i32::from(got[i]), want, "at {i}");
        }
        let (lo, hi) = (got.iter().min(), got.iter().max());
        assert_eq!((lo, hi), (Some(&-100), Some(&90)), "the range is applied");
    }
}
