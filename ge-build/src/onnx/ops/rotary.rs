//! RotaryEmbedding (opset 23): the rotation `(x1, x2) → (cos·x1 − sin·x2, sin·x1 + cos·x2)`
//! over the first `rotary_embedding_dim` channels of each head, split in halves or
//! interleaved pairs, with cos/sin gathered by position id — written out as elementwise ops
//! in a (batch, sequence, heads, head size) layout.

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape, slice, unsqueeze};
use super::is_float;
use super::sub::{A, Sub};
use crate::error::Result;

/// Op types handled here.
pub const OPS: &[&str] = &["RotaryEmbedding"];

/// Imports `t` if it is handled here; `None` otherwise.
pub fn import(t: &str, ctx: &NodeCtx<'_>) -> Option<Result<Imported>> {
    match t {
        "RotaryEmbedding" => Some(rotary(ctx)),
        _ => None,
    }
}

fn rotary(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let cos = ctx.input(1)?;
    ctx.input(2)?;
    if !is_float(x.dtype) {
        return Err(ctx.unsupported(format!("{} input", x.dtype.name())));
    }
    let op = ctx.opset;
    let mut s = Sub::new(ctx);
    let xi = in_name(ctx, 0);
    // To (B, S, H, D).
    let (b, seq, h, d, x4) = match *x.shape {
        [b, h, seq, d] => {
            let t = s.op("Transpose", &[&xi], vec![A::Is("perm", vec![0, 2, 1, 3])]);
            (b, seq, h, d, t)
        }
        [b, seq, hd] => {
            let h = ctx
                .attr_i("num_heads")
                .and_then(|h| usize::try_from(h).ok())
                .filter(|&h| h > 0 && hd % h == 0)
                .ok_or_else(|| {
                    ctx.err(format!(
                        "a 3-D input needs num_heads dividing its hidden size {hd}"
                    ))
                })?;
            (
                b,
                seq,
                h,
                hd / h,
                reshape(&mut s, &xi, &[b, seq, h, hd / h]),
            )
        }
        _ => {
            return Err(ctx.err(format!(
                "input {:?} is not (B, H, S, D) or (B, S, H*D)",
                x.shape
            )));
        }
    };
    let rd = match ctx.attr_i_or("rotary_embedding_dim", 0) {
        0 => d,
        r => usize::try_from(r)
            .ok()
            .filter(|&r| r <= d && r % 2 == 0)
            .ok_or_else(|| {
                ctx.err(format!(
                    "rotary_embedding_dim {r} must be even and at most the head size {d}"
                ))
            })?,
    };
    let half = rd / 2;
    if cos.shape.last() != Some(&half) {
        return Err(ctx.err(format!(
            "cos_cache {:?} must end in rotary_embedding_dim / 2 = {half}",
            cos.shape
        )));
    }
    // cos/sin as (B, S, 1, half).
    let cache = |s: &mut Sub, i: usize| -> Result<String> {
        let c = in_name(ctx, i);
        let c = match ctx.input_opt(3) {
            Some(p) if p.shape == [b, seq] => s.op("Gather", &[&c, &in_name(ctx, 3)], vec![]),
            Some(p) => {
                return Err(ctx.err(format!("position_ids {:?} is not [{b}, {seq}]", p.shape)));
            }
            None if ctx.input(i)?.shape == [b, seq, half] => c,
            None => {
                return Err(ctx.err(format!(
                    "without position_ids the caches must be [{b}, {seq}, {half}]"
                )));
            }
        };
        Ok(unsqueeze(s, op, &c, &[2]))
    };
    let (cos4, sin4) = (cache(&mut s, 1)?, cache(&mut s, 2)?);
    let x_rot = if rd == d {
        x4.clone()
    } else {
        slice(&mut s, op, &x4, 3, 0, rd as i64)
    };
    let interleaved = ctx.attr_i_or("interleaved", 0) != 0;
    let (x1, x2) = if interleaved {
        let pairs = reshape(&mut s, &x_rot, &[b, seq, h, half, 2]);
        let (i0, i1) = (s.i64s(&[0], &[]), s.i64s(&[1], &[]));
        (
            s.op("Gather", &[&pairs, &i0], vec![A::I("axis", 4)]),
            s.op("Gather", &[&pairs, &i1], vec![A::I("axis", 4)]),
        )
    } else {
        (
            slice(&mut s, op, &x_rot, 3, 0, half as i64),
            slice(&mut s, op, &x_rot, 3, half as i64, rd as i64),
        )
    };
    let (c1, s2) = (
        s.op("Mul", &[&cos4, &x1], vec![]),
        s.op("Mul", &[&sin4, &x2], vec![]),
    );
    let real = s.op("Sub", &[&c1, &s2], vec![]);
    let (s1, c2) = (
        s.op("Mul", &[&sin4, &x1], vec![]),
        s.op("Mul", &[&cos4, &x2], vec![]),
    );
    let imag = s.op("Add", &[&s1, &c2], vec![]);
    let rotated = if interleaved {
        let (r, i) = (
            unsqueeze(&mut s, op, &real, &[4]),
            unsqueeze(&mut s, op, &imag, &[4]),
        );
        let st = s.op("Concat", &[&r, &i], vec![A::I("axis", 4)]);
        reshape(&mut s, &st, &[b, seq, h, rd])
    } else {
        s.op("Concat", &[&real, &imag], vec![A::I("axis", 3)])
    };
    let y4 = if rd == d {
        rotated
    } else {
        let pass = slice(&mut s, op, &x4, 3, rd as i64, d as i64);
        s.op("Concat", &[&rotated, &pass], vec![A::I("axis", 3)])
    };
    let y = out0(ctx)?;
    if x.shape.len() == 4 {
        s.to(
            "Transpose",
            &[&y4],
            &[&y],
            vec![A::Is("perm", vec![0, 2, 1, 3])],
        );
    } else {
        let shape = s.ints(&[b as i64, seq as i64, (h * d) as i64]);
        s.to("Reshape", &[&y4, &shape], &[&y], vec![]);
    }
    Ok(s.done())
}
