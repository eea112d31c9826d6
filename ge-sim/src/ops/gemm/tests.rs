//! The GEMM core against a naive reference: every ISA path, packing source, epilogue and
//! thread split.

extern crate std;
use super::*;
use ge_runtime::format::Activation;
use std::vec::Vec;

fn lcg(seed: &mut u32) -> f32 {
    *seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
    (*seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
}

fn rand_vec(n: usize, seed: &mut u32) -> Vec<f32> {
    (0..n).map(|_| lcg(seed)).collect()
}

#[allow(clippy::too_many_arguments)]
fn naive(
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    ta: bool,
    b: &[f32],
    tb: bool,
    c: &mut [f32],
) {
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0f64;
            for p in 0..k {
                let av = if ta { a[p * m + i] } else { a[i * k + p] };
                let bv = if tb { b[j * k + p] } else { b[p * n + j] };
                s += av as f64 * bv as f64;
            }
            c[i * n + j] += alpha * s as f32;
        }
    }
}

fn max_err(x: &[f32], y: &[f32]) -> f32 {
    assert_eq!(x.len(), y.len());
    x.iter()
        .zip(y)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max)
}

#[test]
fn sgemm_matches_naive_odd_sizes() {
    let mut seed = 7;
    for &(m, n, k) in &[
        (1, 7, 5),
        (2, 1, 3),
        (7, 13, 9),
        (37, 41, 300),
        (100, 2100, 20),
        (5, 3, 1),
        (97, 17, 513),
        (13, 2049, 3),
    ] {
        for ta in [false, true] {
            for tb in [false, true] {
                for acc in [false, true] {
                    let a = rand_vec(m * k, &mut seed);
                    let b = rand_vec(k * n, &mut seed);
                    let c0 = rand_vec(m * n, &mut seed);
                    let mut c1 = c0.clone();
                    let mut c2 = if acc {
                        c0.clone()
                    } else {
                        std::vec![0.0; m * n]
                    };
                    let mut ws = std::vec![0.0; sgemm_ws_len(m, n, k)];
                    let (lda, ldb) = (if ta { m } else { k }, if tb { k } else { n });
                    sgemm(
                        m, n, k, 1.5, &a, lda, ta, &b, ldb, tb, acc, &mut c1, n, &mut ws,
                    )
                    .unwrap();
                    naive(m, n, k, 1.5, &a, ta, &b, tb, &mut c2);
                    let e = max_err(&c1, &c2);
                    assert!(e < 1e-3, "m{m} n{n} k{k} ta{ta} tb{tb} acc{acc}: err {e}");
                }
            }
        }
    }
}

#[test]
fn residual_epilogue_matches_naive() {
    let mut seed = 11;
    for &(m, n, k) in &[(7, 13, 9), (37, 41, 300), (6, 16, 600), (13, 35, 1)] {
        let ldr = n + 3;
        let a = rand_vec(m * k, &mut seed);
        let b = rand_vec(k * n, &mut seed);
        let bias = rand_vec(m, &mut seed);
        let r = rand_vec(m * ldr, &mut seed);
        let mut want = std::vec![0.0; m * n];
        naive(m, n, k, 1.0, &a, false, &b, false, &mut want);
        for i in 0..m {
            for j in 0..n {
                let v = want[i * n + j] + bias[i] + r[i * ldr + j];
                want[i * n + j] = v.max(0.0);
            }
        }
        let ep = Epilogue {
            row_bias: Some(&bias),
            residual: Some((&r, ldr)),
            act: TileAct::Clamp {
                lo: 0.0,
                hi: f32::INFINITY,
            },
            ..Epilogue::PLAIN
        };
        let mut c = std::vec![f32::NAN; m * n];
        let mut ws = std::vec![0.0; gemm_packed_ws_len(n, k)];
        let rows = ALayout::Strided { rs: k, cs: 1 };
        let mb = MatB {
            b: &b,
            ld: n,
            trans: false,
        };
        gemm_packed(m, n, k, &a, rows, &mb, &mut c, n, &ep, &mut ws, &Serial).unwrap();
        let e = max_err(&c, &want);
        assert!(e < 1e-3, "m{m} n{n} k{k}: err {e}");
        // The same product on A pre-packed in panels: bitwise the same.
        let mut panels = std::vec![0.0; m * k];
        ge_runtime::format::pack_panels(&a, m, k, &mut panels);
        let mut cp = std::vec![f32::NAN; m * n];
        gemm_packed(
            m,
            n,
            k,
            &panels,
            ALayout::Panels,
            &mb,
            &mut cp,
            n,
            &ep,
            &mut ws,
            &Serial,
        )
        .unwrap();
        assert!(
            cp.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()),
            "m{m} n{n} k{k}: panels differ from rows"
        );
        // A residual shorter than C is refused.
        let short = Epilogue {
            residual: Some((&r[..r.len() - 4], ldr)),
            ..ep
        };
        let err = gemm_packed(m, n, k, &a, rows, &mb, &mut c, n, &short, &mut ws, &Serial);
        assert!(err.is_err());
    }
}

/// One column (`n = 1`) from panel-packed A takes the one-column kernel on AVX2: bitwise the tile's
/// values (a sigmoid within 4 ulp: the AVX-512 tile's own form), which column 0 of the same product with two columns gives; K blocks (k 700),
/// partial and several panels in flight, every epilogue, serial and on two threads.
#[cfg(feature = "std")]
#[test]
fn one_column_is_the_tiles_values() {
    if micro::isa() == micro::Isa::Portable {
        std::println!("skipping the one-column path: this CPU lacks AVX2");
        return;
    }
    let pool = crate::threads::ThreadPool::shared(2);
    let mut seed = 41;
    for (m, k) in [
        (1, 1),
        (5, 3),
        (6, 40),
        (7, 700),
        (13, 9),
        (31, 300),
        (1280, 512),
    ] {
        let a = rand_vec(m * k, &mut seed);
        let x = rand_vec(2 * k, &mut seed);
        let bias = rand_vec(m, &mut seed);
        let res = rand_vec(2 * m, &mut seed);
        let c0 = rand_vec(2 * m, &mut seed);
        let mut panels = std::vec![0.0; m * k];
        ge_runtime::format::pack_panels(&a, m, k, &mut panels);
        for (alpha, accumulate, act) in [
            (1.0, false, TileAct::None),
            (0.5, true, TileAct::Clamp { lo: 0.0, hi: 0.3 }),
            (1.0, false, TileAct::Silu),
            (1.0, true, TileAct::HardSwish),
        ] {
            let ep = |ldr: usize| Epilogue {
                alpha,
                accumulate,
                row_bias: Some(&bias),
                residual: Some((&res[..], ldr)),
                act,
            };
            // The tile: B with two columns, x in column 0.
            let mut c2 = c0.clone();
            let mut ws = std::vec![0.0; gemm_packed_ws_len(2, k)];
            let b2 = MatB {
                b: &x,
                ld: 2,
                trans: false,
            };
            let al = ALayout::Panels;
            gemm_packed(
                m,
                2,
                k,
                &panels,
                al,
                &b2,
                &mut c2,
                2,
                &ep(2),
                &mut ws,
                &Serial,
            )
            .unwrap();
            let xs: Vec<f32> = (0..k).map(|p| x[2 * p]).collect();
            let b1 = MatB {
                b: &xs,
                ld: 1,
                trans: false,
            };
            for par in [&Serial as &dyn Parallel, pool] {
                let mut c1: Vec<f32> = (0..m).map(|i| c0[2 * i]).collect();
                let mut ws = std::vec![0.0; gemm_packed_ws_len(1, k)];
                gemm_packed(m, 1, k, &panels, al, &b1, &mut c1, 1, &ep(2), &mut ws, par).unwrap();
                let sigmoid = matches!(act, TileAct::Sigmoid | TileAct::Silu);
                for i in 0..m {
                    assert!(
                        crate::ops::test_util::same_value(c1[i], c2[2 * i], sigmoid),
                        "m{m} k{k} row {i} alpha {alpha} {act:?}: {} vs {}",
                        c1[i],
                        c2[2 * i]
                    );
                }
            }
        }
    }
}

#[test]
fn sgemm_leading_dims_and_errors() {
    // 2x2 block of a 3x4 A times 2x3 block of B (ld 5), into C with ldc 4.
    let a: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let b: Vec<f32> = (0..10).map(|v| v as f32).collect();
    let mut c = std::vec![0.0f32; 8];
    sgemm(
        2,
        3,
        2,
        1.0,
        &a,
        4,
        false,
        &b,
        5,
        false,
        false,
        &mut c,
        4,
        &mut [0.0; 64],
    )
    .unwrap();
    // A = [[0,1],[4,5]], B = [[0,1,2],[5,6,7]]
    assert_eq!(c, [5., 6., 7., 0., 25., 34., 43., 0.]);
    assert!(
        sgemm(
            2,
            3,
            2,
            1.0,
            &a[..4],
            4,
            false,
            &b,
            5,
            false,
            false,
            &mut c,
            4,
            &mut [0.0; 64]
        )
        .is_err()
    );
    assert_eq!(
        sgemm(
            2,
            3,
            2,
            1.0,
            &a,
            4,
            false,
            &b,
            5,
            false,
            false,
            &mut c,
            4,
            &mut []
        ),
        Err(KernelError::Workspace)
    );
}

/// Runs one GemmW8 task (B bytes, one scale or one per column) on `threads`.
fn gemm_w8_run(
    p: &GemmParams,
    a: (&[usize], &[f32]),
    b: (&[usize], DType, &[u8]),
    scales: &[f32],
    y_dims: &[usize],
    threads: usize,
) -> Vec<f32> {
    let ins = [
        tref(a.0, a.1),
        Some(TensorRef {
            dtype: b.1,
            shape: Shape::new(b.0).unwrap(),
            data: b.2,
        }),
        tref(&[scales.len()], scales),
    ];
    run_on(run_gemm_w8, p, &ins, y_dims, threads)
}

/// A Gemm-kind kernel function.
type GemmRun = fn(
    &GemmParams,
    &[Option<TensorRef<'_>>],
    &mut [TensorMut<'_>],
    &mut [u8],
    &dyn Parallel,
) -> KernelResult;

/// The kernel `run` on `ins` (a GemmW8 or GemmPacked task's) on `threads`: its output.
fn run_on(
    run: GemmRun,
    p: &GemmParams,
    ins: &[Option<TensorRef<'_>>],
    y_dims: &[usize],
    threads: usize,
) -> Vec<f32> {
    let shapes: Vec<Option<Shape>> = ins.iter().map(|t| t.map(|t| t.shape)).collect();
    let ys = Shape::new(y_dims).unwrap();
    let mut ws = std::vec![0u8; gemm_kn_workspace_bytes(&shapes, &[ys])];
    let mut y = std::vec![0.0f32; ys.numel()];
    let mut outs = [TensorMut {
        dtype: DType::F32,
        shape: ys,
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    let pool = crate::threads::ThreadPool::shared(threads);
    let par: &dyn Parallel = if threads > 1 { pool } else { &Serial };
    run(p, ins, &mut outs, &mut ws, par).unwrap();
    y
}

/// GemmW8's B pre-packed at compile time ([`ge_runtime::format::pack_gemm_b`]) gives
/// bitwise the values of B in ONNX order, on 1 and 2 threads: K blocks, whole and narrow
/// panels, one row and several, int8 per column and uint8 with one scale, a tile
/// activation. A pre-packed f32 (Gemm) or transposed B is refused.
#[test]
fn prepacked_int8_b_gives_the_values_of_onnx_order() {
    use ge_runtime::format::{GEMM_B_PANELS, pack_gemm_b};
    let mut seed = 7;
    let relu = Activation {
        op: UnaryOp::Relu as u32,
        ..Activation::default()
    };
    for (m, n, k) in [
        (3, 37, 300),
        (13, 16, 7),
        (100, 130, 513),
        (1, 40, 260),
        (2, 5, 1),
    ] {
        let a = rand_vec(m * k, &mut seed);
        let q: Vec<u8> = rand_vec(k * n, &mut seed)
            .iter()
            .map(|v| (v * 127.0) as i8 as u8)
            .collect();
        let mut qp = std::vec![0u8; k * n];
        pack_gemm_b(&q, k, n, false, &mut qp);
        let cols = rand_vec(n, &mut seed);
        for (dtype, scales, act) in [
            (DType::I8, &cols[..], Activation::default()),
            (DType::U8, &cols[..1], relu),
        ] {
            let p = GemmParams { act, ..PLAIN_GEMM };
            let pp = GemmParams {
                trans_b: GEMM_B_PANELS,
                ..p
            };
            let run = |p: &GemmParams, bytes: &[u8], threads| {
                gemm_w8_run(
                    p,
                    (&[m, k], &a),
                    (&[k, n], dtype, bytes),
                    scales,
                    &[m, n],
                    threads,
                )
            };
            let want = run(&p, &q, 1);
            for threads in [1, 2] {
                assert_eq!(run(&pp, &qp, threads), want, "{m}x{n}x{k} {dtype:?}");
            }
        }
    }
    // The f32 Gemm and a transposed B take no pre-packed B.
    let (a, b) = ([1.0f32; 4], [1.0f32; 4]);
    let mut y = [0.0f32; 4];
    let p = GemmParams {
        trans_b: GEMM_B_PANELS,
        ..PLAIN_GEMM
    };
    let mut outs = [TensorMut {
        dtype: DType::F32,
        shape: Shape::new(&[2, 2]).unwrap(),
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    let ins = [tref(&[2, 2], &a), tref(&[2, 2], &b)];
    let mut ws = std::vec![0u8; 1 << 16];
    assert!(matches!(
        run_gemm(&p, &ins, &mut outs, &mut ws, &Serial),
        Err(KernelError::BadParams(_))
    ));
    let pt = GemmParams {
        trans_b: GEMM_B_PANELS | 1,
        ..p
    };
    let ins = [
        tref(&[2, 2], &a),
        Some(TensorRef {
            dtype: DType::I8,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: &[1, 2, 3, 4],
        }),
        tref(&[1], &[0.5]),
    ];
    assert!(matches!(
        run_gemm_w8(&pt, &ins, &mut outs, &mut ws, &Serial),
        Err(KernelError::BadParams(_))
    ));
}

/// Runs one f32 Gemm task (`packed`: GemmPacked) on `threads`: A `m × k`, B as given, C
/// one value per column (beta 1).
#[allow(clippy::too_many_arguments)]
fn gemm_f32_run(
    packed: bool,
    p: &GemmParams,
    (m, n, k): (usize, usize, usize),
    a: &[f32],
    (b_dims, b): (&[usize], &[f32]),
    c: &[f32],
    threads: usize,
) -> Vec<f32> {
    let ins = [tref(&[m, k], a), tref(b_dims, b), tref(&[n], c)];
    let run = if packed { run_gemm_packed } else { run_gemm };
    run_on(run, p, &ins, &[m, n], threads)
}

/// GemmPacked's B, pre-packed at compile time from either ONNX order (`transB` 0 or 1),
/// gives bitwise the Gemm's values when A has several rows (both run the same register
/// tiles on the same panels: whole panels read in place, the narrow last one copied), on
/// 1 and 2 threads: K blocks, whole and narrow panels, with and without a tile
/// activation. One row (the plain Gemm's matrix-vector path sums in another order):
/// within 1e-5. GemmPacked refuses a B that is not pre-packed.
#[test]
fn prepacked_f32_b_gives_the_values_of_onnx_order() {
    use ge_runtime::format::{GEMM_B_PANELS, pack_gemm_b};
    let mut seed = 11;
    let relu = Activation {
        op: UnaryOp::Relu as u32,
        ..Activation::default()
    };
    for (m, n, k) in [
        (3, 37, 300),
        (13, 16, 7),
        (100, 130, 513),
        (20, 400, 600),
        (2, 5, 1),
        (1, 40, 260),
    ] {
        let a = rand_vec(m * k, &mut seed);
        let b = rand_vec(k * n, &mut seed);
        let c = rand_vec(n, &mut seed);
        let mut bt = std::vec![0.0f32; k * n];
        for p in 0..k {
            for j in 0..n {
                bt[j * k + p] = b[p * n + j];
            }
        }
        let mut packed = std::vec![0.0f32; k * n];
        pack_gemm_b(&b, k, n, false, &mut packed);
        for act in [Activation::default(), relu] {
            let p = GemmParams {
                act,
                beta: 1.0,
                ..PLAIN_GEMM
            };
            let pt = GemmParams { trans_b: 1, ..p };
            let pp = GemmParams {
                trans_b: GEMM_B_PANELS,
                ..p
            };
            let want = gemm_f32_run(false, &p, (m, n, k), &a, (&[k, n], &b), &c, 1);
            let want_t = gemm_f32_run(false, &pt, (m, n, k), &a, (&[n, k], &bt), &c, 1);
            for threads in [1, 2] {
                let got = gemm_f32_run(true, &pp, (m, n, k), &a, (&[k, n], &packed), &c, threads);
                if m > 1 {
                    assert_eq!(got, want, "{m}x{n}x{k} {threads} threads");
                    assert_eq!(got, want_t, "{m}x{n}x{k} from B transposed");
                } else {
                    for (g, w) in got.iter().zip(&want) {
                        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
                    }
                }
            }
        }
    }
    // A B in ONNX order (no GEMM_B_PANELS) is refused.
    let (a, b) = ([1.0f32; 4], [1.0f32; 4]);
    let mut y = [0.0f32; 4];
    let mut outs = [TensorMut {
        dtype: DType::F32,
        shape: Shape::new(&[2, 2]).unwrap(),
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    let ins = [tref(&[2, 2], &a), tref(&[2, 2], &b)];
    let mut ws = std::vec![0u8; 1 << 16];
    assert!(matches!(
        run_gemm_packed(&PLAIN_GEMM, &ins, &mut outs, &mut ws, &Serial),
        Err(KernelError::BadParams(_))
    ));
}

fn tref<'a>(d: &[usize], v: &'a [f32]) -> Option<TensorRef<'a>> {
    Some(TensorRef {
        dtype: DType::F32,
        shape: Shape::new(d).unwrap(),
        data: bytemuck::cast_slice(v),
    })
}

#[test]
fn gemm_op_with_bias_broadcast() {
    // A [2,3] transposed in storage ([3,2]), B [3,2], C [2] broadcast as a row; alpha 2, beta 0.5
    let a_t = [1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0]; // A = [[1,2,3],[4,5,6]]
    let b = [1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0];
    let c = [10.0f32, 20.0];
    let mut y = [0.0f32; 4];
    let p = GemmParams {
        trans_a: 1,
        trans_b: 0,
        alpha: 2.0,
        beta: 0.5,
        act: Activation::default(),
    };
    let ins = [tref(&[3, 2], &a_t), tref(&[3, 2], &b), tref(&[2], &c)];
    let shapes: Vec<Option<Shape>> = ins.iter().map(|t| t.map(|t| t.shape)).collect();
    let mut ws = std::vec![0u8; gemm_workspace_bytes(&shapes, &[Shape::new(&[2, 2]).unwrap()])];
    let mut outs = [TensorMut {
        dtype: DType::F32,
        shape: Shape::new(&[2, 2]).unwrap(),
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    run_gemm(&p, &ins, &mut outs, &mut ws, &Serial).unwrap();
    // A·B = [[4,5],[10,11]] -> 2x + [5,10]
    assert_eq!(y, [13., 20., 25., 32.]);
    // C as a column [2,1], no C
    let c = [1.0f32, 2.0];
    let ins = [tref(&[3, 2], &a_t), tref(&[3, 2], &b), tref(&[2, 1], &c)];
    let mut outs = [TensorMut {
        dtype: DType::F32,
        shape: Shape::new(&[2, 2]).unwrap(),
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    run_gemm(&p, &ins, &mut outs, &mut ws, &Serial).unwrap();
    assert_eq!(y, [8.5, 10.5, 21., 23.]);
    let ins = [tref(&[3, 2], &a_t), tref(&[3, 2], &b), None];
    let mut outs = [TensorMut {
        dtype: DType::F32,
        shape: Shape::new(&[2, 2]).unwrap(),
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    run_gemm(&p, &ins, &mut outs, &mut ws, &Serial).unwrap();
    assert_eq!(y, [8., 10., 20., 22.]);
    // bad C
    let c3 = [1.0f32, 2.0, 3.0];
    let ins = [tref(&[3, 2], &a_t), tref(&[3, 2], &b), tref(&[3], &c3)];
    let mut outs = [TensorMut {
        dtype: DType::F32,
        shape: Shape::new(&[2, 2]).unwrap(),
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    assert!(run_gemm(&p, &ins, &mut outs, &mut ws, &Serial).is_err());
    // shape mismatch
    let ins = [tref(&[2, 3], &a_t), tref(&[3, 2], &b), None];
    let mut outs = [TensorMut {
        dtype: DType::F32,
        shape: Shape::new(&[2, 2]).unwrap(),
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    assert!(run_gemm(&p, &ins, &mut outs, &mut ws, &Serial).is_err());
}

fn matmul(
    ad: &[usize],
    a: &[f32],
    bd: &[usize],
    b: &[f32],
    yd: &[usize],
) -> Result<Vec<f32>, KernelError> {
    let mut y = std::vec![0.0f32; yd.iter().product()];
    let ins = [tref(ad, a), tref(bd, b)];
    let ys = Shape::new(yd).unwrap();
    let mut ws = std::vec![0u8; gemm_workspace_bytes(&[Some(Shape::new(ad).unwrap()), Some(Shape::new(bd).unwrap())], &[ys])];
    let mut outs = [TensorMut {
        dtype: DType::F32,
        shape: ys,
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    run_matmul(&ins, &mut outs, &mut ws, &Serial)?;
    Ok(y)
}

#[test]
fn matmul_numpy_semantics() {
    let a: Vec<f32> = (0..6).map(|v| v as f32).collect(); // [2,3]
    let b: Vec<f32> = (0..6).map(|v| v as f32).collect(); // [3,2]
    // np.arange(6).reshape(2,3) @ np.arange(6).reshape(3,2) = [[10,13],[28,40]]
    assert_eq!(
        matmul(&[2, 3], &a, &[3, 2], &b, &[2, 2]).unwrap(),
        [10., 13., 28., 40.]
    );
    // 1-D @ 2-D: [0,1,2] @ B = [10,13]
    assert_eq!(
        matmul(&[3], &a[..3], &[3, 2], &b, &[2]).unwrap(),
        [10., 13.]
    );
    // 2-D @ 1-D: A @ [0,1,2] = [5,14]
    assert_eq!(matmul(&[2, 3], &a, &[3], &b[..3], &[2]).unwrap(), [5., 14.]);
    // 1-D @ 1-D
    assert_eq!(matmul(&[3], &a[..3], &[3], &b[..3], &[]).unwrap(), [5.]);
    assert!(matmul(&[2, 3], &a, &[2, 3], &b, &[2, 3]).is_err());
}

#[test]
fn matmul_broadcast_batches() {
    let mut seed = 3;
    // [2,1,4,5] @ [3,5,6] -> [2,3,4,6]; and [2,3,4,5] @ [5,6] (folded path)
    for (ad, bd, yd) in [
        (
            std::vec![2usize, 1, 4, 5],
            std::vec![3usize, 5, 6],
            std::vec![2usize, 3, 4, 6],
        ),
        (
            std::vec![2, 3, 4, 5],
            std::vec![5, 6],
            std::vec![2, 3, 4, 6],
        ),
        (
            std::vec![3, 1, 5],
            std::vec![2, 1, 5, 7],
            std::vec![2, 3, 1, 7],
        ),
    ] {
        let a = rand_vec(ad.iter().product(), &mut seed);
        let b = rand_vec(bd.iter().product(), &mut seed);
        let y = matmul(&ad, &a, &bd, &b, &yd).unwrap();
        let (m, k, n) = (ad[ad.len() - 2], ad[ad.len() - 1], bd[bd.len() - 1]);
        let nb = yd.len() - 2;
        let batches: usize = yd[..nb].iter().product();
        for i in 0..batches {
            // decompose i over yd[..nb] and map into a/b batch indices
            let mut idx = std::vec![0usize; nb];
            let mut r = i;
            for ax in (0..nb).rev() {
                idx[ax] = r % yd[ax];
                r /= yd[ax];
            }
            let off = |d: &[usize]| {
                let db = &d[..d.len() - 2];
                let mut o = 0;
                for (j, &dim) in db.iter().enumerate() {
                    let ix = idx[nb - db.len() + j];
                    o = o * dim + if dim == 1 { 0 } else { ix };
                }
                o
            };
            let (oa, ob) = (off(&ad), off(&bd));
            let mut want = std::vec![0.0f32; m * n];
            naive(
                m,
                n,
                k,
                1.0,
                &a[oa * m * k..][..m * k],
                false,
                &b[ob * k * n..][..k * n],
                false,
                &mut want,
            );
            assert!(max_err(&y[i * m * n..][..m * n], &want) < 1e-5);
        }
    }
}

#[test]
fn matmul_integers() {
    let a = [1i64, 2, 3, 4];
    let b = [5i64, 6, 7, 8];
    let mut y = [0i64; 4];
    let ins = [
        Some(TensorRef {
            dtype: DType::I64,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice(&a),
        }),
        Some(TensorRef {
            dtype: DType::I64,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice(&b),
        }),
    ];
    let mut outs = [TensorMut {
        dtype: DType::I64,
        shape: Shape::new(&[2, 2]).unwrap(),
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    run_matmul(&ins, &mut outs, &mut [], &Serial).unwrap();
    assert_eq!(y, [19, 22, 43, 50]);
}

/// Random MatMul / Gemm shapes must give a result or an error, never a panic.
#[test]
fn malformed_never_panics() {
    let mut seed = 9u32;
    let mut r = |n: u32| {
        seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        ((seed >> 8) % n.max(1)) as usize
    };
    let mut oks = 0;
    for _ in 0..3000 {
        let (ra, rb) = (1 + r(4), 1 + r(4));
        let k = r(4);
        let mut ad: Vec<usize> = (0..ra).map(|_| r(3)).collect();
        let mut bd: Vec<usize> = (0..rb).map(|_| r(3)).collect();
        if r(4) != 0 {
            *ad.last_mut().unwrap() = k;
            let i = if rb == 1 { 0 } else { rb - 2 };
            bd[i] = k;
        }
        // numpy result shape, sometimes perturbed
        let (ab, bb) = (&ad[..ra.saturating_sub(2)], &bd[..rb.saturating_sub(2)]);
        let nb = ab.len().max(bb.len());
        let mut yd: Vec<usize> = (0..nb)
            .map(|i| {
                let da = if i + ab.len() >= nb {
                    ab[i + ab.len() - nb]
                } else {
                    1
                };
                let db = if i + bb.len() >= nb {
                    bb[i + bb.len() - nb]
                } else {
                    1
                };
                if da == 1 { db } else { da }
            })
            .collect();
        if ra > 1 {
            yd.push(ad[ra - 2]);
        }
        if rb > 1 {
            yd.push(bd[rb - 1]);
        }
        if r(8) == 0 && !yd.is_empty() {
            yd[0] += 1;
        }
        let (sa, sb, sy) = (
            Shape::new(&ad).unwrap(),
            Shape::new(&bd).unwrap(),
            Shape::new(&yd).unwrap(),
        );
        let a = std::vec![1.0f32; sa.numel()];
        let b = std::vec![1.0f32; sb.numel()];
        let mut y = std::vec![0.0f32; sy.numel()];
        let mut ws = std::vec![0u32; gemm_workspace_bytes(&[Some(sa), Some(sb)], &[sy]) / 4];
        let c = std::vec![1.0f32; yd.last().copied().unwrap_or(1)];
        let ins = [
            tref(&ad, &a),
            tref(&bd, &b),
            if r(2) == 0 {
                tref(&yd[yd.len().saturating_sub(1)..], &c)
            } else {
                None
            },
        ];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: sy,
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        let ok = run_matmul(
            &ins[..2],
            &mut outs,
            bytemuck::cast_slice_mut(&mut ws),
            &Serial,
        )
        .is_ok();
        oks += usize::from(ok);
        let p = GemmParams {
            trans_a: r(2) as u32,
            trans_b: r(2) as u32,
            alpha: 1.0,
            beta: 1.0,
            act: Activation::default(),
        };
        let _ = run_gemm(
            &p,
            &ins,
            &mut outs,
            bytemuck::cast_slice_mut(&mut ws),
            &Serial,
        );
    }
    assert!(oks > 1000, "only {oks} well-formed cases ran");
}

/// One row of GemmW8 (a QDQ dense layer at batch 1) runs the float Gemm's GEMV on the int8
/// weights in place: bitwise the f32 Gemm on B dequantized (`float(w)·s`) — with C, alpha,
/// a Relu, int8 per column and uint8 per tensor, row-major and pre-packed B, K of every
/// remainder mod 4 — and plans no workspace (where it planned four packing slots).
#[test]
fn one_row_int8_b_is_the_float_gemv_without_workspace() {
    use ge_runtime::format::{GEMM_B_PANELS, pack_gemm_b};
    let mut seed = 11;
    let relu = Activation {
        op: UnaryOp::Relu as u32,
        ..Activation::default()
    };
    for (n, k) in [(128, 640), (37, 7), (16, 1), (5, 258), (640, 129)] {
        let a = rand_vec(k, &mut seed);
        let c = rand_vec(n, &mut seed);
        let q: Vec<u8> = rand_vec(k * n, &mut seed)
            .iter()
            .map(|v| (v * 255.0) as i8 as u8)
            .collect();
        let mut qp = std::vec![0u8; k * n];
        pack_gemm_b(&q, k, n, false, &mut qp);
        let cols: Vec<f32> = rand_vec(n, &mut seed)
            .iter()
            .map(|s| s.abs() + 0.01)
            .collect();
        for (dtype, scales, act, alpha) in [
            (DType::I8, &cols[..], relu, 1.0),
            (DType::U8, &cols[..1], Activation::default(), 0.75),
        ] {
            let deq: Vec<f32> = q
                .iter()
                .enumerate()
                .map(|(i, &x)| {
                    let w = if dtype == DType::U8 {
                        f32::from(x)
                    } else {
                        f32::from(x as i8)
                    };
                    w * scales[if scales.len() == 1 { 0 } else { i % n }]
                })
                .collect();
            let p = GemmParams {
                act,
                alpha,
                beta: 1.0,
                ..PLAIN_GEMM
            };
            let want = gemm_f32_run(false, &p, (1, n, k), &a, (&[k, n], &deq), &c, 1);
            for (bp, bytes) in [
                (p, &q),
                (
                    GemmParams {
                        trans_b: GEMM_B_PANELS,
                        ..p
                    },
                    &qp,
                ),
            ] {
                let ins = [
                    tref(&[1, k], &a),
                    Some(TensorRef {
                        dtype,
                        shape: Shape::new(&[k, n]).unwrap(),
                        data: bytes,
                    }),
                    tref(&[scales.len()], scales),
                    tref(&[n], &c),
                ];
                let shapes: Vec<Option<Shape>> = ins.iter().map(|t| t.map(|t| t.shape)).collect();
                let ys = Shape::new(&[1, n]).unwrap();
                assert_eq!(gemm_w8_workspace_bytes(&shapes, &[ys]), 0);
                assert!(gemm_kn_workspace_bytes(&shapes, &[ys]) > 0);
                let mut y = std::vec![0.0f32; n];
                let mut outs = [TensorMut {
                    dtype: DType::F32,
                    shape: ys,
                    data: bytemuck::cast_slice_mut(&mut y),
                }];
                run_gemm_w8(&bp, &ins, &mut outs, &mut [], &Serial).unwrap();
                assert_eq!(y, want, "1x{n}x{k} {dtype:?} panels {}", bp.trans_b != 0);
            }
        }
    }
}
