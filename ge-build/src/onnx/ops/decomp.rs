//! Ops imported as decompositions into simpler ops (as their ONNX function bodies define
//! them): normalizations, losses, gated activations, layout shuffles, masks, and control
//! flow whose condition is known while compiling.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::is_float;
use super::registry::OpEntry;
use super::registry::dtypes::{ANY, FLOAT, INT};
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::decomposed("BitwiseNot", 18, INT, bitwise_not),
    OpEntry::decomposed("DepthToSpace", 7, ANY, depth_to_space),
    OpEntry::constant("EyeLike", 9, ANY, eye_like),
    OpEntry::decomposed("GroupNormalization", 18, FLOAT, group_norm),
    OpEntry::decomposed("If", 7, ANY, if_const)
        .note("condition known at compile time; the taken branch is inlined"),
    OpEntry::decomposed("LpNormalization", 7, FLOAT, lp_norm),
    OpEntry::decomposed("MeanVarianceNormalization", 9, FLOAT, mvn),
    OpEntry::decomposed("NegativeLogLikelihoodLoss", 12, FLOAT, nll_loss),
    OpEntry::decomposed("RMSNormalization", 23, FLOAT, |c| layer_norm(c, true)),
    OpEntry::decomposed("SoftmaxCrossEntropyLoss", 12, FLOAT, sce_loss),
    OpEntry::decomposed("SpaceToDepth", 7, ANY, space_to_depth),
    OpEntry::decomposed("SwiGLU", 28, FLOAT, swiglu),
    OpEntry::decomposed("Swish", 24, FLOAT, swish),
    OpEntry::decomposed("Trilu", 14, ANY, trilu),
];

/// `op(x)` reducing `axes` with `keepdims`, in the form the opset wants.
pub fn reduce(s: &mut Sub, opset: i64, op: &str, x: &str, axes: &[i64], keep: bool) -> String {
    let input_axes = opset >= 18 || (op == "ReduceSum" && opset >= 13);
    let k = A::I("keepdims", keep as i64);
    if input_axes {
        let a = s.ints(axes);
        s.op(op, &[x, &a], vec![k])
    } else {
        s.op(op, &[x], vec![k, A::Is("axes", axes.to_vec())])
    }
}

/// `Unsqueeze(x, axes)` in the form the opset wants.
pub fn unsqueeze(s: &mut Sub, opset: i64, x: &str, axes: &[i64]) -> String {
    if opset >= 13 {
        let a = s.ints(axes);
        s.op("Unsqueeze", &[x, &a], vec![])
    } else {
        s.op("Unsqueeze", &[x], vec![A::Is("axes", axes.to_vec())])
    }
}

/// `Slice(x)` of `start..end` along `axis`, in the form the opset wants.
pub fn slice(s: &mut Sub, opset: i64, x: &str, axis: i64, start: i64, end: i64) -> String {
    if opset >= 10 {
        let (st, en, ax) = (s.ints(&[start]), s.ints(&[end]), s.ints(&[axis]));
        s.op("Slice", &[x, &st, &en, &ax], vec![])
    } else {
        let attrs = vec![
            A::Is("starts", vec![start]),
            A::Is("ends", vec![end]),
            A::Is("axes", vec![axis]),
        ];
        s.op("Slice", &[x], attrs)
    }
}

/// `Reshape(x, shape)` to a static shape.
pub fn reshape(s: &mut Sub, x: &str, shape: &[usize]) -> String {
    let v: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let sh = s.ints(&v);
    s.op("Reshape", &[x, &sh], vec![])
}

/// Integer-list attribute `name` of exactly `n` entries (`n` copies of `default` when absent).
pub fn attr_ints_n(ctx: &NodeCtx<'_>, name: &str, default: i64, n: usize) -> Result<Vec<i64>> {
    let v = ctx.attr_ints(name).unwrap_or_else(|| vec![default; n]);
    if v.len() != n {
        return Err(ctx.err(format!("{name} must have {n} entries")));
    }
    Ok(v)
}

/// The name of output `i`, when present.
pub fn out(ctx: &NodeCtx<'_>, i: usize) -> Option<String> {
    ctx.node.output.get(i).filter(|o| !o.is_empty()).cloned()
}

/// The name of output 0, which must be present.
pub fn out0(ctx: &NodeCtx<'_>) -> Result<String> {
    out(ctx, 0).ok_or_else(|| ctx.err("output 0 is required"))
}

/// The name of input `i` (empty when absent).
pub fn in_name(ctx: &NodeCtx<'_>, i: usize) -> String {
    ctx.node.input.get(i).cloned().unwrap_or_default()
}

/// LayerNormalization (Y, Mean, InvStdDev) and RMSNormalization (Y): statistics over
/// `axis..rank` in f32 (stash_type 1), the result cast back, then scaled (and shifted).
/// A LayerNormalization the LayerNorm kernel computes exactly is imported to it instead
/// (`norm::layer_norm`); this covers the rest (f64, f16/bf16, Mean/InvStdDev requested).
pub(super) fn layer_norm(ctx: &NodeCtx<'_>, rms: bool) -> Result<Imported> {
    let x = ctx.input(0)?;
    ctx.input(1)?;
    if !is_float(x.dtype) {
        return Err(ctx.unsupported(format!("{} input", x.dtype.name())));
    }
    let rank = x.shape.len();
    let axis = ctx.axis(ctx.attr_i_or("axis", -1), rank)?;
    let eps = ctx.attr_f_or("epsilon", 1e-5);
    let stash = ctx.attr_i_or("stash_type", 1);
    let axes: Vec<i64> = (axis as i64..rank as i64).collect();
    let mut s = Sub::new(ctx);
    let op = ctx.opset;
    let cdt = if stash == 1 && x.dtype != DType::F64 {
        DType::F32
    } else {
        x.dtype
    };
    let xi = in_name(ctx, 0);
    let xc = if cdt != x.dtype {
        s.op("Cast", &[&xi], vec![A::I("to", cdt as i64)])
    } else {
        xi.clone()
    };
    let eps_c = s.scalar(cdt, eps as f64);
    let (normalized, mean) = if rms {
        let sq = s.op("Mul", &[&xc, &xc], vec![]);
        let ms = reduce(&mut s, op, "ReduceMean", &sq, &axes, true);
        let mse = s.op("Add", &[&ms, &eps_c], vec![]);
        let rms = s.op("Sqrt", &[&mse], vec![]);
        (s.op("Div", &[&xc, &rms], vec![]), None)
    } else {
        let mean = reduce(&mut s, op, "ReduceMean", &xc, &axes, true);
        let d = s.op("Sub", &[&xc, &mean], vec![]);
        let dd = s.op("Mul", &[&d, &d], vec![]);
        let var = reduce(&mut s, op, "ReduceMean", &dd, &axes, true);
        let ve = s.op("Add", &[&var, &eps_c], vec![]);
        let sd = s.op("Sqrt", &[&ve], vec![]);
        let inv = s.op("Reciprocal", &[&sd], vec![]);
        if let Some(o) = out(ctx, 2) {
            s.to("Identity", &[&inv], &[&o], vec![]);
        }
        (s.op("Mul", &[&d, &inv], vec![]), Some(mean))
    };
    if let (Some(o), Some(m)) = (out(ctx, 1), &mean) {
        s.to("Identity", &[m], &[&o], vec![]);
    }
    let n = if cdt != x.dtype {
        s.op("Cast", &[&normalized], vec![A::I("to", x.dtype as i64)])
    } else {
        normalized
    };
    let y = out0(ctx)?;
    let scaled_name = if ctx.input_opt(2).is_some() && !rms {
        s.fresh()
    } else {
        y.clone()
    };
    s.to("Mul", &[&n, &in_name(ctx, 1)], &[&scaled_name], vec![]);
    if scaled_name != y {
        s.to("Add", &[&scaled_name, &in_name(ctx, 2)], &[&y], vec![]);
    }
    Ok(s.done())
}

/// GroupNormalization: statistics per (instance, group) in f32, then per-channel affine.
fn group_norm(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let scale = ctx.input(1)?;
    ctx.input(2)?;
    if !is_float(x.dtype) || x.shape.len() < 2 {
        return Err(ctx.unsupported("needs a float input of rank >= 2"));
    }
    let g = ctx
        .attr_i("num_groups")
        .ok_or_else(|| ctx.err("num_groups is required"))?;
    let (n, c) = (x.shape[0], x.shape[1]);
    if g <= 0 || c % g as usize != 0 {
        return Err(ctx.err(format!("{c} channels do not split into {g} groups")));
    }
    let g = g as usize;
    let eps = ctx.attr_f_or("epsilon", 1e-5);
    let rest: usize = x.shape[2..].iter().product();
    let mut s = Sub::new(ctx);
    let op = ctx.opset;
    let cdt = if x.dtype == DType::F64 {
        x.dtype
    } else {
        DType::F32
    };
    let mut xc = in_name(ctx, 0);
    if cdt != x.dtype {
        xc = s.op("Cast", &[&xc], vec![A::I("to", cdt as i64)]);
    }
    let xr = reshape(&mut s, &xc, &[n, g, c / g * rest]);
    let mean = reduce(&mut s, op, "ReduceMean", &xr, &[2], true);
    let d = s.op("Sub", &[&xr, &mean], vec![]);
    let dd = s.op("Mul", &[&d, &d], vec![]);
    let var = reduce(&mut s, op, "ReduceMean", &dd, &[2], true);
    let eps_c = s.scalar(cdt, eps as f64);
    let ve = s.op("Add", &[&var, &eps_c], vec![]);
    let sd = s.op("Sqrt", &[&ve], vec![]);
    let nr = s.op("Div", &[&d, &sd], vec![]);
    let mut nx = reshape(&mut s, &nr, x.shape);
    if cdt != x.dtype {
        nx = s.op("Cast", &[&nx], vec![A::I("to", x.dtype as i64)]);
    }
    // scale/bias: [C] (opset 21) or [G] (opset 18: per group, repeated per channel).
    let per_channel = |s: &mut Sub, i: usize| -> Result<String> {
        let name = in_name(ctx, i);
        let len = ctx.input(i)?.shape.iter().product::<usize>();
        let mut shape = vec![c];
        shape.extend(std::iter::repeat_n(1, x.shape.len() - 2));
        if len == c {
            Ok(reshape(s, &name, &shape))
        } else if len == g {
            let r = reshape(s, &name, &[g, 1]);
            let rep = s.ints(&[1, (c / g) as i64]);
            let t = s.op("Tile", &[&r, &rep], vec![]);
            Ok(reshape(s, &t, &shape))
        } else {
            Err(ctx.err(format!("scale/bias of {len} elements for {c} channels")))
        }
    };
    let _ = scale;
    let sc = per_channel(&mut s, 1)?;
    let bi = per_channel(&mut s, 2)?;
    let m = s.op("Mul", &[&nx, &sc], vec![]);
    s.to("Add", &[&m, &bi], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// MeanVarianceNormalization: `(X - E[X]) / (sqrt(E[(X - E[X])^2]) + 1e-9)` over `axes`.
/// The variance is taken of the centred values (two passes), not as the spec's function body
/// `E[X^2] - E[X]^2`, which cancels catastrophically in f32 when |mean| >> std (off by 0.5%
/// at mean/std ~ 50, found by tools/difftest.py; onnxruntime is two-pass too).
fn mvn(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if !is_float(x.dtype) {
        return Err(ctx.unsupported(format!("{} input", x.dtype.name())));
    }
    let rank = x.shape.len();
    let axes: Vec<i64> = ctx
        .attr_ints("axes")
        .unwrap_or_else(|| vec![0, 2, 3])
        .into_iter()
        .map(|a| ctx.axis(a, rank).map(|a| a as i64))
        .collect::<Result<_>>()?;
    let mut s = Sub::new(ctx);
    let op = ctx.opset;
    let xi = in_name(ctx, 0);
    let mean = reduce(&mut s, op, "ReduceMean", &xi, &axes, true);
    let num = s.op("Sub", &[&xi, &mean], vec![]);
    let sq = s.op("Mul", &[&num, &num], vec![]);
    let var = reduce(&mut s, op, "ReduceMean", &sq, &axes, true);
    let sd = s.op("Sqrt", &[&var], vec![]);
    let eps = s.scalar(x.dtype, 1e-9);
    let den = s.op("Add", &[&sd, &eps], vec![]);
    s.to("Div", &[&num, &den], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// LpNormalization: `x / ||x||_p` along `axis` (p 1 or 2); zero where the norm is zero.
fn lp_norm(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if !is_float(x.dtype) {
        return Err(ctx.unsupported(format!("{} input", x.dtype.name())));
    }
    let axis = ctx.axis(ctx.attr_i_or("axis", -1), x.shape.len())? as i64;
    let red = match ctx.attr_i_or("p", 2) {
        1 => "ReduceL1",
        2 => "ReduceL2",
        p => return Err(ctx.unsupported(format!("p = {p} (only 1 and 2 are defined)"))),
    };
    let mut s = Sub::new(ctx);
    let xi = in_name(ctx, 0);
    let norm = reduce(&mut s, ctx.opset, red, &xi, &[axis], true);
    let zero = s.scalar(x.dtype, 0.0);
    let is0 = s.op("Equal", &[&norm, &zero], vec![]);
    let q = s.op("Div", &[&xi, &norm], vec![]);
    s.to("Where", &[&is0, &zero, &q], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

fn swish_of(s: &mut Sub, x: &str, dtype: DType, alpha: f32) -> String {
    let ax = if alpha == 1.0 {
        x.to_string()
    } else {
        let a = s.scalar(dtype, alpha as f64);
        s.op("Mul", &[x, &a], vec![])
    };
    let sg = s.op("Sigmoid", &[&ax], vec![]);
    s.op("Mul", &[x, &sg], vec![])
}

/// Swish: `x * sigmoid(alpha * x)`.
fn swish(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let mut s = Sub::new(ctx);
    let y = swish_of(
        &mut s,
        &in_name(ctx, 0),
        x.dtype,
        ctx.attr_f_or("alpha", 1.0),
    );
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// SwiGLU: `swish_alpha(A) * B` (same shapes).
fn swiglu(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    if a.shape != b.shape {
        return Err(ctx.err(format!("A {:?} and B {:?} differ", a.shape, b.shape)));
    }
    let mut s = Sub::new(ctx);
    let y = swish_of(
        &mut s,
        &in_name(ctx, 0),
        a.dtype,
        ctx.attr_f_or("alpha", 1.0),
    );
    s.to("Mul", &[&y, &in_name(ctx, 1)], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// Trilu: `Where(mask, x, 0)` with the band mask built at compile time, or, for a run-time
/// `k` (it changes values, not shapes), compared at run time against the constant `j - i`.
fn trilu(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let r = x.shape.len();
    if r < 2 {
        return Err(ctx.err("input rank must be at least 2"));
    }
    let upper = ctx.attr_i_or("upper", 1) != 0;
    let (n, m) = (x.shape[r - 2], x.shape[r - 1]);
    // The mask is an n × m constant built here (as f64 first): sized before it is built, to
    // the fold budget (an empty [.., 2^31 − 1, 2] input asked for 34 GB).
    let budget = ctx.max_fold_bytes.or(ctx.max_tensor_bytes);
    let bytes = crate::onnx::tensor_bytes(DType::F64, &[n, m]);
    if budget.is_some_and(|b| bytes.is_none_or(|x| x > b)) {
        return Err(ctx.err(format!(
            "its {n} × {m} mask is over the fold budget (raise --max-fold-bytes / max_fold_bytes)"
        )));
    }
    let diag = |f: &dyn Fn(i64) -> f64| -> Vec<f64> {
        (0..n)
            .flat_map(|i| (0..m).map(move |j| j as i64 - i as i64))
            .map(f)
            .collect()
    };
    let mut s = Sub::new(ctx);
    let mk = match ctx.input_opt(1) {
        Some(k) if k.data.is_none() => {
            if k.shape.iter().product::<usize>() != 1 || !matches!(k.dtype, DType::I64) {
                return Err(ctx.err("k must be an int64 scalar"));
            }
            let d = s.constant(tensor_data(DType::I64, vec![n, m], &diag(&|d| d as f64)));
            let kk = reshape(&mut s, &in_name(ctx, 1), &[]);
            let cmp = if upper {
                "GreaterOrEqual"
            } else {
                "LessOrEqual"
            };
            s.op(cmp, &[&d, &kk], vec![])
        }
        _ => {
            let k = match ctx.const_ints(1, "k")? {
                Some(v) if v.len() == 1 => v[0],
                Some(_) => return Err(ctx.err("k must be a scalar")),
                None => 0,
            };
            let band = diag(&|d| (if upper { d >= k } else { d <= k }) as u8 as f64);
            s.constant(tensor_data(DType::Bool, vec![n, m], &band))
        }
    };
    let zero = s.scalar(x.dtype, 0.0);
    s.to(
        "Where",
        &[&mk, &in_name(ctx, 0), &zero],
        &[&out0(ctx)?],
        vec![],
    );
    Ok(s.done())
}

/// DepthToSpace: reshape, transpose, reshape (DCR or CRD order).
fn depth_to_space(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let b = ctx
        .attr_i("blocksize")
        .ok_or_else(|| ctx.err("blocksize is required"))?;
    // `b²` checked: a hostile blocksize wrapped to a zero divisor.
    let bb = usize::try_from(b)
        .ok()
        .and_then(|b| b.checked_mul(b))
        .filter(|&bb| bb > 0);
    if x.shape.len() != 4 || bb.is_none_or(|bb| x.shape[1] % bb != 0) {
        return Err(ctx.err(format!(
            "input {:?} with blocksize {b}: needs rank 4 and channels a multiple of blocksize²",
            x.shape
        )));
    }
    let b = b as usize;
    let (n, c, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    let crd = ctx.attr_s_or("mode", "DCR") == "CRD";
    let mut s = Sub::new(ctx);
    let (shape, perm) = if crd {
        (vec![n, c / (b * b), b, b, h, w], vec![0, 1, 4, 2, 5, 3])
    } else {
        (vec![n, b, b, c / (b * b), h, w], vec![0, 3, 4, 1, 5, 2])
    };
    let r = reshape(&mut s, &in_name(ctx, 0), &shape);
    let t = s.op("Transpose", &[&r], vec![A::Is("perm", perm)]);
    let y = reshape(&mut s, &t, &[n, c / (b * b), h * b, w * b]);
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// SpaceToDepth: reshape, transpose, reshape.
fn space_to_depth(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let b = ctx
        .attr_i("blocksize")
        .ok_or_else(|| ctx.err("blocksize is required"))?;
    if x.shape.len() != 4 || b <= 0 || x.shape[2] % b as usize != 0 || x.shape[3] % b as usize != 0
    {
        return Err(ctx.err(format!("input {:?} with blocksize {b}", x.shape)));
    }
    let b = b as usize;
    let (n, c, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    let mut s = Sub::new(ctx);
    let perm = match ctx.attr_s_or("mode", "DCR").as_str() {
        "DCR" => vec![0, 3, 5, 1, 2, 4],
        "CRD" => vec![0, 1, 3, 5, 2, 4],
        m => return Err(ctx.err(format!("mode '{m}' is not DCR or CRD"))),
    };
    let r = reshape(&mut s, &in_name(ctx, 0), &[n, c, h / b, b, w / b, b]);
    let t = s.op("Transpose", &[&r], vec![A::Is("perm", perm)]);
    let y = reshape(&mut s, &t, &[n, c * b * b, h / b, w / b]);
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// EyeLike: a constant of the input's (static) shape.
fn eye_like(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if x.shape.len() != 2 {
        return Err(ctx.err("input must be 2-D"));
    }
    let dtype = match ctx.attr_i("dtype") {
        Some(d) => u8::try_from(d)
            .ok()
            .and_then(DType::from_u8)
            .ok_or_else(|| ctx.unsupported(format!("dtype {d}")))?,
        None => x.dtype,
    };
    let k = ctx.attr_i_or("k", 0);
    let (n, m) = (x.shape[0], x.shape[1]);
    let v: Vec<f64> = (0..n)
        .flat_map(|i| (0..m).map(move |j| (j as i64 - i as i64 == k) as u8 as f64))
        .collect();
    Ok(Imported::Constants(vec![tensor_data(
        dtype,
        vec![n, m],
        &v,
    )]))
}

/// The class-selected log-probabilities and sample weights of NLL loss; returns
/// (loss per sample, weight per sample).
/// A named value with its type, as a decomposition reads it.
struct Val<'a> {
    name: &'a str,
    dtype: DType,
    shape: &'a [usize],
}

fn nll_parts(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    x: Val<'_>,
    target: Val<'_>,
    weight: Option<&str>,
) -> Result<(String, String)> {
    let op = ctx.opset;
    let (input, dtype, in_shape) = (x.name, x.dtype, x.shape);
    let (t_dtype, t_shape) = (target.dtype, target.shape);
    let target = target.name;
    if in_shape.len() < 2
        || t_shape.len() != in_shape.len() - 1
        || t_shape[0] != in_shape[0]
        || t_shape[1..] != in_shape[2..]
    {
        return Err(ctx.err(format!(
            "input {in_shape:?} and target {t_shape:?} do not match (N, C, d...) / (N, d...)"
        )));
    }
    let c = in_shape[1];
    let ii = ctx.attr_i("ignore_index");
    let t = if t_dtype == DType::I64 {
        target.to_string()
    } else {
        s.op("Cast", &[target], vec![A::I("to", DType::I64 as i64)])
    };
    let (t_safe, keep) = match ii {
        Some(ii) => {
            let iic = s.scalar(DType::I64, ii as f64);
            let is_ii = s.op("Equal", &[&t, &iic], vec![]);
            let zero = s.scalar(DType::I64, 0.0);
            let safe = s.op("Where", &[&is_ii, &zero, &t], vec![]);
            let keep = s.op("Not", &[&is_ii], vec![]);
            (safe, Some(keep))
        }
        None => (t.clone(), None),
    };
    // One-hot over the class axis: (N, 1, d...) == (1, C, 1...).
    let tu = unsqueeze(s, op, &t_safe, &[1]);
    let mut cls_shape = vec![1usize, c];
    cls_shape.extend(std::iter::repeat_n(1, in_shape.len() - 2));
    let cls = s.constant(tensor_data(
        DType::I64,
        cls_shape,
        &(0..c).map(|i| i as f64).collect::<Vec<_>>(),
    ));
    let hot = s.op("Equal", &[&tu, &cls], vec![]);
    let zero = s.scalar(dtype, 0.0);
    let picked = s.op("Where", &[&hot, input, &zero], vec![]);
    let sel = reduce(s, op, "ReduceSum", &picked, &[1], false);
    let ones = s.constant(tensor_data(
        dtype,
        t_shape.to_vec(),
        &vec![1.0; t_shape.iter().product()],
    ));
    let mut w = match weight {
        Some(wn) => s.op("Gather", &[wn, &t_safe], vec![A::I("axis", 0)]),
        None => ones,
    };
    if let Some(keep) = keep {
        w = s.op("Where", &[&keep, &w, &zero], vec![]);
    }
    let lw = s.op("Mul", &[&sel, &w], vec![]);
    let loss = s.op("Neg", &[&lw], vec![]);
    Ok((loss, w))
}

fn reduce_loss(ctx: &NodeCtx<'_>, s: &mut Sub, loss: &str, w: &str, rank: usize, y: &str) {
    let all: Vec<i64> = (0..rank as i64).collect();
    match ctx.attr_s_or("reduction", "mean").as_str() {
        "none" => s.to("Identity", &[loss], &[y], vec![]),
        "sum" => {
            let r = reduce(s, ctx.opset, "ReduceSum", loss, &all, false);
            s.to("Identity", &[&r], &[y], vec![]);
        }
        _ => {
            let num = reduce(s, ctx.opset, "ReduceSum", loss, &all, false);
            let den = reduce(s, ctx.opset, "ReduceSum", w, &all, false);
            s.to("Div", &[&num, &den], &[y], vec![]);
        }
    }
}

fn check_reduction(ctx: &NodeCtx<'_>) -> Result<()> {
    let r = ctx.attr_s_or("reduction", "mean");
    if !matches!(r.as_str(), "none" | "sum" | "mean") {
        return Err(ctx.err(format!("reduction '{r}' is not none, sum or mean")));
    }
    Ok(())
}

/// NegativeLogLikelihoodLoss(input, target, weight?).
fn nll_loss(ctx: &NodeCtx<'_>) -> Result<Imported> {
    check_reduction(ctx)?;
    let x = ctx.input(0)?;
    let t = ctx.input(1)?;
    if !is_float(x.dtype) {
        return Err(ctx.unsupported(format!("{} input", x.dtype.name())));
    }
    let mut s = Sub::new(ctx);
    let wn = ctx.input_opt(2).map(|_| in_name(ctx, 2));
    let (xn, tn) = (in_name(ctx, 0), in_name(ctx, 1));
    let (loss, w) = nll_parts(
        ctx,
        &mut s,
        Val {
            name: &xn,
            dtype: x.dtype,
            shape: x.shape,
        },
        Val {
            name: &tn,
            dtype: t.dtype,
            shape: t.shape,
        },
        wn.as_deref(),
    )?;
    reduce_loss(ctx, &mut s, &loss, &w, t.shape.len(), &out0(ctx)?);
    Ok(s.done())
}

/// SoftmaxCrossEntropyLoss(scores, labels, weights?) → loss, log_prob?.
fn sce_loss(ctx: &NodeCtx<'_>) -> Result<Imported> {
    check_reduction(ctx)?;
    let x = ctx.input(0)?;
    let t = ctx.input(1)?;
    if !is_float(x.dtype) {
        return Err(ctx.unsupported(format!("{} input", x.dtype.name())));
    }
    let mut s = Sub::new(ctx);
    let xi = in_name(ctx, 0);
    // log_softmax over axis 1, written out (LogSoftmax before opset 13 flattens).
    let m = reduce(&mut s, ctx.opset, "ReduceMax", &xi, &[1], true);
    let d = s.op("Sub", &[&xi, &m], vec![]);
    let e = s.op("Exp", &[&d], vec![]);
    let se = reduce(&mut s, ctx.opset, "ReduceSum", &e, &[1], true);
    let lse = s.op("Log", &[&se], vec![]);
    let lp = s.op("Sub", &[&d, &lse], vec![]);
    if let Some(o) = out(ctx, 1) {
        s.to("Identity", &[&lp], &[&o], vec![]);
    }
    let wn = ctx.input_opt(2).map(|_| in_name(ctx, 2));
    let tn = in_name(ctx, 1);
    let (loss, w) = nll_parts(
        ctx,
        &mut s,
        Val {
            name: &lp,
            dtype: x.dtype,
            shape: x.shape,
        },
        Val {
            name: &tn,
            dtype: t.dtype,
            shape: t.shape,
        },
        wn.as_deref(),
    )?;
    reduce_loss(ctx, &mut s, &loss, &w, t.shape.len(), &out0(ctx)?);
    Ok(s.done())
}

/// If with a condition known while compiling: the taken branch, inlined.
fn if_const(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let cond = ctx
        .const_input(0, "cond")?
        .ok_or_else(|| ctx.err("cond is required"))?;
    let taken = cond
        .to_f64_vec()
        .map_err(|e| ctx.err(e))?
        .first()
        .copied()
        .ok_or_else(|| ctx.err("cond is empty"))?
        != 0.0;
    let branch = if taken { "then_branch" } else { "else_branch" };
    let g = ctx
        .node
        .attribute
        .iter()
        .find(|a| a.name() == branch)
        .and_then(|a| a.g.as_ref())
        .ok_or_else(|| ctx.err(format!("{branch} is missing")))?;
    let mut s = Sub::new(ctx);
    for t in &g.initializer {
        let data = crate::tensor::decode_tensor(t, None)
            .map_err(|e| ctx.err(format!("{branch} initializer: {e}")))?;
        s.constant_named(t.name(), data);
    }
    for n in &g.node {
        s.push(n.clone());
    }
    if g.output.len() < ctx.node.output.iter().filter(|o| !o.is_empty()).count() {
        return Err(ctx.err(format!("{branch} has fewer outputs than the node")));
    }
    for (o, bo) in ctx.node.output.iter().zip(&g.output) {
        if !o.is_empty() {
            s.to("Identity", &[bo.name()], &[o], vec![]);
        }
    }
    Ok(s.done())
}

pub(super) fn clip_needs_decomp(ctx: &NodeCtx<'_>) -> bool {
    if ctx.opset < 11 {
        return false;
    }
    let runtime_bound = (1..3).any(|i| ctx.input_opt(i).is_some_and(|b| b.data.is_none()));
    let int = ctx.input_opt(0).is_some_and(|x| !is_float(x.dtype));
    runtime_bound || int
}

/// Clip with bounds computed at run time, or on integers: `Min(Max(x, min), max)`.
pub(super) fn clip(ctx: &NodeCtx<'_>) -> Result<Imported> {
    ctx.input(0)?;
    let mut s = Sub::new(ctx);
    let mut y = in_name(ctx, 0);
    if ctx.input_opt(1).is_some() {
        y = s.op("Max", &[&y, &in_name(ctx, 1)], vec![]);
    }
    if ctx.input_opt(2).is_some() {
        y = s.op("Min", &[&y, &in_name(ctx, 2)], vec![]);
    }
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// Dropout is the identity unless it trains with a non-zero ratio (a random mask, which is
/// not reproducible): that case is rejected.
pub fn check_deterministic_dropout(ctx: &NodeCtx<'_>) -> Result<()> {
    let training = ctx.opset >= 12
        && ctx
            .const_ints(2, "training_mode")?
            .is_some_and(|v| v.first().is_some_and(|&t| t != 0));
    if !training {
        return Ok(());
    }
    let ratio = match ctx.const_floats(1, "ratio")?.as_deref() {
        None => 0.5,
        Some([r]) => *r,
        Some(_) => return Err(ctx.err("ratio must be a scalar")),
    };
    if ratio != 0.0 {
        return Err(ctx.unsupported(format!(
            "training_mode=true with ratio {ratio} (a random mask; ge compiles inference graphs)"
        )));
    }
    Ok(())
}

/// Dropout (inference) with its mask output: identity and an all-true mask.
pub(super) fn dropout(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    check_deterministic_dropout(ctx)?;
    let mut s = Sub::new(ctx);
    s.to("Identity", &[&in_name(ctx, 0)], &[&out0(ctx)?], vec![]);
    if let Some(m) = out(ctx, 1) {
        let n: usize = x.shape.iter().product();
        let dt = if ctx.opset >= 10 {
            DType::Bool
        } else {
            x.dtype
        };
        let mask = tensor_data(dt, x.shape.to_vec(), &vec![1.0; n]);
        s.constant_named(&m, mask);
    }
    Ok(s.done())
}

/// BitwiseNot: `x ^ all-ones`.
fn bitwise_not(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let ones: Vec<u8> = match x.dtype {
        DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::U8
        | DType::U16
        | DType::U32
        | DType::U64 => vec![0xff; x.dtype.size()],
        d => return Err(ctx.err(format!("{} is not an integer type", d.name()))),
    };
    let mut s = Sub::new(ctx);
    let m = s.constant(crate::tensor::TensorData {
        dtype: x.dtype,
        dims: Vec::new(),
        bytes: ones,
    });
    s.to(
        "BitwiseXor",
        &[&in_name(ctx, 0), &m],
        &[&out0(ctx)?],
        vec![],
    );
    Ok(s.done())
}
