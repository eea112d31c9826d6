//! The normalizations onnxruntime writes: SkipLayerNormalization (residual add + LayerNorm),
//! its RMS form SkipSimplifiedLayerNormalization, and SimplifiedLayerNormalization (RMS
//! normalization, defined by onnxruntime in the default domain). Statistics in f32 (f64 for
//! f64 inputs), as onnxruntime computes them.

use ge_runtime::format::DType;

use super::super::decomp::{in_name, out, out0, reduce};
use super::super::is_float;
use super::super::sub::{A, Sub};
use crate::error::Result;
use crate::onnx::ctx::{Imported, NodeCtx};

/// `x / sqrt(mean(x², axes axis..) + eps) · scale` into `y`, with `1 / sqrt(…)` (keepdims)
/// into `inv` when asked.
#[allow(clippy::too_many_arguments)]
fn rms(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    x: &str,
    scale: &str,
    axis: i64,
    eps: f32,
    y: &str,
    inv: Option<String>,
) -> Result<()> {
    let xi = ctx.input(0)?;
    if !is_float(xi.dtype) {
        return Err(ctx.unsupported(format!("{} input (float only)", xi.dtype.name())));
    }
    let rank = xi.shape.len();
    let axis = ctx.axis(axis, rank)?;
    let axes: Vec<i64> = (axis as i64..rank as i64).collect();
    let cdt = if xi.dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let xc = if cdt != xi.dtype {
        s.op("Cast", &[x], vec![A::I("to", cdt as i64)])
    } else {
        x.to_string()
    };
    let sq = s.op("Mul", &[&xc, &xc], vec![]);
    let ms = reduce(s, ctx.opset, "ReduceMean", &sq, &axes, true);
    let e = s.scalar(cdt, eps as f64);
    let mse = s.op("Add", &[&ms, &e], vec![]);
    let sd = s.op("Sqrt", &[&mse], vec![]);
    let iv = s.op("Reciprocal", &[&sd], vec![]);
    if let Some(o) = inv {
        s.to("Identity", &[&iv], &[&o], vec![]);
    }
    let mut n = s.op("Mul", &[&xc, &iv], vec![]);
    if cdt != xi.dtype {
        n = s.op("Cast", &[&n], vec![A::I("to", xi.dtype as i64)]);
    }
    s.to("Mul", &[&n, scale], &[y], vec![]);
    Ok(())
}

/// SimplifiedLayerNormalization (Y, inv_std_var).
pub fn simplified(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let mut s = Sub::new(ctx);
    rms(
        ctx,
        &mut s,
        &in_name(ctx, 0),
        &in_name(ctx, 1),
        ctx.attr_i_or("axis", -1),
        ctx.attr_f_or("epsilon", 1e-5),
        &out0(ctx)?,
        out(ctx, 1),
    )?;
    Ok(s.done())
}

/// SkipLayerNormalization / SkipSimplifiedLayerNormalization: `sum = input + skip (+ bias)`
/// normalized over the last axis; outputs (output, mean, inv_std_var, input_skip_bias_sum).
pub fn skip_norm(ctx: &NodeCtx<'_>, simplified: bool) -> Result<Imported> {
    let x = ctx.input(0)?;
    let skip = ctx.input(1)?;
    let d = x.shape.last().copied().unwrap_or(0);
    if !(2..=3).contains(&x.shape.len()) || skip.shape.last() != Some(&d) {
        return Err(ctx.err(format!(
            "input {:?} must be 2-D or 3-D and skip {:?} end in the same hidden size",
            x.shape, skip.shape
        )));
    }
    let bias_at = if simplified { 3 } else { 4 };
    let mut s = Sub::new(ctx);
    let mut sum = s.op("Add", &[&in_name(ctx, 0), &in_name(ctx, 1)], vec![]);
    if ctx.input_opt(bias_at).is_some() {
        sum = s.op("Add", &[&sum, &in_name(ctx, bias_at)], vec![]);
    }
    if let Some(o) = out(ctx, 3) {
        s.to("Identity", &[&sum], &[&o], vec![]);
    }
    let eps = ctx.attr_f_or("epsilon", 1e-12);
    let y = out0(ctx)?;
    if simplified {
        if out(ctx, 1).is_some() {
            return Err(ctx.unsupported(
                "the mean output of an RMS normalization (onnxruntime leaves it undefined)",
            ));
        }
        rms(
            ctx,
            &mut s,
            &sum,
            &in_name(ctx, 2),
            -1,
            eps,
            &y,
            out(ctx, 2),
        )?;
    } else {
        let mut ins = vec![sum, in_name(ctx, 2)];
        if ctx.input_opt(3).is_some() {
            ins.push(in_name(ctx, 3));
        }
        let refs: Vec<&str> = ins.iter().map(String::as_str).collect();
        let (mean, inv) = (
            out(ctx, 1).unwrap_or_default(),
            out(ctx, 2).unwrap_or_default(),
        );
        s.to(
            "LayerNormalization",
            &refs,
            &[&y, &mean, &inv],
            vec![A::I("axis", -1), A::F("epsilon", eps)],
        );
    }
    Ok(s.done())
}
