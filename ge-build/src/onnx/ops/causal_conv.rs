//! `CausalConvWithState`: the causal depthwise 1-D convolution written out as its three-op
//! pattern — Concat(past state or zeros, input), a grouped Conv, a Slice for the new state —
//! plus the optional SiLU.

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out, out0};
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[OpEntry::decomposed(
    "CausalConvWithState",
    27,
    FLOAT,
    causal_conv,
)];

/// CausalConvWithState(input, weight, bias?, past_state?) -> (output, present_state).
fn causal_conv(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let w = ctx.input(1)?;
    let (b, c, l) = match x.shape {
        [b, c, l] => (*b, *c, *l),
        _ => return Err(ctx.err("input must be rank 3 (batch, channels, length)")),
    };
    let k = match w.shape {
        [wc, 1, k] if *wc == c && *k >= 1 => *k,
        _ => return Err(ctx.err(format!("weight must have shape [{c}, 1, k]"))),
    };
    let silu = match ctx.attr_s_or("activation", "none").as_str() {
        "none" => false,
        "silu" | "swish" => true,
        a => return Err(ctx.err(format!("activation '{a}' is not none, silu or swish"))),
    };
    let mut s = Sub::new(ctx);
    let past = match ctx.input_opt(3) {
        Some(p) if p.shape != [b, c, k - 1] => {
            return Err(ctx.err(format!("past_state must have shape [{b}, {c}, {}]", k - 1)));
        }
        Some(_) => in_name(ctx, 3),
        None => s.constant(tensor_data(
            x.dtype,
            vec![b, c, k - 1],
            &vec![0.0; b * c * (k - 1)],
        )),
    };
    let padded = s.op("Concat", &[&past, &in_name(ctx, 0)], vec![A::I("axis", 2)]);
    let mut conv_in = vec![padded.clone(), in_name(ctx, 1)];
    if ctx.input_opt(2).is_some() {
        conv_in.push(in_name(ctx, 2));
    }
    let refs: Vec<&str> = conv_in.iter().map(String::as_str).collect();
    let attrs = vec![
        A::I("group", c as i64),
        A::Is("kernel_shape", vec![k as i64]),
    ];
    let mut y = s.op("Conv", &refs, attrs);
    if silu {
        let sg = s.op("Sigmoid", &[&y], vec![]);
        y = s.op("Mul", &[&y, &sg], vec![]);
    }
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    if let Some(o) = out(ctx, 1) {
        let start = s.ints(&[l as i64]);
        let end = s.ints(&[(l + k - 1) as i64]);
        let axes = s.ints(&[2]);
        s.to("Slice", &[&padded, &start, &end, &axes], &[&o], vec![]);
    }
    Ok(s.done())
}
