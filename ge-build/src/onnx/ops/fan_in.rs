//! Fan-in and fan-out past a task's slot limit ([`MAX_TASK_IO`]: the runtime binds a task's
//! tensors in fixed arrays, no heap). A Concat, Sum/Max/Min/Mean of more inputs, or a Split
//! into more outputs, is rewritten into a tree of the same op over groups of at most
//! `MAX_TASK_IO`; the generated nodes are imported again, so trees of any depth form. An
//! unrolled GRU's 100-way Concat or a 1,000-input Sum compile; the concat planner still
//! writes every group straight into its slice. O(n) nodes for n inputs.

use ge_runtime::format::{DType, MAX_TASK_IO};

use super::decomp::in_name;
use super::sub::{A, Sub};
use crate::error::Result;
use crate::onnx::ctx::{Imported, NodeCtx};

/// True when `n` inputs or outputs exceed one task's slots.
pub fn too_many(n: usize) -> bool {
    n > MAX_TASK_IO
}

/// The node's inputs in groups of at most `MAX_TASK_IO`.
fn groups(ctx: &NodeCtx<'_>) -> Vec<Vec<String>> {
    let names: Vec<String> = (0..ctx.node.input.len()).map(|i| in_name(ctx, i)).collect();
    names.chunks(MAX_TASK_IO).map(<[String]>::to_vec).collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `Concat(x0 … xn)` as `Concat(Concat(group0), Concat(group1), …)` along the same axis.
pub fn concat_tree(ctx: &NodeCtx<'_>, axis: i64) -> Result<Imported> {
    let mut s = Sub::new(ctx);
    let parts: Vec<String> = groups(ctx)
        .iter()
        .map(|g| s.op("Concat", &refs(g), vec![A::I("axis", axis)]))
        .collect();
    let y = super::decomp::out0(ctx)?;
    s.to("Concat", &refs(&parts), &[&y], vec![A::I("axis", axis)]);
    Ok(s.done())
}

/// `Sum/Max/Min(x0 … xn)` as the same op over the groups' results; `Mean` as the Sum tree
/// divided by n (what Mean computes: the sum, then one division).
pub fn variadic_tree(ctx: &NodeCtx<'_>, dtype: DType) -> Result<Imported> {
    let op = ctx.node.op_type();
    let inner = if op == "Mean" { "Sum" } else { op };
    let mut s = Sub::new(ctx);
    let parts: Vec<String> = groups(ctx)
        .iter()
        .map(|g| s.op(inner, &refs(g), vec![]))
        .collect();
    let y = super::decomp::out0(ctx)?;
    if op == "Mean" {
        let sum = s.op("Sum", &refs(&parts), vec![]);
        let n = s.scalar(dtype, ctx.node.input.len() as f64);
        s.to("Div", &[&sum, &n], &[&y], vec![]);
    } else {
        s.to(inner, &refs(&parts), &[&y], vec![]);
    }
    Ok(s.done())
}

/// `Split(x) → y0 … yn` as a Split into contiguous groups of at most `MAX_TASK_IO` outputs,
/// each split again into its outputs (`sizes` along `axis`).
pub fn split_tree(ctx: &NodeCtx<'_>, axis: usize, sizes: &[usize]) -> Result<Imported> {
    let mut s = Sub::new(ctx);
    let outs: Vec<&str> = ctx.node.output.iter().map(String::as_str).collect();
    let group_sizes: Vec<Vec<usize>> = sizes.chunks(MAX_TASK_IO).map(<[usize]>::to_vec).collect();
    let totals: Vec<usize> = group_sizes.iter().map(|g| g.iter().sum()).collect();
    let axis = axis as i64;
    let split = |s: &mut Sub, x: &str, sizes: &[usize], outputs: &[&str]| {
        let v: Vec<i64> = sizes.iter().map(|&d| d as i64).collect();
        if ctx.opset >= 13 {
            let sz = s.ints(&v);
            s.to("Split", &[x, &sz], outputs, vec![A::I("axis", axis)]);
        } else {
            s.to(
                "Split",
                &[x],
                outputs,
                vec![A::I("axis", axis), A::Is("split", v)],
            );
        }
    };
    let slabs: Vec<String> = totals.iter().map(|_| s.fresh()).collect();
    let x = in_name(ctx, 0);
    split(&mut s, &x, &totals, &refs(&slabs));
    let mut start = 0;
    for (slab, g) in slabs.iter().zip(&group_sizes) {
        let o = &outs[start..start + g.len()];
        start += g.len();
        split(&mut s, slab, g, o);
    }
    Ok(s.done())
}
