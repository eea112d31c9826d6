//! The int8 GEMM against an exact integer reference (i64 sums, i128 rounding) on every ISA
//! path this CPU runs, with full-range weights (pairs `vpmaddubsw` would saturate).

extern crate std;
use std::vec;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;

/// xorshift values, a quarter of them at the type's extremes.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn int(&mut self, lo: i32, hi: i32) -> i32 {
        let r = self.next();
        match r % 8 {
            0 => lo,
            1 => hi,
            _ => lo + ((r >> 8) % (hi - lo + 1) as u64) as i32,
        }
    }
}

/// `Σ_k (a−za)(b−zb_j) + bias_j` in i64 (b row-major `k × n`).
#[allow(clippy::too_many_arguments)]
fn reference(
    a: &[i32],
    b: &[i8],
    m: usize,
    n: usize,
    k: usize,
    za: i32,
    zb: &[i32],
    bias: &[i32],
) -> Vec<i64> {
    let mut c = vec![0i64; m * n];
    for i in 0..m {
        for j in 0..n {
            let zbj = i64::from(zb[if zb.len() == 1 { 0 } else { j }]);
            let mut s = i64::from(bias[j]);
            for kk in 0..k {
                s += (i64::from(a[i * k + kk]) - i64::from(za)) * (i64::from(b[kk * n + j]) - zbj);
            }
            c[i * n + j] = s;
        }
    }
    c
}

/// `round_half_even(acc·mult / 2^shift)` in i128.
fn rounded(acc: i64, r: Requant) -> i64 {
    let x = i128::from(acc) * i128::from(r.mult);
    let d = 1i128 << r.shift;
    let (q, rem) = (x.div_euclid(d), x.rem_euclid(d));
    (q + i128::from(2 * rem > d || (2 * rem == d && q % 2 != 0))) as i64
}

fn paths() -> Vec<Isa> {
    Isa::ALL.iter().copied().filter(|i| i.supported()).collect()
}

/// Runs one random case with activations of type `A` on every path.
fn case<A: Act>(
    m: usize,
    n: usize,
    k: usize,
    per_channel: bool,
    seed: u64,
    to_a: fn(i32) -> A,
    range: (i32, i32),
) {
    let mut g = Gen(seed | 1);
    let a_int: Vec<i32> = (0..m * k).map(|_| g.int(range.0, range.1)).collect();
    let a: Vec<A> = a_int.iter().map(|&v| to_a(v)).collect();
    let b: Vec<i8> = (0..k * n).map(|_| g.int(-128, 127) as i8).collect();
    let za = g.int(range.0, range.1);
    let zb: Vec<i32> = (0..if per_channel { n } else { 1 })
        .map(|_| {
            if seed.is_multiple_of(3) {
                0
            } else {
                g.int(-128, 127)
            }
        })
        .collect();
    let bias: Vec<i32> = (0..n).map(|_| g.int(-100_000, 100_000)).collect();
    let want = reference(&a_int, &b, m, n, k, za, &zb, &bias);

    let mut packed = vec![0i8; packed_len(k, n).unwrap()];
    pack_b(&b, k, n, n, 1, &mut packed).unwrap();
    let mut corr = vec![0i32; n];
    fold_zero_points(&b, k, n, n, 1, za, &zb, Some(&bias), &mut corr).unwrap();
    let zb_run: &[i32] = if zb.iter().all(|&z| z == 0) { &[] } else { &zb };
    let q = QGemm {
        m,
        n,
        k,
        a: &a,
        lda: k,
        b: &packed,
        corr: &corr,
        zb: zb_run,
    };
    let rq: Vec<Requant> = (0..if per_channel { n } else { 1 })
        .map(|_| Requant::from_real(f64::from(g.int(1, 1000)) * 1e-5).unwrap())
        .collect();
    let rq_f32: Vec<Requant> = (0..if per_channel { n } else { 1 })
        .map(|_| Requant::from_f32_scale(g.int(1, 1000) as f32 * 1e-5).unwrap())
        .collect();
    let zp = g.int(-20, 20);
    for isa in paths() {
        let mut c = vec![0i32; m * n];
        qgemm_on(isa, &q, QOut::I32 { c: &mut c, ldc: n }).unwrap();
        let got: Vec<i64> = c.iter().map(|&v| i64::from(v)).collect();
        assert_eq!(got, want, "i32 output on {isa:?}, m={m} n={n} k={k}");
        let params = QOutParams { rq: &rq, zp };
        let mut c8 = vec![0i8; m * n];
        qgemm_on(
            isa,
            &q,
            QOut::I8 {
                c: &mut c8,
                ldc: n,
                q: params,
            },
        )
        .unwrap();
        let mut cu = vec![0u8; m * n];
        qgemm_on(
            isa,
            &q,
            QOut::U8 {
                c: &mut cu,
                ldc: n,
                q: params,
            },
        )
        .unwrap();
        // onnxruntime's f32 form (the AVX-512 epilogue's): the scalar `apply` on the exact
        // sums is the reference.
        let fq = QOutParams { rq: &rq_f32, zp };
        let mut f8 = vec![0i8; m * n];
        let mut fu = vec![0u8; m * n];
        qgemm_on(
            isa,
            &q,
            QOut::I8 {
                c: &mut f8,
                ldc: n,
                q: fq,
            },
        )
        .unwrap();
        qgemm_on(
            isa,
            &q,
            QOut::U8 {
                c: &mut fu,
                ldc: n,
                q: fq,
            },
        )
        .unwrap();
        for (idx, &w) in want.iter().enumerate() {
            let r = rq_f32[if rq_f32.len() == 1 { 0 } else { idx % n }];
            let acc = w as i32;
            assert_eq!(
                i32::from(f8[idx]),
                r.apply(acc, zp, -128, 127),
                "f32-scale i8 {idx} on {isa:?}"
            );
            assert_eq!(
                i32::from(fu[idx]),
                r.apply(acc, zp, 0, 255),
                "f32-scale u8 {idx} on {isa:?}"
            );
        }
        for (idx, &w) in want.iter().enumerate() {
            let r = rq[if rq.len() == 1 { 0 } else { idx % n }];
            let y = rounded(w, r) + i64::from(zp);
            assert_eq!(
                i64::from(c8[idx]),
                y.clamp(-128, 127),
                "i8 output {idx} on {isa:?}"
            );
            assert_eq!(
                i64::from(cu[idx]),
                y.clamp(0, 255),
                "u8 output {idx} on {isa:?}"
            );
        }
    }
}

proptest! {
    #[test]
    fn u8_activations_match_the_integer_reference(m in 1usize..15, n in 1usize..40, k in 0usize..70, pc in any::<bool>(), seed in any::<u64>()) {
        case::<u8>(m, n, k, pc, seed, |v| v as u8, (0, 255));
    }

    #[test]
    fn i8_activations_match_the_integer_reference(m in 1usize..15, n in 1usize..40, k in 0usize..70, pc in any::<bool>(), seed in any::<u64>()) {
        case::<i8>(m, n, k, pc, seed, |v| v as i8, (-128, 127));
    }

    #[test]
    fn requantization_is_exact_fixed_point(acc in any::<i32>(), m in 1e-9f64..1e3) {
        let r = Requant::from_real(m).unwrap();
        prop_assert!((f64::from(r.mult) * 2f64.powi(-r.shift) - m).abs() <= m * 2f64.powi(-30));
        let want = rounded(i64::from(acc), r).clamp(-128, 127) as i32;
        prop_assert_eq!(r.apply(acc, 0, -128, 127), want);
    }
}

/// Every pair of products here is `2·255·(−128) = −65,280`, which `vpmaddubsw` would clip to
/// −32,768; the result must be exact.
#[test]
fn extreme_pairs_do_not_saturate() {
    let (m, n, k) = (7, 17, 33);
    let a = vec![255u8; m * k];
    let b = vec![-128i8; k * n];
    let mut packed = vec![0i8; packed_len(k, n).unwrap()];
    pack_b(&b, k, n, n, 1, &mut packed).unwrap();
    let mut corr = vec![0i32; n];
    fold_zero_points(&b, k, n, n, 1, 0, &[0], None, &mut corr).unwrap();
    let q = QGemm {
        m,
        n,
        k,
        a: &a,
        lda: k,
        b: &packed,
        corr: &corr,
        zb: &[],
    };
    for isa in paths() {
        let mut c = vec![0i32; m * n];
        qgemm_on(isa, &q, QOut::I32 { c: &mut c, ldc: n }).unwrap();
        assert!(c.iter().all(|&v| v == 255 * -128 * 33), "{isa:?}");
    }
}

/// ONNX rounds half to even: with a multiplier of exactly 0.5 every odd accumulator is a tie.
#[test]
fn ties_round_to_even() {
    let r = Requant::from_real(0.5).unwrap();
    assert_eq!((r.mult, r.shift), (1 << 30, 31));
    for acc in -9..=9 {
        let want = (f64::from(acc) * 0.5).round_ties_even() as i32;
        assert_eq!(r.apply(acc, 0, -128, 127), want, "acc {acc}");
    }
    assert_eq!(r.apply(1000, 3, -128, 127), 127);
    assert_eq!(r.apply(-1000, 3, 0, 255), 0);
}

/// Transposed weights (`[n, k]`, a conv's or Gemm's transB) pack to the same panels.
#[test]
fn transposed_weights_pack_alike() {
    let (k, n) = (5, 19);
    let b: Vec<i8> = (0..k * n)
        .map(|v| (v as i32 * 37 % 251 - 125) as i8)
        .collect();
    let bt: Vec<i8> = (0..n * k).map(|idx| b[(idx % k) * n + idx / k]).collect();
    let (mut p1, mut p2) = (
        vec![0i8; packed_len(k, n).unwrap()],
        vec![1i8; packed_len(k, n).unwrap()],
    );
    pack_b(&b, k, n, n, 1, &mut p1).unwrap();
    pack_b(&bt, k, n, 1, k, &mut p2).unwrap();
    assert_eq!(p1, p2);
}

#[test]
fn malformed_inputs_are_errors() {
    for m in [-1.0, f64::NAN, f64::INFINITY, 2f64.powi(30)] {
        assert!(Requant::from_real(m).is_err(), "{m}");
    }
    assert_eq!(
        Requant::from_real(0.0).unwrap().apply(12345, 7, -128, 127),
        7
    );
    let b = [1i8; 6];
    assert!(pack_b(&b, 3, 3, 3, 1, &mut [0; 64]).is_err());
    assert!(pack_b(&b, 3, 2, 2, 1, &mut [0; 8]).is_err());
    assert!(fold_zero_points(&b, 3, 2, 2, 1, 0, &[0, 0, 0], None, &mut [0; 2]).is_err());
    assert!(fold_zero_points(&[127; 4], 2, 2, 2, 1, i32::MAX, &[0], None, &mut [0; 2]).is_err());
    let mut packed = vec![0i8; packed_len(3, 2).unwrap()];
    pack_b(&b, 3, 2, 2, 1, &mut packed).unwrap();
    let a = [1u8; 5];
    let q = QGemm {
        m: 2,
        n: 2,
        k: 3,
        a: &a,
        lda: 3,
        b: &packed,
        corr: &[0, 0],
        zb: &[],
    };
    assert!(
        qgemm(
            &q,
            QOut::I32 {
                c: &mut [0; 4],
                ldc: 2
            }
        )
        .is_err(),
        "short A"
    );
    let a = [1u8; 6];
    let q = QGemm { a: &a, ..q };
    assert!(
        qgemm(
            &q,
            QOut::I32 {
                c: &mut [0; 3],
                ldc: 2
            }
        )
        .is_err(),
        "short C"
    );
    let q2 = QGemm { corr: &[0], ..q };
    assert!(
        qgemm(
            &q2,
            QOut::I32 {
                c: &mut [0; 4],
                ldc: 2
            }
        )
        .is_err(),
        "short correction"
    );
    let params = QOutParams {
        rq: &[Requant { mult: 1, shift: 1 }; 3],
        zp: 0,
    };
    assert!(
        qgemm(
            &q,
            QOut::U8 {
                c: &mut [0; 4],
                ldc: 2,
                q: params
            }
        )
        .is_err(),
        "3 multipliers for n = 2"
    );
    let mut c = [0i32; 4];
    qgemm(&q, QOut::I32 { c: &mut c, ldc: 2 }).unwrap();
    assert_eq!(c, [3, 3, 3, 3]);
}

/// The f32 form computes onnxruntime's `round_half_even(f32(acc)·scale) + zp`, saturated,
/// including ties and accumulators past f32's exact range.
#[test]
fn f32_scale_requantizes_as_onnxruntime() {
    let scale = 0.013_7f32;
    let rq = Requant::from_f32_scale(scale).unwrap();
    let ties = Requant::from_f32_scale(0.5).unwrap();
    for acc in [
        -40_000,
        -1000,
        -37,
        -1,
        0,
        1,
        5,
        73,
        1000,
        9_999,
        40_000,
        16_777_217,
        i32::MAX,
    ] {
        let want = ((acc as f32 * scale).round_ties_even() as i64 + 3).clamp(-128, 127) as i32;
        assert_eq!(rq.apply(acc, 3, -128, 127), want, "acc {acc}");
    }
    // 0.5·odd lands on a tie: to even.
    assert_eq!(ties.apply(3, 0, 0, 255), 2);
    assert_eq!(ties.apply(5, 0, 0, 255), 2);
    assert_eq!(ties.apply(7, 0, 0, 255), 4);
    assert!(Requant::from_f32_scale(f32::NAN).is_err());
    assert!(Requant::from_f32_scale(-1.0).is_err());
}

/// A 3×3 QConv (`group` groups of `cg` input and `mg` output channels, padding, stride
/// 2 × 1, per-channel weight zero points and scales, activation zero point `za`) with
/// activations of type `A`, run once with the workspace this ge plans (and checked equal at
/// every smaller level the planner may give it), once on the GEMM path with the i8 tile
/// (the path a depthwise conv falls back to, and a blob from an older ge took), and once
/// with the planned workspace and the compiler's flipped corrections (input 7: those of
/// zero point `za + 128`): the three outputs.
fn qconv_both_paths<A: Act + bytemuck::Pod>(
    (cg, mg, group): (usize, usize, usize),
    za: i32,
    to_a: fn(i32) -> A,
    range: (i32, i32),
) -> [Vec<u8>; 3] {
    qconv_paths((cg, mg, group), (3, [2, 1]), za, to_a, range)
}

/// [`qconv_both_paths`] with a `kh × kh` window (padded by one when 3; 1 is the pointwise
/// path's when `cg` is small) and `stride`.
fn qconv_paths<A: Act + bytemuck::Pod>(
    (cg, mg, group): (usize, usize, usize),
    (kh, stride): (usize, [usize; 2]),
    za: i32,
    to_a: fn(i32) -> A,
    range: (i32, i32),
) -> [Vec<u8>; 3] {
    use super::super::test_util::{t, tmb};
    use ge_runtime::format::{DType, QConvParams, QGEMM_OUT_Q8_F32, Shape};
    // Rows of 8, 9 or 10: positions in whole vectors and with every tail.
    let (c, h, w, m) = (cg * group, 9usize, 8 + cg % 3, mg * group);
    let pad = usize::from(kh == 3);
    let [sh, sw] = stride;
    let k = cg * kh * kh;
    let mut g = Gen(0x5eed);
    let x: Vec<A> = (0..c * h * w)
        .map(|_| to_a(g.int(range.0, range.1)))
        .collect();
    let zb: Vec<i32> = (0..m)
        .map(|j| if j % 3 == 0 { 0 } else { g.int(-5, 5) })
        .collect();
    let bias: Vec<i32> = (0..m).map(|_| g.int(-5000, 5000)).collect();
    let plen = packed_len(k, mg).unwrap();
    let mut packed = vec![0i8; plen * group];
    let (mut corr, mut flipped) = (vec![0i32; m], vec![0i32; m]);
    let mut raw = Vec::with_capacity(m * k);
    for gi in 0..group {
        let b: Vec<i8> = (0..mg * k).map(|_| g.int(-128, 127) as i8).collect();
        raw.extend_from_slice(&b);
        let (zg, cr) = (&zb[gi * mg..][..mg], &mut corr[gi * mg..][..mg]);
        pack_b(&b, k, mg, 1, k, &mut packed[gi * plen..][..plen]).unwrap();
        let bias = Some(&bias[gi * mg..][..mg]);
        fold_zero_points(&b, k, mg, 1, k, za, zg, bias, cr).unwrap();
        let f = &mut flipped[gi * mg..][..mg];
        fold_zero_points(&b, k, mg, 1, k, za + 128, zg, bias, f).unwrap();
    }
    let rq: Vec<i32> = (0..m)
        .flat_map(|_| {
            let r = Requant::from_f32_scale(g.int(1, 1000) as f32 * 1e-4).unwrap();
            [r.mult, r.shift]
        })
        .collect();
    let p = QConvParams {
        out: QGEMM_OUT_Q8_F32,
        out_zp: 3,
        a_zp: za,
        group: group as u32,
        kernel: [kh as u32; 2],
        stride: [sh as u32, sw as u32],
        dilation: [1, 1],
        pad_begin: [pad as u32; 2],
        pad_end: [pad as u32; 2],
    };
    let (oh, ow) = ((h + 2 * pad - kh) / sh + 1, (w + 2 * pad - kh) / sw + 1);
    let xb: &[u8] = bytemuck::cast_slice(&x);
    let xt = ge_runtime::format::TensorRef {
        dtype: if A::SIGNED { DType::I8 } else { DType::U8 },
        shape: Shape::new(&[1, c, h, w]).unwrap(),
        data: xb,
    };
    let ins = [
        Some(xt),
        Some(t(&[packed.len()], &packed)),
        Some(t(&[m], &corr)),
        Some(t(&[m], &zb)),
        Some(t(&[m, 2], &rq)),
        None,
        None,
        Some(t(&[m], &flipped)),
    ];
    let shapes: Vec<Option<Shape>> = ins.iter().map(|i| i.as_ref().map(|t| t.shape)).collect();
    let out_shape = Shape::new(&[1, m, oh, ow]).unwrap();
    let levels = conv::workspace_levels(&p, &shapes, &[out_shape]);
    let run = |ws_len: usize, inputs: usize, path: Option<conv::Path>| {
        let mut y = vec![0u8; m * oh * ow];
        let mut ws = vec![0u32; ws_len.div_ceil(4)];
        let ws: &mut [u8] = &mut bytemuck::cast_slice_mut(&mut ws)[..ws_len];
        let mut outs = [tmb(&[1, m, oh, ow], &mut y)];
        outs[0].dtype = DType::I8;
        conv::run_qconv_on(&p, &ins[..inputs], &mut outs, ws, path).unwrap();
        y
    };
    let planned = run(levels[0], 5, None);
    if cg == 1 && mg == 1 {
        // Depthwise: the compiler stores the taps as they are, `[C][k]`.
        let mut compact = ins;
        compact[1] = Some(t(&[raw.len()], &raw));
        let mut y = vec![0u8; m * oh * ow];
        let mut ws = vec![0u32; levels[0].div_ceil(4)];
        let ws: &mut [u8] = &mut bytemuck::cast_slice_mut(&mut ws)[..levels[0]];
        let mut outs = [tmb(&[1, m, oh, ow], &mut y)];
        outs[0].dtype = DType::I8;
        conv::run_qconv(&p, &compact[..5], &mut outs, ws).unwrap();
        assert_eq!(y, planned, "compact depthwise taps");
    }
    // Every level the planner may give the task: smaller blocks or bands, the same bytes.
    for (level, &bytes) in levels.iter().enumerate().skip(1) {
        assert!(bytes <= levels[level - 1], "levels shrink: {levels:?}");
        assert_eq!(run(bytes, 5, None), planned, "level {level} ({bytes} B)");
    }
    // The GEMM path with the i8 tile (no flipped corrections), as a blob from an older ge
    // planned it.
    let gemm = conv::Path::Gemm {
        rows: conv::ROWS,
        flip: false,
        table: false,
    };
    let roomy = levels[0].max(1 << 16);
    [planned, run(roomy, 5, Some(gemm)), run(levels[0], 8, None)]
}

/// A QConv with i8 activations gives the same bytes whether its workspace holds the flipped
/// corrections (activations read as `a + 128` by the u8 tile) or not (the i8 tile, as a blob
/// from an older ge plans it).
#[test]
fn flipped_i8_activations_match_the_i8_path() {
    let [new, old, compiled] = qconv_both_paths((5, 19, 1), -7, |v| v as i8, (-128, 127));
    assert_eq!(new, old);
    assert_eq!(compiled, old, "the compiler's flipped corrections");
    assert!(
        new.iter().any(|&v| v != new[0]),
        "a constant output tests nothing"
    );
}

/// A 1×1 QConv with few input channels per group (the pointwise path with VNNI: pixels in
/// lanes, no transposes) gives the bytes of the GEMM path, u8 and i8 activations, channels
/// not a multiple of four, positions not a multiple of sixteen, grouped and not.
#[test]
fn pointwise_path_matches_the_gemm_path() {
    for (shape, za) in [((6, 28, 4), 0), ((64, 19, 1), 0), ((5, 9, 2), 0)] {
        let [new, old, _] = qconv_paths(shape, (1, [1, 1]), 120 + za, |v| v as u8, (0, 255));
        assert_eq!(new, old, "u8 {shape:?}");
        assert!(
            new.iter().any(|&v| v != new[0]),
            "a constant output tests nothing"
        );
        let [new, old, compiled] = qconv_paths(shape, (1, [1, 1]), -3, |v| v as i8, (-128, 127));
        assert_eq!(new, old, "i8 {shape:?}");
        assert_eq!(
            compiled, old,
            "i8 {shape:?}, the compiler's flipped corrections"
        );
    }
}

/// A depthwise QConv on its padded f32 plane gives the bytes of the GEMM path (the one a
/// blob from an older ge runs), with u8 and i8 activations.
#[test]
fn depthwise_f32_plane_matches_the_gemm_path() {
    let [new, old, _] = qconv_both_paths((1, 1, 12), 131, |v| v as u8, (0, 255));
    assert_eq!(new, old);
    assert!(
        new.iter().any(|&v| v != new[0]),
        "a constant output tests nothing"
    );
    let [new, old, _] = qconv_both_paths((1, 1, 12), -9, |v| v as i8, (-128, 127));
    assert_eq!(new, old);
    // Stride 1 and 2 × 2 run over the flat plane too, stride 3 row by row.
    for stride in [[1, 1], [2, 2], [3, 2]] {
        let [new, old, _] = qconv_paths((1, 1, 12), (3, stride), 131, |v| v as u8, (0, 255));
        assert_eq!(new, old, "stride {stride:?}");
        assert!(
            new.iter().any(|&v| v != new[0]),
            "a constant output tests nothing"
        );
    }
}

/// The byte transpose (16 × 16 SSE2 blocks, scalar edges) against the definition, on shapes
/// with and without whole blocks and with padded strides.
#[test]
fn byte_transposes_match_the_definition() {
    let mut g = Gen(77);
    for (rows, cols, lds, ldd) in [
        (16, 16, 16, 16),
        (35, 50, 53, 40),
        (1, 70, 70, 3),
        (64, 17, 20, 64),
        (15, 15, 15, 15),
    ] {
        let src: Vec<u8> = (0..rows * lds).map(|_| g.int(0, 255) as u8).collect();
        let mut dst = vec![0u8; cols * ldd];
        conv::transpose_bytes(&src, lds, rows, cols, &mut dst, ldd);
        for i in 0..rows {
            for j in 0..cols {
                assert_eq!(
                    dst[j * ldd + i],
                    src[i * lds + j],
                    "{rows}x{cols} at ({i}, {j})"
                );
            }
        }
    }
}
