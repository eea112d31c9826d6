//! `Det` by the Leibniz formula: one constant Gather picks every permutation's entries, then
//! ReduceProd, signs and ReduceSum. It has no data-dependent pivoting (which a static graph
//! cannot express cheaply), so it is limited to small matrices (n! terms).

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reduce, reshape};
use super::is_float;
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// The largest matrix order decomposed (720 terms of 6 factors).
const MAX_N: usize = 6;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[OpEntry::decomposed("Det", 7, FLOAT, det)
    .note("Leibniz formula (Gather, ReduceProd, ReduceSum), matrices up to 6x6")];

/// Every permutation of `0..n` with its sign, in lexicographic order.
fn permutations(n: usize) -> Vec<(Vec<usize>, f64)> {
    if n == 0 {
        return vec![(Vec::new(), 1.0)];
    }
    let mut out = Vec::new();
    for (p, sign) in permutations(n - 1) {
        // Insert n-1 at each position; moving it left past k elements flips the sign k times.
        for pos in (0..n).rev() {
            let mut q = p.clone();
            q.insert(pos, n - 1);
            let flips = n - 1 - pos;
            out.push((q, if flips.is_multiple_of(2) { sign } else { -sign }));
        }
    }
    out
}

/// Det(X) over the last two (equal) dims.
fn det(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let r = x.shape.len();
    if !is_float(x.dtype) {
        return Err(ctx.err(format!("X is {}, not a float", x.dtype.name())));
    }
    if r < 2 || x.shape[r - 1] != x.shape[r - 2] {
        return Err(ctx.err(format!(
            "X {:?} is not a (batch of) square matrices",
            x.shape
        )));
    }
    let n = x.shape[r - 1];
    if n > MAX_N {
        return Err(ctx.unsupported(format!(
            "{n}x{n} matrices: ge evaluates the Leibniz formula (n! terms), up to {MAX_N}x{MAX_N}"
        )));
    }
    let perms = permutations(n);
    let idx: Vec<f64> = perms
        .iter()
        .flat_map(|(p, _)| p.iter().enumerate().map(move |(i, &j)| (i * n + j) as f64))
        .collect();
    let signs: Vec<f64> = perms.iter().map(|(_, s)| *s).collect();
    let mut s = Sub::new(ctx);
    let mut flat = x.shape[..r - 2].to_vec();
    flat.push(n * n);
    let xf = reshape(&mut s, &in_name(ctx, 0), &flat);
    let ix = s.constant(tensor_data(DType::I64, vec![perms.len(), n], &idx));
    let b = (r - 2) as i64;
    let terms = s.op("Gather", &[&xf, &ix], vec![A::I("axis", b)]);
    let prods = reduce(&mut s, ctx.opset, "ReduceProd", &terms, &[b + 1], false);
    let sg = s.constant(tensor_data(x.dtype, vec![perms.len()], &signs));
    let signed = s.op("Mul", &[&prods, &sg], vec![]);
    let y = reduce(&mut s, ctx.opset, "ReduceSum", &signed, &[b], false);
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

#[cfg(test)]
mod tests {
    use super::permutations;

    #[test]
    fn permutation_signs() {
        let p = permutations(3);
        assert_eq!(p.len(), 6);
        for (q, s) in p {
            let inversions = (0..3)
                .flat_map(|i| (i + 1..3).map(move |j| (i, j)))
                .filter(|&(i, j)| q[i] > q[j])
                .count();
            assert_eq!(
                s,
                if inversions.is_multiple_of(2) {
                    1.0
                } else {
                    -1.0
                },
                "{q:?}"
            );
        }
    }
}
