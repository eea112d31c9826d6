//! `DFT` and `STFT` as one MatMul with a constant real matrix: the transform is linear over the reals,
//! so (re, im) pairs along `axis` map to (re, im) pairs (or reals, for the one-sided inverse)
//! through a `[m * c_in, k * c_out]` table of cosines and sines, including the zero padding or
//! truncation to `dft_length` and the 1/N of the inverse.

use std::f64::consts::TAU;

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape};
use super::is_float;
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::shape::MAX_CONST_ELEMS;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::decomposed("DFT", 17, FLOAT, dft),
    OpEntry::decomposed("STFT", 17, FLOAT, stft),
];

/// The matrix taking `m` inputs of `cin` components to `k` outputs of `cout` components
/// (row `n * cin + c`, column `j * cout + d`).
fn table(m: usize, cin: usize, k: usize, cout: usize, n_fft: usize, inverse: bool) -> Vec<f64> {
    let mut w = vec![0.0; m * cin * k * cout];
    let nf = n_fft as f64;
    for n in 0..m.min(n_fft) {
        for j in 0..k {
            let th = TAU * (n * j % n_fft) as f64 / nf;
            let (c, s) = (th.cos(), th.sin());
            // (input component, output component) -> coefficient
            let coef = |ci: usize, co: usize| -> f64 {
                match (inverse, cout, ci, co) {
                    // forward: e^{-i th} (a + i b)
                    (false, _, 0, 0) => c,
                    (false, _, 1, 0) => s,
                    (false, _, 0, 1) => -s,
                    (false, _, 1, 1) => c,
                    // one-sided inverse (real output): Hermitian weights, 1/N
                    (true, 1, 0, 0) => c * hermitian(n, n_fft) / nf,
                    (true, 1, 1, 0) => -s * hermitian(n, n_fft) / nf,
                    // inverse: e^{+i th} (a + i b) / N
                    (true, _, 0, 0) => c / nf,
                    (true, _, 1, 0) => -s / nf,
                    (true, _, 0, 1) => s / nf,
                    (true, _, 1, 1) => c / nf,
                    _ => 0.0,
                }
            };
            for ci in 0..cin {
                for co in 0..cout {
                    w[(n * cin + ci) * k * cout + j * cout + co] = coef(ci, co);
                }
            }
        }
    }
    w
}

/// How often frequency `f` counts in a real signal's spectrum of length `n`: once for DC and
/// (even n) Nyquist, twice for the others (their conjugate mirrors are not stored).
fn hermitian(f: usize, n: usize) -> f64 {
    if f == 0 || 2 * f == n { 1.0 } else { 2.0 }
}

/// DFT(input, dft_length?, axis?) with `inverse` and `onesided`.
fn dft(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let r = x.shape.len();
    let cin = x.shape.last().copied().unwrap_or(0);
    if !is_float(x.dtype) || r < 2 || !(cin == 1 || cin == 2) {
        return Err(ctx.err("input must be float with a last dim of 1 (real) or 2 (complex)"));
    }
    let axis = if ctx.opset >= 20 {
        match ctx.const_ints(2, "axis")?.as_deref() {
            None => -2,
            Some([a]) => *a,
            Some(_) => return Err(ctx.err("axis must be a scalar")),
        }
    } else {
        ctx.attr_i_or("axis", 1)
    };
    let axis = axis.rem_euclid(r as i64) as usize;
    if axis == r - 1 {
        return Err(ctx.err("axis must not be the last (component) dim"));
    }
    let inverse = ctx.attr_i_or("inverse", 0) != 0;
    let onesided = ctx.attr_i_or("onesided", 0) != 0;
    let m = x.shape[axis];
    let n_fft = match ctx.const_ints(1, "dft_length")?.as_deref() {
        None if inverse && onesided => 2 * m.saturating_sub(1),
        None => m,
        Some([d]) if *d > 0 => *d as usize,
        Some(_) => return Err(ctx.err("dft_length must be a positive scalar")),
    };
    if n_fft == 0 {
        return Err(ctx.err("the transform length is zero"));
    }
    let (k, cout) = match (inverse, onesided) {
        (false, true) => (n_fft / 2 + 1, 2),
        (true, true) => (n_fft, 1),
        _ => (n_fft, 2),
    };
    // A one-sided inverse reads only the first n/2 + 1 frequencies.
    let m_used = if inverse && onesided {
        m.min(n_fft / 2 + 1)
    } else {
        m
    };
    if (m * cin).saturating_mul(k.saturating_mul(cout)) > MAX_CONST_ELEMS {
        return Err(ctx.unsupported("a DFT this long (its matrix would be too large)"));
    }
    let mut w = table(m_used, cin, k, cout, n_fft, inverse);
    w.resize(m * cin * k * cout, 0.0);
    let mut s = Sub::new(ctx);
    let perm: Vec<i64> = (0..r as i64 - 1)
        .filter(|&d| d != axis as i64)
        .chain([axis as i64, r as i64 - 1])
        .collect();
    let t = s.op(
        "Transpose",
        &[&in_name(ctx, 0)],
        vec![A::Is("perm", perm.clone())],
    );
    let mut shape: Vec<usize> = perm[..r - 2].iter().map(|&d| x.shape[d as usize]).collect();
    let lead = shape.clone();
    shape.push(m * cin);
    let flat = reshape(&mut s, &t, &shape);
    let wm = s.constant(tensor_data(x.dtype, vec![m * cin, k * cout], &w));
    let y = s.op("MatMul", &[&flat, &wm], vec![]);
    let mut yshape = lead;
    yshape.extend([k, cout]);
    let y = reshape(&mut s, &y, &yshape);
    let mut inv = vec![0i64; r];
    for (i, &p) in perm.iter().enumerate() {
        inv[p as usize] = i as i64;
    }
    s.to("Transpose", &[&y], &[&out0(ctx)?], vec![A::Is("perm", inv)]);
    Ok(s.done())
}

/// STFT(signal [B, L, 1 or 2], frame_step, window?, frame_length?): frames cut by a constant
/// Gather, weighted by the window, then each frame's DFT by the constant matrix. Frame step
/// and length decide shapes, so they must be known while compiling.
fn stft(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let [b, l, cin] = *x.shape else {
        return Err(ctx.err("signal must be rank 3 [batch, length, 1 or 2]"));
    };
    if !is_float(x.dtype) || !(cin == 1 || cin == 2) {
        return Err(ctx.err("signal must be float with a last dim of 1 or 2"));
    }
    let scalar = |i: usize, what: &str| -> Result<Option<usize>> {
        match ctx.const_ints(i, what)?.as_deref() {
            None => Ok(None),
            Some([v]) if *v > 0 => Ok(Some(*v as usize)),
            Some(_) => Err(ctx.err(format!("{what} must be a positive scalar"))),
        }
    };
    let step = scalar(1, "frame_step")?.ok_or_else(|| ctx.err("frame_step is required"))?;
    let window = ctx.input_opt(2);
    let w = match (scalar(3, "frame_length")?, window) {
        (Some(f), _) => f,
        (None, Some(win)) => win.shape.iter().product(),
        (None, None) => l,
    };
    if let Some(win) = window
        && win.shape != [w]
    {
        return Err(ctx.err(format!("window must have shape [{w}]")));
    }
    if w == 0 || w > l {
        return Err(ctx.err(format!(
            "frame length {w} does not fit the signal length {l}"
        )));
    }
    let frames = 1 + (l - w) / step;
    let onesided = ctx.attr_i_or("onesided", 1) != 0;
    let k = if onesided { w / 2 + 1 } else { w };
    if (frames * w).max(w * cin * k * 2) > MAX_CONST_ELEMS {
        return Err(ctx.unsupported("an STFT this large"));
    }
    let idx: Vec<f64> = (0..frames)
        .flat_map(|f| (0..w).map(move |i| (f * step + i) as f64))
        .collect();
    let mut s = Sub::new(ctx);
    let ix = s.constant(tensor_data(DType::I64, vec![frames, w], &idx));
    let mut fr = s.op("Gather", &[&in_name(ctx, 0), &ix], vec![A::I("axis", 1)]);
    if window.is_some() {
        let wr = reshape(&mut s, &in_name(ctx, 2), &[w, 1]);
        fr = s.op("Mul", &[&fr, &wr], vec![]);
    }
    let flat = reshape(&mut s, &fr, &[b, frames, w * cin]);
    let wm = s.constant(tensor_data(
        x.dtype,
        vec![w * cin, k * 2],
        &table(w, cin, k, 2, w, false),
    ));
    let y = s.op("MatMul", &[&flat, &wm], vec![]);
    let y = reshape(&mut s, &y, &[b, frames, k, 2]);
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}
