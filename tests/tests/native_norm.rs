//! Native LayerNormalization (opset 17) and Gelu (opset 20) import straight to their kernels:
//! one task at every opt level, equal to a reference computed here in f64 (rtol 1e-4,
//! atol 1e-5). LayerNorm in the form of its ONNX function body (`d · Reciprocal(√(v + ε))`,
//! what the decomposition and some exporters write) fuses to one task at O2. Near-misses
//! stay correct: the Mean/InvStdDev outputs read, the reciprocal read elsewhere, f64 and
//! f16 inputs (the kernel is f32-only). The opset-17 BERT block of corpus/transformer17
//! compiles to LayerNorm tasks, no Reduce, and passes `ge check` at every level.

use ge_build::check::{Tolerance, check_case_isolated, compare};
use ge_build::tensor::TensorData;
use ge_build::{CompileOptions, Compiled, OptLevel, compile_file};
use ge_runtime::format::{DType, OpKind};
use ge_runtime::{AlignedBlob, Model};
use ge_tests::onnx_builder::{Attr, ModelBuilder};
use ge_tests::{assert_close, compile_at, run};

const LEVELS: [OptLevel; 4] = [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3];
const EPS: f32 = 1e-5;

/// The kinds of the compiled blob's tasks, in order.
fn task_kinds(c: &Compiled) -> Vec<OpKind> {
    let blob = AlignedBlob::from_bytes(&c.blob);
    let m = Model::from_bytes(blob.as_bytes()).expect("loads");
    m.tasks().iter().map(|t| m.task_op(t)).collect()
}

/// Seeded values in `[lo, hi)` (xorshift).
struct Rng(u64);

impl Rng {
    fn vals(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                lo + (hi - lo) * ((self.0 >> 40) as f32 / (1u64 << 24) as f32)
            })
            .collect()
    }

    /// Rows of `n` values, each row with its own offset and spread (so the mean and the
    /// variance both matter), never all equal.
    fn rows(&mut self, rows: usize, n: usize) -> Vec<f32> {
        let mut v = Vec::with_capacity(rows * n);
        for _ in 0..rows {
            let (off, scale) = (self.vals(1, -3.0, 3.0)[0], self.vals(1, 0.3, 2.5)[0]);
            v.extend(self.vals(n, -1.0, 1.0).iter().map(|u| off + scale * u));
        }
        v
    }
}

fn tensor(dims: &[usize], v: &[f32]) -> TensorData {
    assert_eq!(dims.iter().product::<usize>(), v.len());
    TensorData {
        dtype: DType::F32,
        dims: dims.to_vec(),
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// Row statistics over rows of `n`: (mean, 1 / √(var + ε)) in f64, population variance.
fn stats(x: &[f32], n: usize) -> Vec<(f64, f64)> {
    x.chunks_exact(n)
        .map(|r| {
            let mean = r.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
            let var = r
                .iter()
                .map(|&v| (f64::from(v) - mean).powi(2))
                .sum::<f64>()
                / n as f64;
            (mean, 1.0 / (var + f64::from(EPS)).sqrt())
        })
        .collect()
}

/// `(x − mean) · inv · gamma + beta` per row of `n`; gamma and beta broadcast over the
/// trailing elements of the row (their length divides `n`).
fn layer_norm_ref(x: &[f32], n: usize, gamma: &[f32], beta: Option<&[f32]>) -> Vec<f32> {
    let st = stats(x, n);
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let (mean, inv) = st[i / n];
            let j = i % n;
            let b = beta.map_or(0.0, |b| f64::from(b[j % b.len()]));
            ((f64::from(v) - mean) * inv * f64::from(gamma[j % gamma.len()]) + b) as f32
        })
        .collect()
}

/// One native LayerNormalization node (opset 17) over `x` of `shape` from `axis`, with
/// scale (and bias) of `param_shape`; returns the model, its input and the reference.
fn native_layer_norm(
    shape: &[usize],
    axis: i64,
    param_shape: &[usize],
    bias: bool,
    seed: u64,
) -> (ModelBuilder, TensorData, TensorData) {
    let mut rng = Rng(seed);
    let a = if axis < 0 {
        (axis + shape.len() as i64) as usize
    } else {
        axis as usize
    };
    let n: usize = shape[a..].iter().product();
    let p: usize = param_shape.iter().product();
    let x = rng.rows(shape.iter().product::<usize>() / n, n);
    let gamma = rng.vals(p, 0.5, 1.5);
    let beta = rng.vals(p, -0.5, 0.5);
    let mut m = ModelBuilder::new(17);
    m.input("x", shape).constant("gamma", param_shape, &gamma);
    let mut ins = vec!["x", "gamma"];
    if bias {
        m.constant("beta", param_shape, &beta);
        ins.push("beta");
    }
    m.node(
        "LayerNormalization",
        &ins,
        &["y"],
        &[("axis", Attr::I(axis)), ("epsilon", Attr::F(EPS))],
    )
    .output("y", shape);
    let want = layer_norm_ref(&x, n, &gamma, bias.then_some(&beta[..]));
    (m, tensor(shape, &x), tensor(shape, &want))
}

#[test]
fn native_layer_norm_is_one_task_at_every_level_and_matches_the_reference() {
    // (shape, axis, scale/bias shape, bias): the last axis; two axes (axis 1 of rank 3);
    // a scale broadcast within the normalized shape and no bias.
    let cases: [(&[usize], i64, &[usize], bool); 3] = [
        (&[2, 5, 8], -1, &[8], true),
        (&[2, 5, 8], 1, &[5, 8], true),
        (&[3, 4, 16], 1, &[16], false),
    ];
    for (k, (shape, axis, pshape, bias)) in cases.into_iter().enumerate() {
        let (m, x, want) = native_layer_norm(shape, axis, pshape, bias, 11 + k as u64);
        let bytes = m.build();
        for level in LEVELS {
            let c = compile_at(&bytes, level);
            assert_eq!(task_kinds(&c), [OpKind::LayerNorm], "case {k} at {level:?}");
            assert_close(
                &run(&c, std::slice::from_ref(&x)),
                std::slice::from_ref(&want),
            );
        }
    }
}

/// LayerNorm as its ONNX function body writes it (opset 13): `d · Reciprocal(√(v + ε))`
/// with the reciprocal on the left or the right, then `gamma ·` and `+ beta`. With
/// `recip_is_output` the reciprocal is also a graph output (a near-miss: fusing would lose it).
fn reciprocal_layer_norm(recip_first: bool, recip_is_output: bool) -> (ModelBuilder, Vec<f32>) {
    let mut rng = Rng(5);
    let gamma = rng.vals(8, 0.5, 1.5);
    let beta = rng.vals(8, -0.5, 0.5);
    let mut m = ModelBuilder::new(13);
    m.input("x", &[2, 5, 8])
        .constant("eps", &[], &[EPS])
        .constant("gamma", &[8], &gamma)
        .constant("beta", &[8], &beta);
    let mean = [("axes", Attr::Is(vec![-1]))];
    let normalized: &[&str] = if recip_first {
        &["r", "d"]
    } else {
        &["d", "r"]
    };
    m.node("ReduceMean", &["x"], &["m"], &mean)
        .node("Sub", &["x", "m"], &["d"], &[])
        .node("Mul", &["d", "d"], &["dd"], &[])
        .node("ReduceMean", &["dd"], &["v"], &mean)
        .node("Add", &["v", "eps"], &["ve"], &[])
        .node("Sqrt", &["ve"], &["s"], &[])
        .node("Reciprocal", &["s"], &["r"], &[])
        .node("Mul", normalized, &["n"], &[])
        .node("Mul", &["gamma", "n"], &["g"], &[])
        .node("Add", &["g", "beta"], &["y"], &[])
        .output("y", &[2, 5, 8]);
    if recip_is_output {
        m.output("r", &[2, 5, 1]);
    }
    let mut params = gamma;
    params.extend(beta);
    (m, params)
}

#[test]
fn reciprocal_form_layer_norm_fuses_to_one_task() {
    for recip_first in [false, true] {
        let (m, params) = reciprocal_layer_norm(recip_first, false);
        let x = Rng(21).rows(10, 8);
        let want = layer_norm_ref(&x, 8, &params[..8], Some(&params[8..]));
        let bytes = m.build();
        let o2 = compile_at(&bytes, OptLevel::O2);
        assert_eq!(task_kinds(&o2), [OpKind::LayerNorm], "{recip_first}");
        let o0 = compile_at(&bytes, OptLevel::O0);
        assert!(task_kinds(&o0).len() > 1);
        let input = [tensor(&[2, 5, 8], &x)];
        for c in [&o0, &o2] {
            assert_close(&run(c, &input), &[tensor(&[2, 5, 8], &want)]);
        }
    }
}

#[test]
fn reciprocal_form_stays_when_the_reciprocal_is_also_an_output() {
    let (m, params) = reciprocal_layer_norm(false, true);
    let x = Rng(22).rows(10, 8);
    let want = [
        tensor(
            &[2, 5, 8],
            &layer_norm_ref(&x, 8, &params[..8], Some(&params[8..])),
        ),
        tensor(
            &[2, 5, 1],
            &stats(&x, 8).iter().map(|s| s.1 as f32).collect::<Vec<_>>(),
        ),
    ];
    let o2 = compile_at(&m.build(), OptLevel::O2);
    let kinds = task_kinds(&o2);
    assert!(
        !kinds.contains(&OpKind::LayerNorm) && kinds.contains(&OpKind::Reduce),
        "{kinds:?}"
    );
    assert_close(&run(&o2, &[tensor(&[2, 5, 8], &x)]), &want);
}

#[test]
fn layer_norm_with_its_mean_output_read_stays_correct() {
    // Y, Mean and InvStdDev all requested; Mean also feeds a Neg. Not the kernel's op (it
    // returns Y only): decomposed, and every output is right at every level.
    let mut rng = Rng(31);
    let x = rng.rows(10, 8);
    let gamma = rng.vals(8, 0.5, 1.5);
    let beta = rng.vals(8, -0.5, 0.5);
    let mut m = ModelBuilder::new(17);
    m.input("x", &[2, 5, 8])
        .constant("gamma", &[8], &gamma)
        .constant("beta", &[8], &beta)
        .node(
            "LayerNormalization",
            &["x", "gamma", "beta"],
            &["y", "mean", "inv"],
            &[("axis", Attr::I(-1)), ("epsilon", Attr::F(EPS))],
        )
        .node("Neg", &["mean"], &["neg_mean"], &[])
        .output("y", &[2, 5, 8])
        .output("neg_mean", &[2, 5, 1])
        .output("inv", &[2, 5, 1]);
    let st = stats(&x, 8);
    let want = [
        tensor(&[2, 5, 8], &layer_norm_ref(&x, 8, &gamma, Some(&beta))),
        tensor(
            &[2, 5, 1],
            &st.iter().map(|s| -s.0 as f32).collect::<Vec<_>>(),
        ),
        tensor(
            &[2, 5, 1],
            &st.iter().map(|s| s.1 as f32).collect::<Vec<_>>(),
        ),
    ];
    let bytes = m.build();
    for level in LEVELS {
        let c = compile_at(&bytes, level);
        assert!(task_kinds(&c).contains(&OpKind::Reduce), "{level:?}");
        assert_close(&run(&c, &[tensor(&[2, 5, 8], &x)]), &want);
    }
}

/// `Cast(LayerNormalization(Cast(x, to), Cast(gamma, to), Cast(beta, to)), float)`.
fn layer_norm_in(to: DType, gamma: &[f32], beta: &[f32]) -> ModelBuilder {
    let mut m = ModelBuilder::new(17);
    let to = Attr::I(to as i64);
    let back = Attr::I(DType::F32 as i64);
    m.input("x", &[2, 5, 8])
        .constant("gamma", &[8], gamma)
        .constant("beta", &[8], beta)
        .node("Cast", &["x"], &["xc"], &[("to", to)])
        .node("CastLike", &["gamma", "xc"], &["gc"], &[])
        .node("CastLike", &["beta", "xc"], &["bc"], &[])
        .node(
            "LayerNormalization",
            &["xc", "gc", "bc"],
            &["yc"],
            &[("axis", Attr::I(-1)), ("epsilon", Attr::F(EPS))],
        )
        .node("Cast", &["yc"], &["y"], &[("to", back)])
        .output("y", &[2, 5, 8]);
    m
}

#[test]
fn f64_and_f16_layer_norms_stay_correct() {
    // Values on a 1/64 grid within ±8 are exact in f16, so the reference needs no f16
    // rounding of its inputs; the f16 result is compared at f16 precision (a few ulp).
    let mut rng = Rng(41);
    let grid = |v: Vec<f32>| -> Vec<f32> { v.iter().map(|x| (x * 64.0).round() / 64.0).collect() };
    let x = grid(rng.rows(10, 8));
    let gamma = grid(rng.vals(8, 0.5, 1.5));
    let beta = grid(rng.vals(8, -0.5, 0.5));
    let want = [tensor(
        &[2, 5, 8],
        &layer_norm_ref(&x, 8, &gamma, Some(&beta)),
    )];
    let input = [tensor(&[2, 5, 8], &x)];
    for (to, tol) in [
        (
            DType::F64,
            Tolerance {
                rtol: 1e-4,
                atol: 1e-5,
            },
        ),
        (
            DType::F16,
            Tolerance {
                rtol: 4e-3,
                atol: 4e-3,
            },
        ),
    ] {
        let bytes = layer_norm_in(to, &gamma, &beta).build();
        for level in LEVELS {
            let c = compile_at(&bytes, level);
            let got = run(&c, &input);
            compare(&got[0], &want[0], tol)
                .unwrap_or_else(|e| panic!("{} at {level:?}: {e}", to.name()));
            if to == DType::F16 && level >= OptLevel::O2 {
                // The statistics run in f32 (stash_type 1): that core fuses to LayerNorm.
                let kinds = task_kinds(&c);
                assert!(
                    kinds.contains(&OpKind::LayerNorm) && !kinds.contains(&OpKind::Reduce),
                    "{kinds:?}"
                );
            }
        }
    }
}

/// `erf` by its Maclaurin series, for |x| ≤ 3 (error far below 1e-12 there).
fn erf(x: f64) -> f64 {
    assert!(x.abs() <= 3.0);
    let (mut sum, mut term) = (0.0, x);
    for n in 0..100 {
        sum += term / (2 * n + 1) as f64;
        term *= -x * x / (n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn native_gelu_is_one_task_in_both_modes() {
    let x = Rng(51).vals(2 * 16, -3.0, 3.0);
    for approx in [None, Some("none"), Some("tanh")] {
        let mut m = ModelBuilder::new(20);
        let attrs: Vec<(&str, Attr)> = approx
            .map(|a| ("approximate", Attr::S(a)))
            .into_iter()
            .collect();
        m.input("x", &[2, 16])
            .node("Gelu", &["x"], &["y"], &attrs)
            .output("y", &[2, 16]);
        let want: Vec<f32> = x
            .iter()
            .map(|&v| {
                let v = f64::from(v);
                let inner = if approx == Some("tanh") {
                    ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v.powi(3))).tanh()
                } else {
                    erf(v / std::f64::consts::SQRT_2)
                };
                (0.5 * v * (1.0 + inner)) as f32
            })
            .collect();
        let bytes = m.build();
        for level in LEVELS {
            let c = compile_at(&bytes, level);
            assert_eq!(task_kinds(&c), [OpKind::Unary], "{approx:?} at {level:?}");
            assert_close(
                &run(&c, &[tensor(&[2, 16], &x)]),
                &[tensor(&[2, 16], &want)],
            );
        }
    }
}

#[test]
fn opset17_transformer_runs_its_layer_norms_on_the_kernel() {
    let case = ge_tests::corpus("transformer17");
    for level in LEVELS {
        let opts = CompileOptions {
            opt_level: level,
            ..CompileOptions::default()
        };
        let c = compile_file(&case.join("model.onnx"), &opts).expect("compiles");
        let kinds = task_kinds(&c);
        let layer_norms = kinds.iter().filter(|&&k| k == OpKind::LayerNorm).count();
        assert!(
            layer_norms == 2 && !kinds.contains(&OpKind::Reduce),
            "{level:?}: {kinds:?}"
        );
        let outcome = check_case_isolated(&case, &opts, Tolerance::default());
        assert!(outcome.passed(), "{level:?}: {outcome:?}");
    }
}
