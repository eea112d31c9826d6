//! RNN, GRU and LSTM: validated here, then lowered to one `Recurrent` task per node
//! ([`super::recurrent_task`]) when the kernel covers them (f32 and halves: every attribute
//! and optional input of the spec). Otherwise — f64 layers and onnxruntime's
//! DynamicQuantizeLSTM — unrolled over their (static) sequence length into MatMul, Add, the
//! gate activations and Concat: the input projection of every step is one MatMul up front,
//! each step adds the recurrent projection. Directions run separately (reverse walks time
//! backwards); `sequence_lens` masks steps past a batch entry's length with Where, which
//! holds the state and zeroes Y there.
//!
//! onnxruntime's DynamicQuantizeLSTM is the LSTM with int8 weights stored transposed
//! (`[dirs, input, 4H]`): each of its GEMMs quantizes its float operand to uint8 at run time
//! (DynamicQuantizeLinear over the whole operand: all steps of X at once, the batch's H per
//! step) and multiplies in int32, as onnxruntime's kernel does.

use ge_runtime::format::{DType, RecurrentCell};

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out, reshape, slice};
use super::is_float;
use super::recurrent_task;
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::sub::{A, Sub};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::kernel("GRU", 7, FLOAT, |c| recurrent(c, Kind::Gru, false)).note(LAYER),
    OpEntry::kernel("LSTM", 7, FLOAT, |c| recurrent(c, Kind::Lstm, false)).note(LAYER),
    OpEntry::kernel("RNN", 7, FLOAT, |c| recurrent(c, Kind::Rnn, false)).note(LAYER),
];

const LAYER: &str = "one Recurrent task per node (f64: unrolled over the sequence)";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rnn,
    Gru,
    Lstm,
}

impl Kind {
    fn gates(self) -> usize {
        match self {
            Kind::Rnn => 1,
            Kind::Gru => 3,
            Kind::Lstm => 4,
        }
    }

    fn default_activations(self) -> &'static [&'static str] {
        match self {
            Kind::Rnn => &["Tanh"],
            Kind::Gru => &["Sigmoid", "Tanh"],
            Kind::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// One activation function with its alpha/beta resolved.
#[derive(Clone)]
struct Act {
    name: String,
    alpha: Option<f32>,
    beta: Option<f32>,
}

/// Default (alpha, beta) of an activation, `None` for a parameter it does not take; `Err`
/// for names the spec does not define.
fn act_params(name: &str) -> std::result::Result<(Option<f32>, Option<f32>), ()> {
    Ok(match name {
        "relu" | "tanh" | "sigmoid" | "softsign" | "softplus" => (None, None),
        "leakyrelu" => (Some(0.01), None),
        "thresholdedrelu" | "elu" => (Some(1.0), None),
        "hardsigmoid" => (Some(0.2), Some(0.5)),
        "affine" => (Some(1.0), Some(0.0)),
        "scaledtanh" => (Some(1.0), Some(1.0)),
        _ => return Err(()),
    })
}

/// The activations per direction: `activations` (lists for both directions when
/// bidirectional), alphas and betas consumed in order by the functions that take them.
fn activations(ctx: &NodeCtx<'_>, kind: Kind, dirs: usize) -> Result<Vec<Vec<Act>>> {
    let n = kind.default_activations().len();
    let names = match ctx.attr_strs("activations") {
        Some(v) if v.len() == n * dirs => v,
        Some(v) if v.len() == n => (0..dirs).flat_map(|_| v.iter().cloned()).collect(),
        Some(v) => {
            return Err(ctx.err(format!(
                "{} activations given; {kind_n} per direction expected",
                v.len(),
                kind_n = n
            )));
        }
        None => (0..dirs)
            .flat_map(|_| kind.default_activations().iter().map(|s| s.to_string()))
            .collect(),
    };
    let mut alphas = ctx
        .attr_floats("activation_alpha")
        .unwrap_or_default()
        .into_iter();
    let mut betas = ctx
        .attr_floats("activation_beta")
        .unwrap_or_default()
        .into_iter();
    let mut acts = Vec::with_capacity(names.len());
    for name in names {
        let lower = name.to_ascii_lowercase();
        let (a, b) = act_params(&lower).map_err(|()| {
            ctx.unsupported(format!(
                "activation '{name}' (use Relu, Tanh, Sigmoid, Affine, LeakyRelu, \
                 ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign or Softplus)"
            ))
        })?;
        acts.push(Act {
            name: lower,
            alpha: a.map(|d| alphas.next().unwrap_or(d)),
            beta: b.map(|d| betas.next().unwrap_or(d)),
        });
    }
    Ok(acts.chunks(n).map(<[Act]>::to_vec).collect())
}

fn apply(s: &mut Sub, dt: DType, act: &Act, x: &str) -> String {
    let alpha = act.alpha.unwrap_or(1.0);
    let beta = act.beta.unwrap_or(0.0);
    match act.name.as_str() {
        "relu" => s.op("Relu", &[x], vec![]),
        "tanh" => s.op("Tanh", &[x], vec![]),
        "sigmoid" => s.op("Sigmoid", &[x], vec![]),
        "softsign" => s.op("Softsign", &[x], vec![]),
        "softplus" => s.op("Softplus", &[x], vec![]),
        "leakyrelu" => s.op("LeakyRelu", &[x], vec![A::F("alpha", alpha)]),
        "thresholdedrelu" => s.op("ThresholdedRelu", &[x], vec![A::F("alpha", alpha)]),
        "elu" => s.op("Elu", &[x], vec![A::F("alpha", alpha)]),
        "hardsigmoid" => s.op(
            "HardSigmoid",
            &[x],
            vec![A::F("alpha", alpha), A::F("beta", beta)],
        ),
        "affine" => {
            let (a, b) = (s.scalar(dt, alpha as f64), s.scalar(dt, beta as f64));
            let m = s.op("Mul", &[x, &a], vec![]);
            s.op("Add", &[&m, &b], vec![])
        }
        // scaledtanh: alpha * tanh(beta * x)
        _ => {
            let (a, b) = (s.scalar(dt, alpha as f64), s.scalar(dt, beta as f64));
            let m = s.op("Mul", &[x, &b], vec![]);
            let t = s.op("Tanh", &[&m], vec![]);
            s.op("Mul", &[&t, &a], vec![])
        }
    }
}

/// Static sizes and options of one node.
struct Cfg {
    kind: Kind,
    dt: DType,
    t: usize,
    b: usize,
    h: usize,
    layout: bool,
    clip: Option<f32>,
    lbr: bool,
    input_forget: bool,
    /// X as `[T, B, input]`.
    x_tbi: String,
    /// Per step, where it lies inside each batch entry's sequence (`sequence_lens`).
    masks: Option<Vec<String>>,
    /// DynamicQuantizeLSTM: int8 weights `[dirs, in, 4H]` with scales and zero points at
    /// inputs 8..=11.
    quantized: bool,
}

/// `x @ w` for direction `d`: a float MatMul, or for quantized weights (input `wi`, scale
/// and zero point at `wi * 2 + 8` and `+ 9`) x quantized to uint8 at run time, an int32
/// product, and the product of the scales.
fn project(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    cfg: &Cfg,
    d: usize,
    x: &str,
    w: &str,
    wi: usize,
) -> String {
    if !cfg.quantized {
        return s.op("MatMul", &[x, w], vec![]);
    }
    let op = ctx.opset;
    let per_dir = |s: &mut Sub, i: usize| {
        let shape = ctx
            .input_opt(i)
            .map(|t| t.shape.to_vec())
            .unwrap_or_default();
        let p = slice(s, op, &in_name(ctx, i), 0, d as i64, d as i64 + 1);
        let rest: Vec<usize> = shape.iter().skip(1).copied().collect();
        reshape(s, &p, &rest)
    };
    let (xq, xs, xz) = (s.fresh(), s.fresh(), s.fresh());
    s.to("DynamicQuantizeLinear", &[x], &[&xq, &xs, &xz], vec![]);
    let wz = per_dir(s, wi * 2 + 9);
    let acc = s.op("MatMulInteger", &[&xq, w, &xz, &wz], vec![]);
    let f = s.op("Cast", &[&acc], vec![A::I("to", DType::F32 as i64)]);
    let ws = per_dir(s, wi * 2 + 8);
    let m = s.op("Mul", &[&xs, &ws], vec![]);
    s.op("Mul", &[&f, &m], vec![])
}

impl Cfg {
    /// Clips a gate's pre-activation to `[-clip, clip]` when asked.
    fn clip(&self, s: &mut Sub, x: String) -> String {
        match self.clip {
            None => x,
            Some(c) => {
                let (lo, hi) = (s.scalar(self.dt, -c as f64), s.scalar(self.dt, c as f64));
                let m = s.op("Max", &[&x, &lo], vec![]);
                s.op("Min", &[&m, &hi], vec![])
            }
        }
    }
}

/// Direction `d` of a `[dirs, …]` input as `shape`.
fn dir_part(s: &mut Sub, op: i64, x: &str, d: usize, shape: &[usize]) -> String {
    let p = slice(s, op, x, 0, d as i64, d as i64 + 1);
    reshape(s, &p, shape)
}

/// Gate `k` (of width `h`) along the last axis of a `[B, n·h]` value.
fn gate(s: &mut Sub, op: i64, x: &str, k: usize, h: usize) -> String {
    slice(s, op, x, 1, (k * h) as i64, ((k + 1) * h) as i64)
}

/// The outputs of one direction: Y per time step (in time order), final H and C.
struct DirOut {
    ys: Vec<String>,
    h: String,
    c: Option<String>,
}

/// The float recurrent matrix `[g·h, h]` transposed for `H @ Rᵀ` (GRU: z and r only) and,
/// for GRU, its transposed Rh.
fn float_recurrent(s: &mut Sub, op: i64, r: &str, h: usize, gru: bool) -> (String, Option<String>) {
    if gru {
        let zr = slice(s, op, r, 0, 0, 2 * h as i64);
        let rh = slice(s, op, r, 0, 2 * h as i64, 3 * h as i64);
        let zr_t = s.op("Transpose", &[&zr], vec![A::Is("perm", vec![1, 0])]);
        let rh_t = s.op("Transpose", &[&rh], vec![A::Is("perm", vec![1, 0])]);
        (zr_t, Some(rh_t))
    } else {
        (
            s.op("Transpose", &[r], vec![A::Is("perm", vec![1, 0])]),
            None,
        )
    }
}

/// Runs direction `d` (weights index `d`; `reverse` walks time backwards).
fn direction(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    cfg: &Cfg,
    d: usize,
    reverse: bool,
    acts: &[Act],
) -> Result<DirOut> {
    let op = ctx.opset;
    let (dt, h, b, g) = (cfg.dt, cfg.h, cfg.b, cfg.kind.gates());
    let input = ctx.input(0)?.shape[2];
    let gru = cfg.kind == Kind::Gru;
    // The recurrent matrix multiplied with H every step (GRU: z and r only) and GRU's Rh.
    let (wt, rt_main, rh_t) = if cfg.quantized {
        let w = dir_part(s, op, &in_name(ctx, 1), d, &[input, g * h]);
        let r = dir_part(s, op, &in_name(ctx, 2), d, &[h, g * h]);
        (w, r, None)
    } else {
        let w = dir_part(s, op, &in_name(ctx, 1), d, &[g * h, input]);
        let wt = s.op("Transpose", &[&w], vec![A::Is("perm", vec![1, 0])]);
        let r = dir_part(s, op, &in_name(ctx, 2), d, &[g * h, h]);
        let (rt, rh) = float_recurrent(s, op, &r, h, gru);
        (wt, rt, rh)
    };
    // Input projections of all steps, with the biases that add straight onto them.
    let mut xw = project(ctx, s, cfg, d, &cfg.x_tbi, &wt, 0);
    let mut rbh = None;
    if ctx.input_opt(3).is_some() {
        let bias = dir_part(s, op, &in_name(ctx, 3), d, &[2 * g * h]);
        let wb = slice(s, op, &bias, 0, 0, (g * h) as i64);
        let rb = slice(s, op, &bias, 0, (g * h) as i64, (2 * g * h) as i64);
        let rb_x = if gru {
            rbh = Some(slice(s, op, &rb, 0, 2 * h as i64, 3 * h as i64));
            let zr = slice(s, op, &rb, 0, 0, 2 * h as i64);
            let zeros = s.constant(super::sub::tensor_data(dt, vec![h], &vec![0.0; h]));
            s.op("Concat", &[&zr, &zeros], vec![A::I("axis", 0)])
        } else {
            rb
        };
        let both = s.op("Add", &[&wb, &rb_x], vec![]);
        xw = s.op("Add", &[&xw, &both], vec![]);
    }
    let peep = match ctx.input_opt(7) {
        Some(_) if cfg.kind == Kind::Lstm => {
            let p = dir_part(s, op, &in_name(ctx, 7), d, &[3 * h]);
            Some([0, 1, 2].map(|k| slice(s, op, &p, 0, (k * h) as i64, ((k + 1) * h) as i64)))
        }
        _ => None,
    };
    let init = |s: &mut Sub, i: usize| -> Result<String> {
        if ctx.input_opt(i).is_none() {
            let zeros = vec![0.0; b * h];
            return Ok(s.constant(super::sub::tensor_data(dt, vec![b, h], &zeros)));
        }
        let axis = if cfg.layout { 1 } else { 0 };
        let p = slice(s, op, &in_name(ctx, i), axis, d as i64, d as i64 + 1);
        Ok(reshape(s, &p, &[b, h]))
    };
    let mut hs = init(s, 5)?;
    let mut cs = if cfg.kind == Kind::Lstm {
        Some(init(s, 6)?)
    } else {
        None
    };
    let mut ys = vec![String::new(); cfg.t];
    let steps: Vec<usize> = if reverse {
        (0..cfg.t).rev().collect()
    } else {
        (0..cfg.t).collect()
    };
    for t in steps {
        let xt_s = slice(s, op, &xw, 0, t as i64, t as i64 + 1);
        let xt = reshape(s, &xt_s, &[b, g * h]);
        let hr = project(ctx, s, cfg, d, &hs, &rt_main, 1);
        let (h_new, c_new) = match cfg.kind {
            Kind::Rnn => {
                let pre = s.op("Add", &[&xt, &hr], vec![]);
                let pre = cfg.clip(s, pre);
                (apply(s, dt, &acts[0], &pre), None)
            }
            Kind::Gru => {
                let xzr = slice(s, op, &xt, 1, 0, 2 * h as i64);
                let xh = gate(s, op, &xt, 2, h);
                let pre = s.op("Add", &[&xzr, &hr], vec![]);
                let zp = gate(s, op, &pre, 0, h);
                let zp = cfg.clip(s, zp);
                let z = apply(s, dt, &acts[0], &zp);
                let rp = gate(s, op, &pre, 1, h);
                let rp = cfg.clip(s, rp);
                let rg = apply(s, dt, &acts[0], &rp);
                let rh_t = rh_t.as_deref().unwrap_or_default();
                let term = if cfg.lbr {
                    let mut m = s.op("MatMul", &[&hs, rh_t], vec![]);
                    if let Some(rb) = &rbh {
                        m = s.op("Add", &[&m, rb], vec![]);
                    }
                    s.op("Mul", &[&rg, &m], vec![])
                } else {
                    let rh = s.op("Mul", &[&rg, &hs], vec![]);
                    let mut m = s.op("MatMul", &[&rh, rh_t], vec![]);
                    if let Some(rb) = &rbh {
                        m = s.op("Add", &[&m, rb], vec![]);
                    }
                    m
                };
                let hp = s.op("Add", &[&xh, &term], vec![]);
                let hp = cfg.clip(s, hp);
                let hh = apply(s, dt, &acts[1], &hp);
                // (1 - z) * hh + z * H
                let one = s.scalar(dt, 1.0);
                let omz = s.op("Sub", &[&one, &z], vec![]);
                let a = s.op("Mul", &[&omz, &hh], vec![]);
                let bz = s.op("Mul", &[&z, &hs], vec![]);
                (s.op("Add", &[&a, &bz], vec![]), None)
            }
            Kind::Lstm => {
                let c_prev = cs.clone().unwrap_or_default();
                let pre = s.op("Add", &[&xt, &hr], vec![]);
                // Gate order i, o, f, c; peepholes i, o, f.
                let part = |s: &mut Sub, k: usize, p: Option<(usize, &str)>| {
                    let mut x = gate(s, op, &pre, k, h);
                    if let (Some(ps), Some((pk, c))) = (&peep, p) {
                        let m = s.op("Mul", &[&ps[pk], c], vec![]);
                        x = s.op("Add", &[&x, &m], vec![]);
                    }
                    cfg.clip(s, x)
                };
                let ip = part(s, 0, Some((0, &c_prev)));
                let i = apply(s, dt, &acts[0], &ip);
                let f = if cfg.input_forget {
                    let one = s.scalar(dt, 1.0);
                    s.op("Sub", &[&one, &i], vec![])
                } else {
                    let fp = part(s, 2, Some((2, &c_prev)));
                    apply(s, dt, &acts[0], &fp)
                };
                let cp = part(s, 3, None);
                let cc = apply(s, dt, &acts[1], &cp);
                let fc = s.op("Mul", &[&f, &c_prev], vec![]);
                let ic = s.op("Mul", &[&i, &cc], vec![]);
                let c = s.op("Add", &[&fc, &ic], vec![]);
                let op_ = part(s, 1, Some((1, &c)));
                let o = apply(s, dt, &acts[0], &op_);
                let hc = apply(s, dt, &acts[2], &c);
                (s.op("Mul", &[&o, &hc], vec![]), Some(c))
            }
        };
        match &cfg.masks {
            Some(m) => {
                let zeros = s.scalar(dt, 0.0);
                ys[t] = s.op("Where", &[&m[t], &h_new, &zeros], vec![]);
                hs = s.op("Where", &[&m[t], &h_new, &hs], vec![]);
                if let (Some(cn), Some(cp)) = (c_new, &cs) {
                    cs = Some(s.op("Where", &[&m[t], &cn, cp], vec![]));
                }
            }
            None => {
                ys[t] = h_new.clone();
                hs = h_new;
                if c_new.is_some() {
                    cs = c_new;
                }
            }
        }
    }
    Ok(DirOut { ys, h: hs, c: cs })
}

/// Per step, `[B, 1]` true where the step is inside the batch entry's sequence; `None` when
/// `sequence_lens` is absent or covers every step.
fn step_masks(ctx: &NodeCtx<'_>, s: &mut Sub, t: usize, b: usize) -> Result<Option<Vec<String>>> {
    let Some(sl) = ctx.input_opt(4) else {
        return Ok(None);
    };
    if sl.shape.iter().product::<usize>() != b {
        return Err(ctx.err(format!(
            "sequence_lens {:?} must hold one length per batch entry ({})",
            sl.shape, b
        )));
    }
    if let Some(data) = sl.data {
        let v = data.to_i64_vec().map_err(|e| ctx.err(e))?;
        if v.iter().all(|&l| l == t as i64) {
            return Ok(None);
        }
    }
    let mut lens = in_name(ctx, 4);
    if sl.dtype != DType::I64 {
        lens = s.op("Cast", &[&lens], vec![A::I("to", DType::I64 as i64)]);
    }
    let lens = reshape(s, &lens, &[b, 1]);
    Ok(Some(
        (0..t)
            .map(|t| {
                let tc = s.scalar(DType::I64, t as f64);
                s.op("Less", &[&tc, &lens], vec![])
            })
            .collect(),
    ))
}

/// onnxruntime's DynamicQuantizeLSTM (com.microsoft): see the module doc.
pub(super) fn dynamic_quantize_lstm(ctx: &NodeCtx<'_>) -> Result<Imported> {
    for (i, what) in [
        (8, "W_scale"),
        (9, "W_zero_point"),
        (10, "R_scale"),
        (11, "R_zero_point"),
    ] {
        ctx.input(i)
            .map_err(|_| ctx.err(format!("input {i} ({what}) is required")))?;
    }
    for i in [1, 2, 9, 11] {
        let t = ctx.input(i)?;
        if !matches!(t.dtype, DType::I8 | DType::U8) {
            return Err(ctx.unsupported(format!(
                "input {i} is {}: int8 or uint8 expected",
                t.dtype.name()
            )));
        }
    }
    // onnxruntime's quantized GEMM reads one zero point per direction (the first).
    for i in [9, 11] {
        if let Some(v) = ctx.const_ints(i, "zero point")? {
            let per_dir = v.len() / ctx.input(i)?.shape[0].max(1);
            if v.chunks(per_dir.max(1))
                .any(|c| c.iter().any(|&z| z != c[0]))
            {
                return Err(ctx.unsupported(format!(
                    "input {i}: zero points differing within a direction (onnxruntime uses                      one per direction); quantize the weights per tensor or symmetrically"
                )));
            }
        }
    }
    recurrent(ctx, Kind::Lstm, true)
}

fn recurrent(ctx: &NodeCtx<'_>, kind: Kind, quantized: bool) -> Result<Imported> {
    let x = ctx.input(0)?;
    let w = ctx.input(1)?;
    let r = ctx.input(2)?;
    let dt = x.dtype;
    if quantized && dt != DType::F32 {
        return Err(ctx.unsupported(format!("{} input (float only)", dt.name())));
    }
    if !is_float(dt) {
        return Err(ctx.unsupported(format!("{} input (float only)", dt.name())));
    }
    let dirs = match ctx.attr_s_or("direction", "forward").as_str() {
        "forward" | "reverse" => 1,
        "bidirectional" => 2,
        other => {
            return Err(ctx.err(format!(
                "direction '{other}' is not forward, reverse or bidirectional"
            )));
        }
    };
    let layout = ctx.attr_i_or("layout", 0) != 0;
    if x.shape.len() != 3 || r.shape.len() != 3 || w.shape.len() != 3 {
        return Err(ctx.err("X, W and R must be 3-D"));
    }
    let (t, b) = if layout {
        (x.shape[1], x.shape[0])
    } else {
        (x.shape[0], x.shape[1])
    };
    // DynamicQuantizeLSTM stores W and R transposed: [dirs, in, 4H] and [dirs, H, 4H].
    let h = if quantized { r.shape[1] } else { r.shape[2] };
    let g = kind.gates();
    if let Some(hs) = ctx.attr_i("hidden_size")
        && hs != h as i64
    {
        return Err(ctx.err(format!("hidden_size {hs} but R is {:?}", r.shape)));
    }
    let (w_want, r_want) = if quantized {
        ([dirs, x.shape[2], g * h], [dirs, h, g * h])
    } else {
        ([dirs, g * h, x.shape[2]], [dirs, g * h, h])
    };
    if quantized {
        // Scales and zero points per direction, or per direction and output column.
        let per_col = [dirs, g * h];
        for j in 8..=11 {
            let tj = ctx.input(j)?.shape;
            if tj != [dirs] && tj != per_col {
                return Err(ctx.err(format!(
                    "input {j} is {tj:?}: [{dirs}] or {per_col:?} expected"
                )));
            }
        }
    }
    if w.shape != w_want || r.shape != r_want {
        return Err(ctx.err(format!(
            "W {:?} / R {:?} do not match {w_want:?} / {r_want:?}",
            w.shape, r.shape
        )));
    }
    let checks = [(3, vec![dirs, 2 * g * h]), (7, vec![dirs, 3 * h])];
    for (i, want) in checks {
        if let Some(v) = ctx.input_opt(i)
            && v.shape != want.as_slice()
        {
            return Err(ctx.err(format!("input {i} is {:?}, expected {want:?}", v.shape)));
        }
    }
    let state = if layout {
        vec![b, dirs, h]
    } else {
        vec![dirs, b, h]
    };
    for i in [5, 6] {
        if let Some(v) = ctx.input_opt(i)
            && v.shape != state.as_slice()
        {
            return Err(ctx.err(format!("input {i} is {:?}, expected {state:?}", v.shape)));
        }
    }
    if t == 0 || b == 0 || h == 0 {
        return Err(ctx.err("zero-sized sequence, batch or hidden size"));
    }
    let acts = activations(ctx, kind, dirs)?;
    if !quantized && recurrent_task::covers(dt) {
        let resolved: Vec<Vec<(String, f32, f32)>> = acts
            .iter()
            .map(|dir| {
                dir.iter()
                    .map(|a| {
                        (
                            a.name.clone(),
                            a.alpha.unwrap_or(1.0),
                            a.beta.unwrap_or(0.0),
                        )
                    })
                    .collect()
            })
            .collect();
        let cell = match kind {
            Kind::Rnn => RecurrentCell::Rnn,
            Kind::Gru => RecurrentCell::Gru,
            Kind::Lstm => RecurrentCell::Lstm,
        };
        return recurrent_task::task(
            ctx,
            &recurrent_task::Layer {
                cell,
                dtype: dt,
                dirs,
                t,
                b,
                h,
                layout,
                acts: &resolved,
            },
        );
    }
    let mut s = Sub::new(ctx);
    let x_tbi = if layout {
        s.op(
            "Transpose",
            &[&in_name(ctx, 0)],
            vec![A::Is("perm", vec![1, 0, 2])],
        )
    } else {
        in_name(ctx, 0)
    };
    let masks = step_masks(ctx, &mut s, t, b)?;
    if quantized && masks.is_some() {
        return Err(ctx.unsupported(
            "sequence_lens shorter than the sequence: onnxruntime's kernel quantizes the              zeroed states of finished sequences together with the live ones, which ge does              not reproduce; pad every sequence to the full length or export the float LSTM",
        ));
    }
    let cfg = Cfg {
        kind,
        dt,
        t,
        b,
        h,
        layout,
        clip: ctx.attr_f("clip"),
        lbr: kind == Kind::Gru && ctx.attr_i_or("linear_before_reset", 0) != 0,
        input_forget: kind == Kind::Lstm && ctx.attr_i_or("input_forget", 0) != 0,
        x_tbi,
        masks,
        quantized,
    };
    let reverse = ctx.attr_s_or("direction", "forward") == "reverse";
    let mut outs = Vec::with_capacity(dirs);
    for (d, a) in acts.iter().enumerate().take(dirs) {
        let rev = reverse || d == 1;
        outs.push(direction(ctx, &mut s, &cfg, d, rev, a)?);
    }
    if let Some(y) = out(ctx, 0) {
        let per_dir: Vec<String> = outs
            .iter()
            .map(|o| {
                let steps: Vec<String> =
                    o.ys.iter()
                        .map(|yt| reshape(&mut s, yt, &[1, 1, b, h]))
                        .collect();
                let refs: Vec<&str> = steps.iter().map(String::as_str).collect();
                s.op("Concat", &refs, vec![A::I("axis", 0)])
            })
            .collect();
        let refs: Vec<&str> = per_dir.iter().map(String::as_str).collect();
        let all = s.op("Concat", &refs, vec![A::I("axis", 1)]);
        emit(&mut s, &all, &y, layout.then(|| vec![2, 0, 1, 3]));
    }
    let finals = |s: &mut Sub, name: Option<String>, pick: &dyn Fn(&DirOut) -> String| {
        let Some(name) = name else { return };
        let parts: Vec<String> = outs
            .iter()
            .map(|o| reshape(s, &pick(o), &[1, b, h]))
            .collect();
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        let all = s.op("Concat", &refs, vec![A::I("axis", 0)]);
        emit(s, &all, &name, layout.then(|| vec![1, 0, 2]));
    };
    finals(&mut s, out(ctx, 1), &|o| o.h.clone());
    if kind == Kind::Lstm {
        finals(&mut s, out(ctx, 2), &|o| o.c.clone().unwrap_or_default());
    }
    Ok(s.done())
}

/// Writes `x` to the output `name`, transposed by `perm` when given (layout 1).
fn emit(s: &mut Sub, x: &str, name: &str, perm: Option<Vec<i64>>) {
    match perm {
        Some(p) => s.to("Transpose", &[x], &[name], vec![A::Is("perm", p)]),
        None => s.to("Identity", &[x], &[name], vec![]),
    }
}
