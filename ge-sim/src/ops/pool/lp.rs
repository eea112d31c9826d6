//! Lp pooling's terms and root (`(Σ |x|^p)^(1/p)`), with the exact forms for p = 1 and 2.

#[inline]
pub(super) fn lp_term(v: f32, p: f32) -> f32 {
    if p == 2.0 {
        v * v
    } else if p == 1.0 {
        v.abs()
    } else {
        pow(v.abs(), p)
    }
}

/// `x^y` for `x ≥ 0`: libm's `powf` with `std`; without it (firmware, where flash counts)
/// `exp(y·ln x)`, about 1.7 KB less code, within a few ulp·|y·ln x| of `powf` (only Lp
/// pooling with p ∉ {1, 2} comes here).
#[inline]
pub(super) fn pow(x: f32, y: f32) -> f32 {
    if cfg!(feature = "std") {
        libm::powf(x, y)
    } else if x == 0.0 {
        0.0
    } else {
        libm::expf(y * libm::logf(x))
    }
}

#[inline]
pub(super) fn lp_root(s: f32, p: f32) -> f32 {
    if p == 2.0 {
        libm::sqrtf(s)
    } else if p == 1.0 {
        s
    } else {
        pow(s, 1.0 / p)
    }
}
