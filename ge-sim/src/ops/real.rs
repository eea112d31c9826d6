//! [`Real`]: the float math the kernels share, written once for f32 and f64.

use core::ops::{Add, Div, Mul, Neg, Sub};

use super::vmath;

/// Float math shared by the kernels (f32 and f64), backed by `libm` since the crate is
/// `no_std` (f32 `exp`, `tanh`, `erf`, `sqrt`: the vectorizable [`vmath`] ones). Method names
/// mirror `std`'s.
pub trait Real:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + bytemuck::Pod
{
    const ZERO: Self;
    const ONE: Self;
    const INFINITY: Self;
    const NEG_INFINITY: Self;
    const NAN: Self;
    /// Conversion from f64 (rounding to nearest for f32).
    fn of(v: f64) -> Self;
    /// Exact widening to f64.
    fn wide(self) -> f64;
    fn exp(self) -> Self;
    fn exp_m1(self) -> Self;
    fn ln(self) -> Self;
    fn ln_1p(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn erf(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    /// Round half to even.
    fn round_even(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn asinh(self) -> Self;
    fn acosh(self) -> Self;
    fn atanh(self) -> Self;
    fn powf(self, e: Self) -> Self;
    /// C `fmod`: remainder with the sign of the dividend.
    fn fmod(self, d: Self) -> Self;
    fn abs(self) -> Self;
    fn is_nan(self) -> bool;
    /// `1 / (1 + e^−x)`: for f32 onnxruntime's rational form ([`super::logistic`]).
    fn logistic(self) -> Self;
}

macro_rules! real_impl {
    ($t:ty, $exp:path, $expm1:ident, $log:ident, $log1p:ident, $sqrt:path, $tanh:path,
     $erf:path, $floor:ident, $ceil:ident, $sin:ident, $cos:ident, $tan:ident,
     $asin:ident, $acos:ident, $atan:ident, $sinh:ident, $cosh:ident, $asinh:ident,
     $acosh:ident, $atanh:ident, $pow:ident, $fmod:ident, $fabs:ident, $logistic:path) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const INFINITY: Self = <$t>::INFINITY;
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            const NAN: Self = <$t>::NAN;
            #[inline]
            fn of(v: f64) -> Self {
                v as $t
            }
            #[inline]
            fn wide(self) -> f64 {
                self as f64
            }
            #[inline]
            fn exp(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn logistic(self) -> Self {
                $logistic(self)
            }
            #[inline]
            fn exp_m1(self) -> Self {
                libm::$expm1(self)
            }
            #[inline]
            fn ln(self) -> Self {
                libm::$log(self)
            }
            #[inline]
            fn ln_1p(self) -> Self {
                libm::$log1p(self)
            }
            #[inline]
            fn sqrt(self) -> Self {
                $sqrt(self)
            }
            #[inline]
            fn tanh(self) -> Self {
                $tanh(self)
            }
            #[inline]
            fn erf(self) -> Self {
                $erf(self)
            }
            #[inline]
            fn floor(self) -> Self {
                libm::$floor(self)
            }
            #[inline]
            fn ceil(self) -> Self {
                libm::$ceil(self)
            }
            #[inline]
            fn round_even(self) -> Self {
                // Adding and taking away 2^(mantissa bits) rounds to an integer, ties to
                // even, under the default rounding mode; at and above it every value is
                // one already (NaN and ±inf fail the test and pass through). libm's
                // roundeven works bit by bit: it was the hot spot of every requantization.
                const BIG: $t = (1u64 << (<$t>::MANTISSA_DIGITS - 1)) as $t;
                let a = self.abs();
                if a < BIG {
                    (a + BIG - BIG).copysign(self)
                } else {
                    self
                }
            }
            #[inline]
            fn sin(self) -> Self {
                libm::$sin(self)
            }
            #[inline]
            fn cos(self) -> Self {
                libm::$cos(self)
            }
            #[inline]
            fn tan(self) -> Self {
                libm::$tan(self)
            }
            #[inline]
            fn asin(self) -> Self {
                libm::$asin(self)
            }
            #[inline]
            fn acos(self) -> Self {
                libm::$acos(self)
            }
            #[inline]
            fn atan(self) -> Self {
                libm::$atan(self)
            }
            #[inline]
            fn sinh(self) -> Self {
                libm::$sinh(self)
            }
            #[inline]
            fn cosh(self) -> Self {
                libm::$cosh(self)
            }
            #[inline]
            fn asinh(self) -> Self {
                libm::$asinh(self)
            }
            #[inline]
            fn acosh(self) -> Self {
                libm::$acosh(self)
            }
            #[inline]
            fn atanh(self) -> Self {
                libm::$atanh(self)
            }
            #[inline]
            fn powf(self, e: Self) -> Self {
                libm::$pow(self, e)
            }
            #[inline]
            fn fmod(self, d: Self) -> Self {
                libm::$fmod(self, d)
            }
            #[inline]
            fn abs(self) -> Self {
                libm::$fabs(self)
            }
            #[inline]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    };
}

real_impl!(
    f32,
    vmath::exp,
    expm1f,
    logf,
    log1pf,
    vmath::sqrt,
    vmath::tanh,
    vmath::erf,
    floorf,
    ceilf,
    sinf,
    cosf,
    tanf,
    asinf,
    acosf,
    atanf,
    sinhf,
    coshf,
    asinhf,
    acoshf,
    atanhf,
    powf,
    fmodf,
    fabsf,
    super::logistic::logistic
);
real_impl!(
    f64,
    libm::exp,
    expm1,
    log,
    log1p,
    libm::sqrt,
    libm::tanh,
    libm::erf,
    floor,
    ceil,
    sin,
    cos,
    tan,
    asin,
    acos,
    atan,
    sinh,
    cosh,
    asinh,
    acosh,
    atanh,
    pow,
    fmod,
    fabs,
    super::logistic::logistic_f64
);
