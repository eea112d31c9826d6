//! The fused float ops onnxruntime's optimizer writes (FusedConv, FusedGemm, FusedMatMul),
//! the channels-last NhwcConv, the GELU family (QuickGelu, BiasGelu, FastGelu) and BiasAdd,
//! each written back as the plain ops it fuses; ge's own fusion passes fuse them again.

use super::super::decomp::{in_name, out0};
use super::super::quant::clip;
use super::super::sub::{A, CONV_GEOMETRY, Sub, copied_attrs};
use crate::error::Result;
use crate::onnx::ctx::{Imported, NodeCtx};

/// `activation(x)` by name with its parameters (FusedConv's `activation_params`, FusedGemm's
/// `activation_alpha/beta`), writing to `y`: the activations onnxruntime fuses.
fn activation(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    x: &str,
    y: &str,
    act: &str,
    params: &[f32],
) -> Result<()> {
    let p = |i: usize, d: f32| params.get(i).copied().unwrap_or(d);
    let dt = ctx.input(0)?.dtype;
    match act {
        "" | "Identity" => s.to("Identity", &[x], &[y], vec![]),
        "Relu" | "Tanh" | "Sigmoid" => s.to(act, &[x], &[y], vec![]),
        "LeakyRelu" => s.to(act, &[x], &[y], vec![A::F("alpha", p(0, 0.01))]),
        "HardSigmoid" => s.to(
            act,
            &[x],
            &[y],
            vec![A::F("alpha", p(0, 0.2)), A::F("beta", p(1, 0.5))],
        ),
        "Clip" => {
            let c = clip(
                s,
                ctx.opset,
                x,
                dt,
                p(0, f32::MIN) as f64,
                p(1, f32::MAX) as f64,
            );
            s.to("Identity", &[&c], &[y], vec![]);
        }
        other => {
            return Err(ctx.unsupported(format!(
                "activation '{other}' (onnxruntime fuses Relu, LeakyRelu, Tanh, Sigmoid, Clip, \
                 HardSigmoid; re-save the model without this fusion)"
            )));
        }
    }
    Ok(())
}

/// FusedConv: `activation(Conv(X, W, B) + Z)`.
pub fn fused_conv(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let mut s = Sub::new(ctx);
    let ins: Vec<String> = (0..3.min(ctx.input_count()))
        .map(|i| in_name(ctx, i))
        .collect();
    let refs: Vec<&str> = ins.iter().map(String::as_str).collect();
    let mut y = s.op("Conv", &refs, copied_attrs(ctx, CONV_GEOMETRY));
    if ctx.input_opt(3).is_some() {
        y = s.op("Add", &[&y, &in_name(ctx, 3)], vec![]);
    }
    let params = ctx.attr_floats("activation_params").unwrap_or_default();
    let act = ctx.attr_s_or("activation", "");
    activation(ctx, &mut s, &y, &out0(ctx)?, &act, &params)?;
    Ok(s.done())
}

/// FusedGemm: `activation(Gemm(A, B, C))`.
pub fn fused_gemm(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let mut s = Sub::new(ctx);
    let ins: Vec<String> = (0..3.min(ctx.input_count()))
        .map(|i| in_name(ctx, i))
        .collect();
    let refs: Vec<&str> = ins.iter().map(String::as_str).collect();
    let attrs = copied_attrs(ctx, &["alpha", "beta", "transA", "transB"]);
    let y = s.op("Gemm", &refs, attrs);
    let act = ctx.attr_s_or("activation", "");
    let params: Vec<f32> = ["activation_alpha", "activation_beta"]
        .iter()
        .map_while(|n| ctx.attr_f(n))
        .collect();
    if ctx.attr_f("activation_gamma").is_some() {
        return Err(ctx.unsupported(
            "activation_gamma (no activation onnxruntime fuses into Gemm takes one)",
        ));
    }
    activation(ctx, &mut s, &y, &out0(ctx)?, &act, &params)?;
    Ok(s.done())
}

/// `x` with its last two axes swapped.
fn swap_last(s: &mut Sub, x: &str, rank: usize) -> String {
    let mut perm: Vec<i64> = (0..rank as i64).collect();
    perm.swap(rank - 1, rank - 2);
    s.op("Transpose", &[x], vec![A::Is("perm", perm)])
}

/// FusedMatMul: `alpha · op(A) @ op(B)`, op transposing the last two axes when asked.
pub fn fused_matmul(ctx: &NodeCtx<'_>) -> Result<Imported> {
    if ctx.attr_i_or("transBatchA", 0) != 0 || ctx.attr_i_or("transBatchB", 0) != 0 {
        return Err(ctx.unsupported(
            "transBatchA/transBatchB (batch-axis transposes); re-save the model at a lower \
             onnxruntime optimization level",
        ));
    }
    let mut s = Sub::new(ctx);
    let mut ab = [in_name(ctx, 0), in_name(ctx, 1)];
    for (i, attr) in ["transA", "transB"].into_iter().enumerate() {
        if ctx.attr_i_or(attr, 0) != 0 {
            let rank = ctx.input(i)?.shape.len();
            if rank < 2 {
                return Err(ctx.err(format!("{attr} on a rank-{rank} input")));
            }
            ab[i] = swap_last(&mut s, &ab[i], rank);
        }
    }
    let alpha = ctx.attr_f_or("alpha", 1.0);
    let y = out0(ctx)?;
    if alpha == 1.0 {
        s.to("MatMul", &[&ab[0], &ab[1]], &[&y], vec![]);
    } else {
        let m = s.op("MatMul", &[&ab[0], &ab[1]], vec![]);
        let a = s.scalar(ctx.input(0)?.dtype, alpha as f64);
        s.to("Mul", &[&m, &a], &[&y], vec![]);
    }
    Ok(s.done())
}

/// NhwcConv: Conv on a channels-last X, Y channels-last too.
pub fn nhwc_conv(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let rank = ctx.input(0)?.shape.len();
    if rank < 3 {
        return Err(ctx.err(format!("X has rank {rank}; NhwcConv needs N, spatial…, C")));
    }
    let mut s = Sub::new(ctx);
    let r = rank as i64;
    let to_first: Vec<i64> = [0, r - 1].into_iter().chain(1..r - 1).collect();
    let to_last: Vec<i64> = [0].into_iter().chain(2..r).chain([1]).collect();
    let x = s.op(
        "Transpose",
        &[&in_name(ctx, 0)],
        vec![A::Is("perm", to_first)],
    );
    let mut ins = vec![x, in_name(ctx, 1)];
    if ctx.input_opt(2).is_some() {
        ins.push(in_name(ctx, 2));
    }
    let refs: Vec<&str> = ins.iter().map(String::as_str).collect();
    let c = s.op("Conv", &refs, copied_attrs(ctx, CONV_GEOMETRY));
    s.to(
        "Transpose",
        &[&c],
        &[&out0(ctx)?],
        vec![A::Is("perm", to_last)],
    );
    Ok(s.done())
}

/// `x + input i` when input i is present.
fn plus_input(ctx: &NodeCtx<'_>, s: &mut Sub, x: String, i: usize) -> String {
    if ctx.input_opt(i).is_some() {
        s.op("Add", &[&x, &in_name(ctx, i)], vec![])
    } else {
        x
    }
}

/// QuickGelu: `x · sigmoid(alpha · x)`.
pub fn quick_gelu(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let mut s = Sub::new(ctx);
    let x = in_name(ctx, 0);
    let a = s.scalar(ctx.input(0)?.dtype, ctx.attr_f_or("alpha", 1.702) as f64);
    let ax = s.op("Mul", &[&x, &a], vec![]);
    let sg = s.op("Sigmoid", &[&ax], vec![]);
    s.to("Mul", &[&x, &sg], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// BiasGelu: exact (erf) GELU of `A + B`.
pub fn bias_gelu(ctx: &NodeCtx<'_>) -> Result<Imported> {
    gelu_of_sum(ctx, "none")
}

/// FastGelu: tanh-approximated GELU of `X (+ bias)`.
pub fn fast_gelu(ctx: &NodeCtx<'_>) -> Result<Imported> {
    gelu_of_sum(ctx, "tanh")
}

fn gelu_of_sum(ctx: &NodeCtx<'_>, approximate: &str) -> Result<Imported> {
    let mut s = Sub::new(ctx);
    let x = plus_input(ctx, &mut s, in_name(ctx, 0), 1);
    // The default-domain Gelu (opset 20) is the same function; a generated node may use it.
    s.to(
        "Gelu",
        &[&x],
        &[&out0(ctx)?],
        vec![A::S("approximate", approximate)],
    );
    Ok(s.done())
}

/// BiasAdd: `X + bias + skip`.
pub fn bias_add(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let mut s = Sub::new(ctx);
    let xb = s.op("Add", &[&in_name(ctx, 0), &in_name(ctx, 1)], vec![]);
    s.to("Add", &[&xb, &in_name(ctx, 2)], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}
