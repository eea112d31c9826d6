//! `--int8-rounding tflite` on graphs written here (the MLPerf Tiny models are checked
//! against TFLite Micro's own outputs in `mlperf_tiny.rs`): a quantized global average and
//! ReduceMean become TFLite's Mean (`QMean` tasks) and give, at O0–O3, exactly what TFLite
//! Micro's `QuantizedMeanOrSum` computes (transcribed below from the TFLM source; its
//! arithmetic is checked against the compiled TFLM in `ge-sim`'s tflite tests); a mean over
//! an outer axis keeps the float ops and matches them within the float sum's last bit.

use ge_build::tensor::TensorData;
use ge_build::{CompileOptions, Int8Rounding, OptLevel, compile_bytes};
use ge_runtime::format::{DType, OpKind};
use ge_runtime::{AlignedBlob, Model};
use ge_tests::onnx_builder::{Attr, ModelBuilder};

const SX: f32 = 0.0731;
const ZX: i8 = -3;
const SY: f32 = 0.0511;
const ZY: i8 = 7;

fn scalar_i8(v: i8) -> TensorData {
    TensorData {
        dtype: DType::I8,
        dims: vec![],
        bytes: vec![v as u8],
    }
}

/// `x (f32) → Q → DQ → mean → Q → DQ → y`, the mean written by `mean`.
fn model(shape: &[usize], out: &[usize], opset: i64, mean: impl Fn(&mut ModelBuilder)) -> Vec<u8> {
    let mut b = ModelBuilder::new(opset);
    b.input("x", shape).output("y", out);
    b.constant("sx", &[], &[SX]).constant("sy", &[], &[SY]);
    b.tensor("zx", scalar_i8(ZX)).tensor("zy", scalar_i8(ZY));
    b.node("QuantizeLinear", &["x", "sx", "zx"], &["xq"], &[]);
    b.node("DequantizeLinear", &["xq", "sx", "zx"], &["xd"], &[]);
    mean(&mut b);
    b.node("QuantizeLinear", &["m", "sy", "zy"], &["yq"], &[]);
    b.node("DequantizeLinear", &["yq", "sy", "zy"], &["y"], &[]);
    b.build()
}

fn compile(bytes: &[u8], level: OptLevel) -> ge_build::Compiled {
    let opts = CompileOptions {
        opt_level: level,
        int8_rounding: Int8Rounding::Tflite,
        ..CompileOptions::default()
    };
    compile_bytes(bytes, None, &opts).expect("compiles")
}

fn kinds(c: &ge_build::Compiled) -> Vec<OpKind> {
    let blob = AlignedBlob::from_bytes(&c.blob);
    let model = Model::from_bytes(blob.as_bytes()).unwrap();
    model
        .tasks()
        .iter()
        .filter_map(|t| OpKind::from_u16(t.op))
        .collect()
}

/// ONNX QuantizeLinear to int8: `x / s` rounded half to even, plus the zero point.
fn quantize(x: f32, s: f32, z: i8) -> i32 {
    ((x / s).round_ties_even() as i32 + i32::from(z)).clamp(-128, 127)
}

/// TFLite Micro's Mean of one row (`reduce_common.cc` / `reduce.h`, default build),
/// transcribed: `QuantizeMultiplier(s_in / s_out)`, `1/n` folded in by a shift of
/// `⌊log2 n⌋` and a truncating division, then `MultiplyByQuantizedMultiplier`.
fn tflm_mean(row: &[i32]) -> i32 {
    let d = f64::from(SX) / f64::from(SY);
    let (fr, mut e) = frexp(d);
    let mut q = (fr * 2_147_483_648.0).round() as i64;
    if q == 1 << 31 {
        q /= 2;
        e += 1;
    }
    let n = row.len() as i64;
    let sh = (63 - (n as u64).leading_zeros() as i32).min(32).min(31 + e);
    let m = ((q << sh) / n) as i32;
    let s = e - sh;
    let sum: i32 = row.iter().sum::<i32>() - i32::from(ZX) * n as i32;
    let (left, right) = (s.max(0), (-s).max(0));
    let x = sum * (1 << left);
    let hi = ((i64::from(x) * i64::from(m) + (1 << 30)) >> 31) as i32;
    let mask = (1i64 << right) - 1;
    let rem = i64::from(hi) & mask;
    let thr = (mask >> 1) + i64::from(hi < 0);
    let r = (hi >> right) + i32::from(rem > thr);
    (r + i32::from(ZY)).clamp(-128, 127)
}

fn frexp(d: f64) -> (f64, i32) {
    let e = d.log2().floor() as i32 + 1;
    let f = d / 2f64.powi(e);
    if f >= 1.0 {
        (f / 2.0, e + 1)
    } else if f < 0.5 {
        (f * 2.0, e - 1)
    } else {
        (f, e)
    }
}

fn input(n: usize) -> Vec<f32> {
    // Spread over the int8 range, never all equal.
    (0..n)
        .map(|i| ((i * 37 + 11) % 251) as f32 * 0.0731 - 9.0)
        .collect()
}

fn run(c: &ge_build::Compiled, shape: &[usize], x: &[f32]) -> Vec<f32> {
    let t = TensorData {
        dtype: DType::F32,
        dims: shape.to_vec(),
        bytes: x.iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    let out = ge_tests::run(c, &[t]);
    out[0]
        .to_f64_vec()
        .unwrap()
        .iter()
        .map(|&v| v as f32)
        .collect()
}

/// Each output against TFLM's mean of its row of quantized inputs.
fn check_rows(c: &ge_build::Compiled, shape: &[usize], row: usize, what: &str) {
    let x = input(shape.iter().product());
    let y = run(c, shape, &x);
    let q: Vec<i32> = x.iter().map(|&v| quantize(v, SX, ZX)).collect();
    assert_eq!(y.len(), q.len() / row, "{what}: outputs");
    for (i, (r, &got)) in q.chunks_exact(row).zip(&y).enumerate() {
        let want = (tflm_mean(r) - i32::from(ZY)) as f32 * SY;
        assert_eq!(got, want, "{what}: output {i}");
    }
}

#[test]
fn global_average_pool_is_tflites_mean() {
    let shape = [2, 6, 5, 7];
    let bytes = model(&shape, &[2, 6, 1, 1], 13, |b| {
        b.node("GlobalAveragePool", &["xd"], &["m"], &[]);
    });
    for level in [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3] {
        let c = compile(&bytes, level);
        assert!(
            kinds(&c).contains(&OpKind::QMean),
            "{level:?}: {:?}",
            kinds(&c)
        );
        check_rows(&c, &shape, 35, &format!("GlobalAveragePool {level:?}"));
    }
}

#[test]
fn reduce_mean_over_inner_axes_is_tflites_mean() {
    let shape = [1, 4, 3, 9];
    // Opset 13: axes an attribute; opset 18: an input.
    let at13 = model(&shape, &[1, 4], 13, |b| {
        b.node(
            "ReduceMean",
            &["xd"],
            &["m"],
            &[("axes", Attr::Is(vec![2, -1])), ("keepdims", Attr::I(0))],
        );
    });
    let at18 = model(&shape, &[1, 4, 1, 1], 18, |b| {
        b.ints("axes", &[2, 3]);
        b.node("ReduceMean", &["xd", "axes"], &["m"], &[]);
    });
    for (bytes, what) in [(at13, "opset 13"), (at18, "opset 18")] {
        for level in [OptLevel::O0, OptLevel::O2] {
            let c = compile(&bytes, level);
            assert!(
                kinds(&c).contains(&OpKind::QMean),
                "{what}: {:?}",
                kinds(&c)
            );
            check_rows(&c, &shape, 27, &format!("ReduceMean {what} {level:?}"));
        }
    }
}

#[test]
fn reduce_mean_over_an_outer_axis_stays_float() {
    let shape = [1, 4, 3, 5];
    let bytes = model(&shape, &[1, 1, 3, 5], 13, |b| {
        b.node(
            "ReduceMean",
            &["xd"],
            &["m"],
            &[("axes", Attr::Is(vec![1]))],
        );
    });
    let c = compile(&bytes, OptLevel::O2);
    assert!(!kinds(&c).contains(&OpKind::QMean), "{:?}", kinds(&c));
    let x = input(shape.iter().product());
    let y = run(&c, &shape, &x);
    let q: Vec<f32> = x
        .iter()
        .map(|&v| (quantize(v, SX, ZX) - i32::from(ZX)) as f32 * SX)
        .collect();
    for (j, &got) in y.iter().enumerate() {
        let m = (0..4).map(|c| q[c * 15 + j]).sum::<f32>() / 4.0;
        let want = (quantize(m, SY, ZY) - i32::from(ZY)) as f32 * SY;
        // The float mean's summation order may move a value on a rounding boundary.
        assert!(
            (got - want).abs() <= SY * 1.001,
            "output {j}: {got} vs {want}"
        );
    }
}
