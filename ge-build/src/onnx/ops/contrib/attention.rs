//! onnxruntime's attention ops: Attention (packed input projection) and MultiHeadAttention
//! (separate Q/K/V, optional packed bias) as the MatMul-Softmax-MatMul chain over heads
//! that `fuse_attention` recognizes, with onnxruntime's masks as the additive bias its CPU
//! kernel builds (`mask_filter_value`, -10000, at padded keys; the lowest float above the
//! diagonal when unidirectional; plus `attention_bias`); GroupQueryAttention (prompt form)
//! through the ONNX `Attention` decomposition, which groups the heads.

use ge_runtime::format::DType;

use super::super::decomp::{in_name, out, out0, reshape, slice};
use super::super::sub::{A, Sub, tensor_data};
use crate::error::Result;
use crate::onnx::ctx::{Imported, NodeCtx};

/// The sizes of one node: batch, query length, key length (= total length, no past).
struct Dims {
    b: usize,
    s: usize,
    t: usize,
}

/// onnxruntime's `PrepareMask` as a `[B, 1, S|1, T]` additive bias from the mask input `i`
/// (int32): key lengths `[B]`, end and start positions `[2B]`, or 0/1 masks `[B, T]` /
/// `[B, S, T]`; then the causal band (lowest float) when `causal`.
fn mask_bias(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    i: usize,
    d: &Dims,
    dt: DType,
    causal: bool,
) -> Result<Option<String>> {
    let filter = ctx.attr_f_or("mask_filter_value", -10000.0) as f64;
    let mut bias = None;
    if let Some(m) = ctx.input_opt(i) {
        if !matches!(m.dtype, DType::I32 | DType::I64) {
            return Err(ctx.err(format!(
                "mask input {i} is {}; int32 expected",
                m.dtype.name()
            )));
        }
        let name = in_name(ctx, i);
        let zero = s.scalar(dt, 0.0);
        let masked = s.scalar(dt, filter);
        let keys = |s: &mut Sub| {
            let v: Vec<f64> = (0..d.t).map(|j| j as f64).collect();
            s.constant(tensor_data(m.dtype, vec![1, d.t], &v))
        };
        let (cond, shape) = match m.shape {
            [n] if *n == d.b => {
                let lens = reshape(s, &name, &[d.b, 1]);
                let k = keys(s);
                (s.op("Less", &[&k, &lens], vec![]), vec![d.b, 1, 1, d.t])
            }
            [n] if *n == 2 * d.b => {
                let end = slice(s, ctx.opset, &name, 0, 0, d.b as i64);
                let start = slice(s, ctx.opset, &name, 0, d.b as i64, 2 * d.b as i64);
                let (end, start) = (reshape(s, &end, &[d.b, 1]), reshape(s, &start, &[d.b, 1]));
                let k = keys(s);
                let before_end = s.op("Less", &[&k, &end], vec![]);
                let after_start = s.op("GreaterOrEqual", &[&k, &start], vec![]);
                let c = s.op("And", &[&before_end, &after_start], vec![]);
                (c, vec![d.b, 1, 1, d.t])
            }
            [b, t] if *b == d.b && *t == d.t => {
                let z = s.scalar(m.dtype, 0.0);
                (s.op("Greater", &[&name, &z], vec![]), vec![d.b, 1, 1, d.t])
            }
            [b, q, t] if *b == d.b && *q == d.s && *t == d.t => {
                let z = s.scalar(m.dtype, 0.0);
                (
                    s.op("Greater", &[&name, &z], vec![]),
                    vec![d.b, 1, d.s, d.t],
                )
            }
            other => {
                return Err(ctx.unsupported(format!(
                    "mask of shape {other:?}: ge supports key lengths [{b}], start/end \
                     positions [{b2}] and 0/1 masks [{b}, {t}] or [{b}, {s}, {t}] \
                     (not the 4-D Megatron form)",
                    b = d.b,
                    b2 = 2 * d.b,
                    s = d.s,
                    t = d.t
                )));
            }
        };
        let sel = s.op("Where", &[&cond, &zero, &masked], vec![]);
        bias = Some(reshape(s, &sel, &shape));
    }
    if causal {
        let v: Vec<f64> = (0..d.s)
            .flat_map(|i| (0..d.t).map(move |j| if j > i { f32::MIN as f64 } else { 0.0 }))
            .collect();
        let c = s.constant(tensor_data(dt, vec![d.s, d.t], &v));
        // onnxruntime overwrites the causal band with the lowest value: the minimum of both.
        bias = Some(match bias {
            Some(b) => s.op("Min", &[&b, &c], vec![]),
            None => c,
        });
    }
    Ok(bias)
}

/// Adds input `i` (`attention_bias`, `[B|1, H|1, S, T]`) to the bias when present.
fn plus_attention_bias(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    bias: Option<String>,
    i: usize,
) -> Option<String> {
    if ctx.input_opt(i).is_none() {
        return bias;
    }
    let ab = in_name(ctx, i);
    Some(match bias {
        Some(b) => s.op("Add", &[&b, &ab], vec![]),
        None => ab,
    })
}

/// Refuses inputs `idx` when present and outputs `outs` when requested.
fn refuse(ctx: &NodeCtx<'_>, idx: &[(usize, &str)], outs: &[(usize, &str)]) -> Result<()> {
    for &(i, what) in idx {
        if ctx.input_opt(i).is_some() {
            return Err(ctx.unsupported(format!(
                "input {i} ({what}): ge compiles the static prompt form; drop it"
            )));
        }
    }
    for &(i, what) in outs {
        if out(ctx, i).is_some() {
            return Err(ctx.unsupported(format!("output {i} ({what}) is not supported")));
        }
    }
    Ok(())
}

/// Refuses attributes that must be 0 when set.
fn refuse_attrs(ctx: &NodeCtx<'_>, names: &[&str]) -> Result<()> {
    for n in names {
        if ctx.attr_i_or(n, 0) != 0 {
            return Err(ctx.unsupported(format!("{n} = {} is not supported", ctx.attr_i_or(n, 0))));
        }
    }
    Ok(())
}

/// A positive `num_heads`-like attribute that divides `hidden`.
fn heads(ctx: &NodeCtx<'_>, name: &str, hidden: usize) -> Result<usize> {
    match ctx.attr_i(name) {
        Some(h) if h > 0 && hidden.is_multiple_of(h as usize) => Ok(h as usize),
        Some(h) => Err(ctx.err(format!("{name} = {h} does not divide hidden size {hidden}"))),
        None => Err(ctx.err(format!("attribute {name} is required"))),
    }
}

/// The head layout of one attention: batch, query and key lengths, heads, head sizes.
struct Heads {
    b: usize,
    s: usize,
    t: usize,
    h: usize,
    dk: usize,
    dv: usize,
}

/// `softmax(Q·Kᵀ·scale + bias)·V` over heads split from 3-D q/k/v, written straight (not
/// through the ONNX Attention decomposition, whose guard for rows masked with -inf is not
/// needed for onnxruntime's finite mask values and would hide the chain from
/// `fuse_attention`). `outs`: output, then optionally the heads of K and V (BNSH).
#[allow(clippy::too_many_arguments)]
fn multi_head(
    s: &mut Sub,
    dt: DType,
    [q, k, v]: [&str; 3],
    d: &Heads,
    scale: f32,
    bias: Option<String>,
    [y, pk, pv]: [&str; 3],
) {
    use super::super::attention::heads;
    let qh = heads(s, q, &[d.b, d.s, d.h * d.dk], d.h);
    let kh = heads(s, k, &[d.b, d.t, d.h * d.dk], d.h);
    let vh = heads(s, v, &[d.b, d.t, d.h * d.dv], d.h);
    for (o, x) in [(pk, &kh), (pv, &vh)] {
        if !o.is_empty() {
            s.to("Identity", &[x], &[o], vec![]);
        }
    }
    let kt = s.op("Transpose", &[&kh], vec![A::Is("perm", vec![0, 1, 3, 2])]);
    let qk = s.op("MatMul", &[&qh, &kt], vec![]);
    let c = s.scalar(dt, scale as f64);
    let mut scores = s.op("Mul", &[&qk, &c], vec![]);
    if let Some(b) = bias {
        scores = s.op("Add", &[&scores, &b], vec![]);
    }
    let p = s.op("Softmax", &[&scores], vec![A::I("axis", -1)]);
    let o = s.op("MatMul", &[&p, &vh], vec![]);
    let t = s.op("Transpose", &[&o], vec![A::Is("perm", vec![0, 2, 1, 3])]);
    let shape = s.ints(&[d.b as i64, d.s as i64, (d.h * d.dv) as i64]);
    s.to("Reshape", &[&t, &shape], &[y], vec![]);
}

/// The `scale` attribute, else `1 / sqrt(head_size)` (also for an explicit 0).
fn scale(ctx: &NodeCtx<'_>, head_size: usize) -> f32 {
    match ctx.attr_f("scale") {
        Some(x) if x != 0.0 => x,
        _ => 1.0 / (head_size as f32).sqrt(),
    }
}

/// Attention: `input @ weights + bias` split into Q, K, V, then multi-head attention.
pub fn attention(ctx: &NodeCtx<'_>) -> Result<Imported> {
    refuse(
        ctx,
        &[(4, "past"), (6, "past_sequence_length")],
        &[(1, "present")],
    )?;
    refuse_attrs(ctx, &["do_rotary", "past_present_share_buffer"])?;
    let x = ctx.input(0)?;
    let w = ctx.input(1)?;
    let [b, sq, din] = *x.shape else {
        return Err(ctx.err(format!("input {:?} must be 3-D", x.shape)));
    };
    let total = match w.shape {
        [i, n] if *i == din => *n,
        other => return Err(ctx.err(format!("weights {other:?} must be [{din}, Q+K+V hidden]"))),
    };
    let sizes: Vec<usize> = match ctx.attr_ints("qkv_hidden_sizes") {
        Some(v) if v.len() == 3 && v.iter().all(|&x| x > 0) => {
            v.iter().map(|&x| x as usize).collect()
        }
        Some(v) => return Err(ctx.err(format!("qkv_hidden_sizes {v:?} must be 3 positive sizes"))),
        None if total % 3 == 0 => vec![total / 3; 3],
        None => {
            return Err(ctx.err(format!(
                "weights' {total} columns do not split into Q, K, V"
            )));
        }
    };
    if sizes.iter().sum::<usize>() != total || sizes[0] != sizes[1] {
        return Err(ctx.err(format!(
            "qkv_hidden_sizes {sizes:?} do not match {total} columns"
        )));
    }
    let h = heads(ctx, "num_heads", sizes[0])?;
    heads(ctx, "num_heads", sizes[2])?;
    let dt = x.dtype;
    let mut s = Sub::new(ctx);
    let mut p = s.op("MatMul", &[&in_name(ctx, 0), &in_name(ctx, 1)], vec![]);
    if ctx.input_opt(2).is_some() {
        p = s.op("Add", &[&p, &in_name(ctx, 2)], vec![]);
    }
    let (q_end, k_end) = (sizes[0] as i64, (sizes[0] + sizes[1]) as i64);
    let q = slice(&mut s, ctx.opset, &p, 2, 0, q_end);
    let k = slice(&mut s, ctx.opset, &p, 2, q_end, k_end);
    let v = slice(&mut s, ctx.opset, &p, 2, k_end, total as i64);
    let d = Dims { b, s: sq, t: sq };
    let causal = ctx.attr_i_or("unidirectional", 0) != 0;
    let mask = mask_bias(ctx, &mut s, 3, &d, dt, causal)?;
    let mask = plus_attention_bias(ctx, &mut s, mask, 5);
    let heads = Heads {
        b,
        s: sq,
        t: sq,
        h,
        dk: sizes[0] / h,
        dv: sizes[2] / h,
    };
    let y = out0(ctx)?;
    let sc = scale(ctx, heads.dk);
    multi_head(&mut s, dt, [&q, &k, &v], &heads, sc, mask, [&y, "", ""]);
    Ok(s.done())
}

/// MultiHeadAttention with separate 3-D query, key and value (self or cross attention).
pub fn multi_head_attention(ctx: &NodeCtx<'_>) -> Result<Imported> {
    refuse(
        ctx,
        &[
            (6, "past_key"),
            (7, "past_value"),
            (8, "past_sequence_length"),
            (9, "cache_indirection"),
        ],
        &[(3, "qk")],
    )?;
    let q = ctx.input(0)?;
    let (k, v) = match (ctx.input_opt(1), ctx.input_opt(2)) {
        (Some(k), Some(v)) if q.shape.len() == 3 && k.shape.len() == 3 && v.shape.len() == 3 => {
            (k, v)
        }
        _ => {
            return Err(ctx.unsupported(
                "packed QKV/KV or past-key forms: ge supports 3-D query, key and value",
            ));
        }
    };
    let (b, sq, dq) = (q.shape[0], q.shape[1], q.shape[2]);
    let (t, dv) = (k.shape[1], v.shape[2]);
    if k.shape != [b, t, dq] || v.shape[..2] != [b, t] {
        return Err(ctx.err(format!(
            "query {:?}, key {:?} and value {:?} disagree",
            q.shape, k.shape, v.shape
        )));
    }
    let h = heads(ctx, "num_heads", dq)?;
    heads(ctx, "num_heads", dv)?;
    let dt = q.dtype;
    let mut s = Sub::new(ctx);
    let mut qkv = [in_name(ctx, 0), in_name(ctx, 1), in_name(ctx, 2)];
    if let Some(bias) = ctx.input_opt(3) {
        if bias.shape != [2 * dq + dv] {
            return Err(ctx.err(format!("bias {:?} must be [{}]", bias.shape, 2 * dq + dv)));
        }
        let bounds = [0, dq, 2 * dq, 2 * dq + dv];
        for (i, x) in qkv.iter_mut().enumerate() {
            let part = slice(
                &mut s,
                ctx.opset,
                &in_name(ctx, 3),
                0,
                bounds[i] as i64,
                bounds[i + 1] as i64,
            );
            *x = s.op("Add", &[x.as_str(), &part], vec![]);
        }
    }
    let d = Dims { b, s: sq, t };
    let causal = ctx.attr_i_or("unidirectional", 0) != 0;
    let mask = mask_bias(ctx, &mut s, 4, &d, dt, causal)?;
    let mask = plus_attention_bias(ctx, &mut s, mask, 5);
    let (y, pk, pv) = (
        out0(ctx)?,
        out(ctx, 1).unwrap_or_default(),
        out(ctx, 2).unwrap_or_default(),
    );
    let [qn, kn, vn] = &qkv;
    let heads = Heads {
        b,
        s: sq,
        t,
        h,
        dk: dq / h,
        dv: dv / h,
    };
    let sc = scale(ctx, heads.dk);
    multi_head(&mut s, dt, [qn, kn, vn], &heads, sc, mask, [&y, &pk, &pv]);
    Ok(s.done())
}

/// GroupQueryAttention in the prompt form a static model has: no past, every sequence the
/// full length (`seqlens_k = S - 1`, `total_sequence_length = S`, both constants).
pub fn group_query_attention(ctx: &NodeCtx<'_>) -> Result<Imported> {
    refuse(
        ctx,
        &[
            (3, "past_key"),
            (4, "past_value"),
            (7, "cos_cache"),
            (8, "sin_cache"),
            (9, "position_ids"),
            (10, "attention_bias"),
            (11, "head_sink"),
            (12, "k_scale"),
            (13, "v_scale"),
            (14, "q_norm_weight"),
            (15, "k_norm_weight"),
            (16, "query_seqlens"),
        ],
        &[(3, "output_qk")],
    )?;
    refuse_attrs(ctx, &["do_rotary", "qk_output", "sliding_window_cache"])?;
    if ctx.attr_i_or("smooth_softmax", -1) > 0 {
        return Err(ctx.unsupported("smooth_softmax = 1 is not supported"));
    }
    if ctx.attr_f_or("softcap", 0.0) != 0.0 {
        return Err(ctx.unsupported("softcap (capped attention scores) is not supported"));
    }
    if ctx.attr_i_or("local_window_size", -1) != -1 {
        return Err(
            ctx.unsupported("local_window_size (sliding-window attention) is not supported")
        );
    }
    for a in ["k_quant_type", "v_quant_type"] {
        let v = ctx.attr_s_or(a, "NONE");
        if v != "NONE" {
            return Err(ctx.unsupported(format!("{a} = {v} (quantized KV cache)")));
        }
    }
    let q = ctx.input(0)?;
    let [b, sq, qd] = *q.shape else {
        return Err(ctx.err(format!("query {:?} must be 3-D", q.shape)));
    };
    let hq = ctx.attr_i_or("num_heads", 0).max(0) as usize;
    let hkv = ctx.attr_i_or("kv_num_heads", 0).max(0) as usize;
    if hq == 0 || hkv == 0 || !hq.is_multiple_of(hkv) {
        return Err(ctx.err(format!(
            "num_heads {hq} must be a positive multiple of kv_num_heads {hkv}"
        )));
    }
    let packed = ctx.input_opt(1).is_none();
    let dh = if packed { qd / (hq + 2 * hkv) } else { qd / hq };
    let want_q = if packed { (hq + 2 * hkv) * dh } else { hq * dh };
    if dh == 0 || want_q != qd {
        return Err(ctx.err(format!("query hidden size {qd} does not split into heads")));
    }
    let seqlens = ctx.const_ints(5, "seqlens_k")?.unwrap_or_default();
    let total = ctx
        .const_ints(6, "total_sequence_length")?
        .unwrap_or_default();
    if seqlens.len() != b || seqlens.iter().any(|&l| l != sq as i64 - 1) || total != [sq as i64] {
        return Err(ctx.unsupported(format!(
            "seqlens_k {seqlens:?} / total_sequence_length {total:?}: ge supports the prompt \
             form where every sequence fills all {sq} positions (seqlens_k = {} for each batch)",
            sq as i64 - 1
        )));
    }
    let mut s = Sub::new(ctx);
    let (qn, kn, vn) = if packed {
        let x = in_name(ctx, 0);
        let (a, c) = ((hq * dh) as i64, ((hq + hkv) * dh) as i64);
        (
            slice(&mut s, ctx.opset, &x, 2, 0, a),
            slice(&mut s, ctx.opset, &x, 2, a, c),
            slice(&mut s, ctx.opset, &x, 2, c, qd as i64),
        )
    } else {
        for i in [1, 2] {
            let t = ctx.input(i)?;
            if t.shape != [b, sq, hkv * dh] {
                return Err(ctx.err(format!(
                    "input {i} {:?} must be [{b}, {sq}, {}]",
                    t.shape,
                    hkv * dh
                )));
            }
        }
        (in_name(ctx, 0), in_name(ctx, 1), in_name(ctx, 2))
    };
    let causal = ctx.attr_i_or("causal", 1) != 0;
    let (y, pk, pv) = (
        out0(ctx)?,
        out(ctx, 1).unwrap_or_default(),
        out(ctx, 2).unwrap_or_default(),
    );
    // The ONNX Attention decomposition covers grouped heads and the causal band (-inf
    // above the diagonal, as onnxruntime's kernel leaves those probabilities at 0).
    let mut attrs = vec![
        A::I("q_num_heads", hq as i64),
        A::I("kv_num_heads", hkv as i64),
        A::F("scale", scale(ctx, dh)),
    ];
    if causal {
        attrs.push(A::I("is_causal", 1));
    }
    s.to("Attention", &[&qn, &kn, &vn], &[&y, &pk, &pv], attrs);
    Ok(s.done())
}
