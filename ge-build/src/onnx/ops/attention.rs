//! Attention (opsets 23–25) decomposed as its ONNX function body: heads split out of 3-D
//! inputs, the KV cache concatenated, every mask (attn_mask, causal, sliding window,
//! nonpad_kv_seqlen) folded into one additive bias, `softmax(softcap(QKᵀ·scale) + bias)·V`
//! with fully-masked rows zeroed. Shapes are static, so causal and window masks without a
//! per-batch offset are compile-time constants, and the fusion pass can still see the
//! MatMul-Softmax-MatMul chain.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out, out0, reduce, reshape};
use super::is_float;
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[OpEntry::decomposed("Attention", 23, FLOAT, attention)];

/// Static sizes of one Attention node, heads split out.
struct Dims {
    b: usize,
    hq: usize,
    hkv: usize,
    sq: usize,
    /// Key/value length including the past cache.
    kv: usize,
    past: usize,
    dq: usize,
    dv: usize,
}

/// A rank-3 `[B, S, H·D]` input as `[B, H, S, D]`; a rank-4 one as is.
pub(super) fn heads(s: &mut Sub, x: &str, shape: &[usize], h: usize) -> String {
    if shape.len() == 4 {
        return x.to_string();
    }
    let r = reshape(s, x, &[shape[0], shape[1], h, shape[2] / h]);
    s.op("Transpose", &[&r], vec![A::Is("perm", vec![0, 2, 1, 3])])
}

fn dims(ctx: &NodeCtx<'_>) -> Result<Dims> {
    let (q, k, v) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    let rank = q.shape.len();
    if !(rank == 3 || rank == 4) || k.shape.len() != rank || v.shape.len() != rank {
        return Err(ctx.err(format!(
            "Q {:?}, K {:?} and V {:?} must all be 3-D or all 4-D",
            q.shape, k.shape, v.shape
        )));
    }
    let (b, sq, skv) = (q.shape[0], q.shape[rank - 2], k.shape[rank - 2]);
    if k.shape[0] != b || v.shape[0] != b || v.shape[rank - 2] != skv {
        return Err(ctx.err(format!(
            "Q {:?}, K {:?} and V {:?} disagree on batch or key length",
            q.shape, k.shape, v.shape
        )));
    }
    let (hq, hkv, dq, dk, dv) = if rank == 3 {
        let hq = ctx.attr_i_or("q_num_heads", 0);
        let hkv = ctx.attr_i_or("kv_num_heads", 0);
        if hq <= 0 || hkv <= 0 {
            return Err(ctx.err("3-D inputs need positive q_num_heads and kv_num_heads attributes"));
        }
        let (hq, hkv) = (hq as usize, hkv as usize);
        let (q_h, k_h, v_h) = (q.shape[2], k.shape[2], v.shape[2]);
        if q_h % hq != 0 || k_h % hkv != 0 || v_h % hkv != 0 {
            return Err(ctx.err(format!(
                "hidden sizes {q_h}/{k_h}/{v_h} do not split into {hq}/{hkv} heads"
            )));
        }
        (hq, hkv, q_h / hq, k_h / hkv, v_h / hkv)
    } else {
        if ctx.opset >= 25 && (ctx.has_attr("q_num_heads") || ctx.has_attr("kv_num_heads")) {
            return Err(ctx.err(
                "q_num_heads/kv_num_heads must not be set for 4-D inputs (opset 25); drop them",
            ));
        }
        if v.shape[1] != k.shape[1] {
            return Err(ctx.err(format!(
                "K {:?} and V {:?} have different head counts",
                k.shape, v.shape
            )));
        }
        (q.shape[1], k.shape[1], q.shape[3], k.shape[3], v.shape[3])
    };
    if dk != dq {
        return Err(ctx.err(format!("Q head size {dq} differs from K head size {dk}")));
    }
    if hkv == 0 || hq % hkv != 0 {
        return Err(ctx.err(format!(
            "{hq} query heads are not a multiple of {hkv} key/value heads"
        )));
    }
    let past = match (ctx.input_opt(4), ctx.input_opt(5)) {
        (None, None) => 0,
        (Some(pk), Some(pv)) => {
            let p = pk.shape.get(2).copied().unwrap_or(0);
            if pk.shape != [b, hkv, p, dk] || pv.shape != [b, hkv, p, dv] {
                return Err(ctx.err(format!(
                    "past_key {:?} / past_value {:?} do not match [{b}, {hkv}, past, {dk}/{dv}]",
                    pk.shape, pv.shape
                )));
            }
            p
        }
        _ => return Err(ctx.err("past_key and past_value must be given together")),
    };
    Ok(Dims {
        b,
        hq,
        hkv,
        sq,
        kv: past + skv,
        past,
        dq,
        dv,
    })
}

/// `[b?, sq, kv]` 0/-inf values from `allowed`.
fn bias_const(s: &mut Sub, dt: DType, dims: Vec<usize>, allowed: &[bool]) -> String {
    let v: Vec<f64> = allowed
        .iter()
        .map(|&a| if a { 0.0 } else { f64::NEG_INFINITY })
        .collect();
    s.constant(tensor_data(dt, dims, &v))
}

/// `Where(cond, 0, -inf)`.
fn select_bias(s: &mut Sub, dt: DType, cond: &str) -> String {
    let zero = s.scalar(dt, 0.0);
    let ninf = s.scalar(dt, f64::NEG_INFINITY);
    s.op("Where", &[cond, &zero, &ninf], vec![])
}

fn add_bias(s: &mut Sub, bias: Option<String>, term: String) -> Option<String> {
    Some(match bias {
        Some(b) => s.op("Add", &[&b, &term], vec![]),
        None => term,
    })
}

/// The user mask as an additive bias of `dt`, padded to the key length (masked).
fn user_mask(ctx: &NodeCtx<'_>, s: &mut Sub, dt: DType, kv: usize) -> Result<Option<String>> {
    let Some(m) = ctx.input_opt(3) else {
        return Ok(None);
    };
    let rank = m.shape.len();
    let last = match m.shape.last() {
        Some(&l) if rank <= 4 && l <= kv => l,
        _ => {
            return Err(ctx.err(format!(
                "attn_mask {:?} must have rank 1 to 4 and at most {kv} keys",
                m.shape
            )));
        }
    };
    let bool_mask = m.dtype == DType::Bool;
    if !bool_mask && !is_float(m.dtype) {
        return Err(ctx.err(format!("attn_mask of {} (bool or float)", m.dtype.name())));
    }
    let mut name = in_name(ctx, 3);
    if last < kv {
        let mut pad_shape = m.shape.to_vec();
        pad_shape[rank - 1] = kv - last;
        let n: usize = pad_shape.iter().product();
        let fill = if bool_mask { 0.0 } else { f64::NEG_INFINITY };
        let pad = s.constant(tensor_data(m.dtype, pad_shape, &vec![fill; n]));
        name = s.op(
            "Concat",
            &[&name, &pad],
            vec![A::I("axis", rank as i64 - 1)],
        );
    }
    Ok(Some(if bool_mask {
        select_bias(s, dt, &name)
    } else if m.dtype != dt {
        s.op("Cast", &[&name], vec![A::I("to", dt as i64)])
    } else {
        name
    }))
}

/// The causal and sliding-window conditions on `d = (query position + offset) - key`.
struct Band {
    causal: bool,
    left: i64,
    right: i64,
}

impl Band {
    fn active(&self) -> bool {
        self.causal || self.left >= 0 || self.right >= 0
    }

    fn allows(&self, d: i64) -> bool {
        (!self.causal || d >= 0)
            && (self.left < 0 || d <= self.left)
            && (self.right < 0 || -d <= self.right)
    }
}

/// The band as a bias when the offset is per batch: `d = nonpad[b] - (key - query + sq)`,
/// computed at run time against constant `e = key - query + sq`.
fn band_per_batch(s: &mut Sub, dt: DType, d: &Dims, band: &Band, nonpad: &str) -> String {
    let e: Vec<i64> = (0..d.sq)
        .flat_map(|i| (0..d.kv).map(move |j| j as i64 - i as i64 + d.sq as i64))
        .collect();
    let shifted = |s: &mut Sub, by: i64| {
        let v: Vec<f64> = e.iter().map(|&x| (x + by) as f64).collect();
        s.constant(tensor_data(DType::I64, vec![d.sq, d.kv], &v))
    };
    let mut conds = Vec::new();
    if band.causal {
        // d >= 0  <=>  nonpad >= e
        let c = shifted(s, 0);
        conds.push(s.op("GreaterOrEqual", &[nonpad, &c], vec![]));
    }
    if band.left >= 0 {
        // d <= left  <=>  nonpad <= e + left
        let c = shifted(s, band.left);
        conds.push(s.op("LessOrEqual", &[nonpad, &c], vec![]));
    }
    if band.right >= 0 {
        // -d <= right  <=>  nonpad >= e - right
        let c = shifted(s, -band.right);
        conds.push(s.op("GreaterOrEqual", &[nonpad, &c], vec![]));
    }
    let mut cond = conds.remove(0);
    for c in conds {
        cond = s.op("And", &[&cond, &c], vec![]);
    }
    let bias = select_bias(s, dt, &cond);
    reshape(s, &bias, &[d.b, 1, d.sq, d.kv])
}

/// Repeats each of `hkv` heads `hq / hkv` times in place (`[h0, h0, h1, h1, …]`).
fn repeat_heads(s: &mut Sub, x: &str, d: &Dims, head: usize) -> String {
    if d.hq == d.hkv {
        return x.to_string();
    }
    let r = d.hq / d.hkv;
    let u = reshape(s, x, &[d.b, d.hkv, 1, d.kv, head]);
    let shape = s.ints(&[d.b as i64, d.hkv as i64, r as i64, d.kv as i64, head as i64]);
    let e = s.op("Expand", &[&u, &shape], vec![]);
    reshape(s, &e, &[d.b, d.hq, d.kv, head])
}

fn attention(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let q = ctx.input(0)?;
    let dt = q.dtype;
    if !is_float(dt) {
        return Err(ctx.unsupported(format!(
            "{} inputs (float only: cast Q, K and V to a float type)",
            dt.name()
        )));
    }
    if [1, 2]
        .iter()
        .any(|&i| ctx.input_opt(i).is_some_and(|x| x.dtype != dt))
    {
        return Err(ctx.err("Q, K and V must share one element type"));
    }
    let d = dims(ctx)?;
    let rank = q.shape.len();
    let mode = ctx.attr_i_or("qk_matmul_output_mode", 0);
    if !(0..=3).contains(&mode) {
        return Err(ctx.err(format!("qk_matmul_output_mode {mode} is not 0..3")));
    }
    let band = Band {
        causal: ctx.attr_i_or("is_causal", 0) != 0,
        left: ctx.attr_i_or("left_window_size", -1),
        right: ctx.attr_i_or("right_window_size", -1),
    };
    if band.left < -1 || band.right < -1 {
        return Err(ctx.err("left/right_window_size must be -1 or nonnegative"));
    }
    let softmax_dt = match ctx.attr_i("softmax_precision") {
        None => dt,
        Some(p) => u8::try_from(p)
            .ok()
            .and_then(DType::from_u8)
            .filter(|t| is_float(*t))
            .ok_or_else(|| ctx.unsupported(format!("softmax_precision {p} (use a float type)")))?,
    };
    let nonpad_in = ctx.input_opt(6);
    if nonpad_in.is_some() && d.past > 0 {
        return Err(ctx.err("nonpad_kv_seqlen cannot be combined with past_key/past_value"));
    }

    let mut s = Sub::new(ctx);
    let (k, v) = (ctx.input(1)?, ctx.input(2)?);
    let qn = heads(&mut s, &in_name(ctx, 0), q.shape, d.hq);
    let mut kn = heads(&mut s, &in_name(ctx, 1), k.shape, d.hkv);
    let mut vn = heads(&mut s, &in_name(ctx, 2), v.shape, d.hkv);
    if d.past > 0 {
        kn = s.op("Concat", &[&in_name(ctx, 4), &kn], vec![A::I("axis", 2)]);
        vn = s.op("Concat", &[&in_name(ctx, 5), &vn], vec![A::I("axis", 2)]);
    }
    if let Some(o) = out(ctx, 1) {
        s.to("Identity", &[&kn], &[&o], vec![]);
    }
    if let Some(o) = out(ctx, 2) {
        s.to("Identity", &[&vn], &[&o], vec![]);
    }

    // The additive bias, and whether some row may be masked entirely.
    let nonpad = match nonpad_in {
        Some(n) if n.shape.iter().product::<usize>() == d.b => {
            let mut x = in_name(ctx, 6);
            if n.dtype != DType::I64 {
                x = s.op("Cast", &[&x], vec![A::I("to", DType::I64 as i64)]);
            }
            Some(x)
        }
        Some(n) => {
            return Err(ctx.err(format!(
                "nonpad_kv_seqlen {:?} must hold one length per batch ({})",
                n.shape, d.b
            )));
        }
        None => None,
    };
    let mut bias = user_mask(ctx, &mut s, dt, d.kv)?;
    let mut may_mask_row = bias.is_some() || nonpad.is_some();
    if band.active() {
        let term = match &nonpad {
            Some(np) => {
                let npb = reshape(&mut s, np, &[d.b, 1, 1]);
                band_per_batch(&mut s, dt, &d, &band, &npb)
            }
            None => {
                let off = d.past as i64;
                let allowed: Vec<bool> = (0..d.sq as i64)
                    .flat_map(|i| (0..d.kv as i64).map(move |j| (i, j)))
                    .map(|(i, j)| band.allows(i + off - j))
                    .collect();
                may_mask_row |= allowed.chunks(d.kv.max(1)).any(|r| r.iter().all(|a| !a));
                bias_const(&mut s, dt, vec![d.sq, d.kv], &allowed)
            }
        };
        bias = add_bias(&mut s, bias, term);
    }
    if let Some(np) = &nonpad {
        let keys: Vec<f64> = (0..d.kv).map(|j| j as f64).collect();
        let keys = s.constant(tensor_data(DType::I64, vec![1, d.kv], &keys));
        let npb = reshape(&mut s, np, &[d.b, 1]);
        let cond = s.op("Less", &[&keys, &npb], vec![]);
        let pad = select_bias(&mut s, dt, &cond);
        let term = reshape(&mut s, &pad, &[d.b, 1, 1, d.kv]);
        bias = add_bias(&mut s, bias, term);
    }

    // Scores: (Q·Kᵀ)·scale, the form the fusion pass folds into one Attention task (the
    // function body scales Q and K by sqrt(scale) each; equal up to rounding).
    let scale = match ctx.attr_f("scale") {
        Some(x) => x as f64,
        None => 1.0 / (d.dq as f64).sqrt(),
    };
    let k_rep = repeat_heads(&mut s, &kn, &d, d.dq);
    let v_rep = repeat_heads(&mut s, &vn, &d, d.dv);
    let kt = s.op(
        "Transpose",
        &[&k_rep],
        vec![A::Is("perm", vec![0, 1, 3, 2])],
    );
    let qk = s.op("MatMul", &[&qn, &kt], vec![]);
    let scale_c = s.scalar(dt, scale);
    let mut scores = s.op("Mul", &[&qk, &scale_c], vec![]);
    let softcap = ctx.attr_f_or("softcap", 0.0);
    if softcap > 0.0 {
        let c = s.scalar(dt, softcap as f64);
        let x = s.op("Div", &[&scores, &c], vec![]);
        let t = s.op("Tanh", &[&x], vec![]);
        scores = s.op("Mul", &[&t, &c], vec![]);
    }
    let qk_out = out(ctx, 3);
    if let (Some(o), 0 | 1) = (&qk_out, mode) {
        s.to("Identity", &[&scores], &[o], vec![]);
    }
    let biased = match &bias {
        Some(b) => s.op("Add", &[&scores, b], vec![]),
        None => scores,
    };
    if let (Some(o), 2) = (&qk_out, mode) {
        s.to("Identity", &[&biased], &[o], vec![]);
    }
    let logits = if softmax_dt != dt {
        s.op("Cast", &[&biased], vec![A::I("to", softmax_dt as i64)])
    } else {
        biased
    };
    let mut probs = s.op("Softmax", &[&logits], vec![A::I("axis", -1)]);
    if let (Some(b), true) = (&bias, may_mask_row) {
        // A row whose bias is all -inf attends nothing: zero it (softmax would give NaN).
        let m = reduce(&mut s, ctx.opset, "ReduceMax", b, &[-1], true);
        let ninf = s.scalar(dt, f64::NEG_INFINITY);
        let dead = s.op("Equal", &[&m, &ninf], vec![]);
        let zero = s.scalar(softmax_dt, 0.0);
        probs = s.op("Where", &[&dead, &zero, &probs], vec![]);
    }
    if softmax_dt != dt {
        probs = s.op("Cast", &[&probs], vec![A::I("to", dt as i64)]);
    }
    if let (Some(o), 3) = (&qk_out, mode) {
        s.to("Identity", &[&probs], &[o], vec![]);
    }
    let y = out0(ctx)?;
    if rank == 4 {
        s.to("MatMul", &[&probs, &v_rep], &[&y], vec![]);
    } else {
        let o = s.op("MatMul", &[&probs, &v_rep], vec![]);
        let t = s.op("Transpose", &[&o], vec![A::Is("perm", vec![0, 2, 1, 3])]);
        let shape = s.ints(&[d.b as i64, d.sq as i64, (d.hq * d.dv) as i64]);
        s.to("Reshape", &[&t, &shape], &[&y], vec![]);
    }
    Ok(s.done())
}
