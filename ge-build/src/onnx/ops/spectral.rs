//! DFT and STFT with static sizes, as one MatMul by a constant DFT matrix: the transformed
//! axis is moved last with the (real, imaginary) pair folded into it, so each output
//! (frequency, part) is a fixed linear combination of the input (sample, part) values.

use std::f64::consts::PI;

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape, slice};
use super::is_float;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// Op types handled here.
pub const OPS: &[&str] = &["DFT", "STFT"];

/// Bound on the DFT matrix's elements, so a huge transform fails clearly.
const MAX_MATRIX: usize = 1 << 24;

/// Imports `t` if it is handled here; `None` otherwise.
pub fn import(t: &str, ctx: &NodeCtx<'_>) -> Option<Result<Imported>> {
    match t {
        "DFT" => Some(dft(ctx)),
        "STFT" => Some(stft(ctx)),
        _ => None,
    }
}

/// A one-dimensional transform along one axis.
struct Transform {
    /// The transform length (`dft_length`).
    len: usize,
    inverse: bool,
    onesided: bool,
}

/// A constant scalar input as one integer (None when absent).
fn const_scalar(ctx: &NodeCtx<'_>, i: usize, what: &str) -> Result<Option<i64>> {
    match ctx.const_ints(i, what)? {
        None => Ok(None),
        Some(v) if v.len() == 1 => Ok(Some(v[0])),
        Some(v) => Err(ctx.err(format!("{what} must be a scalar, got {} values", v.len()))),
    }
}

fn dft(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if !is_float(x.dtype) {
        return Err(ctx.unsupported(format!("{} input", x.dtype.name())));
    }
    let rank = x.shape.len();
    if rank < 2 || !matches!(x.shape[rank - 1], 1 | 2) {
        return Err(ctx.err(format!(
            "input {:?} must end in 1 (real) or 2 (complex)",
            x.shape
        )));
    }
    let axis = if ctx.opset >= 20 {
        const_scalar(ctx, 2, "axis")?.unwrap_or(-2)
    } else {
        ctx.attr_i_or("axis", 1)
    };
    let axis = ctx.axis(axis, rank)?;
    if axis == rank - 1 {
        return Err(ctx.err("axis must not be the last (complex) axis"));
    }
    let inverse = ctx.attr_i_or("inverse", 0) != 0;
    let onesided = ctx.attr_i_or("onesided", 0) != 0;
    let n = x.shape[axis];
    let len = match const_scalar(ctx, 1, "dft_length")? {
        Some(l) => usize::try_from(l)
            .ok()
            .filter(|&l| l > 0)
            .ok_or_else(|| ctx.err(format!("dft_length {l} must be positive")))?,
        None if inverse && onesided => 2 * n.saturating_sub(1),
        None => n,
    };
    if len == 0 {
        return Err(ctx.err("the transform length is zero"));
    }
    let mut s = Sub::new(ctx);
    let tr = Transform {
        len,
        inverse,
        onesided,
    };
    let y = transform(ctx, &mut s, &in_name(ctx, 0), x.shape, x.dtype, axis, &tr)?;
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// STFT: frames gathered by a constant index matrix, windowed, then a onesided (or full)
/// DFT of each frame.
fn stft(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if !is_float(x.dtype) {
        return Err(ctx.unsupported(format!("{} signal", x.dtype.name())));
    }
    if x.shape.len() != 3 || !matches!(x.shape[2], 1 | 2) {
        return Err(ctx.err(format!(
            "signal {:?} is not [batch, length, 1 or 2]",
            x.shape
        )));
    }
    let (b, sig, c) = (x.shape[0], x.shape[1], x.shape[2]);
    let step =
        const_scalar(ctx, 1, "frame_step")?.ok_or_else(|| ctx.err("frame_step is required"))?;
    let step = usize::try_from(step)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| ctx.err(format!("frame_step {step} must be positive")))?;
    let window = ctx.input_opt(2);
    let frame = match (const_scalar(ctx, 3, "frame_length")?, window) {
        (Some(l), w) => {
            let l = usize::try_from(l)
                .ok()
                .filter(|&l| l > 0)
                .ok_or_else(|| ctx.err(format!("frame_length {l} must be positive")))?;
            if w.is_some_and(|w| w.shape != [l]) {
                return Err(ctx.err("the window's length differs from frame_length"));
            }
            l
        }
        (None, Some(w)) if w.shape.len() == 1 && w.shape[0] > 0 => w.shape[0],
        (None, Some(w)) => return Err(ctx.err(format!("window {:?} is not 1-D", w.shape))),
        (None, None) => sig,
    };
    if frame > sig {
        return Err(ctx.err(format!(
            "frame_length {frame} exceeds the signal length {sig}"
        )));
    }
    let frames = (sig - frame) / step + 1;
    let mut s = Sub::new(ctx);
    let idx: Vec<f64> = (0..frames)
        .flat_map(|f| (0..frame).map(move |j| (f * step + j) as f64))
        .collect();
    let idx = s.constant(tensor_data(DType::I64, vec![frames, frame], &idx));
    let mut framed = s.op("Gather", &[&in_name(ctx, 0), &idx], vec![A::I("axis", 1)]);
    if window.is_some() {
        let w = reshape(&mut s, &in_name(ctx, 2), &[1, 1, frame, 1]);
        framed = s.op("Mul", &[&framed, &w], vec![]);
    }
    let tr = Transform {
        len: frame,
        inverse: false,
        onesided: ctx.attr_i_or("onesided", 1) != 0,
    };
    let shape = [b, frames, frame, c];
    let y = transform(ctx, &mut s, &framed, &shape, x.dtype, 2, &tr)?;
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// Emits the transform of `x` (shape `shape`, last axis 1 or 2) along `axis`; returns the
/// result, shaped like `x` with `axis` resized and the last axis 2 (1 for a real inverse).
fn transform(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    x: &str,
    shape: &[usize],
    dtype: DType,
    axis: usize,
    tr: &Transform,
) -> Result<String> {
    let rank = shape.len();
    let c = shape[rank - 1];
    let real_out = tr.inverse && tr.onesided;
    // Samples read: the input is cut to the length the transform uses (zero padding adds
    // nothing, so shorter inputs use fewer rows).
    let used = if real_out { tr.len / 2 + 1 } else { tr.len };
    let n = shape[axis].min(used);
    let m = if tr.onesided && !tr.inverse {
        tr.len / 2 + 1
    } else {
        tr.len
    };
    let c_out = if real_out { 1 } else { 2 };
    if (n * c).saturating_mul(m * c_out) > MAX_MATRIX {
        return Err(ctx.unsupported(format!(
            "a DFT matrix of {n}x{m} exceeds {MAX_MATRIX} elements"
        )));
    }
    let mut xs = x.to_string();
    if n < shape[axis] {
        xs = slice(s, ctx.opset, &xs, axis as i64, 0, n as i64);
    }
    // Move `axis` next to the complex axis: [rest..., n, c].
    let perm: Vec<i64> = (0..rank - 1)
        .filter(|&a| a != axis)
        .chain([axis, rank - 1])
        .map(|a| a as i64)
        .collect();
    let moved = perm.iter().enumerate().any(|(i, &p)| p != i as i64);
    if moved {
        xs = s.op("Transpose", &[&xs], vec![A::Is("perm", perm.clone())]);
    }
    let rest: Vec<usize> = perm[..rank - 2]
        .iter()
        .map(|&a| shape[a as usize])
        .collect();
    let mut flat = rest.clone();
    flat.push(n * c);
    let xf = reshape(s, &xs, &flat);
    let w = s.constant(tensor_data(
        dtype,
        vec![n * c, m * c_out],
        &dft_matrix(n, c, m, c_out, tr),
    ));
    let yf = s.op("MatMul", &[&xf, &w], vec![]);
    let mut ys = rest;
    ys.extend([m, c_out]);
    let mut y = reshape(s, &yf, &ys);
    if moved {
        let mut inv = vec![0i64; rank];
        for (i, &p) in perm.iter().enumerate() {
            inv[p as usize] = i as i64;
        }
        y = s.op("Transpose", &[&y], vec![A::Is("perm", inv)]);
    }
    Ok(y)
}

/// The `[n·c, m·c_out]` matrix: row (sample j, part p), column (frequency k, part q).
fn dft_matrix(n: usize, c: usize, m: usize, c_out: usize, tr: &Transform) -> Vec<f64> {
    let l = tr.len;
    let mut w = vec![0.0; n * c * m * c_out];
    for j in 0..n {
        for k in 0..m {
            // Reduced mod l so the angle stays small and exact.
            let th = 2.0 * PI * ((j * k) % l) as f64 / l as f64;
            let (sn, cs) = th.sin_cos();
            // (xr + i·xi)·(cos ∓ i·sin), and for the inverse a 1/l scale; a real
            // (one-sided) inverse counts each interior frequency twice (its conjugate).
            let (re, im) = if tr.inverse {
                let wk = if !tr.onesided || j == 0 || 2 * j == l {
                    1.0
                } else {
                    2.0
                };
                let f = wk / l as f64;
                ([cs * f, -sn * f], [sn * f, cs * f])
            } else {
                ([cs, sn], [-sn, cs])
            };
            for p in 0..c {
                let row = (j * c + p) * m * c_out;
                w[row + k * c_out] = re[p];
                if c_out == 2 {
                    w[row + k * c_out + 1] = im[p];
                }
            }
        }
    }
    w
}
