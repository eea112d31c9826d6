//! Test helpers shared by the kernel tests: tensor views over slices and float closeness.

extern crate std;
use ge_runtime::format::{DType, Element, Shape, TensorMut, TensorRef};

pub fn shape(d: &[usize]) -> Shape {
    Shape::new(d).unwrap()
}

pub fn t<'a, T: Element>(d: &[usize], v: &'a [T]) -> TensorRef<'a> {
    TensorRef {
        dtype: T::DTYPE,
        shape: shape(d),
        data: bytemuck::cast_slice(v),
    }
}

pub fn tb<'a>(d: &[usize], v: &'a [u8]) -> TensorRef<'a> {
    TensorRef {
        dtype: DType::Bool,
        shape: shape(d),
        data: v,
    }
}

pub fn tm<'a, T: Element>(d: &[usize], v: &'a mut [T]) -> TensorMut<'a> {
    TensorMut {
        dtype: T::DTYPE,
        shape: shape(d),
        data: bytemuck::cast_slice_mut(v),
    }
}

pub fn tmb<'a>(d: &[usize], v: &'a mut [u8]) -> TensorMut<'a> {
    TensorMut {
        dtype: DType::Bool,
        shape: shape(d),
        data: v,
    }
}

/// Element-wise closeness (relative + absolute), NaN equal to NaN, infinities exact.
#[track_caller]
/// Sigmoid arguments for comparing implementations: a dense sweep over the whole range,
/// the exp underflow border (old and new), ±0, ±∞, subnormals, NaNs, the extremes; an odd
/// length (tails).
pub fn sigmoid_sweep() -> std::vec::Vec<f32> {
    let mut xs: std::vec::Vec<f32> = (-400_000..=400_000).map(|i| i as f32 * 2.5e-4).collect();
    xs.extend((0..20_000).map(|i| -80.0 - i as f32 * 1e-3));
    xs.extend((0..2_000).map(|i| 80.0 + i as f32 * 1e-2));
    xs.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MIN_POSITIVE / 4.0,
        -f32::MIN_POSITIVE / 4.0,
        -87.336_55,
        -87.336_54,
        -87.336_56,
        -87.0,
        -86.999_99,
        -87.000_01,
        88.73,
        f32::MAX,
        f32::MIN,
    ]);
    xs.push(-3.25);
    xs
}

/// `g` and `w` as one value from two paths: bitwise, or — `sigmoid`: the activation is the
/// sigmoid family, which AVX-512 epilogues compute in their own instructions
/// (`sigmoid_avx512`, within 4 ulp of the scalar form others use) — within 4 ulp.
pub fn same_value(g: f32, w: f32, sigmoid: bool) -> bool {
    if g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()) {
        return true;
    }
    sigmoid && (g == w || (g.to_bits() as i64 - w.to_bits() as i64).unsigned_abs() <= 4)
}

pub fn close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "length: got {got:?} want {want:?}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() {
            g == w
        } else {
            (g - w).abs() <= tol * (1.0 + w.abs())
        };
        assert!(
            ok,
            "element {i}: got {g} want {w}\n got {got:?}\nwant {want:?}"
        );
    }
}

#[track_caller]
pub fn close64(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else {
            (g - w).abs() <= tol * (1.0 + w.abs())
        };
        assert!(ok, "element {i}: got {g} want {w}");
    }
}

/// A [`crate::threads::Parallel`] that offers `self.0` slots and runs them one after another:
/// checks that a kernel's split between slots does not change its results.
pub struct Slots(pub usize);

impl crate::threads::Parallel for Slots {
    fn threads(&self) -> usize {
        self.0
    }
    fn run(&self, slots: usize, f: &(dyn Fn(usize) + Sync)) {
        for i in 0..slots {
            f(i);
        }
    }
}

/// Deterministic values in [-1, 1).
pub fn values(n: usize, seed: u64) -> std::vec::Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}
