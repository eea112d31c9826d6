//! The `ge` command's contract: one-line errors with non-zero exit, output file naming,
//! `check` summary line, `bench --json` keys, `--report` keys.

use std::path::{Path, PathBuf};
use std::process::Command;

fn ge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ge"))
}

fn corpus(part: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("corpus");
    let p = std::env::var_os("GE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or(root)
        .join(part);
    assert!(
        p.is_dir(),
        "{} missing: run python3 tools/gen_corpus.py",
        p.display()
    );
    p
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ge-cli-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn assert_one_line_error(out: &std::process::Output, what: &str) {
    assert!(!out.status.success(), "{what}: exit status was success");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{what}: stderr is not one line: {err}"
    );
    assert!(err.starts_with("ge: error: "), "{what}: {err}");
}

#[test]
fn bad_models_give_one_line_errors() {
    let d = tmp("bad");
    let model = std::fs::read(corpus("light").join("squeezenet/model.onnx")).unwrap();
    let truncated = d.join("truncated.onnx");
    std::fs::write(&truncated, &model[..model.len() / 2]).unwrap();
    let garbage = d.join("garbage.onnx");
    std::fs::write(&garbage, b"\x08\x07this is not a model at all\xff\xff\xff").unwrap();
    for f in [&truncated, &garbage, &d.join("missing.onnx")] {
        let out = ge()
            .args(["compile"])
            .arg(f)
            .args(["-o"])
            .arg(d.join("x.om"))
            .output()
            .unwrap();
        assert_one_line_error(&out, &f.display().to_string());
    }
    let bad_om = d.join("bad.om");
    std::fs::write(&bad_om, vec![7u8; 1000]).unwrap();
    let out = ge().arg("run").arg(&bad_om).output().unwrap();
    assert_one_line_error(&out, "garbage .om");
    let out = ge().arg("inspect").arg(&bad_om).output().unwrap();
    assert_one_line_error(&out, "inspect garbage .om");
}

#[test]
fn compile_run_inspect_round_trip() {
    let d = tmp("roundtrip");
    let case = corpus("pytorch-operator").join("test_operator_add_broadcast");
    let case = if case.is_dir() {
        case
    } else {
        first_case(&corpus("simple"))
    };
    let om = d.join("m.om");
    let report = d.join("r.json");
    let out = ge()
        .arg("compile")
        .arg(case.join("model.onnx"))
        .arg("-o")
        .arg(&om)
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    for k in [
        "nodes_before",
        "nodes_after",
        "passes",
        "memory",
        "compile_millis",
        "sim",
    ] {
        assert!(r.get(k).is_some(), "report lacks {k}");
    }
    for k in ["arena_bytes", "lower_bound_bytes", "naive_bytes"] {
        assert!(r["memory"].get(k).is_some(), "report.memory lacks {k}");
    }
    for k in ["time_us", "gm_bytes", "launches"] {
        assert!(r["sim"].get(k).is_some(), "report.sim lacks {k}");
    }
    let out = ge().arg("inspect").arg(&om).output().unwrap();
    assert!(out.status.success());
    let out = ge()
        .args(["bench"])
        .arg(&om)
        .args(["--iters", "3", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in ["median_ms", "iters", "threads", "sim_time_us"] {
        assert!(b.get(k).is_some(), "bench json lacks {k}");
    }
}

fn first_case(dir: &Path) -> PathBuf {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    v.sort();
    v.remove(0)
}

#[test]
fn check_prints_the_summary_line() {
    let out = ge()
        .args(["check", "--suite"])
        .arg(corpus("simple"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or("");
    let parts: Vec<&str> = last.split(", ").collect();
    assert_eq!(parts.len(), 3, "summary line: {last}");
    assert!(
        parts[0].ends_with(" passed")
            && parts[1].ends_with(" failed")
            && parts[2].ends_with(" skipped"),
        "{last}"
    );
}

/// `ge bench` runs every real-model corpus model with no input files: symbolic dims fixed
/// with `--input-shape`, integer inputs that index embeddings kept in range (minilm's
/// `input_ids` feed a Gather over a 30,522-row table), masks 0/1.
#[test]
fn bench_runs_every_real_model_without_input_files() {
    let dir = corpus("real");
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("manifest.json")).expect("manifest.json"),
    )
    .expect("manifest is JSON");
    let models = manifest["models"].as_array().expect("models list");
    assert_eq!(models.len(), 8, "the 8 models of real-models.tsv");
    for m in models {
        let name = m["name"].as_str().expect("name");
        let mut cmd = ge();
        cmd.arg("bench")
            .arg(dir.join(name).join("model.onnx"))
            .args(["--iters", "1", "--json"]);
        for i in m["inputs"].as_array().expect("inputs") {
            let dims: Vec<String> = i["shape"]
                .as_array()
                .expect("shape")
                .iter()
                .map(|d| d.to_string())
                .collect();
            cmd.arg("--input-shape").arg(format!(
                "{}:{}",
                i["name"].as_str().expect("input name"),
                dims.join(",")
            ));
        }
        let out = cmd.output().expect("runs ge");
        assert!(
            out.status.success(),
            "ge bench {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("bench --json prints one object");
        assert!(
            v["median_ms"].as_f64().is_some_and(|t| t > 0.0),
            "{name}: {v}"
        );
    }
}

/// Every host ISA this CPU has runs the light SqueezeNet and ShuffleNet (convolutions of
/// every path, pooling, concat, elementwise) within `ge check`'s tolerance of onnxruntime;
/// `GE_ISA` naming an unknown or missing ISA is a one-line error, never a silent fallback.
#[test]
fn every_host_isa_passes_check() {
    for model in ["squeezenet", "shufflenet"] {
        let case = corpus("light").join(model);
        for isa in ["portable", "avx2", "avx512"] {
            let out = ge()
                .env("GE_ISA", isa)
                .arg("check")
                .arg(&case)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("this CPU lacks it") {
                println!("skipping GE_ISA={isa} for {model}: {}", err.trim());
                assert_one_line_error(&out, isa);
                continue;
            }
            assert!(
                out.status.success(),
                "GE_ISA={isa} {model}: {err}{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
    let out = ge().env("GE_ISA", "sse9").arg("ops").output().unwrap();
    assert_one_line_error(&out, "GE_ISA=sse9");
}

/// `--max-nodes`, `--max-tensor-bytes`, `--max-weight-bytes`, `--max-arena-bytes`: a model
/// over one is a one-line error naming the flag; a bad value is too; within them it compiles.
#[test]
fn limit_flags_refuse_models_over_them() {
    let d = tmp("limits");
    let model = corpus("light").join("squeezenet/model.onnx");
    let compile = |extra: &[&str]| {
        ge().arg("compile")
            .arg(&model)
            .arg("-o")
            .arg(d.join("x.om"))
            .args(extra)
            .output()
            .unwrap()
    };
    for (flags, want) in [
        (&["--max-nodes", "10"][..], "--max-nodes"),
        (&["--max-tensor-bytes", "4K"][..], "--max-tensor-bytes"),
        (&["--max-weight-bytes", "1M"][..], "--max-weight-bytes"),
        (&["--max-arena-bytes", "64K"][..], "--max-arena-bytes"),
        (&["--max-nodes", "lots"][..], "--max-nodes"),
    ] {
        let out = compile(flags);
        assert_one_line_error(&out, &flags.join(" "));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{flags:?}: {err}");
    }
    let out = compile(&["--max-nodes", "100000", "--max-arena-bytes", "1G"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn quantize_writes_qdq_onnx_om_and_report_and_refuses_bad_options() {
    let d = tmp("quantize");
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/digits/models/digits.onnx");
    let calib = corpus("calib").join("digits_train");
    let run = |out: &Path, extra: &[&str]| {
        ge().arg("quantize")
            .arg(&model)
            .arg("--calib")
            .arg(&calib)
            .arg("-o")
            .arg(out)
            .args(["--input-shape", "x:1,1,8,8", "--max-samples", "200"])
            .args(extra)
            .output()
            .unwrap()
    };
    let report = d.join("q.json");
    let onnx = d.join("q.onnx");
    let out = run(
        &onnx,
        &["--per-channel", "--report", report.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&onnx).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("QuantizeLinear") && text.contains("DequantizeLinear"));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["samples"], 200);
    assert_eq!(r["per_channel"], true);
    assert_eq!(r["layers"].as_array().unwrap().len(), 2);
    assert_eq!(r["layers"][0]["weight_scales"], 16);
    for a in r["activations"].as_array().unwrap() {
        assert!(a["scale"].as_f64().unwrap() > 0.0, "{a}");
    }
    let top1 = r["outputs"][0]["top1_agreement"].as_f64().unwrap();
    assert!(
        top1 >= 0.99,
        "logits top-1 agreement on the calibration set {top1}"
    );
    let om = d.join("q.om");
    assert!(run(&om, &[]).status.success());
    let out = ge().arg("inspect").arg(&om).output().unwrap();
    assert!(out.status.success());
    for (what, out) in [
        ("bad extension", run(&d.join("q.bin"), &[])),
        ("unknown --exclude", run(&onnx, &["--exclude", "nope"])),
        ("bad --method", run(&onnx, &["--method", "mse"])),
        (
            "bad --percentile",
            run(&onnx, &["--method", "percentile", "--percentile", "0"]),
        ),
    ] {
        assert_one_line_error(&out, what);
    }
    let out = ge()
        .arg("quantize")
        .arg(&model)
        .args(["--calib"])
        .arg(&d)
        .arg("-o")
        .arg(&onnx)
        .args(["--input-shape", "x:1,1,8,8"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "calibration directory without x.npy");
    assert!(String::from_utf8_lossy(&out.stderr).contains("x.npy"));
}

/// `--dynamic-image-size` on the OCR recognizer `[N, 3, 48, W]`: its H fixed to 48 by the
/// model is accepted when every gear's height is 48 (issue 57; before, only `-1` for H in
/// `--input-shape` was), and refused in one line naming the gear, the dim and the fixed value
/// when a gear's height is not.
#[test]
fn image_size_gears_over_a_fixed_height() {
    let d = tmp("image_gears");
    let model = corpus("ocr_gears").join("model.onnx");
    let compile = |shape: &str, gears: &str| {
        ge().arg("compile")
            .arg(&model)
            .arg("-o")
            .arg(d.join("m.om"))
            .args(["--input-shape", shape, "--dynamic-image-size", gears])
            .output()
            .unwrap()
    };
    let out = compile("x:1,3,48,-1", "48,320;48,960");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = ge().arg("inspect").arg(d.join("m.om")).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for shape in ["in [[1, 3, 48, 320]]", "in [[1, 3, 48, 960]]"] {
        assert!(text.contains(shape), "inspect lacks gear {shape}:\n{text}");
    }
    let out = compile("x:1,3,48,-1", "32,320;32,960");
    assert_one_line_error(&out, "a gear height against the fixed 48");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("gear 0 sets the height (dim 2) of 'x' to 32")
            && err.contains("fixes it to 48"),
        "{err}"
    );
}
