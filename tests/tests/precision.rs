//! Precision modes (`--precision`, issue 13): the default stays fp32-exact; the reduced
//! modes lower the nodes their lists say, plan one cast per value and dtype, store fp16
//! weights (clamped, counted), keep graph I/O in the model's dtypes; list files and
//! conflicting options give one clear error each. Outputs are compared with the fp32 run
//! (small graphs) and with onnxruntime's fp32 references (the light architectures).

use std::collections::HashSet;
use std::path::PathBuf;

use ge_build::accuracy::{argmax, cosine};
use ge_build::ir::Op;
use ge_build::tensor::TensorData;
use ge_build::{CompileOptions, Compiled, Precision, compile_bytes};
use ge_runtime::format::DType;
use ge_runtime::{AlignedBlob, Model};
use ge_tests::onnx_builder::{Attr, ModelBuilder};
use ge_tests::{random_inputs, run};

/// Conv(+bias) → Relu → MatMul → Softmax: a cube op with an epilogue, a second cube op and a
/// black-listed op.
fn net() -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[1, 3, 8, 8])
        .weight("w", &[4, 3, 3, 3], -0.5, 0.5)
        .weight("b", &[4], -0.1, 0.1)
        .ints("shape", &[1, 256])
        .weight("fc", &[256, 10], -0.2, 0.2)
        .node(
            "Conv",
            &["x", "w", "b"],
            &["c"],
            &[("pads", Attr::Is(vec![1, 1, 1, 1]))],
        )
        .node("Relu", &["c"], &["r"], &[])
        .node("Reshape", &["r", "shape"], &["f"], &[])
        .node("MatMul", &["f", "fc"], &["l"], &[])
        .node("Softmax", &["l"], &["y"], &[("axis", Attr::I(1))])
        .output("y", &[1, 10]);
    m
}

fn with(mode: Precision) -> CompileOptions {
    CompileOptions {
        precision: mode,
        ..CompileOptions::default()
    }
}

fn compile(m: &ModelBuilder, o: &CompileOptions) -> Compiled {
    compile_bytes(&m.build(), None, o).expect("compiles")
}

fn floats(t: &TensorData) -> Vec<f64> {
    t.to_f32_vec().into_iter().map(f64::from).collect()
}

/// A scratch file with `text`.
fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ge-precision-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

/// Every Cast node's (input, output dtype): no value is cast twice to one dtype.
fn assert_one_cast_per_value_and_dtype(c: &Compiled) {
    let g = &c.graph;
    let mut seen = HashSet::new();
    for n in g.g.node_indices() {
        if matches!(g.g[n].op, Op::Cast) {
            let (Some(Some(i)), Some(&o)) = (g.g[n].inputs.first(), g.g[n].outputs.first()) else {
                continue;
            };
            assert!(
                seen.insert((*i, g.value(o).dtype)),
                "value {} is cast to {} twice",
                g.value(*i).name,
                g.value(o).dtype.name()
            );
        }
    }
}

#[test]
fn force_fp32_is_the_default_and_exact() {
    let m = net();
    let default = compile(&m, &CompileOptions::default());
    for spelling in ["force_fp32", "fp32"] {
        let p: Precision = spelling.parse().expect("a mode");
        assert_eq!(p, Precision::ForceFp32);
        assert_eq!(compile(&m, &with(p)).blob, default.blob, "{spelling}");
    }
    assert_eq!(default.report.precision.casts, 0);
    assert_eq!(default.report.precision.lowered_nodes, 0);
    // must_keep_origin_dtype on an fp32 model is fp32 too: the same plan and weights; only
    // the mode the blob records (`Meta::precision`) differs.
    let keep = compile(&m, &with(Precision::MustKeepOriginDtype));
    let (kb, db) = (
        AlignedBlob::from_bytes(&keep.blob),
        AlignedBlob::from_bytes(&default.blob),
    );
    let (k, d) = (
        Model::from_bytes(kb.as_bytes()).expect("loads"),
        Model::from_bytes(db.as_bytes()).expect("loads"),
    );
    assert_eq!((k.meta().precision, d.meta().precision), (4, 0));
    let bytes = |m: &Model<'_>| {
        [
            bytemuck::cast_slice::<_, u8>(m.tasks()).to_vec(),
            bytemuck::cast_slice::<_, u8>(m.tensors()).to_vec(),
            m.weights().to_vec(),
        ]
    };
    assert_eq!(bytes(&k), bytes(&d));
}

#[test]
fn every_mode_parses_and_runs_close_to_fp32() {
    let m = net();
    let fp32 = compile(&m, &CompileOptions::default());
    let inputs = random_inputs(&fp32, 11);
    let want = floats(&run(&fp32, &inputs)[0]);
    for (name, mode) in Precision::ALL {
        assert_eq!(name.parse::<Precision>().expect("parses"), mode);
        assert_eq!(mode.name(), name);
        let c = compile(&m, &with(mode));
        assert_one_cast_per_value_and_dtype(&c);
        let got = &run(&c, &inputs)[0];
        assert_eq!(
            got.dtype,
            DType::F32,
            "{name}: the output keeps the model's dtype"
        );
        let got = floats(got);
        let cos = cosine(&got, &want);
        // fp16 keeps 11 significant bits, bf16 8: the stated tolerances.
        let min = if mode.low_dtype() == Some(DType::Bf16) {
            0.999
        } else {
            0.9999
        };
        assert!(cos >= min, "{name}: cosine {cos} < {min}");
        assert_eq!(argmax(&got), argmax(&want), "{name}: top-1 changed");
        if mode.low_dtype().is_some() {
            assert!(
                c.report.precision.lowered_nodes > 0,
                "{name} lowered nothing"
            );
            assert!(got != want, "{name}: no rounding visible");
        }
    }
}

#[test]
fn mixed_precision_follows_the_lists_with_the_fewest_casts() {
    let c = compile(&net(), &with(Precision::AllowMixPrecision));
    let g = &c.graph;
    let mut softmax_in = None;
    for n in g.g.node_indices() {
        let node = &g.g[n];
        if let Op::Softmax(_) = node.op {
            softmax_in = node.inputs[0].map(|v| g.value(v).dtype);
        }
        if let Op::Conv(_) | Op::MatMul | Op::Gemm(_) = node.op {
            // Conv and MatMul read their weights stored in fp16.
            let w = g.value(node.inputs[1].expect("weight"));
            let d = w.data.as_deref().expect("a constant");
            assert!(
                d.to_f32_vec()
                    .iter()
                    .all(|&x| f32::from(half::f16::from_f32(x)) == x),
                "{}: weight not rounded to fp16",
                node.name
            );
        }
    }
    assert_eq!(softmax_in, Some(DType::F32), "Softmax is black-listed");
    let p = &c.report.precision;
    // Conv, the Reshape after it and MatMul run in fp16: Conv's kernel widens its operands,
    // so it reads the f32 x as it is; w, b and MatMul's fc are stored in fp16; MatMul's half
    // kernel reads the fp16 Reshape output; Softmax reads MatMul's result widened (the one
    // cast).
    assert_eq!(p.lowered_nodes, 3, "{p:?}");
    assert_eq!((p.converted_weights, p.rounded_weights), (3, 0), "{p:?}");
    assert_eq!(p.casts, 1, "{p:?}");
    assert!(
        c.report
            .passes
            .iter()
            .any(|s| s.name == "precision" && s.changed)
    );
}

#[test]
fn keep_dtype_names_survive_fusion() {
    let m = net();
    let lowered = compile(&m, &with(Precision::AllowFp32ToFp16))
        .report
        .precision;
    assert_eq!(
        lowered.lowered_nodes, 3,
        "Conv, its Reshape, MatMul: {lowered:?}"
    );
    // Relu_1 is fused into the Conv's epilogue: keeping it keeps the fused Conv.
    let o = CompileOptions {
        keep_dtype: Some(file("keep_relu.txt", "# fused member\nOpName:Relu_1\n")),
        ..with(Precision::AllowFp32ToFp16)
    };
    let kept = compile(&m, &o).report.precision;
    assert_eq!(kept.lowered_nodes, 1, "{kept:?}");
    assert_eq!(kept.kept_nodes, 1, "{kept:?}");
    let o = CompileOptions {
        keep_dtype: Some(file("keep_types.txt", "OpType:MatMul\nConv\n")),
        ..with(Precision::ForceFp16)
    };
    let c = compile(&m, &o);
    assert_eq!(c.report.precision.kept_nodes, 2);
    assert!(
        c.graph
            .g
            .node_indices()
            .all(|n| !matches!(c.graph.g[n].op, Op::Conv(_))
                || c.graph.g[n].inputs[1].is_some_and(
                    |w| c.graph.value(w).data.is_some() && c.graph.value(w).dtype == DType::F32
                ))
    );
}

#[test]
fn modify_mixlist_moves_ops_between_lists() {
    let m = net();
    let o = CompileOptions {
        modify_mixlist: Some(file(
            "mix.json",
            r#"{"white-list": {"to-remove": ["MatMul"]}, "black-list": {"to-add": ["Conv"]}}"#,
        )),
        ..with(Precision::AllowMixPrecision)
    };
    assert_eq!(compile(&m, &o).report.precision.lowered_nodes, 0);
    let o = CompileOptions {
        modify_mixlist: Some(file(
            "mix2.json",
            r#"{"black-list": {"to-remove": ["Softmax"]}, "white-list": {"to-add": ["Softmax"]}}"#,
        )),
        ..with(Precision::AllowMixPrecision)
    };
    assert_eq!(
        compile(&m, &o).report.precision.lowered_nodes,
        4,
        "Conv, Reshape, MatMul, Softmax"
    );
}

#[test]
fn fp16_weights_are_clamped_and_counted() {
    let mut m = ModelBuilder::new(13);
    let mut w: Vec<f32> = (0..12).map(|i| i as f32 * 0.1 - 0.5).collect();
    w[3] = 1.0e5;
    w[7] = -7.0e4;
    m.input("x", &[1, 3, 4])
        .constant("w", &[3, 4], &w[..12])
        .constant("v", &[1, 4, 4], &[0.25; 16])
        .node("Mul", &["x", "w"], &["p"], &[])
        .node("MatMul", &["p", "v"], &["y"], &[])
        .output("y", &[1, 3, 4]);
    let c = compile(&m, &with(Precision::ForceFp16));
    assert_eq!(
        c.report.precision.clamped_values, 2,
        "{:?}",
        c.report.precision
    );
    let c = compile(&m, &with(Precision::ForceBf16));
    assert_eq!(
        c.report.precision.clamped_values, 0,
        "bf16 has fp32's range"
    );
}

#[test]
fn io_dtype_fp16_moves_the_interface() {
    let m = net();
    let o = CompileOptions {
        io_dtype: Some(DType::F16),
        ..with(Precision::ForceFp16)
    };
    let c = compile(&m, &o);
    let g = &c.graph;
    assert_eq!(g.value(g.inputs[0]).dtype, DType::F16);
    assert_eq!(g.value(g.outputs[0]).dtype, DType::F16);
}

#[test]
fn bad_names_and_conflicts_give_one_clear_error_each() {
    let m = net().build();
    let err = |o: CompileOptions| {
        compile_bytes(&m, None, &o)
            .map(|_| ())
            .expect_err("must fail")
            .to_string()
    };
    let e = "forse_fp16"
        .parse::<Precision>()
        .expect_err("unknown")
        .to_string();
    assert!(e.contains("did you mean 'force_fp16'"), "{e}");
    let e = "fp16"
        .parse::<Precision>()
        .expect_err("unknown")
        .to_string();
    assert!(e.contains("did you mean 'force_fp16'"), "{e}");
    let e = err(CompileOptions {
        keep_dtype: Some(file("typo.txt", "OpName:Conv_9\n")),
        ..with(Precision::ForceFp16)
    });
    assert!(
        e.contains("unknown node 'Conv_9'") && e.contains("did you mean 'Conv_0'"),
        "{e}"
    );
    let e = err(CompileOptions {
        keep_dtype: Some(file("typo2.txt", "Sofmax\n")),
        ..with(Precision::ForceFp16)
    });
    assert!(e.contains("did you mean 'Softmax'"), "{e}");
    let e = err(CompileOptions {
        modify_mixlist: Some(file(
            "typo.json",
            r#"{"black-list": {"to-add": ["Reluu"]}}"#,
        )),
        ..with(Precision::AllowMixPrecision)
    });
    assert!(
        e.contains("unknown op type 'Reluu'") && e.contains("did you mean 'Relu'"),
        "{e}"
    );
    let e = err(CompileOptions {
        modify_mixlist: Some(file("ok.json", r#"{"black-list": {"to-add": ["Relu"]}}"#)),
        ..with(Precision::ForceFp16)
    });
    assert!(e.contains("only applies to allow_mix_precision"), "{e}");
    let e = err(CompileOptions {
        io_dtype: Some(DType::F16),
        ..CompileOptions::default()
    });
    assert!(
        e.contains("--io-dtype fp16 conflicts with --precision force_fp32"),
        "{e}"
    );
    let e = err(CompileOptions {
        io_dtype: Some(DType::F16),
        ..with(Precision::ForceBf16)
    });
    assert!(e.contains("conflicts"), "{e}");
}

/// MatMul → Add(3000) → LayerNorm → MatMul → Softmax: the LayerNorm's input has a mean of
/// 3000 and a spread of about 1, which fp16 (spacing 2 at 3000) cannot hold, so plain
/// `force_fp16` loses the signal; fp32 up to the LayerNorm restores it.
fn big_mean() -> ModelBuilder {
    let mut m = ModelBuilder::new(17);
    m.input("x", &[4, 64])
        .weight("w1", &[64, 64], -0.5, 0.5)
        .constant("off", &[64], &[3000.0; 64])
        .constant("gamma", &[64], &[1.0; 64])
        .constant("beta", &[64], &[0.0; 64])
        .weight("w2", &[64, 10], -0.5, 0.5)
        .node("MatMul", &["x", "w1"], &["m1"], &[])
        .node("Add", &["m1", "off"], &["shifted"], &[])
        .node(
            "LayerNormalization",
            &["shifted", "gamma", "beta"],
            &["ln"],
            &[("axis", Attr::I(-1))],
        )
        .node("MatMul", &["ln", "w2"], &["m2"], &[])
        .node("Softmax", &["m2"], &["y"], &[("axis", Attr::I(-1))])
        .output("y", &[4, 10]);
    m
}

#[test]
fn auto_mixed_search_finds_a_minimal_keep_set_that_reproduces() {
    use ge_build::accuracy::auto_mixed::{keep_file_text, search};
    use ge_build::accuracy::probe::{normalized_error, op_deviations};
    const RTOL: f64 = 1e-2;
    let m = big_mean();
    let bytes = m.build();
    let fp32 = compile(&m, &CompileOptions::default());
    let ins = random_inputs(&fp32, 7);
    let want = run(&fp32, &ins);
    let error = |keep: Option<PathBuf>| {
        let o = CompileOptions {
            keep_dtype: keep,
            ..with(Precision::ForceFp16)
        };
        normalized_error(&run(&compile(&m, &o), &ins)[0], &want[0])
    };
    let plain = error(None);
    assert!(plain > RTOL, "force_fp16 should break --rtol here: {plain}");

    // The deviation ranking names the LayerNorm as the op that adds the most error.
    let devs = op_deviations(&bytes, None, &with(Precision::ForceFp16), &ins).expect("probe");
    assert_eq!(devs[0].op_type, "LayerNormalization", "{devs:?}");

    let found = search(
        &bytes,
        None,
        &with(Precision::ForceFp16),
        &fp32.blob,
        &ins,
        RTOL,
    )
    .expect("search");
    eprintln!(
        "auto-mixed: keep {:?}, error {:.3e} → {:.3e}, {} rounds",
        found.keep, found.error_without, found.error_with, found.rounds
    );
    assert!(!found.keep.is_empty() && found.keep.len() < 5);
    assert_eq!(found.error_without, plain);
    // The written keep file reproduces the passing compile…
    assert_eq!(found.file, keep_file_text("", &found.keep, RTOL));
    let keep = file("auto.keep", &found.file);
    let with_keep = error(Some(keep));
    assert!(with_keep <= RTOL, "{with_keep}");
    assert_eq!(with_keep, found.error_with);
    // …and no single node can leave it.
    for i in 0..found.keep.len() {
        let mut less = found.keep.clone();
        less.remove(i);
        let p = file(&format!("less{i}.keep"), &keep_file_text("", &less, RTOL));
        assert!(error(Some(p)) > RTOL, "{less:?} passes too");
    }
    // The search needs a reduced mode to search in.
    let e = search(
        &bytes,
        None,
        &with(Precision::ForceFp32),
        &fp32.blob,
        &ins,
        RTOL,
    )
    .unwrap_err();
    assert!(e.to_string().contains("needs a reduced --precision"), "{e}");
}

#[test]
fn a_mode_the_device_cannot_honour_is_refused() {
    let m = net().build();
    let tiny = |mode| CompileOptions {
        device: ge_sim::Profile::TINY,
        ..with(mode)
    };
    for mode in [
        Precision::AllowFp32ToBf16,
        Precision::ForceBf16,
        Precision::AllowMixPrecisionBf16,
    ] {
        let e = compile_bytes(&m, None, &tiny(mode))
            .map(|_| ())
            .expect_err("tiny has no bf16")
            .to_string();
        assert!(
            e.contains(&format!("--precision {} computes in bf16", mode.name()))
                && e.contains("device profile 'tiny' cannot")
                && e.contains("fp16 variant"),
            "{e}"
        );
    }
    // The fp16 modes run there, and bf16 runs on the profiles that have it.
    compile_bytes(&m, None, &tiny(Precision::ForceFp16)).expect("fp16 on tiny");
    compile_bytes(&m, None, &with(Precision::ForceBf16)).expect("bf16 on edge");
}
