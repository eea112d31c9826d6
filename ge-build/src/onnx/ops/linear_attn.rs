//! LinearAttention (opset 27): the recurrence `S_t = f(S_{t-1}, k_t, v_t)`, `o_t = scale ·
//! q_tᵀ S_t`, unrolled over the static sequence length into per-step MatMuls in f32 (as the
//! ONNX function body's Scan does), with grouped query heads reading their shared KV state.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out, out0, reshape};
use super::is_float;
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// Bound on unrolled steps, so a long prefill fails clearly instead of producing an
/// enormous graph.
const MAX_STEPS: usize = 4096;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[OpEntry::decomposed(
    "LinearAttention",
    27,
    FLOAT,
    linear_attention,
)];

fn positive_attr(ctx: &NodeCtx<'_>, name: &str) -> Result<usize> {
    let v = ctx
        .attr_i(name)
        .ok_or_else(|| ctx.err(format!("{name} is required")))?;
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| ctx.err(format!("{name} must be positive, got {v}")))
}

fn linear_attention(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let rule = ctx.attr_s_or("update_rule", "gated_delta");
    let (gating, delta) = match rule.as_str() {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        r => {
            return Err(ctx.err(format!(
                "update_rule '{r}' is not linear, gated, delta or gated_delta"
            )));
        }
    };
    let hq = positive_attr(ctx, "q_num_heads")?;
    let hkv = positive_attr(ctx, "kv_num_heads")?;
    if hq % hkv != 0 {
        return Err(ctx.err(format!(
            "q_num_heads {hq} is not a multiple of kv_num_heads {hkv}"
        )));
    }
    let (q, k, v) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    if !is_float(q.dtype) {
        return Err(ctx.unsupported(format!("{} query", q.dtype.name())));
    }
    for (name, x) in [("query", q), ("key", k), ("value", v)] {
        if x.shape.len() != 3 {
            return Err(ctx.err(format!("{name} must be (B, T, H*D), got {:?}", x.shape)));
        }
    }
    let (b, t) = (q.shape[0], q.shape[1]);
    if k.shape[..2] != [b, t] || v.shape[..2] != [b, t] {
        return Err(ctx.err("query, key and value differ in batch or sequence length"));
    }
    if q.shape[2] % hq != 0 || v.shape[2] % hkv != 0 || k.shape[2] != q.shape[2] / hq * hkv {
        return Err(ctx.err(format!(
            "query {:?}, key {:?}, value {:?} do not split into {hq}/{hkv} heads",
            q.shape, k.shape, v.shape
        )));
    }
    if t == 0 || t > MAX_STEPS {
        return Err(ctx.unsupported(format!(
            "sequence length {t} (unrolled: 1 to {MAX_STEPS} steps)"
        )));
    }
    let (dk, dv, g) = (q.shape[2] / hq, v.shape[2] / hkv, hq / hkv);
    if gating != ctx.input_opt(4).is_some() || delta != ctx.input_opt(5).is_some() {
        return Err(ctx.err(format!(
            "update_rule '{rule}' {} decay and {} beta",
            if gating { "needs" } else { "forbids" },
            if delta { "needs" } else { "forbids" }
        )));
    }
    let mut s = Sub::new(ctx);
    let f32_of = |s: &mut Sub, i: usize, dt: DType| {
        let n = in_name(ctx, i);
        if dt == DType::F32 {
            n
        } else {
            s.op("Cast", &[&n], vec![A::I("to", DType::F32 as i64)])
        }
    };
    let (qf, kf, vf) = (
        f32_of(&mut s, 0, q.dtype),
        f32_of(&mut s, 1, k.dtype),
        f32_of(&mut s, 2, v.dtype),
    );
    // Per-step decay shape (B, H_kv, 1 | d_k, 1) and beta shape (B, H_kv | 1, 1, 1).
    let decay = match ctx.input_opt(4) {
        Some(d) => {
            let last = d.shape.get(2).copied().unwrap_or(0);
            if d.shape.len() != 3 || d.shape[..2] != [b, t] || (last != hkv && last != hkv * dk) {
                return Err(ctx.err(format!("decay {:?} is not (B, T, H_kv[*d_k])", d.shape)));
            }
            Some((f32_of(&mut s, 4, d.dtype), [b, hkv, last / hkv, 1]))
        }
        None => None,
    };
    let beta = match ctx.input_opt(5) {
        Some(d) => {
            let last = d.shape.get(2).copied().unwrap_or(0);
            if d.shape.len() != 3 || d.shape[..2] != [b, t] || (last != hkv && last != 1) {
                return Err(ctx.err(format!("beta {:?} is not (B, T, H_kv or 1)", d.shape)));
            }
            Some((f32_of(&mut s, 5, d.dtype), [b, last, 1, 1]))
        }
        None => None,
    };
    let state_shape = [b, hkv, dk, dv];
    let (mut state, state_dtype) = match ctx.input_opt(3) {
        Some(p) => {
            if p.shape != state_shape {
                return Err(ctx.err(format!("past_state {:?} is not {state_shape:?}", p.shape)));
            }
            (f32_of(&mut s, 3, p.dtype), p.dtype)
        }
        None => {
            let zeros = vec![0.0; b * hkv * dk * dv];
            let z = s.constant(tensor_data(DType::F32, state_shape.to_vec(), &zeros));
            (z, q.dtype)
        }
    };
    let scale = match ctx.attr_f_or("scale", 0.0) {
        0.0 => 1.0 / (dk as f64).sqrt(),
        x => x as f64,
    };
    let mut steps = Vec::with_capacity(t);
    for i in 0..t {
        let idx = s.i64s(&[i as i64], &[]);
        let step = |s: &mut Sub, x: &str, shape: &[usize]| {
            let xt = s.op("Gather", &[x, &idx], vec![A::I("axis", 1)]);
            reshape(s, &xt, shape)
        };
        if let Some((d, shape)) = &decay {
            let dt = step(&mut s, d, shape);
            let e = s.op("Exp", &[&dt], vec![]);
            state = s.op("Mul", &[&state, &e], vec![]);
        }
        let kcol = step(&mut s, &kf, &[b, hkv, dk, 1]);
        let mut write = step(&mut s, &vf, &[b, hkv, 1, dv]);
        if let Some((bn, shape)) = &beta {
            // v_t ← β_t (v_t − Sᵀk_t), as a row: (k_tᵀ S) is (B, H_kv, 1, d_v).
            let krow = reshape(&mut s, &kcol, &[b, hkv, 1, dk]);
            let got = s.op("MatMul", &[&krow, &state], vec![]);
            let diff = s.op("Sub", &[&write, &got], vec![]);
            let bt = step(&mut s, bn, shape);
            write = s.op("Mul", &[&bt, &diff], vec![]);
        }
        let outer = s.op("MatMul", &[&kcol, &write], vec![]);
        state = s.op("Add", &[&state, &outer], vec![]);
        // Query heads h = kv·g + j read KV head kv: (B, H_kv, g, d_k) @ S.
        let qt = step(&mut s, &qf, &[b, hkv, g, dk]);
        let o = s.op("MatMul", &[&qt, &state], vec![]);
        steps.push(reshape(&mut s, &o, &[b, 1, hq * dv]));
    }
    let refs: Vec<&str> = steps.iter().map(String::as_str).collect();
    let cat = s.op("Concat", &refs, vec![A::I("axis", 1)]);
    let sc = s.scalar(DType::F32, scale);
    let scaled = s.op("Mul", &[&sc, &cat], vec![]);
    let y = out0(ctx)?;
    if q.dtype == DType::F32 {
        s.to("Identity", &[&scaled], &[&y], vec![]);
    } else {
        s.to("Cast", &[&scaled], &[&y], vec![A::I("to", q.dtype as i64)]);
    }
    if let Some(o) = out(ctx, 1) {
        s.to(
            "Cast",
            &[&state],
            &[&o],
            vec![A::I("to", state_dtype as i64)],
        );
    }
    Ok(s.done())
}
