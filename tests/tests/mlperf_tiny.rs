//! MLPerf Tiny (`../shared/corpus/mlperf-tiny`: the four reference models, float and int8,
//! converted by tf2onnx; five real inputs each with onnxruntime's and TFLite Micro's outputs)
//! at O0–O3 against onnxruntime:
//! - int8 models: exactly onnxruntime's outputs in its int8 configuration
//!   (`session.qdqisint8allowed = 1`, `corpus/mlperf-int8`, `tools/gen_mlperf_int8_refs.py`),
//!   and the shared corpus's outputs of its default x86 configuration within the figures
//!   measured: equal on ad, kws and vww; ic_int8 (ResNet-8) up to 15 LSB on two of the five
//!   samples, where that configuration runs the groups reading a residual branch in float
//!   (an average pool's exact .5 mean rounds down there, half to even in int8);
//! - float models: within |ge − ort| ≤ 1e-4 + 1e-4·|ort| (the same float math, another
//!   summation order).
//!
//! And the arena and the blob, at most the figures measured over O0–O3 (a regression guard,
//! [`MODELS`]): set when QDQ dense layers began keeping their weights int8, one-row layers
//! reading them in place (session 33: ad_int8 at O2 1,081,664 → 290,432 B, 3.91× → 1.05× its
//! .tflite, arena still 3,200 B, still onnxruntime's outputs exactly), so a weight that falls
//! back to f32 or a packing workspace that comes back fails here. And at O2, the issue's
//! bounds themselves: every int8 blob ≤ 1.05× its .tflite ([`O2_INT8_BLOB_RATIO`]).

use ge_build::tensor::read_tensor_file;
use ge_build::{CompileOptions, Int8Rounding, OptLevel};
use std::path::PathBuf;

fn root() -> PathBuf {
    ge_tests::workspace_root().join("../shared/corpus/mlperf-tiny")
}

/// (models.json key, largest |ge − onnxruntime's default configuration| in LSB allowed on
/// an int8 model,
/// largest blob / .tflite ratio, largest arena in bytes; over O0–O3). The figures measured
/// in session 35, when tf2onnx's first layer (input → Transpose/Reshape → DequantizeLinear)
/// began lowering to int8, depthwise weights were stored as their taps, names were shared,
/// int8 conv blocks shrank where the arena peaks and a whole-plane QLinearAveragePool began
/// reading its 8-bit input: at O2 every int8 blob is ≤ 1.05× its .tflite and the int8
/// arenas of ad, kws and vww are under TFLM's (ic's is 2% over: 57,216 B against 55,984).
/// Session 37: conv weights in quads (ic's 3-channel stem 128 B more at O0, 1.1352×; vww's
/// 1×1 convs reserve the quad copy a CPU without VNNI reads: 55,744 → 56,448 B, 54% of TFLM's).
/// Session 38: tf2onnx's dense layers are int8 QGemms in onnxruntime's arithmetic too (ad's
/// arena 3,200 → 768 B, TFLM's activation head; its blob 1.134× → 1.001× at O0; vww's
/// 2-output classifier pads to a 16-column panel, 0.830× → 0.831×); f32 conv workspaces
/// elastic (bands of rows, packing slots: ic_f32 280,512 → 213,824 B at O2, 458,752 →
/// 293,952 at O0; kws_f32 195,072 → 96,768; vww_f32 299,328 → 235,136); a whole-plane average
/// pool is onnxruntime's global average (an exact integer sum, then a small program: at O0
/// and O1 five more tasks, kws 0.819× → 0.838×, vww 0.834×; unchanged from O2).
const MODELS: &[(&str, i32, f64, u64)] = &[
    ("ad_f32", 0, 1.004, 3_072),
    ("ad_int8", 0, 1.002, 768),
    ("ic_f32", 0, 1.008, 293_952),
    ("ic_int8", 15, 1.111, 184_576),
    ("kws_f32", 0, 2.334, 96_768),
    ("kws_int8", 0, 0.839, 17_600),
    ("vww_f32", 0, 1.007, 235_136),
    ("vww_int8", 0, 0.835, 56_448),
];

/// The largest blob / .tflite ratio an int8 model may have at O2 (issue 50's flash bound).
const O2_INT8_BLOB_RATIO: f64 = 1.05;

#[test]
fn mlperf_tiny_matches_onnxruntime_at_every_level() {
    let dir = root();
    assert!(
        dir.join("models.json").is_file(),
        "{} is missing (the shared corpus beside the checkout)",
        dir.display()
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    let int8_refs = ge_tests::corpus("mlperf-int8");
    let mut failures = Vec::new();
    for &(key, lsb, ratio, max_arena) in MODELS {
        let m = &manifest[key];
        let int8 = m["int8"].as_bool().unwrap();
        let bytes = std::fs::read(dir.join("onnx").join(m["onnx"].as_str().unwrap())).unwrap();
        let tflite = m["tflite_bytes"].as_f64().unwrap();
        for level in [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3] {
            let c = ge_tests::compile_at(&bytes, level);
            let arena = c.report.memory.arena_bytes;
            if arena > max_arena {
                failures.push(format!(
                    "{key} {level:?}: arena {arena} B (limit {max_arena})"
                ));
            }
            let blob_ratio = c.blob.len() as f64 / tflite;
            if blob_ratio > ratio {
                failures.push(format!(
                    "{key} {level:?}: blob {} B is {blob_ratio:.3}× the .tflite (limit {ratio})",
                    c.blob.len()
                ));
            }
            if int8 && level == OptLevel::O2 && blob_ratio > O2_INT8_BLOB_RATIO {
                failures.push(format!(
                    "{key} O2: blob {blob_ratio:.3}× the .tflite (issue 50: ≤ {O2_INT8_BLOB_RATIO})"
                ));
            }
            let mut worst = 0.0f64;
            let mut int8_config_off = 0;
            for s in 0..5 {
                let data = dir.join("data").join(key);
                let input = read_tensor_file(&data.join(format!("input_s{s:02}.npy"))).unwrap();
                let want = read_tensor_file(&data.join(format!("ort_s{s:02}.npy"))).unwrap();
                let got = ge_tests::run(&c, &[input]);
                assert_eq!(got[0].dtype, want.dtype, "{key}: output dtype");
                let (g, w) = (got[0].to_f64_vec().unwrap(), want.to_f64_vec().unwrap());
                assert_eq!(g.len(), w.len(), "{key}: output size");
                for (a, b) in g.iter().zip(&w) {
                    let d = (a - b).abs();
                    if int8 {
                        worst = worst.max(d);
                    } else if d > 1e-4 + 1e-4 * b.abs() {
                        failures.push(format!("{key} {level:?} s{s:02}: {a} vs onnxruntime {b}"));
                        break;
                    }
                }
                if int8 {
                    let i8_ref = int8_refs.join(key).join(format!("ort_i8_s{s:02}.npy"));
                    let want = read_tensor_file(&i8_ref).unwrap();
                    int8_config_off += got[0]
                        .to_f64_vec()
                        .unwrap()
                        .iter()
                        .zip(want.to_f64_vec().unwrap())
                        .filter(|(a, b)| **a != *b)
                        .count();
                }
            }
            if int8 && worst > f64::from(lsb) {
                failures.push(format!(
                    "{key} {level:?}: {worst} LSB from onnxruntime's default configuration (allowed {lsb})"
                ));
            }
            if int8_config_off > 0 {
                failures.push(format!(
                    "{key} {level:?}: {int8_config_off} values differ from onnxruntime's int8 configuration"
                ));
            }
            println!(
                "{key} {level:?}: blob {} B ({blob_ratio:.3}× .tflite), arena {arena} B (TFLM {}){}",
                c.blob.len(),
                m["tflm_arena_bytes"]["total"],
                if int8 {
                    format!(", {worst} LSB from onnxruntime")
                } else {
                    String::new()
                }
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `--int8-rounding tflite` (issue 50): every int8 model's outputs equal TFLite Micro's on
/// the corpus inputs, bit for bit, at O0–O3, every task is int8 (no float task in the
/// report) and its arena stays within TFLM's (total).
#[test]
fn mlperf_tiny_int8_equals_tflite_micro_in_tflite_mode() {
    let dir = root();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    let mut failures = Vec::new();
    for key in ["ad_int8", "ic_int8", "kws_int8", "vww_int8"] {
        let m = &manifest[key];
        let bytes = std::fs::read(dir.join("onnx").join(m["onnx"].as_str().unwrap())).unwrap();
        let tflm_arena = m["tflm_arena_bytes"]["total"].as_u64().unwrap();
        for level in [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3] {
            let opts = CompileOptions {
                opt_level: level,
                int8_rounding: Int8Rounding::Tflite,
                ..CompileOptions::default()
            };
            let c = ge_build::compile_bytes(&bytes, None, &opts).expect("compiles");
            let arena = c.report.memory.arena_bytes;
            // Every task int8 (the report's per-task dtypes): no float tail left.
            if !c.report.dtypes.float_tasks.is_empty() {
                failures.push(format!(
                    "{key} {level:?}: float tasks {:?}",
                    c.report.dtypes.float_tasks
                ));
            }
            if arena > tflm_arena {
                failures.push(format!(
                    "{key} {level:?}: arena {arena} B over TFLM's {tflm_arena}"
                ));
            }
            let mut differing = 0;
            for s in 0..5 {
                let data = dir.join("data").join(key);
                let input = read_tensor_file(&data.join(format!("input_s{s:02}.npy"))).unwrap();
                let want = read_tensor_file(&data.join(format!("tflm_s{s:02}.npy"))).unwrap();
                let got = ge_tests::run(&c, &[input]);
                let (g, w) = (got[0].to_f64_vec().unwrap(), want.to_f64_vec().unwrap());
                assert_eq!(g.len(), w.len(), "{key}: output size");
                differing += g.iter().zip(&w).filter(|(a, b)| a != b).count();
            }
            if differing > 0 {
                failures.push(format!(
                    "{key} {level:?}: {differing} output values differ from TFLite Micro's"
                ));
            }
            println!(
                "{key} {level:?} tflite: blob {} B ({:.3}× .tflite), arena {arena} B (TFLM {tflm_arena}), {differing} values off TFLM",
                c.blob.len(),
                c.blob.len() as f64 / m["tflite_bytes"].as_f64().unwrap()
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// MLPerf Tiny v1.0 (closed) median latencies on NUCLEO-L4R5ZI (Cortex-M4F, 120 MHz), ms:
/// (key, microTVM + CMSIS-NN, X-CUBE-AI 7.3, Plumerai), from `mlcommons/tiny_results_v1.0`
/// (`docs/research/cortex-m-cycles.md` §1).
const L4R5_MS: &[(&str, f64, f64, f64)] = &[
    ("kws_int8", 99.8, 75.1, 71.7),
    ("vww_int8", 301.2, 230.5, 208.6),
    ("ic_int8", 389.6, 226.9, 173.2),
    ("ad_int8", 8.61, 7.58, 5.57),
];

/// The `cortex-m` profile (issue 50 item 6) predicts the MLPerf Tiny latencies of the int8
/// models (TFLite's arithmetic, O2) from its calibration, which comes from CMSIS-NN's
/// instruction timings, not from these results. Measured error against the published figures
/// (session 38): kws −19%, vww −22%, ic +3%, ad −37% against X-CUBE-AI; −39%, −40%, −40%,
/// −45% against microTVM + CMSIS-NN; −15%, −14%, +35%, −14% against Plumerai. The profile
/// models kernels of the best engines' class: kws and vww, the two, must stay within
/// 30% of X-CUBE-AI's.
#[test]
fn cortex_m_profile_predicts_mlperf_tiny_latency() {
    let dir = root();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    let mut failures = Vec::new();
    for &(key, cmsis, xcube, plumerai) in L4R5_MS {
        let m = &manifest[key];
        let bytes = std::fs::read(dir.join("onnx").join(m["onnx"].as_str().unwrap())).unwrap();
        let opts = CompileOptions {
            int8_rounding: Int8Rounding::Tflite,
            device: ge_sim::Profile::CORTEX_M,
            ..CompileOptions::default()
        };
        let c = ge_build::compile_bytes(&bytes, None, &opts).expect("compiles");
        let input = read_tensor_file(&dir.join("data").join(key).join("input_s00.npy")).unwrap();
        let mut r =
            ge_build::run::Runner::new(ge_runtime::AlignedBlob::from_bytes(&c.blob)).unwrap();
        let device = ge_sim::SimDevice::new(ge_sim::Profile::CORTEX_M);
        let (_, report) = r.run(&[input], device).expect("runs");
        let ms = report.time_ns as f64 / 1e6;
        let err = |measured: f64| 100.0 * (ms / measured - 1.0);
        println!(
            "{key}: cortex-m {ms:.1} ms; X-CUBE-AI {xcube} ({:+.0}%), microTVM + CMSIS-NN {cmsis} ({:+.0}%), Plumerai {plumerai} ({:+.0}%)",
            err(xcube),
            err(cmsis),
            err(plumerai)
        );
        if matches!(key, "kws_int8" | "vww_int8") && err(xcube).abs() > 30.0 {
            failures.push(format!(
                "{key}: predicted {ms:.1} ms, {:+.0}% from X-CUBE-AI's {xcube} ms",
                err(xcube)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
