//! The reduced-precision modes on a trained model, against onnxruntime's fp32 outputs on a
//! real photograph (`test_data_set_1`, written by `tools/gen_real_models.py`): U²-Net-p, whose
//! 7 saliency maps under `allow_fp32_to_fp16` and `allow_mix_precision` stay within cosine
//! ≥ 0.999 of fp32 (onnxruntime running the model converted to fp16 by onnxconverter-common
//! reaches 0.999897 on its worst output for the same photo). On the corpus's seeded noise
//! (`test_data_set_0`) the maps sit near 0 (mean 0.0024): there every output's error is
//! relative, and onnxruntime's own fp16 run reaches only 0.990401, as ge does
//! (`tools/precision_table.py` shows both).

use ge_build::accuracy::compare;
use ge_build::check::read_numbered;
use ge_build::{CompileOptions, Precision, compile_file};

#[test]
fn u2netp_fp16_modes_keep_a_photos_saliency_maps() {
    let case = ge_tests::corpus("real").join("u2netp");
    let data = case.join("test_data_set_1");
    let inputs = read_numbered(&data, "input").expect("photo inputs (run tools/gen_corpus.py)");
    let want = read_numbered(&data, "output").expect("photo outputs");
    assert_eq!(want.len(), 7, "u2netp has 7 outputs");
    let mut failures = Vec::new();
    for mode in [Precision::AllowFp32ToFp16, Precision::AllowMixPrecision] {
        let o = CompileOptions {
            precision: mode,
            ..CompileOptions::default()
        };
        let c = compile_file(&case.join("model.onnx"), &o).expect("compiles");
        let got = ge_tests::run(&c, &inputs);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let a = compare("output", g, w);
            println!(
                "u2netp {:20} output {k}: cosine {:.6} max|err| {:.2e}",
                mode.name(),
                a.cosine,
                a.max_abs
            );
            if a.cosine.is_nan() || a.cosine < 0.999 {
                failures.push(format!("{} output {k}: cosine {}", mode.name(), a.cosine));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
