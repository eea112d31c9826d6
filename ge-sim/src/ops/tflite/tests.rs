//! The fixed-point primitives and kernels against values printed by the compiled TFLite
//! Micro / gemmlowp C++ (docs/research/tflite-int8-rounding.md, §§1–6), and properties
//! that hold for any input.

use std::vec;
use std::vec::Vec;

use ge_runtime::format::{PoolKind, PoolParams, QBinaryParams};

use super::binary::run_qbinary;
use super::fixed::*;
use super::params::*;
use super::softmax::run_qsoftmax;
use crate::ops::test_util::{t, tm};

#[test]
fn quantize_multiplier_matches_tflite() {
    assert_eq!(quantize_multiplier(0.9999999998), (1 << 30, 1));
    assert_eq!(quantize_multiplier(0.5), (1 << 30, 0));
    assert_eq!(
        quantize_multiplier(conv_multiplier(0.02, 0.003, 0.05)),
        (1_319_413_916, -9)
    );
    assert_eq!(quantize_multiplier(0.0), (0, 0));
    assert_eq!(quantize_multiplier(1e-12), (0, 0));
}

#[test]
fn requantization_rounds_twice_as_tflite_does() {
    // Not correctly rounded: 0.25 → 1, 3086.25 → 3087, and the conv example's 0.4992 → 1.
    assert_eq!(mbqm(1, 1 << 30, -1), 1);
    assert_eq!(mbqm(12345, 1 << 30, -1), 3087);
    assert_eq!(mbqm(416, 1_319_413_916, -9), 1);
    // A left shift (Mul with s_a·s_b > s_out): x·2^2 first.
    assert_eq!(mbqm(3, 1 << 30, 2), 6);
    // srdhm: ties toward +∞; rdbpot: ties away from zero.
    assert_eq!(srdhm(1 << 30, 1), 1);
    assert_eq!(srdhm(-(1 << 30), 1), 0);
    assert_eq!(srdhm(i32::MIN, i32::MIN), i32::MAX);
    assert_eq!(rdbpot(-3, 1), -2);
    assert_eq!(rdbpot(3, 1), 2);
    assert_eq!(rdbpot(-5, 2), -1);
}

#[test]
fn gemmlowp_exponential_and_reciprocal() {
    let exp = exp_on_negative_values_q5;
    assert_eq!(exp(0), 2_147_483_647);
    assert_eq!(exp(-1), 2_147_483_124);
    assert_eq!(exp(-(1 << 24)), 1_672_462_419);
    assert_eq!(exp(-(1 << 26)), 790_015_308);
    assert_eq!(exp(-5 * (1 << 26)), 14_469_635);
    assert_eq!(exp(-16 * (1 << 26)), 242);
    assert_eq!(exp(i32::MIN), 0);
    assert_eq!(one_over_one_plus_x(0), 2_147_483_647);
    assert_eq!(one_over_one_plus_x(1 << 30), 1_431_655_762);
    assert_eq!(one_over_one_plus_x(i32::MAX), 1_073_741_820);
}

#[test]
fn softmax_matches_tflite() {
    let p = softmax_params(0.1, 1.0, 10).unwrap();
    assert_eq!(
        (p.in_mult, p.in_lshift, p.diff_min),
        (1_717_986_944, 23, -248)
    );
    let x: [i8; 10] = [-128, -100, -50, -10, 0, 10, 50, 100, 120, 127];
    let mut y = [0i8; 10];
    run_qsoftmax(&p, &[Some(t(&[1, 10], &x))], &mut [tm(&[1, 10], &mut y)]).unwrap();
    assert_eq!(y, [-128, -128, -128, -128, -128, -128, -128, -117, -47, 36]);
    // A scale below TFLite's bound is refused, not run.
    assert!(softmax_params(1e-9, 1.0, 10).is_err());
}

fn add(p: &QBinaryParams, a: &[i8], sa: &[usize], b: &[i8], sb: &[usize], so: &[usize]) -> Vec<i8> {
    let mut y = vec![0i8; so.iter().product()];
    run_qbinary(p, &[Some(t(sa, a)), Some(t(sb, b))], &mut [tm(so, &mut y)]).unwrap();
    y
}

#[test]
fn add_matches_tflite() {
    let p = add_params((0.05, -10), (0.1, 5), (0.12, -3), (-128, 127)).unwrap();
    assert_eq!((p.a_mult, p.a_shift), (1 << 30, -1));
    assert_eq!((p.b_mult, p.b_shift), (1 << 30, 0));
    assert_eq!((p.out_mult, p.out_shift), (1_789_569_773, -19));
    let y = add(&p, &[37, 100, 0], &[3], &[64, -100, -7], &[3], &[3]);
    assert_eq!(y, [66, -45, -9]);
    // Broadcasting: B's one value against each of A's.
    let y = add(&p, &[37, 100, 0], &[3], &[64], &[1], &[3]);
    assert_eq!(y[0], 66);
    // The activation range clamps.
    let relu = add_params((0.05, -10), (0.1, 5), (0.12, -3), (-3, 127)).unwrap();
    assert_eq!(add(&relu, &[100], &[1], &[-100], &[1], &[1]), [-3]);
    // A malformed record (an empty range, wild shifts) gives values, never a panic.
    let bad = QBinaryParams {
        act_min: 50,
        act_max: -50,
        a_shift: i32::MIN,
        out_shift: i32::MAX,
        left_shift: -7,
        ..p
    };
    add(&bad, &[37, 100, 0], &[3], &[64, -100, -7], &[3], &[3]);
}

#[test]
fn mul_requantizes_the_product_of_centred_values() {
    let p = mul_params((0.05, -10), (0.1, 5), (0.02, 0), (-128, 127)).unwrap();
    let (m, s) = quantize_multiplier(0.05f32 as f64 * 0.1f32 as f64 / 0.02f32 as f64);
    let (a, b) = ([20i8, -50, 0], [9i8, 100, 5]);
    let y = add(&p, &a, &[3], &b, &[3], &[3]);
    for i in 0..3 {
        let want = mbqm((i32::from(a[i]) + 10) * (i32::from(b[i]) - 5), m, s).clamp(-128, 127);
        assert_eq!(i32::from(y[i]), want);
    }
}

#[test]
fn average_pool_rounds_raw_sums_half_away_from_zero() {
    // Four 2×1 windows: sums −7, 7, −5, 9 of counts 4, 4, 4, 4 (two rows of a 4×2 plane
    // per channel) → −1.75 → −2, 1.75 → 2, −1.25 → −1, 2.25 → 2.
    let x: [i8; 16] = [-3, -2, -2, 0, 3, 2, 2, 0, -2, -1, -1, -1, 4, 2, 2, 1];
    let p = PoolParams::whole_plane_average(2, [2, 2, 1]);
    let mut y = [0i8; 4];
    crate::ops::pool::run_pool(
        &p,
        &[Some(t(&[1, 4, 2, 2], &x))],
        &mut [tm(&[1, 4, 1, 1], &mut y)],
    )
    .unwrap();
    assert_eq!(y, [-2, 2, -1, 2]);
    // Padding is not counted: a 3×3 window at a corner of a 2×2 plane averages 4 taps.
    let p = PoolParams {
        kind: PoolKind::Average as u32,
        spatial: 2,
        kernel: [3, 3, 1],
        stride: [1; 3],
        dilation: [1; 3],
        pad_begin: [1, 1, 0],
        pad_end: [1, 1, 0],
        count_include_pad: 0,
        p: 0.0,
    };
    let x: [i8; 4] = [10, 11, -3, 100];
    let mut y = [0i8; 4];
    crate::ops::pool::run_pool(
        &p,
        &[Some(t(&[1, 1, 2, 2], &x))],
        &mut [tm(&[1, 1, 2, 2], &mut y)],
    )
    .unwrap();
    // (10 + 11 − 3 + 100) / 4 = 29.5 → 30 everywhere.
    assert_eq!(y, [30; 4]);
}

#[test]
fn mean_matches_tflite() {
    // TFLM's example: s_in 0.05, zp −128 → s_out 0.04, zp −100; the real mean is 47.25.
    let p = mean_params(0.05, -128, 0.04, -100, 5).unwrap();
    assert_eq!((p.mult, p.shift), (1_073_741_864, -1));
    let x: [i8; 5] = [-128, -100, 0, 50, 127];
    let mut y = [0i8; 1];
    super::mean::run_qmean(&p, &[Some(t(&[1, 5], &x))], &mut [tm(&[1, 1], &mut y)]).unwrap();
    assert_eq!(y, [48]);
    // Rows of another length are refused, not read past.
    let mut y2 = [0i8; 2];
    assert!(
        super::mean::run_qmean(&p, &[Some(t(&[1, 5], &x))], &mut [tm(&[1, 2], &mut y2)]).is_err()
    );
}

#[test]
fn requant_tflite_form_is_tflites_requantization() {
    use crate::ops::gemm_i8::Requant;
    let r = Requant::from_tflite(conv_multiplier(0.02, 0.003, 0.05)).unwrap();
    assert_eq!(r.tflite_shift(), Some(-9));
    assert_eq!(r.apply(416, 0, -128, 127), 1);
    assert_eq!(r.apply(416, 126, -128, 127), 127);
    // The other forms are not taken for it, nor it for them.
    assert_eq!(Requant::from_f32_scale(0.5).unwrap().tflite_shift(), None);
    assert_eq!(Requant::from_real(0.5).unwrap().tflite_shift(), None);
    assert!(Requant::from_tflite(f64::NAN).is_err());
}
