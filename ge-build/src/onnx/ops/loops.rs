//! Loop with a trip count and condition known while compiling, unrolled: the body is
//! inlined once per iteration (see [`super::scan::inline_body`]), loop-carried values
//! threaded through, scan outputs stacked on a new leading axis. A condition the body
//! computes at run time would decide the unrolled length dynamically, so only a body that
//! passes its condition through unchanged is accepted.

use super::super::ctx::{Imported, NodeCtx};
use super::super::proto::GraphProto;
use super::decomp::{in_name, out, unsqueeze};
use super::registry::OpEntry;
use super::registry::dtypes::ANY;
use super::scan::{graph_attr, inline_body};
use super::sub::{A, Sub, scalar_data};
use crate::error::Result;
use ge_runtime::format::DType;

/// Bound on iterations × body nodes, so a long loop fails clearly.
const MAX_UNROLLED_NODES: usize = 100_000;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[OpEntry::decomposed("Loop", 7, ANY, loop_unrolled)
    .note("trip count and condition known at compile time, condition passed through; unrolled")];

/// True when the body's condition output is its condition input (directly or through an
/// Identity), so the loop runs exactly the trip count.
fn passes_condition_through(body: &GraphProto) -> bool {
    let (Some(cin), Some(cout)) = (body.input.get(1), body.output.first()) else {
        return false;
    };
    let (cin, cout) = (cin.name(), cout.name());
    cout == cin
        || body.node.iter().any(|n| {
            n.op_type() == "Identity"
                && n.output.first().is_some_and(|o| o == cout)
                && n.input.first().is_some_and(|i| i == cin)
        })
}

fn loop_unrolled(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let body = graph_attr(ctx, "body")?;
    let n = ctx.input_count().saturating_sub(2);
    if body.input.len() != n + 2 || body.output.len() < n + 1 {
        return Err(ctx.err(format!(
            "the body takes {} inputs and gives {} outputs for {n} loop-carried values",
            body.input.len(),
            body.output.len()
        )));
    }
    let k = body.output.len() - n - 1;
    let trip = match ctx.const_ints(0, "trip count M")? {
        Some(v) if v.len() == 1 => Some(v[0].max(0) as usize),
        Some(_) => return Err(ctx.err("the trip count must be a scalar")),
        None => None,
    };
    let cond = match ctx.const_input(1, "condition")? {
        Some(d) => {
            let v = d.to_f64_vec().map_err(|e| ctx.err(e))?;
            *v.first().ok_or_else(|| ctx.err("the condition is empty"))? != 0.0
        }
        None => true,
    };
    let iters = match (cond, trip) {
        (false, _) => 0,
        (true, _) if !passes_condition_through(body) => {
            return Err(ctx.unsupported(
                "the body computes its loop condition at run time (only loops whose \
                 iteration count is known while compiling are unrolled)",
            ));
        }
        (true, Some(m)) => m,
        (true, None) => return Err(ctx.err("no trip count and a constant true condition")),
    };
    if iters.saturating_mul(body.node.len().max(1)) > MAX_UNROLLED_NODES {
        return Err(ctx.unsupported(format!(
            "unrolling {iters} iterations of a {}-node body exceeds {MAX_UNROLLED_NODES} nodes",
            body.node.len()
        )));
    }
    if iters == 0 && (0..k).any(|i| out(ctx, n + i).is_some()) {
        return Err(ctx
            .unsupported("a loop that runs no iteration has empty scan outputs of unknown shape"));
    }
    let mut s = Sub::new(ctx);
    let mut states: Vec<String> = (0..n).map(|i| in_name(ctx, 2 + i)).collect();
    let mut scans: Vec<Vec<String>> = vec![Vec::with_capacity(iters); k];
    let truth = s.constant(scalar_data(DType::Bool, 1.0));
    for it in 0..iters {
        let i = s.i64s(&[it as i64], &[]);
        let mut bound = vec![i, truth.clone()];
        bound.extend(states.iter().cloned());
        let results = inline_body(ctx, &mut s, body, &bound)?;
        states = results[1..=n].to_vec();
        for (c, r) in scans.iter_mut().zip(&results[n + 1..]) {
            c.push(unsqueeze(&mut s, ctx.opset, r, &[0]));
        }
    }
    for (i, v) in states.iter().enumerate() {
        if let Some(o) = out(ctx, i) {
            s.to("Identity", &[v], &[&o], vec![]);
        }
    }
    for (i, parts) in scans.iter().enumerate() {
        if let Some(o) = out(ctx, n + i) {
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            s.to("Concat", &refs, &[&o], vec![A::I("axis", 0)]);
        }
    }
    Ok(s.done())
}
