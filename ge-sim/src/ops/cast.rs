//! Element type conversion, plus the f16 / bf16 bit conversions other kernels share.
//!
//! Floats go through f64 (exact for every float source), integers and bool through i128
//! (exact for every integer source), a chunk at a time in stack buffers.

use ge_runtime::format::{DType, Element, TensorMut, TensorRef, ViewError};

use super::{KernelError, KernelResult, input, output};

/// Numeric element types with lossless-as-possible conversions through f64 and i128.
pub trait Scalar: Element + PartialOrd {
    /// Whether the type is a float.
    const IS_FLOAT: bool;
    /// The smallest value (`-inf` for floats).
    const LOWEST: Self;
    /// The largest value (`+inf` for floats).
    const HIGHEST: Self;
    /// Widening to f64 (exact for floats and integers up to 2^53).
    fn to_f64(self) -> f64;
    /// From f64: round to nearest for floats; truncate toward zero and saturate (NaN → 0)
    /// for integers.
    fn from_f64(v: f64) -> Self;
    /// To i128: exact for integers; truncating and saturating for floats.
    fn to_i128(self) -> i128;
    /// From i128: wraps (keeps the low bits) for integers, rounds to nearest for floats.
    fn from_i128(v: i128) -> Self;
    /// Whether the value is NaN (always false for integers).
    fn nan(self) -> bool;
}

macro_rules! scalar_int {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const IS_FLOAT: bool = false;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline]
            fn to_f64(self) -> f64 { self as f64 }
            #[inline]
            fn from_f64(v: f64) -> Self { v as $t }
            #[inline]
            fn to_i128(self) -> i128 { self as i128 }
            #[inline]
            fn from_i128(v: i128) -> Self { v as $t }
            #[inline]
            fn nan(self) -> bool { false }
        }
    )*};
}
scalar_int!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! scalar_float {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const IS_FLOAT: bool = true;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline]
            fn to_f64(self) -> f64 { self as f64 }
            #[inline]
            fn from_f64(v: f64) -> Self { v as $t }
            #[inline]
            fn to_i128(self) -> i128 { self as i128 }
            #[inline]
            fn from_i128(v: i128) -> Self { v as $t }
            #[inline]
            fn nan(self) -> bool { <$t>::is_nan(self) }
        }
    )*};
}
scalar_float!(f32, f64);

/// Rounds `x` to the nearest (ties to even) value of a binary float format with `eb`
/// exponent bits and `mb` mantissa bits; returns its bits. Overflow gives infinity, NaN
/// stays a (quiet) NaN.
fn f64_to_small(x: f64, eb: u32, mb: u32) -> u32 {
    let bits = x.to_bits();
    let sign = ((bits >> 63) as u32) << (eb + mb);
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let man = bits & ((1u64 << 52) - 1);
    let inf = ((1u32 << eb) - 1) << mb;
    if exp == 0x7ff {
        if man == 0 {
            return sign | inf;
        }
        return sign | inf | (1 << (mb - 1)) | (man >> (52 - mb)) as u32;
    }
    if exp == 0 && man == 0 {
        return sign;
    }
    let bias = (1i32 << (eb - 1)) - 1;
    let e = exp - 1023;
    if e > bias {
        return sign | inf;
    }
    let full = man | (1u64 << 52);
    // Value = full * 2^(e - 52). Units of the result's last place: 2^(max(e, 1 - bias) - mb).
    let (shift, base) = if e >= 1 - bias {
        (52 - mb, ((e + bias) as u32) << mb)
    } else {
        // Subnormal: units are 2^(1 - bias - mb).
        let s = 52 - mb as i32 + (1 - bias) - e;
        if s > 54 {
            return sign;
        }
        (s as u32, 0)
    };
    let q = full >> shift;
    let rest = full & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    let mant = if e >= 1 - bias {
        (q as u32) & ((1 << mb) - 1)
    } else {
        q as u32
    };
    let mut r = base | mant;
    if rest > half || (rest == half && (q & 1) == 1) {
        r += 1; // a carry rolls into the exponent, up to infinity, as it should
    }
    sign | r
}

/// f64 → IEEE half bits, round to nearest even.
pub fn f64_to_f16(x: f64) -> u16 {
    f64_to_small(x, 5, 10) as u16
}

/// f32 → IEEE half bits, round to nearest even.
pub fn f32_to_f16(x: f32) -> u16 {
    f64_to_small(x as f64, 5, 10) as u16
}

/// f64 → bfloat16 bits, round to nearest even.
pub fn f64_to_bf16(x: f64) -> u16 {
    f64_to_small(x, 8, 7) as u16
}

/// f32 → bfloat16 bits, round to nearest even.
pub fn f32_to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

/// IEEE half bits → f32 (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = if exp == 0x1f {
        sign | 0x7f80_0000 | (man << 13)
    } else if exp == 0 {
        if man == 0 {
            sign
        } else {
            // Subnormal: man * 2^-24, exactly representable.
            let v = man as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -v } else { v };
        }
    } else {
        sign | ((exp + 112) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

/// IEEE half bits → f64 (exact).
pub fn f16_to_f64(h: u16) -> f64 {
    f16_to_f32(h) as f64
}

/// bfloat16 bits → f32 (exact).
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

const CHUNK: usize = 256;

fn misaligned(dtype: DType) -> KernelError {
    KernelError::DType(ViewError {
        expected: dtype,
        found: dtype,
    })
}

fn too_short() -> KernelError {
    KernelError::Shape("cast tensor data does not match its shape")
}

fn src_range<T: bytemuck::Pod>(
    data: &[u8],
    dtype: DType,
    start: usize,
    len: usize,
) -> Result<&[T], KernelError> {
    let all: &[T] = bytemuck::try_cast_slice(data).map_err(|_| misaligned(dtype))?;
    all.get(start..start + len).ok_or_else(too_short)
}

fn dst_range<T: bytemuck::Pod>(
    data: &mut [u8],
    dtype: DType,
    start: usize,
    len: usize,
) -> Result<&mut [T], KernelError> {
    let all: &mut [T] = bytemuck::try_cast_slice_mut(data).map_err(|_| misaligned(dtype))?;
    all.get_mut(start..start + len).ok_or_else(too_short)
}

fn rd_f64<T: Scalar>(x: &TensorRef<'_>, start: usize, buf: &mut [f64]) -> Result<(), KernelError> {
    let src = x
        .as_slice::<T>()?
        .get(start..start + buf.len())
        .ok_or_else(too_short)?;
    for (b, &v) in buf.iter_mut().zip(src) {
        *b = v.to_f64();
    }
    Ok(())
}

fn wr_f64<T: Scalar>(y: &mut TensorMut<'_>, start: usize, buf: &[f64]) -> Result<(), KernelError> {
    let dst = y
        .as_slice_mut::<T>()?
        .get_mut(start..start + buf.len())
        .ok_or_else(too_short)?;
    for (d, &v) in dst.iter_mut().zip(buf) {
        *d = T::from_f64(v);
    }
    Ok(())
}

fn rd_i128<T: Scalar>(
    x: &TensorRef<'_>,
    start: usize,
    buf: &mut [i128],
) -> Result<(), KernelError> {
    let src = x
        .as_slice::<T>()?
        .get(start..start + buf.len())
        .ok_or_else(too_short)?;
    for (b, &v) in buf.iter_mut().zip(src) {
        *b = v.to_i128();
    }
    Ok(())
}

fn wr_i128<T: Scalar>(
    y: &mut TensorMut<'_>,
    start: usize,
    buf: &[i128],
) -> Result<(), KernelError> {
    let dst = y
        .as_slice_mut::<T>()?
        .get_mut(start..start + buf.len())
        .ok_or_else(too_short)?;
    for (d, &v) in dst.iter_mut().zip(buf) {
        *d = T::from_i128(v);
    }
    Ok(())
}

/// Reads float elements `start..start + buf.len()` of `x` as f64.
fn read_float(x: &TensorRef<'_>, start: usize, buf: &mut [f64]) -> Result<(), KernelError> {
    match x.dtype {
        DType::F32 => rd_f64::<f32>(x, start, buf),
        DType::F64 => rd_f64::<f64>(x, start, buf),
        DType::F16 | DType::Bf16 => {
            let src = src_range::<u16>(x.data, x.dtype, start, buf.len())?;
            if x.dtype == DType::F16 {
                for (b, &h) in buf.iter_mut().zip(src) {
                    *b = f16_to_f64(h);
                }
            } else {
                for (b, &h) in buf.iter_mut().zip(src) {
                    *b = bf16_to_f32(h) as f64;
                }
            }
            Ok(())
        }
        _ => Err(KernelError::UnsupportedDType("not a float type")),
    }
}

/// Reads integer or bool elements `start..start + buf.len()` of `x` as i128.
fn read_int(x: &TensorRef<'_>, start: usize, buf: &mut [i128]) -> Result<(), KernelError> {
    match x.dtype {
        DType::I8 => rd_i128::<i8>(x, start, buf),
        DType::I16 => rd_i128::<i16>(x, start, buf),
        DType::I32 => rd_i128::<i32>(x, start, buf),
        DType::I64 => rd_i128::<i64>(x, start, buf),
        DType::U8 => rd_i128::<u8>(x, start, buf),
        DType::U16 => rd_i128::<u16>(x, start, buf),
        DType::U32 => rd_i128::<u32>(x, start, buf),
        DType::U64 => rd_i128::<u64>(x, start, buf),
        DType::Bool => {
            let src = x
                .as_bool()?
                .get(start..start + buf.len())
                .ok_or_else(too_short)?;
            for (b, &v) in buf.iter_mut().zip(src) {
                *b = (v != 0) as i128;
            }
            Ok(())
        }
        _ => Err(KernelError::UnsupportedDType("not an integer type")),
    }
}

fn write_from_f64(y: &mut TensorMut<'_>, start: usize, buf: &[f64]) -> Result<(), KernelError> {
    match y.dtype {
        DType::F32 => wr_f64::<f32>(y, start, buf),
        DType::F64 => wr_f64::<f64>(y, start, buf),
        DType::I8 => wr_f64::<i8>(y, start, buf),
        DType::I16 => wr_f64::<i16>(y, start, buf),
        DType::I32 => wr_f64::<i32>(y, start, buf),
        DType::I64 => wr_f64::<i64>(y, start, buf),
        DType::U8 => wr_f64::<u8>(y, start, buf),
        DType::U16 => wr_f64::<u16>(y, start, buf),
        DType::U32 => wr_f64::<u32>(y, start, buf),
        DType::U64 => wr_f64::<u64>(y, start, buf),
        DType::F16 | DType::Bf16 => {
            let dt = y.dtype;
            let dst = dst_range::<u16>(y.data, dt, start, buf.len())?;
            if dt == DType::F16 {
                for (d, &v) in dst.iter_mut().zip(buf) {
                    *d = f64_to_f16(v);
                }
            } else {
                for (d, &v) in dst.iter_mut().zip(buf) {
                    *d = f64_to_bf16(v);
                }
            }
            Ok(())
        }
        DType::Bool => {
            let dst = y
                .as_bool_mut()?
                .get_mut(start..start + buf.len())
                .ok_or_else(too_short)?;
            for (d, &v) in dst.iter_mut().zip(buf) {
                *d = (v != 0.0) as u8;
            }
            Ok(())
        }
    }
}

fn write_from_i128(y: &mut TensorMut<'_>, start: usize, buf: &[i128]) -> Result<(), KernelError> {
    match y.dtype {
        DType::F32 => wr_i128::<f32>(y, start, buf),
        DType::F64 => wr_i128::<f64>(y, start, buf),
        DType::I8 => wr_i128::<i8>(y, start, buf),
        DType::I16 => wr_i128::<i16>(y, start, buf),
        DType::I32 => wr_i128::<i32>(y, start, buf),
        DType::I64 => wr_i128::<i64>(y, start, buf),
        DType::U8 => wr_i128::<u8>(y, start, buf),
        DType::U16 => wr_i128::<u16>(y, start, buf),
        DType::U32 => wr_i128::<u32>(y, start, buf),
        DType::U64 => wr_i128::<u64>(y, start, buf),
        DType::F16 | DType::Bf16 => {
            let dt = y.dtype;
            let dst = dst_range::<u16>(y.data, dt, start, buf.len())?;
            if dt == DType::F16 {
                for (d, &v) in dst.iter_mut().zip(buf) {
                    *d = f64_to_f16(v as f64);
                }
            } else {
                for (d, &v) in dst.iter_mut().zip(buf) {
                    *d = f64_to_bf16(v as f64);
                }
            }
            Ok(())
        }
        DType::Bool => {
            let dst = y
                .as_bool_mut()?
                .get_mut(start..start + buf.len())
                .ok_or_else(too_short)?;
            for (d, &v) in dst.iter_mut().zip(buf) {
                *d = (v != 0) as u8;
            }
            Ok(())
        }
    }
}

/// `y[i] = x[i] as D` in one vectorized pass.
#[inline(always)]
fn convert<S: Element + Copy, D: Element>(
    x: &TensorRef<'_>,
    y: &mut TensorMut<'_>,
    f: impl Fn(S) -> D,
) -> Result<bool, KernelError> {
    let src = x.as_slice::<S>()?;
    let dst = y.as_slice_mut::<D>()?;
    crate::arch::isa::with_simd(|| {
        for (d, &v) in dst.iter_mut().zip(src) {
            *d = f(v);
        }
    });
    Ok(true)
}

/// `v as i8` (truncating toward zero, saturating, NaN to 0) in operations that vectorize:
/// NaN and the clamp as selects, then the plain conversion of an in-range value.
#[inline(always)]
pub(crate) fn f32_to_i8(v: f32) -> i8 {
    let c = if v.is_nan() {
        0.0
    } else {
        v.clamp(-128.0, 127.0)
    };
    // SAFETY: `c` is finite and inside i32's range.
    unsafe { c.to_int_unchecked::<i32>() as i8 }
}

/// `v as u8`, likewise.
#[inline(always)]
pub(crate) fn f32_to_u8(v: f32) -> u8 {
    let c = if v.is_nan() { 0.0 } else { v.clamp(0.0, 255.0) };
    // SAFETY: as in [`f32_to_i8`].
    unsafe { c.to_int_unchecked::<i32>() as u8 }
}

/// The common pairs among f32, f64, i64, i32, i8 and u8 (and bool to f32, i64, i32) without the 128-bit detour: Rust's
/// `as` has exactly [`run_cast`]'s semantics for them (integers wrap, integer → float rounds
/// to nearest even, float → integer truncates and saturates with NaN → 0, f64 → f32 rounds
/// to nearest even). `Ok(false)` for any other pair.
fn direct(x: &TensorRef<'_>, y: &mut TensorMut<'_>) -> Result<bool, KernelError> {
    macro_rules! to_each {
        ($s:ty) => {
            match y.dtype {
                DType::F32 => convert::<$s, f32>(x, y, |v| v as f32),
                DType::F64 => convert::<$s, f64>(x, y, |v| v as f64),
                DType::I64 => convert::<$s, i64>(x, y, |v| v as i64),
                DType::I32 => convert::<$s, i32>(x, y, |v| v as i32),
                DType::I8 => convert::<$s, i8>(x, y, |v| v as i8),
                DType::U8 => convert::<$s, u8>(x, y, |v| v as u8),
                _ => Ok(false),
            }
        };
    }
    match (x.dtype, y.dtype) {
        // The hot pairs of quantized models, as lane-parallel code (LLVM scalarizes the
        // saturating `as` to 8 bits).
        (DType::F32, DType::I8) => return convert::<f32, i8>(x, y, f32_to_i8),
        (DType::F32, DType::U8) => return convert::<f32, u8>(x, y, f32_to_u8),
        _ => {}
    }
    match x.dtype {
        DType::F32 => to_each!(f32),
        DType::F64 => to_each!(f64),
        DType::I64 => to_each!(i64),
        DType::I32 => to_each!(i32),
        DType::I8 => to_each!(i8),
        DType::U8 => to_each!(u8),
        DType::Bool => {
            // Bool is one byte, 0 or 1 (anything non-zero reads as true).
            let src: &[u8] = x.data;
            macro_rules! from_bool {
                ($d:ty) => {{
                    let dst = y.as_slice_mut::<$d>()?;
                    crate::arch::isa::with_simd(|| {
                        for (d, &v) in dst.iter_mut().zip(src) {
                            *d = (v != 0) as u8 as $d;
                        }
                    });
                    Ok(true)
                }};
            }
            match y.dtype {
                DType::F32 => from_bool!(f32),
                DType::I64 => from_bool!(i64),
                DType::I32 => from_bool!(i32),
                _ => Ok(false),
            }
        }
        _ => Ok(false),
    }
}

fn is_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F64 | DType::F16 | DType::Bf16)
}

/// Converts the input to the output's dtype. Any pair of f32, f64, f16, bf16, the eight
/// integer widths and bool: floats round to nearest even, float → integer truncates toward
/// zero and saturates (NaN → 0), integer → integer wraps, anything → bool is `!= 0`.
pub fn run_cast(ins: &[Option<TensorRef<'_>>], outs: &mut [TensorMut<'_>]) -> KernelResult {
    let x = input(ins, 0, "cast input")?;
    let y = output(outs, 0, "cast output")?;
    let n = x
        .shape
        .checked_numel()
        .ok_or(KernelError::Shape("element count overflows"))?;
    if y.shape.checked_numel() != Some(n) {
        return Err(KernelError::Shape(
            "cast output element count differs from the input's",
        ));
    }
    if n.checked_mul(x.dtype.size()) != Some(x.data.len())
        || n.checked_mul(y.dtype.size()) != Some(y.data.len())
    {
        return Err(too_short());
    }
    if x.dtype == y.dtype {
        y.data.copy_from_slice(x.data);
        return Ok(());
    }
    if direct(x, y)? {
        return Ok(());
    }
    let mut start = 0;
    if is_float(x.dtype) {
        let mut buf = [0f64; CHUNK];
        while start < n {
            let len = CHUNK.min(n - start);
            let b = &mut buf[..len];
            read_float(x, start, b)?;
            write_from_f64(y, start, b)?;
            start += len;
        }
    } else {
        let mut buf = [0i128; CHUNK];
        while start < n {
            let len = CHUNK.min(n - start);
            let b = &mut buf[..len];
            read_int(x, start, b)?;
            write_from_i128(y, start, b)?;
            start += len;
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

    #[test]
    fn lane_conversions_to_8_bits_are_rusts_as() {
        let mut v = std::vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            127.5,
            127.99,
            128.0,
            -128.9,
            -129.0,
            255.9,
            256.0,
            -0.99,
            0.99,
            -0.0,
            1e10,
            -1e10,
            f32::MIN_POSITIVE,
            3.5,
            -3.5,
        ];
        let mut x = 0x1234_5678u32;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            v.push(f32::from_bits(x));
            v.push((x % 100_000) as f32 / 97.0 - 400.0);
        }
        for &f in &v {
            assert_eq!(f32_to_i8(f), f as i8, "{f}");
            assert_eq!(f32_to_u8(f), f as u8, "{f}");
        }
    }

    fn raw_ref<'a>(dtype: DType, d: &[usize], v: &'a [u16]) -> TensorRef<'a> {
        TensorRef {
            dtype,
            shape: shape(d),
            data: bytemuck::cast_slice(v),
        }
    }

    fn raw_mut<'a>(dtype: DType, d: &[usize], v: &'a mut [u16]) -> TensorMut<'a> {
        TensorMut {
            dtype,
            shape: shape(d),
            data: bytemuck::cast_slice_mut(v),
        }
    }

    #[test]
    fn f32_to_f16_rounds_to_nearest_even() {
        // Expected bits from numpy `astype(float16)`.
        #[rustfmt::skip]
        let x: [f32; 19] = [0.0, -0.0, 1.0, 65504.0, 65519.0, 65520.0, 1e-8, 5.960464477539063e-08,
            2.9802322387695312e-08, 8.940696716308594e-08, 1.0009765625, 1.00048828125, 1.000732421875,
            -3.141590118408203, 100000.0, f32::INFINITY, f32::NEG_INFINITY, 6.0999998822808266e-05,
            6.1005353927612305e-05];
        #[rustfmt::skip]
        let want: [u16; 19] = [0x0, 0x8000, 0x3c00, 0x7bff, 0x7bff, 0x7c00, 0x0, 0x1, 0x0, 0x2, 0x3c01,
            0x3c00, 0x3c01, 0xc248, 0x7c00, 0x7c00, 0xfc00, 0x3ff, 0x400];
        let mut y = [0u16; 19];
        run_cast(
            &[Some(t(&[19], &x))],
            &mut [raw_mut(DType::F16, &[19], &mut y)],
        )
        .unwrap();
        assert_eq!(y, want);
        for (&v, &w) in x.iter().zip(&want) {
            assert_eq!(f32_to_f16(v), w);
            assert_eq!(f64_to_f16(v as f64), w);
        }
        // NaN stays NaN (quiet).
        let n = f32_to_f16(f32::NAN);
        assert_eq!(n & 0x7c00, 0x7c00);
        assert_ne!(n & 0x3ff, 0);
    }

    #[test]
    fn f16_to_f32_exact() {
        let h: [u16; 9] = [
            0x0001, 0x03ff, 0x0400, 0x3c00, 0xc000, 0x7bff, 0x7c00, 0xfc00, 0x8001,
        ];
        #[rustfmt::skip]
        let want: [f32; 9] = [5.960464477539063e-08, 6.097555160522461e-05, 6.103515625e-05, 1.0, -2.0,
            65504.0, f32::INFINITY, f32::NEG_INFINITY, -5.960464477539063e-08];
        let mut y = [0f32; 9];
        run_cast(
            &[Some(raw_ref(DType::F16, &[9], &h))],
            &mut [tm(&[9], &mut y)],
        )
        .unwrap();
        assert_eq!(y, want);
        assert!(f16_to_f32(0x7e00).is_nan());
        // Every f16 round-trips through f32.
        for b in 0..=u16::MAX {
            let f = f16_to_f32(b);
            if !f.is_nan() {
                assert_eq!(f32_to_f16(f), b, "{b:#x}");
            }
        }
    }

    #[test]
    fn bf16_conversions() {
        #[rustfmt::skip]
        let x: [f32; 9] = [1.0, 1.00390625, 1.005859375, 1.0078125, -2.5, 3.4e38, 9.99994610111476e-41,
            f32::INFINITY, core::f32::consts::PI];
        let want: [u16; 9] = [
            0x3f80, 0x3f80, 0x3f81, 0x3f81, 0xc020, 0x7f80, 0x1, 0x7f80, 0x4049,
        ];
        let mut y = [0u16; 9];
        run_cast(
            &[Some(t(&[9], &x))],
            &mut [raw_mut(DType::Bf16, &[9], &mut y)],
        )
        .unwrap();
        assert_eq!(y, want);
        for (&v, &w) in x.iter().zip(&want) {
            assert_eq!(f32_to_bf16(v), w);
        }
        // f64 rounds once: 1 + 2^-8 + 2^-30 is just above the tie, so it rounds up (a detour
        // through f32 would make it an exact tie and round down to even).
        assert_eq!(f64_to_bf16(1.0 + 2f64.powi(-8) + 2f64.powi(-30)), 0x3f81);
        let xd = [1.0 + 2f64.powi(-8) + 2f64.powi(-30)];
        let mut yd = [0u16; 1];
        run_cast(
            &[Some(t(&[1], &xd))],
            &mut [raw_mut(DType::Bf16, &[1], &mut yd)],
        )
        .unwrap();
        assert_eq!(yd, [0x3f81]);
        // bf16 -> f32 and -> f16.
        let mut back = [0f32; 2];
        run_cast(
            &[Some(raw_ref(DType::Bf16, &[2], &[0x4049, 0xc020]))],
            &mut [tm(&[2], &mut back)],
        )
        .unwrap();
        assert_eq!(back, [3.140625, -2.5]);
        let mut h = [0u16; 2];
        run_cast(
            &[Some(raw_ref(DType::Bf16, &[2], &[0x4049, 0xc020]))],
            &mut [raw_mut(DType::F16, &[2], &mut h)],
        )
        .unwrap();
        assert_eq!(h, [0x4248, 0xc100]);
        assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
    }

    #[test]
    fn float_to_int_and_bool() {
        let x = [1.9f32, -1.9, 2.5, -2.5, 3e9, -3e9, f32::NAN, 0.0];
        let mut y = [0i32; 8];
        run_cast(&[Some(t(&[8], &x))], &mut [tm(&[8], &mut y)]).unwrap();
        assert_eq!(y, [1, -1, 2, -2, i32::MAX, i32::MIN, 0, 0]);
        let mut u = [9u8; 8];
        run_cast(&[Some(t(&[8], &x))], &mut [tm(&[8], &mut u)]).unwrap();
        assert_eq!(u, [1, 0, 2, 0, 255, 0, 0, 0]);
        let mut b = [9u8; 8];
        run_cast(&[Some(t(&[8], &x))], &mut [tmb(&[8], &mut b)]).unwrap();
        assert_eq!(b, [1, 1, 1, 1, 1, 1, 1, 0]);
        let mut l = [0i64; 2];
        run_cast(
            &[Some(t(&[2], &[-7.99f64, 1e300]))],
            &mut [tm(&[2], &mut l)],
        )
        .unwrap();
        assert_eq!(l, [-7, i64::MAX]);
    }

    #[test]
    fn int_conversions() {
        // numpy: int64 -> int8 wraps, int32 -> uint16 wraps.
        let mut y8 = [0i8; 4];
        run_cast(
            &[Some(t(&[4], &[300i64, -1, 128, -129]))],
            &mut [tm(&[4], &mut y8)],
        )
        .unwrap();
        assert_eq!(y8, [44, -1, -128, 127]);
        let mut y16 = [0u16; 2];
        run_cast(&[Some(t(&[2], &[70000i32, -1]))], &mut [tm(&[2], &mut y16)]).unwrap();
        assert_eq!(y16, [4464, 65535]);
        let mut yu64 = [0u64; 1];
        run_cast(&[Some(t(&[1], &[-1i8]))], &mut [tm(&[1], &mut yu64)]).unwrap();
        assert_eq!(yu64, [u64::MAX]);
        let mut yi = [0i64; 1];
        run_cast(&[Some(t(&[1], &[u64::MAX]))], &mut [tm(&[1], &mut yi)]).unwrap();
        assert_eq!(yi, [-1]);
        // Int -> float rounds once to nearest (numpy: 2^53 + 1 -> 2^53 as f32).
        let mut f = [0f32; 2];
        run_cast(
            &[Some(t(&[2], &[(1i64 << 53) + 1, 16_777_217]))],
            &mut [tm(&[2], &mut f)],
        )
        .unwrap();
        assert_eq!(f, [9007199254740992.0, 16777216.0]);
        let mut h = [0u16; 4];
        run_cast(
            &[Some(t(&[4], &[1i32, -2, 70000, 2049]))],
            &mut [raw_mut(DType::F16, &[4], &mut h)],
        )
        .unwrap();
        assert_eq!(h, [0x3c00, 0xc000, 0x7c00, 0x6800]);
        // Bool <-> numbers.
        let mut bf = [9f32; 3];
        run_cast(&[Some(tb(&[3], &[0, 1, 1]))], &mut [tm(&[3], &mut bf)]).unwrap();
        assert_eq!(bf, [0.0, 1.0, 1.0]);
        let mut bb = [9u8; 3];
        run_cast(&[Some(t(&[3], &[0i16, -5, 2]))], &mut [tmb(&[3], &mut bb)]).unwrap();
        assert_eq!(bb, [0, 1, 1]);
        let mut bi = [9i64; 2];
        run_cast(&[Some(tb(&[2], &[1, 0]))], &mut [tm(&[2], &mut bi)]).unwrap();
        assert_eq!(bi, [1, 0]);
    }

    #[test]
    fn chunking_same_type_and_errors() {
        // More than one chunk.
        let x: std::vec::Vec<i32> = (0..1000).collect();
        let mut y = std::vec![0f64; 1000];
        run_cast(&[Some(t(&[10, 100], &x))], &mut [tm(&[1000], &mut y)]).unwrap();
        assert!(y.iter().enumerate().all(|(i, &v)| v == i as f64));
        let mut same = std::vec![0i32; 1000];
        run_cast(&[Some(t(&[1000], &x))], &mut [tm(&[1000], &mut same)]).unwrap();
        assert_eq!(same, x);
        // Element count mismatch, short data, missing input.
        let mut short = [0f32; 3];
        assert!(matches!(
            run_cast(
                &[Some(t(&[4], &[1i32, 2, 3, 4]))],
                &mut [tm(&[3], &mut short)]
            ),
            Err(KernelError::Shape(_))
        ));
        assert!(run_cast(&[Some(t(&[3], &[1i32, 2]))], &mut [tm(&[3], &mut short)]).is_err());
        assert!(matches!(
            run_cast(&[None], &mut [tm(&[3], &mut short)]),
            Err(KernelError::MissingTensor(_))
        ));
        // Empty.
        let mut e: [f32; 0] = [];
        run_cast(&[Some(t::<i64>(&[0], &[]))], &mut [tm(&[0], &mut e)]).unwrap();
    }
}
