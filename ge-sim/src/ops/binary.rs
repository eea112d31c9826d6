//! Broadcast binary ops, variadic Sum/Max/Min/Mean, and Where.

use ge_runtime::format::{BinaryOp, BinaryParams, DType, Shape, TensorMut, TensorRef, ViewError};

use super::broadcast::{
    OFFSET_ERR, accumulate, broadcast_strides, broadcast2, for_each_row, numel,
};
use super::cast::Scalar;
use super::real::Real;
use super::unary::{apply_activation, apply_unary_in_place};
use super::{KernelError, KernelResult, input, output};

fn dtype_mismatch(expected: DType, found: DType) -> KernelError {
    KernelError::DType(ViewError { expected, found })
}

/// Arithmetic with ONNX semantics per element type.
pub(super) trait Arith: Scalar {
    fn plus(self, b: Self) -> Self;
    fn minus(self, b: Self) -> Self;
    fn times(self, b: Self) -> Self;
    /// Division; integers truncate toward zero (and give 0 for a zero divisor).
    fn over(self, b: Self) -> Self;
    fn power(self, e: Self) -> Self;
    /// Max / min propagating NaN.
    fn maxp(self, b: Self) -> Self;
    fn minp(self, b: Self) -> Self;
    /// Remainder with the divisor's sign (Python `%`).
    fn modp(self, b: Self) -> Self;
    /// Remainder with the dividend's sign (C `fmod`).
    fn fmodc(self, b: Self) -> Self;
    fn is_neg(self) -> bool;
    fn from_count(n: usize) -> Self;
}

macro_rules! arith_float {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline]
            fn plus(self, b: Self) -> Self { self + b }
            #[inline]
            fn minus(self, b: Self) -> Self { self - b }
            #[inline]
            fn times(self, b: Self) -> Self { self * b }
            #[inline]
            fn over(self, b: Self) -> Self { self / b }
            #[inline]
            fn power(self, e: Self) -> Self { Real::powf(self, e) }
            #[inline]
            fn maxp(self, b: Self) -> Self { if self >= b || <$t>::is_nan(self) { self } else { b } }
            #[inline]
            fn minp(self, b: Self) -> Self { if self <= b || <$t>::is_nan(self) { self } else { b } }
            #[inline]
            fn modp(self, b: Self) -> Self {
                let r = Real::fmod(self, b);
                if r != 0.0 && ((r < 0.0) != (b < 0.0)) { r + b } else { r }
            }
            #[inline]
            fn fmodc(self, b: Self) -> Self { Real::fmod(self, b) }
            #[inline]
            fn is_neg(self) -> bool { self < 0.0 }
            #[inline]
            fn from_count(n: usize) -> Self { n as $t }
        }
    )*};
}
arith_float!(f32, f64);

macro_rules! arith_int {
    ($neg:ident: $($t:ty),*) => {$(
        impl Arith for $t {
            #[inline]
            fn plus(self, b: Self) -> Self { self.wrapping_add(b) }
            #[inline]
            fn minus(self, b: Self) -> Self { self.wrapping_sub(b) }
            #[inline]
            fn times(self, b: Self) -> Self { self.wrapping_mul(b) }
            #[inline]
            fn over(self, b: Self) -> Self { if b == 0 { 0 } else { self.wrapping_div(b) } }
            #[inline]
            fn power(self, e: Self) -> Self { ipow(self, e as i128) }
            #[inline]
            fn maxp(self, b: Self) -> Self { if self >= b { self } else { b } }
            #[inline]
            fn minp(self, b: Self) -> Self { if self <= b { self } else { b } }
            #[inline]
            fn modp(self, b: Self) -> Self {
                if b == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(b);
                if r != 0 && (r.is_neg() != b.is_neg()) { r.wrapping_add(b) } else { r }
            }
            #[inline]
            fn fmodc(self, b: Self) -> Self { if b == 0 { 0 } else { self.wrapping_rem(b) } }
            #[inline]
            fn is_neg(self) -> bool { $neg!(self) }
            #[inline]
            fn from_count(n: usize) -> Self { n as $t }
        }
    )*};
}
macro_rules! signed_neg {
    ($v:expr) => {
        $v < 0
    };
}
macro_rules! unsigned_neg {
    ($v:expr) => {{
        let _ = $v;
        false
    }};
}
arith_int!(signed_neg: i8, i16, i32, i64);
arith_int!(unsigned_neg: u8, u16, u32, u64);

/// Integer power by squaring (wrapping); negative exponents give `1 / base` truncated.
fn ipow<T: Arith>(base: T, e: i128) -> T {
    if e < 0 {
        return match base.to_i128() {
            1 => T::from_i128(1),
            -1 => T::from_i128(if e & 1 == 1 { -1 } else { 1 }),
            _ => T::from_i128(0),
        };
    }
    let (mut r, mut b, mut e) = (T::from_i128(1), base, e);
    while e > 0 {
        if e & 1 == 1 {
            r = r.times(b);
        }
        e >>= 1;
        if e > 0 {
            b = b.times(b);
        }
    }
    r
}

struct Operands<'s, 'a, 'o> {
    a: &'s TensorRef<'a>,
    b: &'s TensorRef<'a>,
    y: &'s mut TensorMut<'o>,
}

fn arith_t<T: Arith>(op: BinaryOp, t: Operands<'_, '_, '_>) -> Result<(), KernelError> {
    use BinaryOp::*;
    let (sa, sb, so) = (t.a.shape, t.b.shape, t.y.shape);
    let (xa, xb) = (t.a.as_slice::<T>()?, t.b.as_slice::<T>()?);
    let out = t.y.as_slice_mut::<T>()?;
    macro_rules! go {
        ($f:expr) => {
            broadcast2(out, &so, xa, &sa, xb, &sb, $f)
        };
    }
    match op {
        Add => go!(T::plus),
        Sub => go!(T::minus),
        Mul => go!(T::times),
        Div => go!(T::over),
        Pow => go!(T::power),
        Max => go!(T::maxp),
        Min => go!(T::minp),
        Mean => {
            let two = T::from_count(2);
            go!(move |x: T, y: T| x.plus(y).over(two))
        }
        Mod => go!(T::modp),
        Fmod => go!(T::fmodc),
        PRelu => go!(|x: T, s: T| if x.is_neg() { x.times(s) } else { x }),
        _ => Err(KernelError::BadParams("not an arithmetic binary op")),
    }
}

macro_rules! numeric_dispatch {
    ($dt:expr, $f:ident, $($arg:expr),*) => {
        match $dt {
            DType::F32 => $f::<f32>($($arg),*),
            DType::F64 => $f::<f64>($($arg),*),
            DType::I8 => $f::<i8>($($arg),*),
            DType::I16 => $f::<i16>($($arg),*),
            DType::I32 => $f::<i32>($($arg),*),
            DType::I64 => $f::<i64>($($arg),*),
            DType::U8 => $f::<u8>($($arg),*),
            DType::U16 => $f::<u16>($($arg),*),
            DType::U32 => $f::<u32>($($arg),*),
            DType::U64 => $f::<u64>($($arg),*),
            _ => Err(KernelError::UnsupportedDType("binary op on this element type")),
        }
    };
}

fn cmp_t<T: Copy + PartialOrd>(
    op: BinaryOp,
    out: &mut [u8],
    so: &Shape,
    xa: &[T],
    sa: &Shape,
    xb: &[T],
    sb: &Shape,
) -> Result<(), KernelError> {
    use BinaryOp::*;
    match op {
        Equal => broadcast2(out, so, xa, sa, xb, sb, |x, y| (x == y) as u8),
        Less => broadcast2(out, so, xa, sa, xb, sb, |x, y| (x < y) as u8),
        Greater => broadcast2(out, so, xa, sa, xb, sb, |x, y| (x > y) as u8),
        LessOrEqual => broadcast2(out, so, xa, sa, xb, sb, |x, y| (x <= y) as u8),
        GreaterOrEqual => broadcast2(out, so, xa, sa, xb, sb, |x, y| (x >= y) as u8),
        _ => Err(KernelError::BadParams("not a comparison op")),
    }
}

fn cmp_typed<T: Scalar>(op: BinaryOp, t: Operands<'_, '_, '_>) -> Result<(), KernelError> {
    let (xa, xb) = (t.a.as_slice::<T>()?, t.b.as_slice::<T>()?);
    let so = t.y.shape;
    cmp_t(op, t.y.as_bool_mut()?, &so, xa, &t.a.shape, xb, &t.b.shape)
}

fn compare(op: BinaryOp, t: Operands<'_, '_, '_>) -> Result<(), KernelError> {
    if t.a.dtype != t.b.dtype {
        return Err(dtype_mismatch(t.a.dtype, t.b.dtype));
    }
    if t.a.dtype == DType::Bool {
        let (xa, xb) = (t.a.as_bool()?, t.b.as_bool()?);
        let so = t.y.shape;
        return cmp_t(op, t.y.as_bool_mut()?, &so, xa, &t.a.shape, xb, &t.b.shape);
    }
    numeric_dispatch!(t.a.dtype, cmp_typed, op, t)
}

/// Bit operations on integers (shift amounts outside `0..bits` shift everything out).
trait Bits: Scalar {
    fn band(self, b: Self) -> Self;
    fn bor(self, b: Self) -> Self;
    fn bxor(self, b: Self) -> Self;
    fn shl(self, s: Self) -> Self;
    fn shr(self, s: Self) -> Self;
}

macro_rules! bits_impl {
    ($($t:ty),*) => {$(
        impl Bits for $t {
            #[inline]
            fn band(self, b: Self) -> Self { self & b }
            #[inline]
            fn bor(self, b: Self) -> Self { self | b }
            #[inline]
            fn bxor(self, b: Self) -> Self { self ^ b }
            #[inline]
            fn shl(self, s: Self) -> Self {
                let s = s as i128;
                if (0..Self::BITS as i128).contains(&s) { self << (s as u32) } else { 0 }
            }
            #[inline]
            fn shr(self, s: Self) -> Self {
                let s = s as i128;
                if (0..Self::BITS as i128).contains(&s) {
                    self >> (s as u32)
                } else {
                    // Arithmetic shift by bits-1 yields the sign fill (0 for unsigned).
                    self >> (Self::BITS - 1) >> 1
                }
            }
        }
    )*};
}
bits_impl!(i8, i16, i32, i64, u8, u16, u32, u64);

fn bits_t<T: Bits>(op: BinaryOp, t: Operands<'_, '_, '_>) -> Result<(), KernelError> {
    use BinaryOp::*;
    let (sa, sb, so) = (t.a.shape, t.b.shape, t.y.shape);
    let (xa, xb) = (t.a.as_slice::<T>()?, t.b.as_slice::<T>()?);
    let out = t.y.as_slice_mut::<T>()?;
    match op {
        BitAnd => broadcast2(out, &so, xa, &sa, xb, &sb, T::band),
        BitOr => broadcast2(out, &so, xa, &sa, xb, &sb, T::bor),
        BitXor => broadcast2(out, &so, xa, &sa, xb, &sb, T::bxor),
        BitShiftLeft => broadcast2(out, &so, xa, &sa, xb, &sb, T::shl),
        BitShiftRight => broadcast2(out, &so, xa, &sa, xb, &sb, T::shr),
        _ => Err(KernelError::BadParams("not a bitwise op")),
    }
}

fn bool_op(op: BinaryOp, t: Operands<'_, '_, '_>) -> Result<(), KernelError> {
    use BinaryOp::*;
    let (sa, sb, so) = (t.a.shape, t.b.shape, t.y.shape);
    let (xa, xb) = (t.a.as_bool()?, t.b.as_bool()?);
    let out = t.y.as_bool_mut()?;
    match op {
        And | BitAnd => broadcast2(out, &so, xa, &sa, xb, &sb, |x, y| {
            ((x != 0) & (y != 0)) as u8
        }),
        Or | BitOr => broadcast2(out, &so, xa, &sa, xb, &sb, |x, y| {
            ((x != 0) | (y != 0)) as u8
        }),
        Xor | BitXor => broadcast2(out, &so, xa, &sa, xb, &sb, |x, y| {
            ((x != 0) ^ (y != 0)) as u8
        }),
        _ => Err(KernelError::UnsupportedDType(
            "this op is not defined on bool",
        )),
    }
}

fn bitwise(op: BinaryOp, t: Operands<'_, '_, '_>) -> Result<(), KernelError> {
    if t.a.dtype != t.b.dtype || t.a.dtype != t.y.dtype {
        return Err(dtype_mismatch(t.a.dtype, t.b.dtype));
    }
    match t.a.dtype {
        DType::Bool => bool_op(op, t),
        DType::I8 => bits_t::<i8>(op, t),
        DType::I16 => bits_t::<i16>(op, t),
        DType::I32 => bits_t::<i32>(op, t),
        DType::I64 => bits_t::<i64>(op, t),
        DType::U8 => bits_t::<u8>(op, t),
        DType::U16 => bits_t::<u16>(op, t),
        DType::U32 => bits_t::<u32>(op, t),
        DType::U64 => bits_t::<u64>(op, t),
        _ => Err(KernelError::UnsupportedDType("bitwise ops need integers")),
    }
}

/// Pow with an exponent type that differs from the base's: through f64 when either side is
/// a float (as numpy promotes), by squaring when both are integers.
fn pow_te<T: Arith, E: Scalar>(t: Operands<'_, '_, '_>) -> Result<(), KernelError> {
    let (sa, sb, so) = (t.a.shape, t.b.shape, t.y.shape);
    let (xa, xb) = (t.a.as_slice::<T>()?, t.b.as_slice::<E>()?);
    let out = t.y.as_slice_mut::<T>()?;
    if T::IS_FLOAT || E::IS_FLOAT {
        broadcast2(out, &so, xa, &sa, xb, &sb, |x: T, e: E| {
            T::from_f64(libm::pow(x.to_f64(), e.to_f64()))
        })
    } else {
        broadcast2(out, &so, xa, &sa, xb, &sb, |x: T, e: E| {
            ipow(x, e.to_i128())
        })
    }
}

fn pow_base<T: Arith>(t: Operands<'_, '_, '_>) -> Result<(), KernelError> {
    match t.b.dtype {
        DType::F32 => pow_te::<T, f32>(t),
        DType::F64 => pow_te::<T, f64>(t),
        DType::I8 => pow_te::<T, i8>(t),
        DType::I16 => pow_te::<T, i16>(t),
        DType::I32 => pow_te::<T, i32>(t),
        DType::I64 => pow_te::<T, i64>(t),
        DType::U8 => pow_te::<T, u8>(t),
        DType::U16 => pow_te::<T, u16>(t),
        DType::U32 => pow_te::<T, u32>(t),
        DType::U64 => pow_te::<T, u64>(t),
        _ => Err(KernelError::UnsupportedDType("Pow exponent type")),
    }
}

fn pow_mixed(t: Operands<'_, '_, '_>) -> Result<(), KernelError> {
    if t.a.dtype != t.y.dtype {
        return Err(dtype_mismatch(t.a.dtype, t.y.dtype));
    }
    match t.a.dtype {
        DType::F32 => pow_base::<f32>(t),
        DType::F64 => pow_base::<f64>(t),
        DType::I32 => pow_base::<i32>(t),
        DType::I64 => pow_base::<i64>(t),
        _ => Err(KernelError::UnsupportedDType("Pow base type")),
    }
}

/// Applies a fused activation to a float result.
fn epilogue(act: &ge_runtime::format::Activation, y: &mut TensorMut<'_>) -> KernelResult {
    if act.op == 0 {
        return Ok(());
    }
    match y.dtype {
        DType::F32 => apply_activation(act, y.as_slice_mut::<f32>()?)?,
        DType::F64 => {
            let op = ge_runtime::format::UnaryOp::from_u32(act.op)
                .ok_or(KernelError::BadParams("unknown activation op"))?;
            apply_unary_in_place(op, act.alpha, act.beta, y.as_slice_mut::<f64>()?);
        }
        _ => {
            return Err(KernelError::UnsupportedDType(
                "fused activation on a non-float result",
            ));
        }
    }
    Ok(())
}

/// Broadcast binary op. Arithmetic (Add Sub Mul Div Pow Max Min Mean Mod Fmod PRelu) on
/// f32, f64 and the eight integer types (Pow also with a different exponent type for f32,
/// f64, i32, i64 bases); comparisons on those and bool (output bool); And/Or/Xor on bool;
/// bit ops on integers (BitAnd/Or/Xor also on bool). The fused activation applies to float
/// results.
pub fn run_binary(
    p: &BinaryParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    with_operands(p, ins, outs, |op, t| {
        use BinaryOp::*;
        let (a, b) = (t.a, t.b);
        match op {
            Equal | Less | Greater | LessOrEqual | GreaterOrEqual => compare(op, t),
            And | Or | Xor => {
                if a.dtype != DType::Bool || b.dtype != DType::Bool {
                    return Err(dtype_mismatch(
                        DType::Bool,
                        if a.dtype == DType::Bool {
                            b.dtype
                        } else {
                            a.dtype
                        },
                    ));
                }
                bool_op(op, t)
            }
            BitShiftLeft | BitShiftRight | BitAnd | BitOr | BitXor => bitwise(op, t),
            Pow if a.dtype != b.dtype => pow_mixed(t),
            _ => {
                same_dtypes(&t)?;
                numeric_dispatch!(a.dtype, arith_t, op, t)
            }
        }
    })
}

/// [`run_binary`] for a task whose output is f32 (the registry's `Binary/float32` entry):
/// only arithmetic on f32 and Pow with an f32 base produce one, so a firmware image whose
/// model has no other binary links none of the integer, bool and comparison code (which is
/// most of `run_binary`'s). Same results as `run_binary` on every f32 task.
pub fn run_binary_f32(
    p: &BinaryParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    with_operands(p, ins, outs, |op, t| {
        if t.y.dtype != DType::F32 {
            return Err(dtype_mismatch(DType::F32, t.y.dtype));
        }
        match op {
            BinaryOp::Pow if t.a.dtype != t.b.dtype => {
                if t.a.dtype != DType::F32 {
                    return Err(dtype_mismatch(DType::F32, t.a.dtype));
                }
                pow_base::<f32>(t)
            }
            // A comparison, logic or bit op (never an f32 output) fails in `arith_t`.
            _ => {
                same_dtypes(&t)?;
                arith_t::<f32>(op, t)
            }
        }
    })
}

/// Reads the op and the operands, runs `body` and the fused activation.
fn with_operands(
    p: &BinaryParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    body: impl FnOnce(BinaryOp, Operands<'_, '_, '_>) -> Result<(), KernelError>,
) -> KernelResult {
    let op = BinaryOp::from_u32(p.op).ok_or(KernelError::BadParams("unknown binary op"))?;
    let a = input(ins, 0, "binary input A")?;
    let b = input(ins, 1, "binary input B")?;
    let y = output(outs, 0, "binary output")?;
    numel(&y.shape)?;
    body(op, Operands { a, b, y: &mut *y })?;
    epilogue(&p.act, y)
}

/// Both inputs and the output of one element type.
fn same_dtypes(t: &Operands<'_, '_, '_>) -> Result<(), KernelError> {
    if t.a.dtype != t.b.dtype || t.a.dtype != t.y.dtype {
        return Err(dtype_mismatch(
            t.a.dtype,
            if t.a.dtype == t.b.dtype {
                t.y.dtype
            } else {
                t.b.dtype
            },
        ));
    }
    Ok(())
}

/// `out = f(…f(f(x0, x1), x2)…)` over broadcast inputs; the first two in one pass (a
/// residual Sum reads each once).
fn fold_inputs<T: ge_runtime::format::Element>(
    ins: &[Option<TensorRef<'_>>],
    out: &mut [T],
    so: &Shape,
    f: impl Fn(T, T) -> T + Copy,
) -> Result<(), KernelError> {
    let mut first: Option<(&[T], Shape)> = None;
    for (k, t) in ins.iter().enumerate() {
        let t = t
            .as_ref()
            .ok_or(KernelError::MissingTensor("variadic input"))?;
        let x = t.as_slice::<T>()?;
        match (k, first) {
            (0, _) if ins.len() > 1 => first = Some((x, t.shape)),
            (0, _) => accumulate(out, so, x, &t.shape, |_, v| v)?,
            (1, Some((a, sa))) => broadcast2(out, so, a, &sa, x, &t.shape, f)?,
            _ => accumulate(out, so, x, &t.shape, f)?,
        }
    }
    Ok(())
}

fn variadic_t<T: Arith>(
    op: BinaryOp,
    ins: &[Option<TensorRef<'_>>],
    y: &mut TensorMut<'_>,
) -> Result<(), KernelError> {
    use BinaryOp::*;
    let so = y.shape;
    let out = y.as_slice_mut::<T>()?;
    match op {
        Add | Mean => fold_inputs(ins, out, &so, T::plus)?,
        Max => fold_inputs(ins, out, &so, T::maxp)?,
        Min => fold_inputs(ins, out, &so, T::minp)?,
        _ => {
            return Err(KernelError::BadParams(
                "variadic op must be Add (Sum), Max, Min or Mean",
            ));
        }
    }
    if op == Mean {
        let c = T::from_count(ins.len());
        for v in out.iter_mut() {
            *v = v.over(c);
        }
    }
    Ok(())
}

/// Sum (`Add`) / Max / Min / Mean over N ≥ 1 broadcast inputs, for f32, f64 and integers.
pub fn run_variadic(
    p: &BinaryParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    use BinaryOp::*;
    let op = BinaryOp::from_u32(p.op).ok_or(KernelError::BadParams("unknown binary op"))?;
    if !matches!(op, Add | Max | Min | Mean) {
        return Err(KernelError::BadParams(
            "variadic op must be Add (Sum), Max, Min or Mean",
        ));
    }
    if ins.is_empty() {
        return Err(KernelError::MissingTensor("variadic input"));
    }
    let y = output(outs, 0, "variadic output")?;
    for t in ins {
        let t = t
            .as_ref()
            .ok_or(KernelError::MissingTensor("variadic input"))?;
        if t.dtype != y.dtype {
            return Err(dtype_mismatch(y.dtype, t.dtype));
        }
    }
    numel(&y.shape)?;
    numeric_dispatch!(y.dtype, variadic_t, op, ins, &mut *y)?;
    epilogue(&p.act, y)
}

fn raw<'a, T: bytemuck::Pod>(t: &TensorRef<'a>) -> Result<&'a [T], KernelError> {
    if t.data.is_empty() {
        return Ok(&[]);
    }
    bytemuck::try_cast_slice(t.data).map_err(|_| dtype_mismatch(t.dtype, t.dtype))
}

fn where_t<T: bytemuck::Pod + Lanes>(
    c: &TensorRef<'_>,
    x: &TensorRef<'_>,
    yv: &TensorRef<'_>,
    out: &mut TensorMut<'_>,
) -> Result<(), KernelError> {
    let cs = c.as_bool()?;
    let (xs, ys) = (raw::<T>(x)?, raw::<T>(yv)?);
    let so = out.shape;
    let dt = out.dtype;
    let os: &mut [T] = if out.data.is_empty() {
        &mut []
    } else {
        bytemuck::try_cast_slice_mut(&mut *out.data).map_err(|_| dtype_mismatch(dt, dt))?
    };
    let (sc, sx, sy) = (&c.shape, &x.shape, &yv.shape);
    for s in [sc, sx, sy] {
        broadcast_strides(s, &so)?;
    }
    if cs.len() != numel(sc)?
        || xs.len() != numel(sx)?
        || ys.len() != numel(sy)?
        || os.len() != numel(&so)?
    {
        return Err(KernelError::Shape("tensor data does not match its shape"));
    }
    if sc.dims() == so.dims() && sx.dims() == so.dims() && sy.dims() == so.dims() {
        for (((o, &c), &a), &b) in os.iter_mut().zip(cs).zip(xs).zip(ys) {
            *o = if c != 0 { a } else { b };
        }
        return Ok(());
    }
    let mut bad = false;
    for_each_row(
        &so,
        [sc, sx, sy],
        |start, [oc, ox, oy], [ic, ix, iy], len| {
            let Some(o) = os.get_mut(start..start + len) else {
                bad = true;
                return;
            };
            if where_row(o, (cs, oc, ic), (xs, ox, ix), (ys, oy, iy)) {
                return;
            }
            for (j, o) in o.iter_mut().enumerate() {
                match (
                    cs.get(oc + j * ic),
                    xs.get(ox + j * ix),
                    ys.get(oy + j * iy),
                ) {
                    (Some(&c), Some(&a), Some(&b)) => *o = if c != 0 { a } else { b },
                    _ => {
                        bad = true;
                        return;
                    }
                }
            }
        },
    )?;
    if bad { Err(OFFSET_ERR) } else { Ok(()) }
}

/// One broadcast row of Where whose operands each run contiguously (inner stride 1) or
/// repeat one value (stride 0): the row selected by a loop with no index arithmetic or
/// bounds tests, which vectorizes (a masked attention score row is `Where(mask, 0, s)`).
/// `false` (nothing written) for other strides or a row that does not fit its data.
#[inline(always)]
fn where_row<T: Lanes>(
    o: &mut [T],
    (cs, oc, ic): (&[u8], usize, usize),
    (xs, ox, ix): (&[T], usize, usize),
    (ys, oy, iy): (&[T], usize, usize),
) -> bool {
    /// A row operand: `len` values from `at`, or the one at `at`.
    fn run<T>(v: &[T], at: usize, stride: usize, len: usize) -> Option<&[T]> {
        match stride {
            0 => v.get(at..at + 1),
            1 => v.get(at..at + len),
            _ => None,
        }
    }
    let len = o.len();
    let (Some(c), Some(a), Some(b)) = (
        run(cs, oc, ic, len),
        run(xs, ox, ix, len),
        run(ys, oy, iy, len),
    ) else {
        return false;
    };
    match (c.len() == len, a.len() == len, b.len() == len) {
        (true, true, true) => select(o, |j| c[j], |j| a[j], |j| b[j]),
        (true, false, true) => select(o, |j| c[j], |_| a[0], |j| b[j]),
        (true, true, false) => select(o, |j| c[j], |j| a[j], |_| b[0]),
        (true, false, false) => select(o, |j| c[j], |_| a[0], |_| b[0]),
        // A condition constant over the row picks one operand for all of it.
        (false, _, _) => {
            let src = if c[0] != 0 { a } else { b };
            if src.len() == len {
                o.copy_from_slice(src);
            } else {
                o.fill(src[0]);
            }
        }
    }
    true
}

/// `o[j] = c(j) ? a(j) : b(j)` as a bit blend of both values (a select between two loads
/// compiles to a select of addresses, which does not vectorize).
#[inline(always)]
fn select<T: Lanes>(
    o: &mut [T],
    c: impl Fn(usize) -> u8,
    a: impl Fn(usize) -> T,
    b: impl Fn(usize) -> T,
) {
    for (j, o) in o.iter_mut().enumerate() {
        let m = T::mask(c(j) != 0);
        *o = a(j).blend(b(j), m);
    }
}

/// The unsigned element types Where moves values as.
trait Lanes: Copy {
    /// All ones when `on`, else zero.
    fn mask(on: bool) -> Self;
    /// `self` where `m` is set, `other` elsewhere.
    fn blend(self, other: Self, m: Self) -> Self;
}

macro_rules! lanes {
    ($($t:ty),*) => {$(
        impl Lanes for $t {
            #[inline(always)]
            fn mask(on: bool) -> $t {
                (0 as $t).wrapping_sub(on as $t)
            }
            #[inline(always)]
            fn blend(self, other: $t, m: $t) -> $t {
                (self & m) | (other & !m)
            }
        }
    )*};
}
lanes!(u8, u16, u32, u64);

/// `cond ? x : y` with broadcasting, for any element type (selected by element size).
pub fn run_where(ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let c = input(ins, 0, "Where condition")?;
    let x = input(ins, 1, "Where X")?;
    let yv = input(ins, 2, "Where Y")?;
    let out = output(outs, 0, "Where output")?;
    if x.dtype != out.dtype {
        return Err(dtype_mismatch(out.dtype, x.dtype));
    }
    if yv.dtype != out.dtype {
        return Err(dtype_mismatch(out.dtype, yv.dtype));
    }
    numel(&out.shape)?;
    match out.dtype.size() {
        1 => where_t::<u8>(c, x, yv, out)?,
        2 => where_t::<u16>(c, x, yv, out)?,
        4 => where_t::<u32>(c, x, yv, out)?,
        _ => where_t::<u64>(c, x, yv, out)?,
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::excessive_precision)] // expected values pasted from numpy
mod tests {
    extern crate std;
    use super::super::test_util::*;
    use super::*;
    use ge_runtime::format::{Activation, Element, UnaryOp};
    use std::vec::Vec;

    fn bp(op: BinaryOp) -> BinaryParams {
        BinaryParams {
            op: op as u32,
            act: Activation::default(),
        }
    }

    fn bin<A: Element, B: Element, O: Element + Default + Clone>(
        op: BinaryOp,
        sa: &[usize],
        a: &[A],
        sb: &[usize],
        b: &[B],
        so: &[usize],
    ) -> Vec<O> {
        let mut y = std::vec![O::default(); shape(so).numel()];
        run_binary(
            &bp(op),
            &[Some(t(sa, a)), Some(t(sb, b))],
            &mut [tm(so, &mut y)],
        )
        .unwrap();
        y
    }

    const A: [f32; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];

    #[test]
    fn broadcasting_arithmetic() {
        // Expected values from onnx.reference.
        let y: Vec<f32> = bin(
            BinaryOp::Add,
            &[2, 3],
            &A,
            &[3],
            &[10.0f32, 20.0, 30.0],
            &[2, 3],
        );
        assert_eq!(y, [11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
        let y: Vec<f32> = bin(
            BinaryOp::Mul,
            &[2, 1],
            &[1.0f32, 2.0],
            &[1, 3],
            &[3.0f32, 4.0, 5.0],
            &[2, 3],
        );
        assert_eq!(y, [3.0, 4.0, 5.0, 6.0, 8.0, 10.0]);
        let e: Vec<f32> = (0..6).map(|v| v as f32).collect();
        let y: Vec<f32> = bin(
            BinaryOp::Sub,
            &[2, 1, 3],
            &e,
            &[4, 1],
            &[1.0f32, 2.0, 3.0, 4.0],
            &[2, 4, 3],
        );
        #[rustfmt::skip]
        let want = [-1.0, 0.0, 1.0, -2.0, -1.0, 0.0, -3.0, -2.0, -1.0, -4.0, -3.0, -2.0,
            2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, -1.0, 0.0, 1.0];
        assert_eq!(y, want);
        // Scalar on the left, then on the right.
        let y: Vec<f32> = bin(BinaryOp::Div, &[], &[2.0f32], &[2, 3], &A, &[2, 3]);
        close(
            &y,
            &[
                2.0,
                1.0,
                0.6666666865348816,
                0.5,
                0.4000000059604645,
                0.3333333432674408,
            ],
            0.0,
        );
        let y: Vec<f32> = bin(BinaryOp::Sub, &[2, 3], &A, &[1, 1], &[1.0f32], &[2, 3]);
        assert_eq!(y, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let y: Vec<f32> = bin(BinaryOp::Mean, &[2, 3], &A, &[2, 3], &A, &[2, 3]);
        assert_eq!(y, A);
        // Inner broadcast on the left with a row on the right of a higher rank.
        let y: Vec<i64> = bin(
            BinaryOp::Add,
            &[2, 1],
            &[100i64, 200],
            &[3],
            &[1i64, 2, 3],
            &[2, 3],
        );
        assert_eq!(y, [101, 102, 103, 201, 202, 203]);
    }

    #[test]
    fn integer_division_and_modulo() {
        let y: Vec<i32> = bin(
            BinaryOp::Div,
            &[4],
            &[7i32, -7, 7, -7],
            &[4],
            &[2i32, 2, -2, -2],
            &[4],
        );
        assert_eq!(y, [3, -3, -3, 3]);
        let (a, b) = ([5i32, -5, 5, -5], [3i32, 3, -3, -3]);
        let y: Vec<i32> = bin(BinaryOp::Mod, &[4], &a, &[4], &b, &[4]);
        assert_eq!(y, [2, 1, -1, -2]);
        let y: Vec<i32> = bin(BinaryOp::Fmod, &[4], &a, &[4], &b, &[4]);
        assert_eq!(y, [2, -2, 2, -2]);
        // Zero divisor and MIN / -1 do not panic.
        let y: Vec<i32> = bin(
            BinaryOp::Div,
            &[2],
            &[5i32, i32::MIN],
            &[2],
            &[0i32, -1],
            &[2],
        );
        assert_eq!(y, [0, i32::MIN]);
        let y: Vec<i8> = bin(BinaryOp::Mod, &[2], &[5i8, i8::MIN], &[2], &[0i8, -1], &[2]);
        assert_eq!(y, [0, 0]);
        let y: Vec<u8> = bin(BinaryOp::Mod, &[2], &[250u8, 7], &[], &[7u8], &[2]);
        assert_eq!(y, [5, 0]);
        // Wrapping add on u8.
        let y: Vec<u8> = bin(BinaryOp::Add, &[1], &[250u8], &[1], &[10u8], &[1]);
        assert_eq!(y, [4]);
        // Float Fmod and Mod (numpy fmod / mod).
        let (fx, fy) = ([5.5f32, -5.5, 5.5, -5.5], [2.0f32, 2.0, -2.0, -2.0]);
        let y: Vec<f32> = bin(BinaryOp::Fmod, &[4], &fx, &[4], &fy, &[4]);
        assert_eq!(y, [1.5, -1.5, 1.5, -1.5]);
        let y: Vec<f32> = bin(BinaryOp::Mod, &[4], &fx, &[4], &fy, &[4]);
        assert_eq!(y, [1.5, 0.5, -0.5, -1.5]);
    }

    #[test]
    fn pow_same_and_mixed_types() {
        let base = [2.0f32, 3.0, 0.5, -2.0];
        let y: Vec<f32> = bin(
            BinaryOp::Pow,
            &[4],
            &base,
            &[4],
            &[3.0f32, 0.5, -1.0, 2.0],
            &[4],
        );
        close(&y, &[8.0, 1.732050895690918, 2.0, 4.0], 1e-7);
        let y: Vec<f32> = bin(BinaryOp::Pow, &[4], &base, &[4], &[3i64, 2, -1, 3], &[4]);
        assert_eq!(y, [8.0, 9.0, 2.0, -8.0]);
        let y: Vec<f32> = bin(BinaryOp::Pow, &[4], &base, &[], &[2i32], &[4]);
        assert_eq!(y, [4.0, 9.0, 0.25, 4.0]);
        let y: Vec<i64> = bin(
            BinaryOp::Pow,
            &[4],
            &[2i64, 3, -2, 5],
            &[4],
            &[10i64, 0, 3, 2],
            &[4],
        );
        assert_eq!(y, [1024, 1, -8, 25]);
        let y: Vec<i32> = bin(
            BinaryOp::Pow,
            &[4],
            &[2i32, 1, -1, -1],
            &[4],
            &[-1i32, -5, -3, -4],
            &[4],
        );
        assert_eq!(y, [0, 1, -1, 1]);
        let y: Vec<i32> = bin(BinaryOp::Pow, &[2], &[2i32, 9], &[2], &[0.5f32, 0.5], &[2]);
        assert_eq!(y, [1, 3]);
        let y: Vec<i64> = bin(BinaryOp::Pow, &[1], &[3i64], &[1], &[4u8], &[1]);
        assert_eq!(y, [81]);
    }

    #[test]
    fn max_min_nan_and_prelu() {
        let a = [1.0f32, f32::NAN, 3.0];
        let b = [2.0f32, 1.0, f32::NAN];
        let y: Vec<f32> = bin(BinaryOp::Max, &[3], &a, &[3], &b, &[3]);
        close(&y, &[2.0, f32::NAN, f32::NAN], 0.0);
        let y: Vec<f32> = bin(BinaryOp::Min, &[3], &a, &[3], &b, &[3]);
        close(&y, &[1.0, f32::NAN, f32::NAN], 0.0);
        let y: Vec<f32> = bin(
            BinaryOp::PRelu,
            &[2, 1, 2],
            &[-1.0f32, 2.0, -3.0, 4.0],
            &[2, 1, 1],
            &[0.1f32, 0.5],
            &[2, 1, 2],
        );
        close(&y, &[-0.10000000149011612, 2.0, -1.5, 4.0], 0.0);
        let y: Vec<i32> = bin(BinaryOp::PRelu, &[3], &[-4i32, 0, 4], &[], &[3i32], &[3]);
        assert_eq!(y, [-12, 0, 4]);
    }

    #[test]
    fn comparisons_logic_and_bits() {
        let y: Vec<u8> = {
            let mut y = std::vec![0u8; 6];
            run_binary(
                &bp(BinaryOp::Less),
                &[Some(t(&[2, 3], &A)), Some(t(&[2, 1], &[2.0f32, 5.0]))],
                &mut [tmb(&[2, 3], &mut y)],
            )
            .unwrap();
            y
        };
        assert_eq!(y, [1, 0, 0, 1, 0, 0]);
        let cmp = |op, a: &[i64], b: &[i64]| {
            let mut y = std::vec![9u8; a.len()];
            run_binary(
                &bp(op),
                &[Some(t(&[a.len()], a)), Some(t(&[b.len()], b))],
                &mut [tmb(&[a.len()], &mut y)],
            )
            .unwrap();
            y
        };
        let (a, b) = ([1i64, 2, 3], [2i64, 2, 2]);
        assert_eq!(cmp(BinaryOp::Equal, &a, &b), [0, 1, 0]);
        assert_eq!(cmp(BinaryOp::Greater, &a, &b), [0, 0, 1]);
        assert_eq!(cmp(BinaryOp::LessOrEqual, &a, &b), [1, 1, 0]);
        assert_eq!(cmp(BinaryOp::GreaterOrEqual, &a, &b), [0, 1, 1]);
        // NaN compares unequal.
        let mut y = [9u8; 1];
        run_binary(
            &bp(BinaryOp::Equal),
            &[Some(t(&[1], &[f32::NAN])), Some(t(&[1], &[f32::NAN]))],
            &mut [tmb(&[1], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [0]);

        let (p, q) = ([0u8, 0, 1, 1], [0u8, 1, 0, 1]);
        let logic = |op| {
            let mut y = [9u8; 4];
            run_binary(
                &bp(op),
                &[Some(tb(&[4], &p)), Some(tb(&[4], &q))],
                &mut [tmb(&[4], &mut y)],
            )
            .unwrap();
            y
        };
        assert_eq!(logic(BinaryOp::And), [0, 0, 0, 1]);
        assert_eq!(logic(BinaryOp::Or), [0, 1, 1, 1]);
        assert_eq!(logic(BinaryOp::Xor), [0, 1, 1, 0]);
        assert_eq!(logic(BinaryOp::Equal), [1, 0, 0, 1]);
        assert_eq!(logic(BinaryOp::BitXor), [0, 1, 1, 0]);
        // And on bool with broadcasting.
        let mut y = [9u8; 4];
        run_binary(
            &bp(BinaryOp::And),
            &[Some(tb(&[2, 2], &[1, 1, 0, 1])), Some(tb(&[2], &[1, 0]))],
            &mut [tmb(&[2, 2], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [1, 0, 0, 0]);

        // onnx.reference BitShift.
        let y: Vec<u8> = bin(
            BinaryOp::BitShiftLeft,
            &[4],
            &[1u8, 2, 255, 7],
            &[4],
            &[1u8, 7, 1, 0],
            &[4],
        );
        assert_eq!(y, [2, 0, 254, 7]);
        let y: Vec<u32> = bin(
            BinaryOp::BitShiftRight,
            &[3],
            &[16u32, 255, 1],
            &[3],
            &[2u32, 4, 1],
            &[3],
        );
        assert_eq!(y, [4, 15, 0]);
        let y: Vec<u8> = bin(
            BinaryOp::BitShiftLeft,
            &[2],
            &[1u8, 1],
            &[2],
            &[8u8, 200],
            &[2],
        );
        assert_eq!(y, [0, 0]);
        let y: Vec<i32> = bin(
            BinaryOp::BitShiftRight,
            &[2],
            &[-16i32, 16],
            &[2],
            &[2i32, 40],
            &[2],
        );
        assert_eq!(y, [-4, 0]);
        let y: Vec<i32> = bin(BinaryOp::BitAnd, &[3], &[12i32, -1, 5], &[], &[10i32], &[3]);
        assert_eq!(y, [8, 10, 0]);
        let y: Vec<u16> = bin(
            BinaryOp::BitOr,
            &[2],
            &[0x0f00u16, 1],
            &[2],
            &[0x00f0u16, 2],
            &[2],
        );
        assert_eq!(y, [0x0ff0, 3]);
    }

    #[test]
    fn fused_activation_on_float_results() {
        let mut y = [0f32; 3];
        let p = BinaryParams {
            op: BinaryOp::Sub as u32,
            act: Activation {
                op: UnaryOp::Relu as u32,
                alpha: 0.0,
                beta: 0.0,
            },
        };
        run_binary(
            &p,
            &[Some(t(&[3], &[1.0f32, 5.0, 3.0])), Some(t(&[], &[3.0f32]))],
            &mut [tm(&[3], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [0.0, 2.0, 0.0]);
        let mut yd = [0f64; 2];
        let p = BinaryParams {
            op: BinaryOp::Add as u32,
            act: Activation {
                op: UnaryOp::LeakyRelu as u32,
                alpha: 0.5,
                beta: 0.0,
            },
        };
        run_binary(
            &p,
            &[
                Some(t(&[2], &[-4.0f64, 1.0])),
                Some(t(&[2], &[0.0f64, 1.0])),
            ],
            &mut [tm(&[2], &mut yd)],
        )
        .unwrap();
        assert_eq!(yd, [-2.0, 2.0]);
        let mut yi = [0i32; 1];
        assert!(
            run_binary(
                &p,
                &[Some(t(&[1], &[1i32])), Some(t(&[1], &[1i32]))],
                &mut [tm(&[1], &mut yi)]
            )
            .is_err()
        );
    }

    #[test]
    fn binary_errors_and_empty() {
        let mut y = [0f32; 6];
        let r = run_binary(
            &bp(BinaryOp::Add),
            &[Some(t(&[2, 3], &A)), Some(t(&[2], &[1.0f32, 2.0]))],
            &mut [tm(&[2, 3], &mut y)],
        );
        assert!(matches!(r, Err(KernelError::Shape(_))));
        let r = run_binary(
            &bp(BinaryOp::Add),
            &[Some(t(&[2, 3], &A)), Some(t(&[1], &[1i32]))],
            &mut [tm(&[2, 3], &mut y)],
        );
        assert!(matches!(r, Err(KernelError::DType(_))));
        let r = run_binary(
            &bp(BinaryOp::Add),
            &[Some(t(&[2, 3], &A)), None],
            &mut [tm(&[2, 3], &mut y)],
        );
        assert!(matches!(r, Err(KernelError::MissingTensor(_))));
        let r = run_binary(
            &BinaryParams {
                op: 77,
                act: Activation::default(),
            },
            &[Some(t(&[2, 3], &A)), Some(t(&[2, 3], &A))],
            &mut [tm(&[2, 3], &mut y)],
        );
        assert!(matches!(r, Err(KernelError::BadParams(_))));
        // Output shape disagreeing with the broadcast.
        let mut y4 = [0f32; 4];
        let r = run_binary(
            &bp(BinaryOp::Add),
            &[Some(t(&[2, 3], &A)), Some(t(&[3], &[1.0f32; 3]))],
            &mut [tm(&[4], &mut y4)],
        );
        assert!(r.is_err());
        // Data shorter than the shape says.
        let r = run_binary(
            &bp(BinaryOp::Add),
            &[Some(t(&[2, 3], &A[..5])), Some(t(&[3], &[1.0f32; 3]))],
            &mut [tm(&[2, 3], &mut y)],
        );
        assert!(matches!(r, Err(KernelError::Shape(_))));
        // Empty broadcast.
        let mut e: [f32; 0] = [];
        run_binary(
            &bp(BinaryOp::Add),
            &[Some(t::<f32>(&[0, 3], &[])), Some(t(&[3], &[1.0f32; 3]))],
            &mut [tm(&[0, 3], &mut e)],
        )
        .unwrap();
    }

    #[test]
    fn variadic_sum_mean_max() {
        let ins = |third: &'static [f32]| {
            [
                Some(t(&[2, 3], &A)),
                Some(t(&[3], &[10.0f32, 20.0, 30.0])),
                Some(t(&[2, 1], third)),
            ]
        };
        let mut y = [0f32; 6];
        run_variadic(
            &bp(BinaryOp::Add),
            &ins(&[100.0, 200.0]),
            &mut [tm(&[2, 3], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [111.0, 122.0, 133.0, 214.0, 225.0, 236.0]);
        run_variadic(
            &bp(BinaryOp::Mean),
            &ins(&[100.0, 200.0]),
            &mut [tm(&[2, 3], &mut y)],
        )
        .unwrap();
        close(
            &y,
            &[
                37.0,
                40.66666793823242,
                44.33333206176758,
                71.33333587646484,
                75.0,
                78.66666412353516,
            ],
            1e-7,
        );
        run_variadic(
            &bp(BinaryOp::Min),
            &ins(&[2.5, 0.0]),
            &mut [tm(&[2, 3], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [1.0, 2.0, 2.5, 0.0, 0.0, 0.0]);
        // The first input may itself be broadcast.
        let mut yi = [0i64; 3];
        run_variadic(
            &bp(BinaryOp::Max),
            &[Some(t(&[1], &[4i64])), Some(t(&[3], &[1i64, 5, 3]))],
            &mut [tm(&[3], &mut yi)],
        )
        .unwrap();
        assert_eq!(yi, [4, 5, 4]);
        // One input is a copy.
        run_variadic(
            &bp(BinaryOp::Add),
            &[Some(t(&[3], &[1i64, 2, 3]))],
            &mut [tm(&[3], &mut yi)],
        )
        .unwrap();
        assert_eq!(yi, [1, 2, 3]);
        assert!(run_variadic(&bp(BinaryOp::Add), &[], &mut [tm(&[3], &mut yi)]).is_err());
        assert!(
            run_variadic(
                &bp(BinaryOp::Sub),
                &[Some(t(&[3], &[1i64, 2, 3]))],
                &mut [tm(&[3], &mut yi)]
            )
            .is_err()
        );
        assert!(
            run_variadic(
                &bp(BinaryOp::Add),
                &[Some(t(&[3], &[1i64, 2, 3])), None],
                &mut [tm(&[3], &mut yi)]
            )
            .is_err()
        );
    }

    /// The contiguous / repeated row forms (`where_row`) against numpy-style indexing, for
    /// every pattern of broadcast operands (a scalar, a row, the full shape) and a condition
    /// that broadcasts along the row (constant over it) or runs with it.
    #[test]
    fn where_rows_match_elementwise_selection() {
        let full = [2usize, 3, 4];
        let n = 24;
        let cond: Vec<u8> = (0..n).map(|i| u8::from(i % 3 != 1)).collect();
        let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let ys: Vec<f32> = (0..n).map(|i| -(i as f32) - 0.5).collect();
        // (shape, index of element i of the full [2, 3, 4] grid)
        type Form = (&'static [usize], fn(usize) -> usize);
        let forms: [Form; 4] = [
            (&[2, 3, 4], |i| i),
            (&[4], |i| i % 4),
            (&[], |_| 0),
            (&[2, 3, 1], |i| i / 4),
        ];
        for (sc, ci) in forms {
            for (sx, xi) in forms {
                for (sy, yi) in forms {
                    let len = |s: &[usize]| s.iter().product::<usize>();
                    let mut y = [0f32; 24];
                    run_where(
                        &[
                            Some(tb(sc, &cond[..len(sc)])),
                            Some(t(sx, &xs[..len(sx)])),
                            Some(t(sy, &ys[..len(sy)])),
                        ],
                        &mut [tm(&full, &mut y)],
                    )
                    .unwrap();
                    for (i, &v) in y.iter().enumerate() {
                        let want = if cond[ci(i)] != 0 {
                            xs[xi(i)]
                        } else {
                            ys[yi(i)]
                        };
                        assert_eq!(v, want, "{sc:?} {sx:?} {sy:?} at {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn where_broadcasts_any_dtype() {
        let mut y = [0f32; 6];
        run_where(
            &[
                Some(tb(&[2, 1], &[1, 0])),
                Some(t(&[2, 3], &A)),
                Some(t(&[3], &[10.0f32, 20.0, 30.0])),
            ],
            &mut [tm(&[2, 3], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [1.0, 2.0, 3.0, 10.0, 20.0, 30.0]);
        let mut yi = [0i64; 4];
        run_where(
            &[
                Some(tb(&[4], &[1, 0, 0, 1])),
                Some(t(&[4], &[1i64, 2, 3, 4])),
                Some(t(&[4], &[-1i64, -2, -3, -4])),
            ],
            &mut [tm(&[4], &mut yi)],
        )
        .unwrap();
        assert_eq!(yi, [1, -2, -3, 4]);
        let mut yb = [9u8; 3];
        run_where(
            &[
                Some(tb(&[3], &[1, 0, 1])),
                Some(tb(&[], &[1])),
                Some(tb(&[], &[0])),
            ],
            &mut [tmb(&[3], &mut yb)],
        )
        .unwrap();
        assert_eq!(yb, [1, 0, 1]);
        let mut yh = [0i16; 2];
        run_where(
            &[
                Some(tb(&[], &[0])),
                Some(t(&[2], &[1i16, 2])),
                Some(t(&[2], &[3i16, 4])),
            ],
            &mut [tm(&[2], &mut yh)],
        )
        .unwrap();
        assert_eq!(yh, [3, 4]);
        // Condition must be bool; branches must match the output.
        assert!(
            run_where(
                &[
                    Some(t(&[4], &[1.0f32; 4])),
                    Some(t(&[4], &[1i64; 4])),
                    Some(t(&[4], &[1i64; 4]))
                ],
                &mut [tm(&[4], &mut yi)]
            )
            .is_err()
        );
        assert!(
            run_where(
                &[
                    Some(tb(&[4], &[1; 4])),
                    Some(t(&[4], &[1i32; 4])),
                    Some(t(&[4], &[1i64; 4]))
                ],
                &mut [tm(&[4], &mut yi)]
            )
            .is_err()
        );
        assert!(
            run_where(
                &[
                    Some(tb(&[3], &[1; 3])),
                    Some(t(&[4], &[1i64; 4])),
                    Some(t(&[4], &[1i64; 4]))
                ],
                &mut [tm(&[4], &mut yi)]
            )
            .is_err()
        );
    }
}
