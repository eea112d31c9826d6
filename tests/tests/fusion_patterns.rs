//! Each graph pass fires on a graph that contains its pattern (fewer nodes, the expected
//! fused op) and leaves alone a near-miss where firing would be wrong; outputs at O2 equal
//! those at O0 on seeded random inputs in every case.

use ge_build::{Compiled, OptLevel};
use ge_tests::onnx_builder::{Attr, ModelBuilder};
use ge_tests::{assert_close, compile_at, random_inputs, run};

fn ops(c: &Compiled) -> Vec<String> {
    let mut v: Vec<String> = c
        .graph
        .topo_order()
        .iter()
        .map(|&n| c.graph.g[n].op_type.clone())
        .collect();
    v.sort();
    v
}

/// Compiles at O0 and O2, checks the outputs agree, returns the O2 op types.
fn optimized(m: &ModelBuilder) -> Vec<String> {
    let bytes = m.build();
    let (o0, o2) = (
        compile_at(&bytes, OptLevel::O0),
        compile_at(&bytes, OptLevel::O2),
    );
    let inputs = random_inputs(&o0, 7);
    assert_close(&run(&o2, &inputs), &run(&o0, &inputs));
    ops(&o2)
}

fn conv_bn(extra_use: bool) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[1, 3, 8, 8])
        .weight("w", &[4, 3, 3, 3], -0.5, 0.5)
        .weight("b", &[4], -0.1, 0.1)
        .weight("gamma", &[4], 0.5, 1.5)
        .weight("beta", &[4], -0.2, 0.2)
        .weight("mean", &[4], -0.2, 0.2)
        .weight("var", &[4], 0.5, 1.5)
        .node(
            "Conv",
            &["x", "w", "b"],
            &["c"],
            &[("pads", Attr::Is(vec![1, 1, 1, 1]))],
        )
        .node(
            "BatchNormalization",
            &["c", "gamma", "beta", "mean", "var"],
            &["y"],
            &[],
        )
        .output("y", &[1, 4, 8, 8]);
    if extra_use {
        m.node("Relu", &["c"], &["z"], &[])
            .output("z", &[1, 4, 8, 8]);
    }
    m
}

#[test]
fn batch_norm_folds_into_conv() {
    assert_eq!(optimized(&conv_bn(false)), ["Conv"]);
}

#[test]
fn batch_norm_stays_when_the_conv_output_has_another_use() {
    let o = optimized(&conv_bn(true));
    assert!(o.contains(&"BatchNormalization".to_string()), "{o:?}");
}

fn conv_relu(output_pre_activation: bool) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[1, 3, 8, 8])
        .weight("w", &[4, 3, 3, 3], -0.5, 0.5)
        .node("Conv", &["x", "w"], &["c"], &[])
        .node("Relu", &["c"], &["y"], &[])
        .output("y", &[1, 4, 6, 6]);
    if output_pre_activation {
        m.output("c", &[1, 4, 6, 6]);
    }
    m
}

#[test]
fn activation_fuses_into_conv_epilogue() {
    assert_eq!(optimized(&conv_relu(false)), ["Conv+Relu"]);
}

#[test]
fn activation_stays_when_the_pre_activation_value_is_an_output() {
    assert_eq!(optimized(&conv_relu(true)), ["Conv", "Relu"]);
}

fn matmul_add(bias_shape: &[usize]) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[5, 6])
        .weight("w", &[6, 4], -0.5, 0.5)
        .weight("b", bias_shape, -0.5, 0.5)
        .node("MatMul", &["x", "w"], &["p"], &[])
        .node("Add", &["p", "b"], &["y"], &[])
        .output("y", &[5, 4]);
    m
}

#[test]
fn matmul_add_becomes_gemm() {
    assert_eq!(optimized(&matmul_add(&[4])), ["Gemm"]);
}

#[test]
fn matmul_add_stays_when_bias_is_per_row() {
    let o = optimized(&matmul_add(&[5, 1]));
    assert!(o.contains(&"MatMul".to_string()), "{o:?}");
}

fn gelu(half: f32) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[2, 16])
        .constant("sqrt2", &[], &[std::f32::consts::SQRT_2])
        .constant("one", &[], &[1.0])
        .constant("half", &[], &[half])
        .node("Div", &["x", "sqrt2"], &["d"], &[])
        .node("Erf", &["d"], &["e"], &[])
        .node("Add", &["e", "one"], &["a"], &[])
        .node("Mul", &["x", "a"], &["m"], &[])
        .node("Mul", &["m", "half"], &["y"], &[])
        .output("y", &[2, 16]);
    m
}

#[test]
fn erf_gelu_becomes_one_gelu() {
    assert_eq!(optimized(&gelu(0.5)), ["Gelu"]);
}

#[test]
fn gelu_is_not_recognized_with_a_wrong_constant() {
    let o = optimized(&gelu(0.6));
    assert!(!o.contains(&"Gelu".to_string()), "{o:?}");
}

fn chain(shared_intermediate: bool) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[2, 3, 4])
        .weight("s", &[4], 0.5, 1.5)
        .weight("b", &[3, 1], -0.5, 0.5)
        .node("Mul", &["x", "s"], &["m"], &[])
        .node("Add", &["m", "b"], &["a"], &[])
        .node("Sigmoid", &["a"], &["y"], &[])
        .output("y", &[2, 3, 4]);
    if shared_intermediate {
        m.output("m", &[2, 3, 4]);
    }
    m
}

#[test]
fn elementwise_chain_autofuses_into_one_task() {
    let o = optimized(&chain(false));
    assert_eq!(o.len(), 1, "{o:?}");
    assert!(o[0].starts_with("Fused["), "{o:?}");
}

#[test]
fn autofusion_keeps_an_intermediate_that_is_a_graph_output() {
    let o = optimized(&chain(true));
    assert_eq!(o.len(), 2, "{o:?}");
    assert!(o.contains(&"Mul".to_string()), "{o:?}");
}

#[test]
fn common_subexpressions_merge() {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[4, 4])
        .node(
            "Transpose",
            &["x"],
            &["t1"],
            &[("perm", Attr::Is(vec![1, 0]))],
        )
        .node(
            "Transpose",
            &["x"],
            &["t2"],
            &[("perm", Attr::Is(vec![1, 0]))],
        )
        .node("MatMul", &["t1", "t2"], &["y"], &[])
        .output("y", &[4, 4]);
    let o = optimized(&m);
    assert_eq!(o.iter().filter(|s| *s == "Transpose").count(), 1, "{o:?}");
}

#[test]
fn transposes_that_cancel_are_removed_and_identities_vanish() {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[2, 3, 4])
        .constant("one", &[], &[1.0])
        .node(
            "Transpose",
            &["x"],
            &["t1"],
            &[("perm", Attr::Is(vec![2, 0, 1]))],
        )
        .node(
            "Transpose",
            &["t1"],
            &["t2"],
            &[("perm", Attr::Is(vec![1, 2, 0]))],
        )
        .node("Mul", &["t2", "one"], &["i"], &[])
        .node("Identity", &["i"], &["j"], &[])
        .node("Relu", &["j"], &["y"], &[])
        .output("y", &[2, 3, 4]);
    assert_eq!(optimized(&m), ["Relu"]);
}

#[test]
fn fusion_switch_file_disables_a_pattern() {
    let dir = std::env::temp_dir().join(format!("ge-switch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("switch.json");
    std::fs::write(&f, r#"{"disable": ["fuse_epilogue"]}"#).unwrap();
    let opts = ge_build::CompileOptions {
        fusion_switch: Some(f.clone()),
        ..Default::default()
    };
    let c = ge_build::compile_bytes(&conv_relu(false).build(), None, &opts).unwrap();
    assert_eq!(ops(&c), ["Conv", "Relu"]);
    std::fs::write(&f, r#"{"disable": ["no_such_pattern"]}"#).unwrap();
    let err = ge_build::compile_bytes(&conv_relu(false).build(), None, &opts)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown pattern 'no_such_pattern'"), "{err}");
}

fn layer_norm(eps_scalar: bool) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[2, 5, 8])
        .constant("two", &[], &[2.0])
        .weight("gamma", &[8], 0.5, 1.5)
        .weight("beta", &[8], -0.5, 0.5);
    if eps_scalar {
        m.constant("eps", &[], &[1e-5]);
    } else {
        // An epsilon per position is not a LayerNorm.
        m.weight("eps", &[2, 5, 1], 0.001, 0.01);
    }
    m.node(
        "ReduceMean",
        &["x"],
        &["m"],
        &[("axes", Attr::Is(vec![-1]))],
    )
    .node("Sub", &["x", "m"], &["d"], &[])
    .node("Pow", &["d", "two"], &["p"], &[])
    .node(
        "ReduceMean",
        &["p"],
        &["v"],
        &[("axes", Attr::Is(vec![-1]))],
    )
    .node("Add", &["v", "eps"], &["e"], &[])
    .node("Sqrt", &["e"], &["s"], &[])
    .node("Div", &["d", "s"], &["n"], &[])
    .node("Mul", &["n", "gamma"], &["g"], &[])
    .node("Add", &["g", "beta"], &["y"], &[])
    .output("y", &[2, 5, 8]);
    m
}

#[test]
fn decomposed_layer_norm_becomes_one_task() {
    assert_eq!(optimized(&layer_norm(true)), ["LayerNorm"]);
}

#[test]
fn layer_norm_is_not_recognized_with_a_per_position_epsilon() {
    let o = optimized(&layer_norm(false));
    assert!(!o.contains(&"LayerNorm".to_string()), "{o:?}");
}

fn attention(mask_shape: &[usize]) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("q", &[2, 6, 4])
        .input("k", &[2, 6, 4])
        .input("v", &[2, 6, 3])
        .constant("scale", &[], &[0.5])
        .weight("mask", mask_shape, -1.0, 0.0)
        .node(
            "Transpose",
            &["k"],
            &["kt"],
            &[("perm", Attr::Is(vec![0, 2, 1]))],
        )
        .node("MatMul", &["q", "kt"], &["s"], &[])
        .node("Mul", &["s", "scale"], &["ss"], &[])
        .node("Add", &["ss", "mask"], &["sm"], &[])
        .node("Softmax", &["sm"], &["p"], &[("axis", Attr::I(-1))])
        .node("MatMul", &["p", "v"], &["y"], &[])
        .output("y", &[2, 6, 3]);
    m
}

#[test]
fn attention_chain_becomes_one_task() {
    let o = optimized(&attention(&[1, 6]));
    assert!(
        o.contains(&"Attention".to_string()) && !o.contains(&"Softmax".to_string()),
        "{o:?}"
    );
}

#[test]
fn attention_is_not_fused_when_the_mask_widens_the_scores() {
    // A [3, 1, 1] mask broadcasts the [2, 6, 6] scores to [3, 2, 6, 6]: not an attention mask.
    let mut m = attention(&[3, 1, 1, 1]);
    m.output("y", &[3, 2, 6, 3]);
    let bytes = m.build();
    let o2 = compile_at(&bytes, OptLevel::O2);
    assert!(
        !ops(&o2).contains(&"Attention".to_string()),
        "{:?}",
        ops(&o2)
    );
}

fn pad_conv(value: f32) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[1, 3, 8, 8])
        .weight("w", &[4, 3, 3, 3], -0.5, 0.5)
        .ints("pads", &[0, 0, 1, 2, 0, 0, 2, 1])
        .constant("v", &[], &[value])
        .node("Pad", &["x", "pads", "v"], &["p"], &[])
        .node("Conv", &["p", "w"], &["y"], &[])
        .output("y", &[1, 4, 9, 9]);
    m
}

#[test]
fn zero_pad_folds_into_conv() {
    assert_eq!(optimized(&pad_conv(0.0)), ["Conv"]);
}

#[test]
fn nonzero_pad_stays() {
    let o = optimized(&pad_conv(1.0));
    assert!(o.contains(&"Pad".to_string()), "{o:?}");
}

/// `Relu(Add(Conv(x), x))` with `c` channels (`group` groups), or a near-miss variant.
fn residual(c: usize, group: usize, sum: bool, near_miss: &str) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    let rshape: Vec<usize> = if near_miss == "broadcast" {
        vec![1, c, 1, 1]
    } else {
        vec![1, c, 8, 8]
    };
    m.input("x", &[1, c, 8, 8])
        .input("r", &rshape)
        .weight("w", &[c, c / group, 3, 3], -0.3, 0.3)
        .weight("b", &[c], -0.1, 0.1)
        .node(
            "Conv",
            &["x", "w", "b"],
            &["c"],
            &[
                ("pads", Attr::Is(vec![1, 1, 1, 1])),
                ("group", Attr::I(group as i64)),
            ],
        );
    let conv_out = if near_miss == "activated" {
        m.node("Relu", &["c"], &["ca"], &[]);
        "ca"
    } else {
        "c"
    };
    m.node(
        if sum { "Sum" } else { "Add" },
        &[conv_out, "r"],
        &["s"],
        &[],
    )
    .node("Relu", &["s"], &["y"], &[])
    .output("y", &[1, c, 8, 8]);
    if near_miss == "output" {
        m.output("c", &[1, c, 8, 8]);
    }
    m
}

#[test]
fn residual_add_fuses_into_the_conv_epilogue() {
    assert_eq!(optimized(&residual(4, 1, false, "")), ["Conv+Add+Relu"]);
    // A two-input Sum, as older exporters write residuals.
    assert_eq!(optimized(&residual(4, 1, true, "")), ["Conv+Sum+Relu"]);
    // K = 48·9 spans several K blocks: the residual is added once, on the last.
    assert_eq!(optimized(&residual(48, 1, false, "")), ["Conv+Add+Relu"]);
    // Depthwise convs add it after their direct loops.
    assert_eq!(optimized(&residual(8, 8, false, "")), ["Conv+Add+Relu"]);
}

#[test]
fn residual_add_stays_where_fusing_would_be_wrong() {
    // The conv output is also a graph output.
    let o = optimized(&residual(4, 1, false, "output"));
    assert_eq!(o, ["Add+Relu", "Conv"]);
    // The residual broadcasts: not the conv output's shape.
    let o = optimized(&residual(4, 1, false, "broadcast"));
    assert_eq!(o, ["Add+Relu", "Conv"]);
    // The conv already applies an activation before the Add.
    let o = optimized(&residual(4, 1, false, "activated"));
    assert_eq!(o, ["Add+Relu", "Conv+Relu"]);
}

/// GPT-2's `gelu_new`: `0.5·x·(1 + tanh(√(2/π)·(x + c·x³)))`, x³ as Pow or as products.
fn tanh_gelu(c: f32, pow: bool) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[2, 16])
        .constant("three", &[], &[3.0])
        .constant("c", &[], &[c])
        .constant("k", &[], &[0.797_884_6])
        .constant("one", &[], &[1.0])
        .constant("half", &[], &[0.5]);
    if pow {
        m.node("Pow", &["x", "three"], &["x3"], &[]);
    } else {
        m.node("Mul", &["x", "x"], &["x2"], &[])
            .node("Mul", &["x2", "x"], &["x3"], &[]);
    }
    m.node("Mul", &["x", "half"], &["h"], &[])
        .node("Mul", &["x3", "c"], &["m1"], &[])
        .node("Add", &["x", "m1"], &["a1"], &[])
        .node("Mul", &["a1", "k"], &["m2"], &[])
        .node("Tanh", &["m2"], &["t"], &[])
        .node("Add", &["t", "one"], &["a2"], &[])
        .node("Mul", &["h", "a2"], &["y"], &[])
        .output("y", &[2, 16]);
    m
}

#[test]
fn tanh_gelu_becomes_one_gelu() {
    assert_eq!(optimized(&tanh_gelu(0.044_715, true)), ["Gelu"]);
    assert_eq!(optimized(&tanh_gelu(0.044_715, false)), ["Gelu"]);
}

#[test]
fn tanh_gelu_is_not_recognized_with_a_wrong_cubic_coefficient() {
    let o = optimized(&tanh_gelu(0.05, true));
    assert!(!o.contains(&"Gelu".to_string()), "{o:?}");
}

/// `Relu(x·W + b) + r` on `[2, 5, 6]` activations (a transformer's dense layer).
fn dense_3d(bias_shape: &[usize], residual: bool) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[2, 5, 6])
        .input("r", &[2, 5, 4])
        .weight("w", &[6, 4], -0.5, 0.5)
        .weight("b", bias_shape, -0.5, 0.5)
        .node("MatMul", &["x", "w"], &["p"], &[])
        .node("Add", &["p", "b"], &["q"], &[]);
    if residual {
        m.node("Add", &["q", "r"], &["y"], &[]);
    } else {
        m.node("Relu", &["q"], &["y"], &[]);
    }
    m.output("y", &[2, 5, 4]);
    m
}

#[test]
fn matmul_add_on_batched_activations_becomes_gemm() {
    assert_eq!(optimized(&dense_3d(&[4], false)), ["Gemm+Relu"]);
    assert_eq!(optimized(&dense_3d(&[1, 1, 4], false)), ["Gemm+Relu"]);
    // The residual Add joins the Gemm too.
    assert_eq!(optimized(&dense_3d(&[4], true)), ["Gemm+Add"]);
}

#[test]
fn matmul_add_on_batched_activations_stays_when_the_bias_varies_by_row() {
    let o = optimized(&dense_3d(&[5, 1], false));
    assert!(o.contains(&"MatMul".to_string()), "{o:?}");
}

/// `Relu((Conv(x) or BN(x)) · m + a)` with `m` shaped `m_shape`.
fn affine_tail(after_bn: bool, m_shape: &[usize]) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[1, 4, 8, 8])
        .weight("w", &[4, 4, 1, 1], -0.5, 0.5)
        .weight("gamma", &[4], 0.5, 1.5)
        .weight("beta", &[4], -0.2, 0.2)
        .weight("mean", &[4], -0.2, 0.2)
        .weight("var", &[4], 0.5, 1.5)
        .weight("m", m_shape, 0.5, 1.5)
        .weight("a", &[4, 1, 1], -0.5, 0.5);
    if after_bn {
        m.node(
            "BatchNormalization",
            &["x", "gamma", "beta", "mean", "var"],
            &["p"],
            &[],
        );
    } else {
        m.node("Conv", &["x", "w"], &["p"], &[]);
    }
    m.node("Mul", &["m", "p"], &["q"], &[])
        .node("Add", &["q", "a"], &["r"], &[])
        .node("Relu", &["r"], &["y"], &[])
        .output("y", &[1, 4, 8, 8]);
    m
}

#[test]
fn per_channel_affine_folds_into_conv_and_batch_norm() {
    assert_eq!(optimized(&affine_tail(false, &[1, 4, 1, 1])), ["Conv+Relu"]);
    assert_eq!(optimized(&affine_tail(false, &[])), ["Conv+Relu"]);
    assert_eq!(
        optimized(&affine_tail(true, &[4, 1, 1])),
        ["BatchNormalization+Relu"]
    );
}

#[test]
fn affine_that_varies_along_space_stays() {
    let o = optimized(&affine_tail(false, &[1, 1, 8, 1]));
    assert!(o.iter().any(|op| op.contains("Mul")), "{o:?}");
}

/// `Conv(Relu(BN(x)))` with a `k×k` kernel and padding `pad`; optionally BN's output is also
/// a graph output.
fn pre_activation(k: usize, pad: i64, bn_is_output: bool) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    let out = 8 - k + 1 + 2 * pad as usize;
    m.input("x", &[1, 6, 8, 8])
        .weight("gamma", &[6], 0.5, 1.5)
        .weight("beta", &[6], -0.5, 0.5)
        .weight("mean", &[6], -0.2, 0.2)
        .weight("var", &[6], 0.5, 1.5)
        .weight("w", &[5, 6, k, k], -0.5, 0.5)
        .node(
            "BatchNormalization",
            &["x", "gamma", "beta", "mean", "var"],
            &["b"],
            &[],
        )
        .node("Relu", &["b"], &["r"], &[])
        .node(
            "Conv",
            &["r", "w"],
            &["y"],
            &[("pads", Attr::Is(vec![pad; 4]))],
        )
        .output("y", &[1, 5, out, out]);
    if bn_is_output {
        m.output("r", &[1, 6, 8, 8]);
    }
    m
}

#[test]
fn batch_norm_before_an_unpadded_conv_becomes_its_prologue() {
    // 1×1 (the GEMM reads the input directly) and 3×3 (implicit im2col).
    assert_eq!(
        optimized(&pre_activation(1, 0, false)),
        ["BatchNormalization+Relu+Conv"]
    );
    assert_eq!(
        optimized(&pre_activation(3, 0, false)),
        ["BatchNormalization+Relu+Conv"]
    );
}

#[test]
fn batch_norm_prologue_stays_out_where_it_would_be_wrong() {
    // Padding must read as zero, not as relu(shift).
    let o = optimized(&pre_activation(3, 1, false));
    assert_eq!(o, ["BatchNormalization+Relu", "Conv"]);
    // The activated value is needed on its own.
    let o = optimized(&pre_activation(1, 0, true));
    assert_eq!(o, ["BatchNormalization+Relu", "Conv"]);
}

/// A SiLU between QDQ pairs (YOLO's `x · sigmoid(x)` with the Sigmoid requantized): the
/// QuantizeLinear → DequantizeLinear round trip after the Sigmoid is the identity on its
/// rounded, clipped values, so from O2 the uint8 intermediates never exist and the whole
/// chain is one vector program — with the bytes of O0's run.
#[test]
fn requantized_silu_is_one_program_with_o0s_bytes() {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[1, 8, 6, 6])
        .constant("s", &[], &[0.04])
        .constant("s_sig", &[], &[1.0 / 256.0])
        .constant("s_out", &[], &[0.03])
        .node("QuantizeLinear", &["x", "s"], &["xq"], &[])
        .node("DequantizeLinear", &["xq", "s"], &["xd"], &[])
        .node("Sigmoid", &["xd"], &["sg"], &[])
        .node("QuantizeLinear", &["sg", "s_sig"], &["sq"], &[])
        .node("DequantizeLinear", &["sq", "s_sig"], &["sd"], &[])
        .node("Mul", &["xd", "sd"], &["y"], &[])
        .node("QuantizeLinear", &["y", "s_out"], &["yq"], &[])
        .output("yq", &[1, 8, 6, 6]);
    let bytes = m.build();
    let (o0, o2) = (
        compile_at(&bytes, OptLevel::O0),
        compile_at(&bytes, OptLevel::O2),
    );
    let inputs = random_inputs(&o0, 7);
    let (a, b) = (run(&o0, &inputs), run(&o2, &inputs));
    assert_eq!(a[0].bytes, b[0].bytes, "O2 changed the bytes");
    assert!(
        a[0].bytes.iter().any(|&v| v != a[0].bytes[0]),
        "a constant output tests nothing"
    );
    let o = ops(&o2);
    // Both round trips (the input's too) go: one program, f32 in, uint8 out, its only Cast
    // the final store.
    assert_eq!(o.len(), 1, "{o:?}");
    assert!(
        o[0].starts_with("Fused[") && o[0].matches("Cast").count() == 1,
        "{o:?}"
    );
}

/// `Conv → Sigmoid → Mul(conv, sigmoid)` (YOLOv8's SiLU), `sigmoid_used_elsewhere` adding a
/// second reader of the Sigmoid, `other_factor` multiplying by another value.
fn conv_silu(sigmoid_used_elsewhere: bool, other_factor: bool) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[1, 3, 8, 8])
        .weight("w", &[4, 3, 3, 3], -0.5, 0.5)
        .weight("b", &[4], -0.3, 0.3)
        .weight("k", &[1, 4, 6, 6], -1.0, 1.0)
        .node("Conv", &["x", "w", "b"], &["c"], &[])
        .node("Sigmoid", &["c"], &["s"], &[]);
    m.node(
        "Mul",
        &[if other_factor { "k" } else { "c" }, "s"],
        &["y"],
        &[],
    )
    .output("y", &[1, 4, 6, 6]);
    if sigmoid_used_elsewhere {
        m.output("s", &[1, 4, 6, 6]);
    }
    m
}

#[test]
fn silu_becomes_the_conv_epilogue_with_the_two_nodes_bytes() {
    let bytes = conv_silu(false, false).build();
    let (o0, o2) = (
        compile_at(&bytes, OptLevel::O0),
        compile_at(&bytes, OptLevel::O2),
    );
    assert_eq!(ops(&o2), ["Conv+Silu"]);
    let inputs = random_inputs(&o0, 11);
    let (a, b) = (run(&o2, &inputs), run(&o0, &inputs));
    assert_eq!(
        a[0].bytes, b[0].bytes,
        "Silu must equal Sigmoid then Mul bit for bit"
    );
}

#[test]
fn silu_is_not_recognized_when_the_sigmoid_has_another_reader_or_factor() {
    for (elsewhere, other) in [(true, false), (false, true)] {
        let o = optimized(&conv_silu(elsewhere, other));
        assert!(!o.iter().any(|t| t.contains("Silu")), "{o:?}");
    }
}

/// A blob that applies Silu is stamped format version 8 (a runtime without the op refuses it
/// at load); the same model at O0 (Sigmoid and Mul) needs only version 1.
#[test]
fn silu_needs_format_version_8() {
    let bytes = conv_silu(false, false).build();
    for (level, version) in [(OptLevel::O0, 1), (OptLevel::O2, 8)] {
        let c = compile_at(&bytes, level);
        let blob = ge_runtime::AlignedBlob::from_bytes(&c.blob);
        let model = ge_runtime::Model::from_bytes(blob.as_bytes()).expect("loads");
        assert_eq!(model.version(), version, "{level:?}");
    }
}

/// An unrolled recurrent loop as PyTorch exports an `LSTMCell` in a Python loop: step `t`
/// projects row `steps[t]` of X (`Gather(X, t)`) by `Gemm(·, W, c, transB)`, adds the
/// recurrent `Gemm(h, R)`, and `h = Tanh(·)`. `shared`: every step reads the same W (else
/// each its own: nothing to batch).
fn unrolled_cell(steps: &[i64], shared: bool) -> ModelBuilder {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[4, 1, 6])
        .input("h0", &[1, 5])
        .weight("c", &[5], -0.5, 0.5)
        .weight("r", &[5, 5], -0.5, 0.5);
    let mut h = "h0".to_string();
    for (t, &row) in steps.iter().enumerate() {
        let w = if shared || t == 0 {
            "w".to_string()
        } else {
            format!("w{t}")
        };
        if !shared || t == 0 {
            m.weight(&w, &[5, 6], -0.5, 0.5);
        }
        let (idx, xt, g, r, s, ht) = (
            format!("i{t}"),
            format!("x{t}"),
            format!("g{t}"),
            format!("r{t}"),
            format!("s{t}"),
            format!("h{t}"),
        );
        m.scalar_int(&idx, row)
            .node("Gather", &["x", &idx], &[&xt], &[])
            .node("Gemm", &[&xt, &w, "c"], &[&g], &[("transB", Attr::I(1))])
            .node("Gemm", &[&h, "r"], &[&r], &[])
            .node("Add", &[&g, &r], &[&s], &[])
            .node("Tanh", &[&s], &[&ht], &[]);
        h = ht;
    }
    m.output(&h, &[1, 5]);
    m
}

/// Nodes whose op type starts with `op` (fused ones are named `Gemm+Add+Tanh`).
fn count(ops: &[String], op: &str) -> usize {
    ops.iter().filter(|o| o.starts_with(op)).count()
}

#[test]
fn row_gemms_on_one_weight_become_one_gemm() {
    // Every row of X, out of order (X is the batched A), and three of four rows with a
    // negative index (the rows are gathered first): one Gemm for the projections beside
    // the recurrent ones, a Gather of its row per step.
    for steps in [&[3, 1, 0, 2][..], &[2, -4, 3][..]] {
        let o = optimized(&unrolled_cell(steps, true));
        assert_eq!(count(&o, "Gemm"), steps.len() + 1, "{steps:?}: {o:?}");
    }
}

#[test]
fn row_gemms_stay_when_each_step_has_its_own_weight() {
    let o = optimized(&unrolled_cell(&[0, 1, 2, 3], false));
    assert_eq!(count(&o, "Gemm"), 8, "{o:?}");
}
