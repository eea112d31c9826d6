//! `RotaryEmbedding` (RoPE) as elementwise arithmetic on the halves (or even/odd lanes) of
//! each head's first `rotary_embedding_dim` features, with cos/sin gathered by position.

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape, unsqueeze};
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::sub::{A, Sub};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[OpEntry::decomposed("RotaryEmbedding", 23, FLOAT, rotary)];

/// `x[..., from..to]` along the last axis (of rank `r`).
fn last_slice(s: &mut Sub, x: &str, r: usize, from: usize, to: usize) -> String {
    let st = s.ints(&[from as i64]);
    let en = s.ints(&[to as i64]);
    let ax = s.ints(&[r as i64 - 1]);
    s.op("Slice", &[x, &st, &en, &ax], vec![])
}

/// RotaryEmbedding(input, cos_cache, sin_cache, position_ids?).
fn rotary(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let op = ctx.opset;
    let mut s = Sub::new(ctx);
    let xi = in_name(ctx, 0);
    // [B, S, H, D] view of the input.
    let (b, sq, h, d, xv) = match *x.shape {
        [b, h, sq, d] => {
            let t = s.op("Transpose", &[&xi], vec![A::Is("perm", vec![0, 2, 1, 3])]);
            (b, sq, h, d, t)
        }
        [b, sq, hidden] => {
            let h = ctx.attr_i_or("num_heads", 0);
            if h <= 0 || hidden % h as usize != 0 {
                return Err(ctx.err("a 3-D input needs num_heads dividing the hidden size"));
            }
            let h = h as usize;
            let v = reshape(&mut s, &xi, &[b, sq, h, hidden / h]);
            (b, sq, h, hidden / h, v)
        }
        _ => return Err(ctx.err("input must be rank 3 or 4")),
    };
    let rd = match ctx.attr_i_or("rotary_embedding_dim", 0) {
        0 => d,
        r if r > 0 && r as usize <= d && r % 2 == 0 => r as usize,
        r => return Err(ctx.err(format!("rotary_embedding_dim {r} for head size {d}"))),
    };
    let half = rd / 2;
    let cache = |s: &mut Sub, i: usize| -> Result<String> {
        let c = ctx.input(i)?;
        let name = in_name(ctx, i);
        let g = if ctx.input_opt(3).is_some() {
            s.op("Gather", &[&name, &in_name(ctx, 3)], vec![A::I("axis", 0)])
        } else {
            name
        };
        if c.shape.last() != Some(&half) {
            return Err(ctx.err(format!(
                "input {i} must end in rotary_embedding_dim/2 = {half}"
            )));
        }
        let g = reshape(s, &g, &[b, sq, half]);
        Ok(unsqueeze(s, op, &g, &[2]))
    };
    let cos = cache(&mut s, 1)?;
    let sin = cache(&mut s, 2)?;
    let rot = if rd == d {
        xv.clone()
    } else {
        last_slice(&mut s, &xv, 4, 0, rd)
    };
    let interleaved = ctx.attr_i_or("interleaved", 0) != 0;
    let (x1, x2) = if interleaved {
        let pairs = reshape(&mut s, &rot, &[b, sq, h, half, 2]);
        let mut lane = |i: f64| {
            let k = s.scalar(ge_runtime::format::DType::I64, i);
            s.op("Gather", &[&pairs, &k], vec![A::I("axis", 4)])
        };
        (lane(0.0), lane(1.0))
    } else {
        (
            last_slice(&mut s, &rot, 4, 0, half),
            last_slice(&mut s, &rot, 4, half, rd),
        )
    };
    let c1 = s.op("Mul", &[&cos, &x1], vec![]);
    let s2 = s.op("Mul", &[&sin, &x2], vec![]);
    let real = s.op("Sub", &[&c1, &s2], vec![]);
    let s1 = s.op("Mul", &[&sin, &x1], vec![]);
    let c2 = s.op("Mul", &[&cos, &x2], vec![]);
    let imag = s.op("Add", &[&s1, &c2], vec![]);
    let mut y = if interleaved {
        let re = unsqueeze(&mut s, op, &real, &[4]);
        let im = unsqueeze(&mut s, op, &imag, &[4]);
        let c = s.op("Concat", &[&re, &im], vec![A::I("axis", 4)]);
        reshape(&mut s, &c, &[b, sq, h, rd])
    } else {
        s.op("Concat", &[&real, &imag], vec![A::I("axis", 3)])
    };
    if rd < d {
        let pass = last_slice(&mut s, &xv, 4, rd, d);
        y = s.op("Concat", &[&y, &pass], vec![A::I("axis", 3)]);
    }
    let y = if x.shape.len() == 4 {
        s.op("Transpose", &[&y], vec![A::Is("perm", vec![0, 2, 1, 3])])
    } else {
        reshape(&mut s, &y, x.shape)
    };
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}
