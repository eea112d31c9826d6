//! The x86 int8 requantizers and Adds against the scalar ones they must equal bytewise.

use std::vec;
use std::vec::Vec;

use ge_runtime::format::QBinaryParams;

use crate::ops::tflite::params::add_params;

/// The AVX-512 requantizer (both forms) gives the scalar `Requant::apply`'s bytes on
/// random and edge sums, multipliers, shifts and zero points.
#[test]
fn vector_requantization_is_the_scalar_one() {
    use crate::arch::x86::avx512::requant::{Q8Range, Rq16};
    use crate::ops::gemm_i8::Requant;
    use core::arch::x86_64::*;
    if !(std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vl"))
    {
        std::println!("skipped: no AVX-512");
        return;
    }
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let edges = [
        0,
        1,
        -1,
        i32::MAX,
        i32::MIN,
        1 << 30,
        -(1 << 30),
        12345,
        -12345,
    ];
    for round in 0..4000 {
        let reals = [0.0003, 0.02, 0.37, 0.9999999998, 1.7, 9.5e-7, 3.0];
        let real = reals[round % reals.len()] * (1.0 + (next() % 1000) as f64 / 1000.0);
        let forms = [
            Requant::from_tflite(real).unwrap(),
            Requant::from_f32_scale(real as f32).unwrap(),
            // Malformed TFLite records: a negative multiplier, shifts past ±31.
            Requant {
                mult: i32::MIN,
                shift: crate::ops::gemm_i8::requant::TFLITE_BIAS - 40,
            },
            Requant {
                mult: -77_777,
                shift: crate::ops::gemm_i8::requant::TFLITE_BIAS + 29,
            },
        ];
        let rq = forms[round % forms.len()];
        let zp = [0, -128, 127, 7, -3][round % 5];
        let (lo, hi) = if round % 2 == 0 {
            (-128, 127)
        } else {
            (0, 255)
        };
        let acc: [i32; 16] = core::array::from_fn(|i| {
            if i < edges.len() && round % 3 == 0 {
                edges[i]
            } else {
                (next() as i32) >> (next() % 24)
            }
        });
        let mut got = [0u8; 16];
        // SAFETY: AVX-512 F/BW/VL were detected above.
        unsafe {
            let r16 = Rq16::splat(rq).unwrap();
            let v = _mm512_loadu_si512(acc.as_ptr().cast());
            let q = r16.apply(v, Q8Range::new(zp, lo, hi));
            _mm_storeu_si128(got.as_mut_ptr().cast(), q);
        }
        for (a, g) in acc.iter().zip(got) {
            let want = rq.apply(*a, zp, lo, hi);
            assert_eq!(g, want as u8, "acc {a} rq {rq:?} zp {zp} [{lo}, {hi}]");
        }
    }
}

/// The AVX-512 and AVX2 int8 Adds give the scalar Add's bytes, on real and malformed
/// parameters (lengths with and without a partial vector).
#[test]
fn vector_add_is_the_scalar_one() {
    let wide = std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vl");
    let avx2 = std::is_x86_feature_detected!("avx2");
    let a: Vec<i8> = (0..203).map(|i| ((i * 73 + 5) % 256) as u8 as i8).collect();
    let b: Vec<i8> = (0..203)
        .map(|i| ((i * 151 + 99) % 256) as u8 as i8)
        .collect();
    let good = add_params((0.05, -10), (0.1, 5), (0.12, -3), (-128, 127)).unwrap();
    let params = [
        good,
        add_params((0.9, 127), (0.0004, -128), (0.31, 0), (-5, 100)).unwrap(),
        QBinaryParams {
            act_min: 50,
            act_max: -50,
            a_zp: i32::MIN,
            a_shift: i32::MIN,
            out_shift: i32::MAX,
            left_shift: 40,
            b_mult: i32::MIN,
            ..good
        },
    ];
    for p in params {
        let mut runs = Vec::new();
        if wide {
            let mut y = vec![0i8; a.len()];
            // SAFETY: AVX-512 F/BW/VL were detected above.
            assert!(unsafe { crate::arch::x86::avx512::requant::qadd_i8(&p, &a, &b, &mut y) });
            runs.push(("avx512", y));
        }
        if avx2 {
            let mut y = vec![0i8; a.len()];
            // SAFETY: AVX2 was detected above.
            assert!(unsafe { crate::arch::x86::avx2::requant::qadd_i8(&p, &a, &b, &mut y) });
            runs.push(("avx2", y));
        }
        let lo = p.act_min.max(-128);
        let hi = p.act_max.min(127);
        let clamped = QBinaryParams {
            act_min: lo,
            act_max: hi,
            ..p
        };
        for (isa, y) in &runs {
            for i in 0..a.len() {
                let want =
                    crate::ops::tflite::binary::add(&clamped, i32::from(a[i]), i32::from(b[i]));
                assert_eq!(i32::from(y[i]), want, "{isa} {i}: {p:?}");
            }
        }
    }
}
