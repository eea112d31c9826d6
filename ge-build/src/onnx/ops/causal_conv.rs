//! CausalConvWithState (opset 27): the carried state (or zeros) prepended to the input, a
//! depthwise valid Conv over it, the optional SiLU in f32, and the last `k - 1` positions
//! of the padded input as the new state — the Concat + Conv + Slice the op fuses.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out, out0, slice};
use super::is_float;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// Op types handled here.
pub const OPS: &[&str] = &["CausalConvWithState"];

/// Imports `t` if it is handled here; `None` otherwise.
pub fn import(t: &str, ctx: &NodeCtx<'_>) -> Option<Result<Imported>> {
    match t {
        "CausalConvWithState" => Some(causal_conv(ctx)),
        _ => None,
    }
}

fn causal_conv(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let w = ctx.input(1)?;
    if !is_float(x.dtype) {
        return Err(ctx.unsupported(format!("{} input", x.dtype.name())));
    }
    let silu = match ctx.attr_s_or("activation", "none").as_str() {
        "none" => false,
        "silu" | "swish" => true,
        a => return Err(ctx.err(format!("activation '{a}' is not none, silu or swish"))),
    };
    if x.shape.len() != 3 {
        return Err(ctx.err(format!("input {:?} is not (B, C, L)", x.shape)));
    }
    let (b, c, l) = (x.shape[0], x.shape[1], x.shape[2]);
    if w.shape.len() != 3 || w.shape[0] != c || w.shape[1] != 1 || w.shape[2] == 0 {
        return Err(ctx.err(format!("weight {:?} is not ({c}, 1, k)", w.shape)));
    }
    let k = w.shape[2];
    let mut s = Sub::new(ctx);
    let xi = in_name(ctx, 0);
    let padded = if k == 1 {
        xi
    } else {
        let past = match ctx.input_opt(3) {
            Some(p) if p.shape == [b, c, k - 1] => in_name(ctx, 3),
            Some(p) => {
                return Err(ctx.err(format!(
                    "past_state {:?} is not [{b}, {c}, {}]",
                    p.shape,
                    k - 1
                )));
            }
            None => s.constant(tensor_data(
                x.dtype,
                vec![b, c, k - 1],
                &vec![0.0; b * c * (k - 1)],
            )),
        };
        s.op("Concat", &[&past, &xi], vec![A::I("axis", 2)])
    };
    let mut conv_in = vec![padded.clone(), in_name(ctx, 1)];
    if ctx.input_opt(2).is_some() {
        conv_in.push(in_name(ctx, 2));
    }
    let refs: Vec<&str> = conv_in.iter().map(String::as_str).collect();
    let conv = s.op(
        "Conv",
        &refs,
        vec![
            A::I("group", c as i64),
            A::Is("kernel_shape", vec![k as i64]),
        ],
    );
    let y = out0(ctx)?;
    if silu {
        let cf = if x.dtype == DType::F32 {
            conv
        } else {
            s.op("Cast", &[&conv], vec![A::I("to", DType::F32 as i64)])
        };
        let sg = s.op("Sigmoid", &[&cf], vec![]);
        let m = s.op("Mul", &[&cf, &sg], vec![]);
        s.to("Cast", &[&m], &[&y], vec![A::I("to", x.dtype as i64)]);
    } else {
        s.to("Identity", &[&conv], &[&y], vec![]);
    }
    if let Some(o) = out(ctx, 1) {
        let total = (l + k - 1) as i64;
        let st = slice(&mut s, ctx.opset, &padded, 2, total - (k as i64 - 1), total);
        s.to("Identity", &[&st], &[&o], vec![]);
    }
    Ok(s.done())
}
