//! `AffineGrid`: the constant homogeneous base grid (`[x, y, (z,) 1]` per output position,
//! normalized to [-1, 1]) times each batch's transposed `theta`, one batched MatMul. `size`
//! decides the output shape, so it must be known while compiling.

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape};
use super::is_float;
use super::shape::MAX_CONST_ELEMS;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// Op types handled here.
pub const OPS: &[&str] = &["AffineGrid"];

/// Imports `t` if it is handled here; `None` otherwise.
pub fn import(t: &str, ctx: &NodeCtx<'_>) -> Option<Result<Imported>> {
    (t == "AffineGrid").then(|| affine_grid(ctx))
}

/// Normalized coordinate `i` of `n` samples in [-1, 1].
fn coord(i: usize, n: usize, align_corners: bool) -> f64 {
    if align_corners {
        if n <= 1 {
            -1.0
        } else {
            -1.0 + 2.0 * i as f64 / (n - 1) as f64
        }
    } else {
        -1.0 + (2 * i + 1) as f64 / n as f64
    }
}

/// AffineGrid(theta [N, d, d + 1], size [N, C, (D,) H, W]) -> grid [N, (D,) H, W, d].
fn affine_grid(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let theta = ctx.input(0)?;
    let size = ctx
        .const_ints(1, "size")?
        .ok_or_else(|| ctx.err("size is required"))?;
    let d = size.len().saturating_sub(2);
    let n = theta.shape.first().copied().unwrap_or(0);
    if !(d == 2 || d == 3) || theta.shape != [n, d, d + 1] || !is_float(theta.dtype) {
        return Err(ctx.err(format!(
            "theta {:?} and size {size:?} are not a 2-D (N,2,3) or 3-D (N,3,4) pair",
            theta.shape
        )));
    }
    if size.iter().skip(2).any(|&v| v <= 0) || size[0] != n as i64 {
        return Err(ctx.err(format!(
            "size {size:?} must be positive and match theta's N"
        )));
    }
    let spatial: Vec<usize> = size[2..].iter().map(|&v| v as usize).collect();
    let p = spatial.iter().fold(1usize, |a, &b| a.saturating_mul(b));
    if p.saturating_mul(d + 1) > MAX_CONST_ELEMS {
        return Err(ctx.unsupported("an AffineGrid this large"));
    }
    let ac = ctx.attr_i_or("align_corners", 0) != 0;
    let mut base = Vec::with_capacity(p * (d + 1));
    for flat in 0..p {
        let mut idx = vec![0usize; d];
        let mut rest = flat;
        for i in (0..d).rev() {
            idx[i] = rest % spatial[i];
            rest /= spatial[i];
        }
        // (x, y, z): x runs along the last dim.
        for i in (0..d).rev() {
            base.push(coord(idx[i], spatial[i], ac));
        }
        base.push(1.0);
    }
    let mut s = Sub::new(ctx);
    let g = s.constant(tensor_data(theta.dtype, vec![p, d + 1], &base));
    let tt = s.op(
        "Transpose",
        &[&in_name(ctx, 0)],
        vec![A::Is("perm", vec![0, 2, 1])],
    );
    let y = s.op("MatMul", &[&g, &tt], vec![]);
    let mut shape = vec![n];
    shape.extend(&spatial);
    shape.push(d);
    let y = reshape(&mut s, &y, &shape);
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}
