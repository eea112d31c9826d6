//! gemmlowp's fixed-point arithmetic (`fixedpoint/fixedpoint.h`) and TFLite's
//! `QuantizeMultiplier` / `MultiplyByQuantizedMultiplier` (`quantization_util.cc`,
//! `common.cc`, default build: double rounding), as TFLite Micro and CMSIS-NN run them. C's
//! unchecked int32 overflow is two's-complement wrapping here, as GCC gives on the MCUs.

/// `round(a·b / 2^31)`, ties toward +∞; `i32::MIN · i32::MIN` saturates
/// (`SaturatingRoundingDoublingHighMul`, ARM's `VQRDMULH`).
#[inline(always)]
pub const fn srdhm(a: i32, b: i32) -> i32 {
    if a == i32::MIN && b == i32::MIN {
        return i32::MAX;
    }
    ((a as i64 * b as i64 + (1 << 30)) >> 31) as i32
}

/// `x / 2^e` rounded half away from zero (`RoundingDivideByPOT`); `e` above 31 is taken as
/// 31.
#[inline(always)]
pub const fn rdbpot(x: i32, e: u32) -> i32 {
    let e = if e > 31 { 31 } else { e };
    let mask = ((1i64 << e) - 1) as i32;
    let rem = x & mask;
    let thr = (mask >> 1) + (x < 0) as i32;
    (x >> e) + (rem > thr) as i32
}

/// `x · 2^k`, saturated (`SaturatingRoundingMultiplyByPOT` with `k > 0`).
#[inline(always)]
pub const fn sat_shl(x: i32, k: u32) -> i32 {
    let thr = (1i32 << (31 - k)) - 1;
    if x > thr {
        i32::MAX
    } else if x < -thr {
        i32::MIN
    } else {
        x << k
    }
}

/// TFLite's shift `t` as the two shift counts [`mbqm`] applies, each clamped to `0..=31`:
/// left by `max(t, 0)`, then right by `max(−t, 0)` (the vector forms load them per lane).
#[inline(always)]
pub fn mbqm_shifts(t: i32) -> (i32, i32) {
    (t.clamp(0, 31), t.saturating_neg().clamp(0, 31))
}

/// `MultiplyByQuantizedMultiplier(x, m, shift)`: `x·2^max(shift, 0)` (wrapping), then
/// [`srdhm`] by `m`, then [`rdbpot`] by `−min(shift, 0)` — two roundings, not one, as
/// TFLite rounds by default. A shift outside `[−31, 31]` (a malformed blob) is clamped.
#[inline(always)]
pub const fn mbqm(x: i32, m: i32, shift: i32) -> i32 {
    let left = if shift > 0 { shift } else { 0 };
    let right = if shift < 0 { shift.saturating_neg() } else { 0 };
    let left = if left > 31 { 31 } else { left };
    rdbpot(srdhm(x.wrapping_shl(left as u32), m), right as u32)
}

/// `QuantizeMultiplier(d)`: `d ≈ m·2^shift / 2^31` with `m` in `[2^30, 2^31)`, the mantissa
/// rounded half away from zero, `(0, 0)` for `d = 0` or below about `2^−32`. `d` must be
/// finite and positive (the callers check the scales it comes from). Compile time.
pub fn quantize_multiplier(d: f64) -> (i32, i32) {
    if !(d.is_finite() && d > 0.0) {
        return (0, 0);
    }
    let (q, mut shift) = libm::frexp(d);
    let mut q_fixed = libm::round(q * 2_147_483_648.0) as i64;
    if q_fixed == 1 << 31 {
        q_fixed /= 2;
        shift += 1;
    }
    if shift < -31 {
        return (0, 0);
    }
    (q_fixed as i32, shift)
}

/// `exp(a)` for `a ≤ 0` in Q5.26, as Q0.31 (gemmlowp's `exp_on_negative_values` with 5
/// integer bits: a Taylor polynomial on `[−1/4, 0)` and a barrel of `exp(−2^k)` factors).
pub const fn exp_on_negative_values_q5(a: i32) -> i32 {
    const QUARTER: i32 = 1 << 24;
    const BARREL: [i32; 7] = [
        1_672_461_947,
        1_302_514_674,
        790_015_084,
        290_630_308,
        39_332_535,
        720_401,
        242,
    ];
    if a == 0 {
        return i32::MAX;
    }
    let amq = (a & (QUARTER - 1)) - QUARTER;
    let mut r = exp_on_interval_quarter(sat_shl(amq, 5));
    let rem = amq.wrapping_sub(a);
    let mut k = 0;
    while k < BARREL.len() {
        if rem & (1 << (24 + k)) != 0 {
            r = srdhm(r, BARREL[k]);
        }
        k += 1;
    }
    r
}

/// `exp(a)` for `a` in `[−1/4, 0)`, Q0.31 in and out (a Taylor expansion around −1/8).
const fn exp_on_interval_quarter(a: i32) -> i32 {
    const EXP_M1_8: i32 = 1_895_147_668;
    const ONE_THIRD: i32 = 715_827_883;
    let x = a.wrapping_add(1 << 28);
    let x2 = srdhm(x, x);
    let x3 = srdhm(x2, x);
    let x4 = srdhm(x2, x2);
    let t = rdbpot(
        srdhm(rdbpot(x4, 2).wrapping_add(x3), ONE_THIRD).wrapping_add(x2),
        1,
    );
    EXP_M1_8.wrapping_add(srdhm(EXP_M1_8, x.wrapping_add(t)))
}

/// `1 / (1 + a)` for `a` in `[0, 1)`, Q0.31 in and out (three Newton–Raphson steps in Q2.29).
pub const fn one_over_one_plus_x(a: i32) -> i32 {
    const C48_17: i32 = 1_515_870_810;
    const CM32_17: i32 = -1_010_580_540;
    let s = a as i64 + i32::MAX as i64;
    let hd = ((s + if s >= 0 { 1 } else { -1 }) / 2) as i32;
    let mut x = C48_17.wrapping_add(srdhm(hd, CM32_17));
    let mut i = 0;
    while i < 3 {
        let one_minus = (1i32 << 29).wrapping_sub(srdhm(hd, x));
        x = x.wrapping_add(sat_shl(srdhm(x, one_minus), 2));
        i += 1;
    }
    sat_shl(x, 1)
}
