//! The optimizers of the `ai.onnx.preview.training` domain — `Adagrad`, `Momentum` (standard
//! and Nesterov), `Adam` — as elementwise decompositions: one update per (X, G, state...)
//! group, sharing the learning rate R and step count T (read at run time). The domain's
//! models import no default opset, so their decompositions are imported at the newest one.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out};
use super::registry::dtypes::FLOAT;
use super::registry::{MIN_OPSET, OpEntry};
use super::sub::{A, Sub};
use crate::error::Result;

/// The domain these ops live in.
pub const DOMAIN: &str = "ai.onnx.preview.training";

/// The optimizers, registered in [`DOMAIN`] (its opset is not the default domain's; the
/// decompositions import at the newest default opset).
pub const OPS: &[OpEntry] = &[
    OpEntry::decomposed("Adagrad", MIN_OPSET, FLOAT, |c| optimizer(c, 3)).in_domain(DOMAIN),
    OpEntry::decomposed("Momentum", MIN_OPSET, FLOAT, |c| optimizer(c, 3)).in_domain(DOMAIN),
    OpEntry::decomposed("Adam", MIN_OPSET, FLOAT, |c| optimizer(c, 4)).in_domain(DOMAIN),
];

/// Shared scalars of one node, as float32 values of the decomposition.
struct Scalars {
    r: String,
    t: String,
    t_pos: String,
}

/// One parameter group's update inputs: the regularized gradient and the state tensors.
struct Update<'a> {
    sc: &'a Scalars,
    x: &'a str,
    gr: &'a str,
    state: &'a [String],
}

/// `a * x` for a constant `a` (skipped when `a` is 1).
fn scale(s: &mut Sub, a: f64, x: &str) -> String {
    if a == 1.0 {
        return x.to_string();
    }
    let c = s.scalar(DType::F32, a);
    s.op("Mul", &[&c, x], vec![])
}

/// R, T (as f32) and T > 0 for the updates.
fn scalars(ctx: &NodeCtx<'_>, s: &mut Sub) -> Result<Scalars> {
    let r = ctx.input(0)?;
    let t = ctx.input(1)?;
    if r.dtype != DType::F32 || t.dtype != DType::I64 || r.shape.len() > 1 || t.shape.len() > 1 {
        return Err(ctx.err("R must be a float32 and T an int64 scalar"));
    }
    let zero = s.scalar(DType::I64, 0.0);
    let t_pos = s.op("Greater", &[&in_name(ctx, 1), &zero], vec![]);
    let tf = s.op(
        "Cast",
        &[&in_name(ctx, 1)],
        vec![A::I("to", DType::F32 as i64)],
    );
    Ok(Scalars {
        r: in_name(ctx, 0),
        t: tf,
        t_pos,
    })
}

/// Adagrad / Momentum (`per` = 3 inputs per group: X, G, H or V) and Adam (`per` = 4: X, G,
/// V, H); inputs are R, T, then all X, all G, all V, all H; outputs all X_new, then the
/// states.
fn optimizer(ctx: &NodeCtx<'_>, per: usize) -> Result<Imported> {
    let n_in = ctx.input_count();
    if n_in < 2 + per || !(n_in - 2).is_multiple_of(per) {
        return Err(ctx.err(format!("expected R, T and groups of {per} inputs")));
    }
    let n = (n_in - 2) / per;
    for i in 2..n_in {
        if ctx.input(i)?.dtype != DType::F32 {
            return Err(ctx.unsupported("optimizer tensors other than float32"));
        }
    }
    let mut s = Sub::new(ctx);
    let sc = scalars(ctx, &mut s)?;
    let norm = ctx.attr_f_or("norm_coefficient", 0.0) as f64;
    for i in 0..n {
        let x = in_name(ctx, 2 + i);
        let g = in_name(ctx, 2 + n + i);
        let state: Vec<String> = (2..per).map(|k| in_name(ctx, 2 + k * n + i)).collect();
        let nx = scale(&mut s, norm, &x);
        let gr = s.op("Add", &[&nx, &g], vec![]);
        let u = Update {
            sc: &sc,
            x: &x,
            gr: &gr,
            state: &state,
        };
        let (x_new, states) = match ctx.node.op_type() {
            "Adagrad" => adagrad(ctx, &mut s, &u),
            "Momentum" => momentum(ctx, &mut s, &u)?,
            _ => adam(ctx, &mut s, &u),
        };
        if let Some(o) = out(ctx, i) {
            s.to("Identity", &[&x_new], &[&o], vec![]);
        }
        for (k, st) in states.iter().enumerate() {
            if let Some(o) = out(ctx, (k + 1) * n + i) {
                s.to("Identity", &[st], &[&o], vec![]);
            }
        }
    }
    Ok(s.done())
}

/// `sqrt(h) + epsilon`, the denominator of the adaptive updates.
fn root_plus_eps(ctx: &NodeCtx<'_>, s: &mut Sub, h: &str) -> String {
    let eps = s.scalar(DType::F32, ctx.attr_f_or("epsilon", 0.0) as f64);
    let sq = s.op("Sqrt", &[h], vec![]);
    s.op("Add", &[&sq, &eps], vec![])
}

/// Adagrad: `H' = H + g^2`, `X' = X - R / (1 + T * decay) * g / (sqrt(H') + eps)`.
fn adagrad(ctx: &NodeCtx<'_>, s: &mut Sub, u: &Update<'_>) -> (String, Vec<String>) {
    let (sc, x, gr, h) = (u.sc, u.x, u.gr, &u.state[0]);
    let decay = ctx.attr_f_or("decay_factor", 0.0) as f64;
    let one = s.scalar(DType::F32, 1.0);
    let td = scale(s, decay, &sc.t);
    let den = s.op("Add", &[&one, &td], vec![]);
    let rate = s.op("Div", &[&sc.r, &den], vec![]);
    let g2 = s.op("Mul", &[gr, gr], vec![]);
    let h_new = s.op("Add", &[h, &g2], vec![]);
    let hs = root_plus_eps(ctx, s, &h_new);
    let step = s.op("Mul", &[&rate, gr], vec![]);
    let step = s.op("Div", &[&step, &hs], vec![]);
    (s.op("Sub", &[x, &step], vec![]), vec![h_new])
}

/// Momentum: `V' = alpha V + (T > 0 ? beta : 1) g`; standard `X' = X - R V'`, Nesterov
/// `X' = X - R (g + alpha V')`.
fn momentum(ctx: &NodeCtx<'_>, s: &mut Sub, u: &Update<'_>) -> Result<(String, Vec<String>)> {
    let (sc, x, gr, v) = (u.sc, u.x, u.gr, &u.state[0]);
    let alpha = ctx.attr_f_or("alpha", 0.0) as f64;
    let beta = s.scalar(DType::F32, ctx.attr_f_or("beta", 0.0) as f64);
    let one = s.scalar(DType::F32, 1.0);
    let b = s.op("Where", &[&sc.t_pos, &beta, &one], vec![]);
    let av = scale(s, alpha, v);
    let bg = s.op("Mul", &[&b, gr], vec![]);
    let v_new = s.op("Add", &[&av, &bg], vec![]);
    let dir = match ctx.attr_s_or("mode", "standard").as_str() {
        "standard" => v_new.clone(),
        "nesterov" => {
            let av2 = scale(s, alpha, &v_new);
            s.op("Add", &[gr, &av2], vec![])
        }
        m => return Err(ctx.err(format!("mode '{m}' is not standard or nesterov"))),
    };
    let step = s.op("Mul", &[&sc.r, &dir], vec![]);
    Ok((s.op("Sub", &[x, &step], vec![]), vec![v_new]))
}

/// Adam: `V' = alpha V + (1 - alpha) g`, `H' = beta H + (1 - beta) g^2`, the rate corrected
/// by `sqrt(1 - beta^T) / (1 - alpha^T)` when T > 0, then the post-update decay.
fn adam(ctx: &NodeCtx<'_>, s: &mut Sub, u: &Update<'_>) -> (String, Vec<String>) {
    let (sc, x, gr) = (u.sc, u.x, u.gr);
    let (v, h) = (&u.state[0], &u.state[1]);
    let alpha = ctx.attr_f_or("alpha", 0.9) as f64;
    let beta = ctx.attr_f_or("beta", 0.999) as f64;
    let post = ctx.attr_f_or("norm_coefficient_post", 0.0) as f64;
    let av = scale(s, alpha, v);
    let ag = scale(s, 1.0 - alpha, gr);
    let v_new = s.op("Add", &[&av, &ag], vec![]);
    let bh = scale(s, beta, h);
    let g2 = s.op("Mul", &[gr, gr], vec![]);
    let bg = scale(s, 1.0 - beta, &g2);
    let h_new = s.op("Add", &[&bh, &bg], vec![]);
    let hs = root_plus_eps(ctx, s, &h_new);
    let one = s.scalar(DType::F32, 1.0);
    let pow = |s: &mut Sub, base: f64| {
        let b = s.scalar(DType::F32, base);
        let p = s.op("Pow", &[&b, &sc.t], vec![]);
        s.op("Sub", &[&one, &p], vec![])
    };
    let bc = pow(s, beta);
    let bc = s.op("Sqrt", &[&bc], vec![]);
    let ac = pow(s, alpha);
    let corr = s.op("Div", &[&bc, &ac], vec![]);
    let corr = s.op("Where", &[&sc.t_pos, &corr, &one], vec![]);
    let rate = s.op("Mul", &[&sc.r, &corr], vec![]);
    let q = s.op("Div", &[&v_new, &hs], vec![]);
    let step = s.op("Mul", &[&rate, &q], vec![]);
    let x_new = s.op("Sub", &[x, &step], vec![]);
    (scale(s, 1.0 - post, &x_new), vec![v_new, h_new])
}
