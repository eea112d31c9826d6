//! Unary elementwise math and fused activations.
//!
//! Every float op is written once, generically over [`Real`] (f32 and f64), and the op is
//! matched once per call so each op gets its own simple, auto-vectorizable element loop.

use ge_runtime::format::{
    Activation, DType, TensorMut, TensorRef, UnaryOp, UnaryParams, ViewError,
};

use super::cast::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
use super::real::Real;
use super::{KernelError, KernelResult, input, output};
use crate::arch::isa;

/// Runs one element function over some storage; lets one op table serve in-place and
/// out-of-place loops while keeping each loop monomorphic (and so vectorizable).
trait Map<T> {
    fn map<F: Fn(T) -> T>(self, f: F);
}

struct InPlace<'a, T>(&'a mut [T]);

impl<T: Copy> Map<T> for InPlace<'_, T> {
    /// Through a stack buffer: written straight back, ops that keep some elements (Relu)
    /// became masked stores, which are microcoded and slow on AMD.
    #[inline(always)]
    fn map<F: Fn(T) -> T>(self, f: F) {
        for c in self.0.chunks_mut(64) {
            let mut buf = [c[0]; 64];
            for (b, &v) in buf.iter_mut().zip(c.iter()) {
                *b = f(v);
            }
            c.copy_from_slice(&buf[..c.len()]);
        }
    }
}

struct OutOfPlace<'a, T>(&'a [T], &'a mut [T]);

impl<T: Copy> Map<T> for OutOfPlace<'_, T> {
    #[inline(always)]
    fn map<F: Fn(T) -> T>(self, f: F) {
        for (o, &x) in self.1.iter_mut().zip(self.0) {
            *o = f(x);
        }
    }
}

#[inline]
fn clamp01<T: Real>(v: T) -> T {
    if v < T::ZERO {
        T::ZERO
    } else if v > T::ONE {
        T::ONE
    } else {
        v
    }
}

/// [`Real::logistic`]: for f32 onnxruntime's form ([`super::logistic`]), which
/// [`crate::arch::x86::avx2::sigmoid`] and [`crate::arch::x86::avx512::sigmoid`] compute on registers bit for bit.
#[inline]
pub(crate) fn sigmoid<T: Real>(x: T) -> T {
    x.logistic()
}

/// `log(1 + exp(x))` without overflow.
#[inline]
fn softplus<T: Real>(x: T) -> T {
    let pos = if x > T::ZERO { x } else { T::ZERO };
    pos + (-x.abs()).exp().ln_1p()
}

/// Sigmoid and SiLU on f32 through [`crate::arch::x86::avx512::sigmoid`] where the chosen ISA is
/// AVX-512 (the conv and GEMM epilogues' form there), else [`crate::arch::x86::avx2::sigmoid`] where it
/// has AVX2 (the generic loop's values, its dependent chains interleaved); `false` when the
/// generic loop must run (another op, the portable path, firmware). In place when `x` is
/// `None`.
#[inline]
fn sigmoid_fast(op: UnaryOp, x: Option<&[f32]>, y: &mut [f32]) -> bool {
    matches!(op, UnaryOp::Sigmoid | UnaryOp::Silu)
        && crate::arch::kernels::sigmoid(x, y, op == UnaryOp::Silu)
}

/// [`float_op`] on f32, built for AVX2+FMA when the CPU has it.
fn f32_op<M: Map<f32>>(op: UnaryOp, alpha: f32, beta: f32, m: M) {
    isa::with_simd(
        #[inline(always)]
        || float_op(op, alpha, beta, m),
    )
}

/// The activations of [`super::registry::epilogue_activation`] (what conv, GEMM and binary
/// kernels apply to their results): applies `op` through `m`, or hands `m` back for any
/// other op. Kept apart from [`float_op`] so that a binary whose kernels only apply these
/// links none of the other ops (trigonometry, powers, rounding…).
#[inline(always)]
fn epilogue_op<T: Real, M: Map<T>>(op: UnaryOp, alpha: f32, beta: f32, m: M) -> Result<(), M> {
    use UnaryOp::*;
    let (a, b) = (T::of(alpha as f64), T::of(beta as f64));
    let zero = T::ZERO;
    match op {
        Relu => m.map(|x| if x < zero { zero } else { x }),
        LeakyRelu => m.map(|x| if x < zero { a * x } else { x }),
        Elu => m.map(|x| if x < zero { a * x.exp_m1() } else { x }),
        Selu => m.map(|x| {
            if x > zero {
                b * x
            } else {
                b * (a * x.exp_m1())
            }
        }),
        // Silu: the product a separate Sigmoid and Mul compute, bit for bit. One loop for
        // both (firmware links every epilogue activation; a loop-invariant select is free).
        Sigmoid | Silu => {
            let times_x = op == Silu;
            m.map(move |x| {
                let s = sigmoid(x);
                if times_x { x * s } else { s }
            })
        }
        Tanh => m.map(|x| x.tanh()),
        HardSigmoid => m.map(|x| clamp01(a * x + b)),
        Softplus => m.map(softplus),
        Clip => m.map(|x| {
            let y = if x < a { a } else { x };
            if y > b { b } else { y }
        }),
        HardSwish => {
            let (sixth, half) = (T::of(1.0 / 6.0), T::of(0.5));
            m.map(move |x| x * clamp01(x * sixth + half))
        }
        Mish => m.map(|x| x * softplus(x).tanh()),
        Gelu => {
            let (half, one) = (T::of(0.5), T::ONE);
            if alpha == 0.0 {
                let r = T::of(core::f64::consts::FRAC_1_SQRT_2);
                m.map(move |x| half * x * (one + (x * r).erf()))
            } else {
                let k = T::of(0.797_884_560_802_865_4); // sqrt(2 / pi)
                let c = T::of(0.044715);
                m.map(move |x| half * x * (one + (k * (x + c * x * x * x)).tanh()))
            }
        }
        _ => return Err(m),
    }
    Ok(())
}

/// The op table: applies `op` (with ONNX `alpha`/`beta`) through `m`.
/// Bool-valued ops (Not, IsNaN, IsInf) yield 1.0 / 0.0 here.
#[inline(always)]
fn float_op<T: Real, M: Map<T>>(op: UnaryOp, alpha: f32, beta: f32, m: M) {
    use UnaryOp::*;
    let Err(m) = epilogue_op(op, alpha, beta, m) else {
        return;
    };
    let (a, b) = (T::of(alpha as f64), T::of(beta as f64));
    let (zero, one) = (T::ZERO, T::ONE);
    match op {
        Relu | LeakyRelu | Elu | Selu | Sigmoid | Silu | Tanh | HardSigmoid | Softplus | Clip
        | HardSwish | Mish | Gelu => {}
        Softsign => m.map(|x| x / (one + x.abs())),
        Sqrt => m.map(|x| x.sqrt()),
        Exp => m.map(|x| x.exp()),
        Log => m.map(|x| x.ln()),
        Neg => m.map(|x| -x),
        Abs => m.map(|x| x.abs()),
        Reciprocal => m.map(|x| one / x),
        Erf => m.map(|x| x.erf()),
        Floor => m.map(|x| x.floor()),
        Ceil => m.map(|x| x.ceil()),
        Round => m.map(|x| x.round_even()),
        Sign => m.map(|x| {
            if x > zero {
                one
            } else if x < zero {
                -one
            } else {
                x
            }
        }),
        Sin => m.map(|x| x.sin()),
        Cos => m.map(|x| x.cos()),
        Tan => m.map(|x| x.tan()),
        Asin => m.map(|x| x.asin()),
        Acos => m.map(|x| x.acos()),
        Atan => m.map(|x| x.atan()),
        Sinh => m.map(|x| x.sinh()),
        Cosh => m.map(|x| x.cosh()),
        Asinh => m.map(|x| x.asinh()),
        Acosh => m.map(|x| x.acosh()),
        Atanh => m.map(|x| x.atanh()),
        Celu => m.map(|x| {
            let pos = if x > zero { x } else { zero };
            let e = a * (x / a).exp_m1();
            pos + if e < zero { e } else { zero }
        }),
        ThresholdedRelu => m.map(|x| if x > a { x } else { zero }),
        Shrink => m.map(|x| {
            if x < -b {
                x + a
            } else if x > b {
                x - a
            } else {
                zero
            }
        }),
        Not => m.map(|x| if x == zero { one } else { zero }),
        IsNaN => m.map(|x| if x.is_nan() { one } else { zero }),
        IsInf => {
            let (pos, neg) = (alpha != 0.0, beta != 0.0);
            let (pinf, ninf) = (T::INFINITY, T::NEG_INFINITY);
            m.map(move |x| {
                if (pos && x == pinf) || (neg && x == ninf) {
                    one
                } else {
                    zero
                }
            })
        }
        Identity => m.map(|x| x),
    }
}

/// Applies `op` to `data` in place, for f32 or f64. Bool-valued ops yield 1.0 / 0.0.
pub fn apply_unary_in_place<T: Real>(op: UnaryOp, alpha: f32, beta: f32, data: &mut [T]) {
    if core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>() {
        if let Ok(v) = bytemuck::try_cast_slice_mut::<T, f32>(data)
            && !sigmoid_fast(op, None, v)
        {
            f32_op(op, alpha, beta, InPlace(v));
        }
        return;
    }
    float_op(op, alpha, beta, InPlace(data));
}

/// One element of `op`: `unary_f32(UnaryOp::Relu, 0.0, 0.0, -1.0) == 0.0`.
pub fn unary_f32(op: UnaryOp, alpha: f32, beta: f32, x: f32) -> f32 {
    let mut v = [x];
    float_op(op, alpha, beta, InPlace(&mut v));
    v[0]
}

/// Rough vector-unit operations per element of `op`, for the cost model.
pub fn op_cost(op: UnaryOp) -> u64 {
    use UnaryOp::*;
    match op {
        Relu | Neg | Abs | Identity | Not | IsNaN | IsInf | Floor | Ceil | Round | Sign => 1,
        LeakyRelu | Clip | ThresholdedRelu | Reciprocal | Softsign | Shrink | HardSigmoid => 2,
        HardSwish => 3,
        Silu => 5,
        Sqrt | Exp | Log | Sigmoid | Tanh | Elu | Selu | Celu | Erf => 4,
        Softplus | Sin | Cos | Tan | Asin | Acos | Atan | Sinh | Cosh | Asinh | Acosh | Atanh => 6,
        Gelu => 8,
        Mish => 10,
    }
}

/// Per-element cost of a fused activation (0 when there is none or it is unknown).
pub fn activation_cost(act: &Activation) -> u64 {
    UnaryOp::from_u32(act.op).map_or(0, op_cost)
}

/// Applies a fused epilogue activation (`act.op == 0`: none; one of
/// [`super::registry::epilogue_activation`], the only ones the compiler folds into a
/// kernel) to `data` in place. Any other op is refused, so kernels calling this link only
/// the epilogue activations.
pub fn apply_activation(act: &Activation, data: &mut [f32]) -> Result<(), KernelError> {
    if act.op == 0 {
        return Ok(());
    }
    let op = UnaryOp::from_u32(act.op).ok_or(KernelError::BadParams("unknown activation op"))?;
    if sigmoid_fast(op, None, data) {
        return Ok(());
    }
    let (a, b) = (act.alpha, act.beta);
    isa::with_simd(
        #[inline(always)]
        || epilogue_op(op, a, b, InPlace(data)),
    )
    .map_err(|_| KernelError::BadParams("not an epilogue activation"))
}

/// Applies any unary op (`act.op == 0`: none) to `data` in place.
pub fn apply_unary_op(act: &Activation, data: &mut [f32]) -> Result<(), KernelError> {
    if act.op == 0 {
        return Ok(());
    }
    let op = UnaryOp::from_u32(act.op).ok_or(KernelError::BadParams("unknown activation op"))?;
    if !sigmoid_fast(op, None, data) {
        f32_op(op, act.alpha, act.beta, InPlace(data));
    }
    Ok(())
}

/// Integer elements for the few unary ops that make sense on them.
trait IntElem: Copy + PartialOrd + ge_runtime::format::Element {
    const ZERO: Self;
    fn neg_w(self) -> Self;
    fn abs_w(self) -> Self;
    fn sign(self) -> Self;
    /// Saturating conversion of a clip bound.
    fn bound(v: f32) -> Self;
}

macro_rules! int_elem {
    (signed: $($t:ty),*) => {$(
        impl IntElem for $t {
            const ZERO: Self = 0;
            #[inline]
            fn neg_w(self) -> Self { self.wrapping_neg() }
            #[inline]
            fn abs_w(self) -> Self { self.wrapping_abs() }
            #[inline]
            fn sign(self) -> Self { self.signum() }
            #[inline]
            fn bound(v: f32) -> Self { v as $t }
        }
    )*};
    (unsigned: $($t:ty),*) => {$(
        impl IntElem for $t {
            const ZERO: Self = 0;
            #[inline]
            fn neg_w(self) -> Self { self.wrapping_neg() }
            #[inline]
            fn abs_w(self) -> Self { self }
            #[inline]
            fn sign(self) -> Self { (self != 0) as $t }
            #[inline]
            fn bound(v: f32) -> Self { v as $t }
        }
    )*};
}
int_elem!(signed: i8, i16, i32, i64);
int_elem!(unsigned: u8, u16, u32, u64);

fn int_op<T: IntElem>(
    op: UnaryOp,
    alpha: f32,
    beta: f32,
    x: &[T],
    y: &mut [T],
) -> Result<(), KernelError> {
    use UnaryOp::*;
    let m = OutOfPlace(x, y);
    let zero = T::ZERO;
    match op {
        Neg => m.map(T::neg_w),
        Abs => m.map(T::abs_w),
        Sign => m.map(T::sign),
        Relu => m.map(|v| if v < zero { zero } else { v }),
        Identity => m.map(|v| v),
        Clip => {
            let (lo, hi) = (T::bound(alpha), T::bound(beta));
            m.map(move |v| {
                let v = if v < lo { lo } else { v };
                if v > hi { hi } else { v }
            })
        }
        _ => {
            return Err(KernelError::UnsupportedDType(
                "this unary op is not defined on integers",
            ));
        }
    }
    Ok(())
}

fn typed<'a, T: ge_runtime::format::Element>(
    x: &TensorRef<'a>,
    y: &'a mut TensorMut<'_>,
    n: usize,
) -> Result<(&'a [T], &'a mut [T]), KernelError> {
    let xs = x.as_slice::<T>()?;
    let ys = y.as_slice_mut::<T>()?;
    if xs.len() != n || ys.len() != n {
        return Err(KernelError::Shape(
            "unary tensor data does not match its shape",
        ));
    }
    Ok((xs, ys))
}

fn raw_u16(data: &[u8], dtype: DType) -> Result<&[u16], KernelError> {
    bytemuck::try_cast_slice(data).map_err(|_| {
        KernelError::DType(ViewError {
            expected: dtype,
            found: dtype,
        })
    })
}

const HALF_CHUNK: usize = 256;

/// f16 / bf16 math: widen a chunk to f32, apply the op, round back.
fn half_op(op: UnaryOp, alpha: f32, beta: f32, x: &[u16], y: &mut [u16], bf16: bool) {
    let mut buf = [0f32; HALF_CHUNK];
    for (xs, ys) in x.chunks(HALF_CHUNK).zip(y.chunks_mut(HALF_CHUNK)) {
        let b = &mut buf[..xs.len()];
        if bf16 {
            for (d, &s) in b.iter_mut().zip(xs) {
                *d = bf16_to_f32(s);
            }
        } else {
            for (d, &s) in b.iter_mut().zip(xs) {
                *d = f16_to_f32(s);
            }
        }
        f32_op(op, alpha, beta, InPlace(&mut *b));
        if bf16 {
            for (d, &s) in ys.iter_mut().zip(b.iter()) {
                *d = f32_to_bf16(s);
            }
        } else {
            for (d, &s) in ys.iter_mut().zip(b.iter()) {
                *d = f32_to_f16(s);
            }
        }
    }
}

fn bool_test<T: Real>(op: UnaryOp, alpha: f32, beta: f32, x: &[T], y: &mut [u8]) {
    if op == UnaryOp::IsNaN {
        for (o, &v) in y.iter_mut().zip(x) {
            *o = v.is_nan() as u8;
        }
    } else {
        let pos = if alpha != 0.0 { T::INFINITY } else { T::NAN };
        let neg = if beta != 0.0 { T::NEG_INFINITY } else { T::NAN };
        for (o, &v) in y.iter_mut().zip(x) {
            *o = (v == pos || v == neg) as u8;
        }
    }
}

/// Elementwise unary op: f32/f64 (f16/bf16 computed in f32) for every op; Neg, Abs, Sign,
/// Relu, Clip, Identity on integers; Not on bool; IsNaN/IsInf from floats to bool;
/// Identity on any dtype.
pub fn run_unary(
    p: &UnaryParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let op = UnaryOp::from_u32(p.act.op).ok_or(KernelError::BadParams("unknown unary op"))?;
    let (alpha, beta) = (p.act.alpha, p.act.beta);
    let x = input(ins, 0, "unary input")?;
    let y = output(outs, 0, "unary output")?;
    let n = x
        .shape
        .checked_numel()
        .ok_or(KernelError::Shape("element count overflows"))?;
    if y.shape.checked_numel() != Some(n) {
        return Err(KernelError::Shape(
            "unary output element count differs from the input's",
        ));
    }

    if matches!(op, UnaryOp::IsNaN | UnaryOp::IsInf) {
        let ys = y.as_bool_mut()?;
        if ys.len() != n {
            return Err(KernelError::Shape(
                "unary tensor data does not match its shape",
            ));
        }
        let xlen_ok = n.checked_mul(x.dtype.size()) == Some(x.data.len());
        if !xlen_ok {
            return Err(KernelError::Shape(
                "unary tensor data does not match its shape",
            ));
        }
        match x.dtype {
            DType::F32 => bool_test(op, alpha, beta, x.as_slice::<f32>()?, ys),
            DType::F64 => bool_test(op, alpha, beta, x.as_slice::<f64>()?, ys),
            DType::F16 | DType::Bf16 => {
                let xs = raw_u16(x.data, x.dtype)?;
                let bf = x.dtype == DType::Bf16;
                let mut buf = [0f32; HALF_CHUNK];
                for (xc, yc) in xs.chunks(HALF_CHUNK).zip(ys.chunks_mut(HALF_CHUNK)) {
                    let b = &mut buf[..xc.len()];
                    for (d, &s) in b.iter_mut().zip(xc) {
                        *d = if bf { bf16_to_f32(s) } else { f16_to_f32(s) };
                    }
                    bool_test(op, alpha, beta, b, yc);
                }
            }
            _ => {
                return Err(KernelError::UnsupportedDType(
                    "IsNaN/IsInf need a float input",
                ));
            }
        }
        return Ok(());
    }

    if y.dtype != x.dtype {
        return Err(KernelError::DType(ViewError {
            expected: x.dtype,
            found: y.dtype,
        }));
    }
    if op == UnaryOp::Identity {
        if x.data.len() != y.data.len() || n.checked_mul(x.dtype.size()) != Some(x.data.len()) {
            return Err(KernelError::Shape(
                "unary tensor data does not match its shape",
            ));
        }
        y.data.copy_from_slice(x.data);
        return Ok(());
    }
    match x.dtype {
        DType::F32 => {
            let (xs, ys) = typed::<f32>(x, y, n)?;
            if !sigmoid_fast(op, Some(xs), ys) {
                f32_op(op, alpha, beta, OutOfPlace(xs, ys));
            }
        }
        DType::F64 => {
            let (xs, ys) = typed::<f64>(x, y, n)?;
            float_op(op, alpha, beta, OutOfPlace(xs, ys));
        }
        DType::F16 | DType::Bf16 => {
            let xs = raw_u16(x.data, x.dtype)?;
            let dt = y.dtype;
            let ys: &mut [u16] = bytemuck::try_cast_slice_mut(&mut *y.data).map_err(|_| {
                KernelError::DType(ViewError {
                    expected: dt,
                    found: dt,
                })
            })?;
            if xs.len() != n || ys.len() != n {
                return Err(KernelError::Shape(
                    "unary tensor data does not match its shape",
                ));
            }
            half_op(op, alpha, beta, xs, ys, x.dtype == DType::Bf16);
        }
        DType::Bool => {
            if op != UnaryOp::Not {
                return Err(KernelError::UnsupportedDType(
                    "only Not and Identity apply to bool",
                ));
            }
            let xs = x.as_bool()?;
            let ys = y.as_bool_mut()?;
            if xs.len() != n || ys.len() != n {
                return Err(KernelError::Shape(
                    "unary tensor data does not match its shape",
                ));
            }
            for (o, &v) in ys.iter_mut().zip(xs) {
                *o = (v == 0) as u8;
            }
        }
        DType::I8 => {
            let (xs, ys) = typed::<i8>(x, y, n)?;
            int_op(op, alpha, beta, xs, ys)?;
        }
        DType::I16 => {
            let (xs, ys) = typed::<i16>(x, y, n)?;
            int_op(op, alpha, beta, xs, ys)?;
        }
        DType::I32 => {
            let (xs, ys) = typed::<i32>(x, y, n)?;
            int_op(op, alpha, beta, xs, ys)?;
        }
        DType::I64 => {
            let (xs, ys) = typed::<i64>(x, y, n)?;
            int_op(op, alpha, beta, xs, ys)?;
        }
        DType::U8 => {
            let (xs, ys) = typed::<u8>(x, y, n)?;
            int_op(op, alpha, beta, xs, ys)?;
        }
        DType::U16 => {
            let (xs, ys) = typed::<u16>(x, y, n)?;
            int_op(op, alpha, beta, xs, ys)?;
        }
        DType::U32 => {
            let (xs, ys) = typed::<u32>(x, y, n)?;
            int_op(op, alpha, beta, xs, ys)?;
        }
        DType::U64 => {
            let (xs, ys) = typed::<u64>(x, y, n)?;
            int_op(op, alpha, beta, xs, ys)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::excessive_precision)] // expected values pasted from numpy
mod tests {
    extern crate std;
    use super::super::test_util::*;
    use super::*;
    use std::vec;

    fn act(op: UnaryOp, alpha: f32, beta: f32) -> UnaryParams {
        UnaryParams {
            act: Activation {
                op: op as u32,
                alpha,
                beta,
            },
        }
    }

    fn run_f32(op: UnaryOp, alpha: f32, beta: f32, d: &[usize], x: &[f32]) -> std::vec::Vec<f32> {
        let mut y = vec![0f32; x.len()];
        run_unary(
            &act(op, alpha, beta),
            &[Some(t(d, x))],
            &mut [tm(d, &mut y)],
        )
        .unwrap();
        y
    }

    const X: [f32; 7] = [-2.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5];

    /// Expected values from `onnx.reference` (opset 22) on `X`.
    #[rustfmt::skip]
    const TABLE: &[(UnaryOp, f32, f32, [f32; 7])] = &[
        (UnaryOp::Relu, 0.0,0.0, [0.0, 0.0, 0.0, 0.0, 0.5, 1.0, 2.5]),
        (UnaryOp::LeakyRelu, 0.1,0.0, [-0.25, -0.10000000149011612, -0.05000000074505806, 0.0, 0.5, 1.0, 2.5]),
        (UnaryOp::Elu, 1.0,0.0, [-0.9179150462150574, -0.6321205496788025, -0.39346933364868164, 0.0, 0.5, 1.0, 2.5]),
        (UnaryOp::Selu, 1.6732632,1.050701, [-1.6137858629226685, -1.1113307476043701, -0.6917582154273987, 0.0, 0.5253505110740662, 1.0507010221481323, 2.6267526149749756]),
        (UnaryOp::Sigmoid, 0.0,0.0, [0.07585818320512772, 0.26894140243530273, 0.3775406777858734, 0.5, 0.622459352016449, 0.7310585975646973, 0.9241418242454529]),
        (UnaryOp::Tanh, 0.0,0.0, [-0.9866142868995667, -0.7615941762924194, -0.46211719512939453, 0.0, 0.46211719512939453, 0.7615941762924194, 0.9866142868995667]),
        (UnaryOp::HardSigmoid, 0.2,0.5, [0.0, 0.30000001192092896, 0.4000000059604645, 0.5, 0.6000000238418579, 0.699999988079071, 1.0]),
        (UnaryOp::Softplus, 0.0,0.0, [0.07888973504304886, 0.3132616877555847, 0.4740769863128662, 0.6931471824645996, 0.9740769863128662, 1.3132617473602295, 2.578889846801758]),
        (UnaryOp::Softsign, 0.0,0.0, [-0.7142857313156128, -0.5, -0.3333333432674408, 0.0, 0.3333333432674408, 0.5, 0.7142857313156128]),
        (UnaryOp::Exp, 0.0,0.0, [0.0820850059390068, 0.3678794205188751, 0.6065306663513184, 1.0, 1.6487212181091309, 2.7182819843292236, 12.182493209838867]),
        (UnaryOp::Neg, 0.0,0.0, [2.5, 1.0, 0.5, -0.0, -0.5, -1.0, -2.5]),
        (UnaryOp::Abs, 0.0,0.0, [2.5, 1.0, 0.5, 0.0, 0.5, 1.0, 2.5]),
        (UnaryOp::Erf, 0.0,0.0, [-0.9995930194854736, -0.8427007794380188, -0.5204998850822449, 0.0, 0.5204998850822449, 0.8427007794380188, 0.9995930194854736]),
        (UnaryOp::Floor, 0.0,0.0, [-3.0, -1.0, -1.0, 0.0, 0.0, 1.0, 2.0]),
        (UnaryOp::Ceil, 0.0,0.0, [-2.0, -1.0, -0.0, 0.0, 1.0, 1.0, 3.0]),
        (UnaryOp::Sign, 0.0,0.0, [-1.0, -1.0, -1.0, 0.0, 1.0, 1.0, 1.0]),
        (UnaryOp::Sin, 0.0,0.0, [-0.5984721779823303, -0.8414710164070129, -0.4794255495071411, 0.0, 0.4794255495071411, 0.8414710164070129, 0.5984721779823303]),
        (UnaryOp::Cos, 0.0,0.0, [-0.8011435866355896, 0.5403022766113281, 0.8775825500488281, 1.0, 0.8775825500488281, 0.5403022766113281, -0.8011435866355896]),
        (UnaryOp::Atan, 0.0,0.0, [-1.1902899742126465, -0.7853981852531433, -0.46364760398864746, 0.0, 0.46364760398864746, 0.7853981852531433, 1.1902899742126465]),
        (UnaryOp::Sinh, 0.0,0.0, [-6.050204277038574, -1.175201177597046, -0.5210952758789062, 0.0, 0.5210952758789062, 1.175201177597046, 6.050204277038574]),
        (UnaryOp::Cosh, 0.0,0.0, [6.132289886474609, 1.5430806875228882, 1.1276260614395142, 1.0, 1.1276260614395142, 1.5430806875228882, 6.132289886474609]),
        (UnaryOp::Asinh, 0.0,0.0, [-1.647231101989746, -0.8813735842704773, -0.4812118113040924, 0.0, 0.4812118113040924, 0.8813735842704773, 1.647231101989746]),
        (UnaryOp::HardSwish, 0.0,0.0, [-0.20833328366279602, -0.3333333134651184, -0.2083333283662796, 0.0, 0.2916666567325592, 0.6666666865348816, 2.2916667461395264]),
        (UnaryOp::Mish, 0.0,0.0, [-0.19681620597839355, -0.30340147018432617, -0.22074377536773682, 0.0, 0.37524518370628357, 0.8650984168052673, 2.4713923931121826]),
        (UnaryOp::Gelu, 0.0,0.0, [-0.015524178743362427, -0.15865525603294373, -0.1542687714099884, 0.0, 0.3457312285900116, 0.8413447141647339, 2.48447585105896]),
        (UnaryOp::Gelu, 1.0,0.0, [-0.015084221959114075, -0.15880799293518066, -0.1542859971523285, 0.0, 0.3457140028476715, 0.8411920070648193, 2.4849157333374023]),
        (UnaryOp::Celu, 1.5,0.0, [-1.2166866064071655, -0.7298743724822998, -0.42520302534103394, 0.0, 0.5, 1.0, 2.5]),
        (UnaryOp::ThresholdedRelu, 0.7,0.0, [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.5]),
        (UnaryOp::Shrink, 0.3,0.6, [-2.200000047683716, -0.699999988079071, 0.0, 0.0, 0.0, 0.699999988079071, 2.200000047683716]),
        (UnaryOp::Clip, -1.0, 1.5, [-1.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5]),
        (UnaryOp::Identity, 0.0, 0.0, X),
    ];

    #[test]
    fn f32_table_matches_onnx_reference() {
        for &(op, a, b, want) in TABLE {
            let got = run_f32(op, a, b, &[7], &X);
            close(&got, &want, 2e-6);
            // The scalar helper and the in-place activation agree with the kernel.
            for (i, &x) in X.iter().enumerate() {
                close(&[unary_f32(op, a, b, x)], &[want[i]], 2e-6);
            }
            let mut inplace = X;
            apply_unary_op(
                &Activation {
                    op: op as u32,
                    alpha: a,
                    beta: b,
                },
                &mut inplace,
            )
            .unwrap();
            close(&inplace, &want, 2e-6);
        }
    }

    #[test]
    fn f32_domain_restricted_ops() {
        let p = [0.25f32, 1.0, 2.5, 4.0];
        close(
            &run_f32(UnaryOp::Sqrt, 0.0, 0.0, &[2, 2], &p),
            &[0.5, 1.0, 1.5811388492584229, 2.0],
            1e-6,
        );
        close(
            &run_f32(UnaryOp::Log, 0.0, 0.0, &[4], &p),
            &[
                -1.3862943649291992,
                0.0,
                0.9162907600402832,
                1.3862943649291992,
            ],
            1e-6,
        );
        close(
            &run_f32(UnaryOp::Reciprocal, 0.0, 0.0, &[4], &p),
            &[4.0, 1.0, 0.4, 0.25],
            1e-6,
        );
        let a = [-0.9f32, -0.5, 0.0, 0.5, 0.9];
        close(
            &run_f32(UnaryOp::Asin, 0.0, 0.0, &[5], &a),
            &[
                -1.11976957321167,
                -0.5235987901687622,
                0.0,
                0.5235987901687622,
                1.11976957321167,
            ],
            1e-6,
        );
        close(
            &run_f32(UnaryOp::Acos, 0.0, 0.0, &[5], &a),
            &[
                2.690565824508667,
                2.094395160675049,
                1.5707963705062866,
                1.0471975803375244,
                0.4510268568992615,
            ],
            1e-6,
        );
        close(
            &run_f32(UnaryOp::Atanh, 0.0, 0.0, &[5], &a),
            &[
                -1.4722193479537964,
                -0.5493061542510986,
                0.0,
                0.5493061542510986,
                1.4722193479537964,
            ],
            1e-6,
        );
        close(
            &run_f32(UnaryOp::Tan, 0.0, 0.0, &[5], &a),
            &[
                -1.2601580619812012,
                -0.5463024973869324,
                0.0,
                0.5463024973869324,
                1.2601580619812012,
            ],
            1e-6,
        );
        close(
            &run_f32(UnaryOp::Acosh, 0.0, 0.0, &[3], &[1.0, 1.5, 3.0]),
            &[0.0, 0.9624236226081848, 1.7627471685409546],
            1e-6,
        );
        // Log(0) = -inf, Sqrt(-1) = NaN, Reciprocal(0) = inf.
        close(
            &run_f32(UnaryOp::Log, 0.0, 0.0, &[1], &[0.0]),
            &[f32::NEG_INFINITY],
            0.0,
        );
        close(
            &run_f32(UnaryOp::Sqrt, 0.0, 0.0, &[1], &[-1.0]),
            &[f32::NAN],
            0.0,
        );
        close(
            &run_f32(UnaryOp::Reciprocal, 0.0, 0.0, &[1], &[0.0]),
            &[f32::INFINITY],
            0.0,
        );
    }

    #[test]
    fn round_is_half_to_even() {
        let got = run_f32(
            UnaryOp::Round,
            0.0,
            0.0,
            &[7],
            &[0.5, 1.5, 2.5, -0.5, -2.5, 2.4, 2.6],
        );
        assert_eq!(got, [0.0, 2.0, 2.0, -0.0, -2.0, 2.0, 3.0]);
    }

    #[test]
    fn nan_and_extremes_propagate() {
        let x = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 100.0, -100.0];
        close(
            &run_f32(UnaryOp::Relu, 0.0, 0.0, &[5], &x),
            &[f32::NAN, f32::INFINITY, 0.0, 100.0, 0.0],
            0.0,
        );
        close(
            &run_f32(UnaryOp::Clip, -1.0, 1.0, &[5], &x),
            &[f32::NAN, 1.0, -1.0, 1.0, -1.0],
            0.0,
        );
        close(
            &run_f32(UnaryOp::Sigmoid, 0.0, 0.0, &[5], &x),
            &[f32::NAN, 1.0, 0.0, 1.0, 3.783506e-44],
            1e-6,
        );
        // Stable softplus: no overflow for large inputs.
        close(
            &run_f32(UnaryOp::Softplus, 0.0, 0.0, &[5], &x),
            &[f32::NAN, f32::INFINITY, 0.0, 100.0, 3.783506e-44],
            1e-6,
        );
        close(
            &run_f32(UnaryOp::Sign, 0.0, 0.0, &[5], &x),
            &[f32::NAN, 1.0, -1.0, 1.0, -1.0],
            0.0,
        );
        // Clip with min > max gives max everywhere.
        close(
            &run_f32(UnaryOp::Clip, 2.0, 1.0, &[3], &[0.0, 1.5, 3.0]),
            &[1.0, 1.0, 1.0],
            0.0,
        );
    }

    #[test]
    fn f64_and_half_types() {
        let x = [1.5f64, -0.3];
        let mut y = [0f64; 2];
        run_unary(
            &act(UnaryOp::Exp, 0.0, 0.0),
            &[Some(t(&[2], &x))],
            &mut [tm(&[2], &mut y)],
        )
        .unwrap();
        close64(&y[..1], &[4.4816890703380645], 1e-15);
        run_unary(
            &act(UnaryOp::Tanh, 0.0, 0.0),
            &[Some(t(&[2], &x))],
            &mut [tm(&[2], &mut y)],
        )
        .unwrap();
        close64(&y[1..], &[-0.2913126124515909], 1e-15);

        // f16 [-1.5, 0, 2, 3]; Exp rounded to f16 per numpy.
        let h: [u16; 4] = [0xbe00, 0x0000, 0x4000, 0x4200];
        let mut out = [0u16; 4];
        let xr = TensorRef {
            dtype: DType::F16,
            shape: shape(&[4]),
            data: bytemuck::cast_slice(&h),
        };
        let ym = TensorMut {
            dtype: DType::F16,
            shape: shape(&[4]),
            data: bytemuck::cast_slice_mut(&mut out),
        };
        run_unary(&act(UnaryOp::Exp, 0.0, 0.0), &[Some(xr)], &mut [ym]).unwrap();
        assert_eq!(out, [0x3324, 0x3c00, 0x4764, 0x4d05]);
        let ym = TensorMut {
            dtype: DType::F16,
            shape: shape(&[4]),
            data: bytemuck::cast_slice_mut(&mut out),
        };
        run_unary(&act(UnaryOp::Relu, 0.0, 0.0), &[Some(xr)], &mut [ym]).unwrap();
        assert_eq!(out, [0x0000, 0x0000, 0x4000, 0x4200]);
        // bf16 Neg flips the sign bit.
        let b: [u16; 2] = [0x3f80, 0xc000]; // 1.0, -2.0
        let xr = TensorRef {
            dtype: DType::Bf16,
            shape: shape(&[2]),
            data: bytemuck::cast_slice(&b),
        };
        let mut out = [0u16; 2];
        let ym = TensorMut {
            dtype: DType::Bf16,
            shape: shape(&[2]),
            data: bytemuck::cast_slice_mut(&mut out),
        };
        run_unary(&act(UnaryOp::Neg, 0.0, 0.0), &[Some(xr)], &mut [ym]).unwrap();
        assert_eq!(out, [0xbf80, 0x4000]);
    }

    #[test]
    fn integer_ops() {
        let x = [-5i32, -1, 0, 3, i32::MIN];
        let mut y = [0i32; 5];
        let mut go = |op, a, b| {
            run_unary(
                &act(op, a, b),
                &[Some(t(&[5], &x))],
                &mut [tm(&[5], &mut y)],
            )
            .unwrap();
            y
        };
        assert_eq!(go(UnaryOp::Neg, 0.0, 0.0), [5, 1, 0, -3, i32::MIN]);
        assert_eq!(go(UnaryOp::Abs, 0.0, 0.0), [5, 1, 0, 3, i32::MIN]);
        assert_eq!(go(UnaryOp::Sign, 0.0, 0.0), [-1, -1, 0, 1, -1]);
        assert_eq!(go(UnaryOp::Relu, 0.0, 0.0), [0, 0, 0, 3, 0]);
        assert_eq!(go(UnaryOp::Clip, -2.0, 2.0), [-2, -1, 0, 2, -2]);
        assert_eq!(
            go(UnaryOp::Clip, f32::NEG_INFINITY, 1.0),
            [-5, -1, 0, 1, i32::MIN]
        );
        assert_eq!(go(UnaryOp::Identity, 0.0, 0.0), x);
        let e = run_unary(
            &act(UnaryOp::Exp, 0.0, 0.0),
            &[Some(t(&[5], &x))],
            &mut [tm(&[5], &mut y)],
        );
        assert!(matches!(e, Err(KernelError::UnsupportedDType(_))));

        let x8 = [-128i8, -3, 7];
        let mut y8 = [0i8; 3];
        run_unary(
            &act(UnaryOp::Neg, 0.0, 0.0),
            &[Some(t(&[3], &x8))],
            &mut [tm(&[3], &mut y8)],
        )
        .unwrap();
        assert_eq!(y8, [-128, 3, -7]);
        let xu = [0u8, 5, 255];
        let mut yu = [9u8; 3];
        run_unary(
            &act(UnaryOp::Sign, 0.0, 0.0),
            &[Some(t(&[3], &xu))],
            &mut [tm(&[3], &mut yu)],
        )
        .unwrap();
        assert_eq!(yu, [0, 1, 1]);
        run_unary(
            &act(UnaryOp::Abs, 0.0, 0.0),
            &[Some(t(&[3], &xu))],
            &mut [tm(&[3], &mut yu)],
        )
        .unwrap();
        assert_eq!(yu, xu);
        let x64 = [i64::MAX, -7];
        let mut y64 = [0i64; 2];
        run_unary(
            &act(UnaryOp::Neg, 0.0, 0.0),
            &[Some(t(&[2], &x64))],
            &mut [tm(&[2], &mut y64)],
        )
        .unwrap();
        assert_eq!(y64, [-i64::MAX, 7]);
    }

    #[test]
    fn bool_outputs_and_not() {
        let x = [1.0f32, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0];
        let mut y = [7u8; 5];
        run_unary(
            &act(UnaryOp::IsNaN, 0.0, 0.0),
            &[Some(t(&[5], &x))],
            &mut [tmb(&[5], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [0, 1, 0, 0, 0]);
        run_unary(
            &act(UnaryOp::IsInf, 1.0, 1.0),
            &[Some(t(&[5], &x))],
            &mut [tmb(&[5], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [0, 0, 1, 1, 0]);
        run_unary(
            &act(UnaryOp::IsInf, 1.0, 0.0),
            &[Some(t(&[5], &x))],
            &mut [tmb(&[5], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [0, 0, 1, 0, 0]);
        run_unary(
            &act(UnaryOp::IsInf, 0.0, 1.0),
            &[Some(t(&[5], &x))],
            &mut [tmb(&[5], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [0, 0, 0, 1, 0]);
        let x64 = [f64::NAN, 2.0];
        let mut y2 = [9u8; 2];
        run_unary(
            &act(UnaryOp::IsNaN, 0.0, 0.0),
            &[Some(t(&[2], &x64))],
            &mut [tmb(&[2], &mut y2)],
        )
        .unwrap();
        assert_eq!(y2, [1, 0]);
        // f16 NaN (0x7e00) and +inf (0x7c00).
        let h: [u16; 3] = [0x7e00, 0x7c00, 0x3c00];
        let xr = TensorRef {
            dtype: DType::F16,
            shape: shape(&[3]),
            data: bytemuck::cast_slice(&h),
        };
        let mut y3 = [9u8; 3];
        run_unary(
            &act(UnaryOp::IsInf, 1.0, 1.0),
            &[Some(xr)],
            &mut [tmb(&[3], &mut y3)],
        )
        .unwrap();
        assert_eq!(y3, [0, 1, 0]);

        let b = [0u8, 1, 1, 0];
        let mut nb = [9u8; 4];
        run_unary(
            &act(UnaryOp::Not, 0.0, 0.0),
            &[Some(tb(&[2, 2], &b))],
            &mut [tmb(&[2, 2], &mut nb)],
        )
        .unwrap();
        assert_eq!(nb, [1, 0, 0, 1]);
        run_unary(
            &act(UnaryOp::Identity, 0.0, 0.0),
            &[Some(tb(&[2, 2], &b))],
            &mut [tmb(&[2, 2], &mut nb)],
        )
        .unwrap();
        assert_eq!(nb, b);
        // IsNaN needs a bool output.
        let mut wrong = [0f32; 5];
        assert!(
            run_unary(
                &act(UnaryOp::IsNaN, 0.0, 0.0),
                &[Some(t(&[5], &x))],
                &mut [tm(&[5], &mut wrong)]
            )
            .is_err()
        );
    }

    #[test]
    fn activation_helpers() {
        let mut d = [-1.0f32, 2.0];
        apply_activation(&Activation::default(), &mut d).unwrap();
        assert_eq!(d, [-1.0, 2.0]);
        apply_activation(
            &Activation {
                op: UnaryOp::LeakyRelu as u32,
                alpha: 0.5,
                beta: 0.0,
            },
            &mut d,
        )
        .unwrap();
        assert_eq!(d, [-0.5, 2.0]);
        // Only the epilogue activations: Sin is a unary op, not an epilogue.
        let sin = Activation {
            op: UnaryOp::Sin as u32,
            alpha: 0.0,
            beta: 0.0,
        };
        assert!(apply_activation(&sin, &mut d.clone()).is_err());
        assert!(apply_unary_op(&sin, &mut d).is_ok());
        assert!(
            apply_activation(
                &Activation {
                    op: 999,
                    alpha: 0.0,
                    beta: 0.0
                },
                &mut d
            )
            .is_err()
        );
        assert_eq!(activation_cost(&Activation::default()), 0);
        assert_eq!(unary_f32(UnaryOp::Relu, 0.0, 0.0, -1.0), 0.0);
        let mut v = [0.0f64, 1.0];
        apply_unary_in_place(UnaryOp::Exp, 0.0, 0.0, &mut v);
        close64(&v, &[1.0, core::f64::consts::E], 1e-15);
    }

    #[test]
    fn malformed_and_empty() {
        let x = [1.0f32, 2.0, 3.0];
        let mut y = [0f32; 2];
        let p = act(UnaryOp::Relu, 0.0, 0.0);
        assert!(matches!(
            run_unary(&p, &[Some(t(&[3], &x))], &mut [tm(&[2], &mut y)]),
            Err(KernelError::Shape(_))
        ));
        // Shape says 3 elements but only 2 bytes-worth of data is present.
        let mut y3 = [0f32; 3];
        assert!(run_unary(&p, &[Some(t(&[3], &x[..2]))], &mut [tm(&[3], &mut y3)]).is_err());
        assert!(matches!(
            run_unary(&p, &[None], &mut [tm(&[3], &mut y3)]),
            Err(KernelError::MissingTensor(_))
        ));
        assert!(matches!(
            run_unary(&p, &[Some(t(&[3], &x))], &mut []),
            Err(KernelError::MissingTensor(_))
        ));
        let bad = UnaryParams {
            act: Activation {
                op: 0,
                alpha: 0.0,
                beta: 0.0,
            },
        };
        assert!(matches!(
            run_unary(&bad, &[Some(t(&[3], &x))], &mut [tm(&[3], &mut y3)]),
            Err(KernelError::BadParams(_))
        ));
        let mut yi = [0i32; 3];
        assert!(matches!(
            run_unary(&p, &[Some(t(&[3], &x))], &mut [tm(&[3], &mut yi)]),
            Err(KernelError::DType(_))
        ));
        // Empty and scalar tensors.
        let mut e: [f32; 0] = [];
        run_unary(
            &p,
            &[Some(t::<f32>(&[0, 4], &[]))],
            &mut [tm(&[0, 4], &mut e)],
        )
        .unwrap();
        let mut s = [0f32; 1];
        run_unary(
            &act(UnaryOp::Neg, 0.0, 0.0),
            &[Some(t(&[], &[2.0f32]))],
            &mut [tm(&[], &mut s)],
        )
        .unwrap();
        assert_eq!(s, [-2.0]);
    }
}
