//! `Einsum` decomposed into Where (diagonals), ReduceSum (labels summed away), Transpose,
//! Reshape and batched MatMul (pairwise contractions, left to right).

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reduce, reshape};
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[OpEntry::decomposed("Einsum", 12, FLOAT, einsum)];

/// Labels of the dims an ellipsis stands for (letters are their ASCII codes).
const ELLIPSIS: u32 = 1000;

/// One operand during the decomposition: a value name and the label of each of its dims.
struct Term {
    name: String,
    labels: Vec<u32>,
    shape: Vec<usize>,
}

/// Splits one subscript (`ab...c`) into letters, with `None` marking the ellipsis.
fn parse_term(ctx: &NodeCtx<'_>, t: &str) -> Result<Vec<Option<u32>>> {
    let mut v = Vec::new();
    let mut rest = t;
    while let Some(c) = rest.chars().next() {
        if let Some(r) = rest.strip_prefix("...") {
            if v.contains(&None) {
                return Err(ctx.err(format!("'{t}' has more than one ellipsis")));
            }
            v.push(None);
            rest = r;
        } else if c.is_ascii_alphabetic() {
            v.push(Some(c as u32));
            rest = &rest[1..];
        } else {
            return Err(ctx.err(format!("'{c}' in equation term '{t}' is not a letter")));
        }
    }
    Ok(v)
}

/// The labels of a term for an operand of rank `rank`, with `ell` ellipsis dims overall
/// (right-aligned across operands).
fn expand(ctx: &NodeCtx<'_>, t: &[Option<u32>], rank: usize, ell: usize) -> Result<Vec<u32>> {
    let letters = t.iter().filter(|l| l.is_some()).count();
    let here = rank
        .checked_sub(letters)
        .filter(|&e| e == 0 || t.contains(&None));
    let Some(here) = here else {
        return Err(ctx.err(format!(
            "a term with {letters} labels does not fit an operand of rank {rank}"
        )));
    };
    let mut v = Vec::with_capacity(rank);
    for l in t {
        match l {
            Some(c) => v.push(*c),
            None => v.extend((ell - here..ell).map(|j| ELLIPSIS + j as u32)),
        }
    }
    Ok(v)
}

/// Einsum(inputs...) with `equation`.
fn einsum(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let eq: String = ctx
        .attr_s("equation")
        .ok_or_else(|| ctx.err("equation is required"))?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq.as_str(), None),
    };
    let terms: Vec<Vec<Option<u32>>> = lhs
        .split(',')
        .map(|t| parse_term(ctx, t))
        .collect::<Result<_>>()?;
    if terms.len() != ctx.input_count() {
        return Err(ctx.err(format!(
            "the equation has {} operands but the node {} inputs",
            terms.len(),
            ctx.input_count()
        )));
    }
    let mut ell = 0;
    let mut ops = Vec::new();
    for (i, t) in terms.iter().enumerate() {
        let x = ctx.input(i)?;
        let letters = t.iter().filter(|l| l.is_some()).count();
        ell = ell.max(x.shape.len().saturating_sub(letters));
        ops.push(x);
    }
    let dtype = ops[0].dtype;
    if ops.iter().any(|o| o.dtype != dtype) {
        return Err(ctx.err("the operands' element types differ"));
    }
    let mut list = Vec::new();
    let mut sizes = std::collections::HashMap::new();
    for (i, (t, x)) in terms.iter().zip(&ops).enumerate() {
        let labels = expand(ctx, t, x.shape.len(), ell)?;
        for (&l, &d) in labels.iter().zip(x.shape) {
            if *sizes.entry(l).or_insert(d) != d {
                return Err(ctx.unsupported(format!(
                    "label dims of different sizes ({} and {d}); broadcasting in Einsum is not supported",
                    sizes[&l]
                )));
            }
        }
        list.push(Term {
            name: in_name(ctx, i),
            labels,
            shape: x.shape.to_vec(),
        });
    }
    let out_labels: Vec<u32> = match rhs {
        Some(r) => {
            let t = parse_term(ctx, r)?;
            let mut v = Vec::new();
            for l in t {
                match l {
                    Some(c) => v.push(c),
                    None => v.extend((0..ell).map(|j| ELLIPSIS + j as u32)),
                }
            }
            v
        }
        None => {
            let mut once: Vec<u32> = Vec::new();
            let all: Vec<u32> = list.iter().flat_map(|t| t.labels.clone()).collect();
            for &l in &all {
                if l < ELLIPSIS && all.iter().filter(|&&m| m == l).count() == 1 {
                    once.push(l);
                }
            }
            once.sort_unstable();
            (0..ell).map(|j| ELLIPSIS + j as u32).chain(once).collect()
        }
    };
    for l in &out_labels {
        if !sizes.contains_key(l) {
            return Err(ctx.err("an output label appears in no input"));
        }
    }
    let mut s = Sub::new(ctx);
    let op = ctx.opset;
    let n = list.len();
    let mut prepared = Vec::with_capacity(n);
    for i in 0..n {
        let others: Vec<u32> = list
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .flat_map(|(_, t)| t.labels.iter().copied())
            .chain(out_labels.iter().copied())
            .collect();
        let t = Term {
            name: list[i].name.clone(),
            labels: list[i].labels.clone(),
            shape: list[i].shape.clone(),
        };
        prepared.push(prepare(&mut s, op, dtype, t, &others));
    }
    let mut it = prepared.into_iter();
    let mut cur = it.next().ok_or_else(|| ctx.err("no operands"))?;
    let rest: Vec<Term> = it.collect();
    for (k, b) in rest.into_iter().enumerate() {
        let keep: Vec<u32> = list[k + 2..]
            .iter()
            .flat_map(|t| t.labels.iter().copied())
            .chain(out_labels.iter().copied())
            .collect();
        cur = contract(&mut s, cur, b, &keep);
    }
    // Labels the output does not name (left by a single operand's sum) were summed in
    // `prepare`; what remains is a permutation of the output's labels.
    let perm: Vec<i64> = out_labels
        .iter()
        .map(|l| cur.labels.iter().position(|m| m == l).map(|p| p as i64))
        .collect::<Option<_>>()
        .ok_or_else(|| ctx.err("an output label is missing after contraction"))?;
    let y = transpose(&mut s, &cur.name, &perm);
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}

/// `Transpose(x, perm)`, or `x` itself for the identity permutation.
fn transpose(s: &mut Sub, x: &str, perm: &[i64]) -> String {
    if perm.iter().enumerate().all(|(i, &p)| p == i as i64) {
        x.to_string()
    } else {
        s.op("Transpose", &[x], vec![A::Is("perm", perm.to_vec())])
    }
}

/// Takes an operand's diagonals (repeated labels) and sums the labels no one else needs.
fn prepare(s: &mut Sub, op: i64, dtype: DType, mut t: Term, others: &[u32]) -> Term {
    while let Some((p, q)) = (0..t.labels.len())
        .find_map(|q| (0..q).find(|&p| t.labels[p] == t.labels[q]).map(|p| (p, q)))
    {
        let d = t.shape[p];
        let mut mshape = vec![1usize; t.shape.len()];
        mshape[p] = d;
        mshape[q] = d;
        let eye: Vec<f64> = (0..d * d).map(|k| (k / d == k % d) as u8 as f64).collect();
        let mask = s.constant(tensor_data(DType::Bool, mshape, &eye));
        let zero = s.scalar(dtype, 0.0);
        let m = s.op("Where", &[&mask, &t.name, &zero], vec![]);
        t.name = reduce(s, op, "ReduceSum", &m, &[q as i64], false);
        t.labels.remove(q);
        t.shape.remove(q);
    }
    let sum: Vec<usize> = (0..t.labels.len())
        .filter(|&i| !others.contains(&t.labels[i]))
        .collect();
    if !sum.is_empty() {
        let axes: Vec<i64> = sum.iter().map(|&i| i as i64).collect();
        t.name = reduce(s, op, "ReduceSum", &t.name, &axes, false);
        for &i in sum.iter().rev() {
            t.labels.remove(i);
            t.shape.remove(i);
        }
    }
    t
}

/// `a` and `b` contracted over their shared labels not in `keep`, as one batched MatMul:
/// `[batch, left, k] @ [batch, k, right]`.
fn contract(s: &mut Sub, a: Term, b: Term, keep: &[u32]) -> Term {
    let size = |t: &Term, l: u32| {
        t.labels
            .iter()
            .position(|&m| m == l)
            .map_or(1, |p| t.shape[p])
    };
    let in_b = |l: &u32| b.labels.contains(l);
    let batch: Vec<u32> = a
        .labels
        .iter()
        .copied()
        .filter(|l| in_b(l) && keep.contains(l))
        .collect();
    let inner: Vec<u32> = a
        .labels
        .iter()
        .copied()
        .filter(|l| in_b(l) && !keep.contains(l))
        .collect();
    let left: Vec<u32> = a.labels.iter().copied().filter(|l| !in_b(l)).collect();
    let right: Vec<u32> = b
        .labels
        .iter()
        .copied()
        .filter(|l| !a.labels.contains(l))
        .collect();
    let pos = |t: &Term, ls: &[u32]| -> Vec<i64> {
        ls.iter()
            .filter_map(|l| t.labels.iter().position(|m| m == l).map(|p| p as i64))
            .collect()
    };
    let prod = |t: &Term, ls: &[u32]| ls.iter().map(|&l| size(t, l)).product::<usize>();
    let (nb, nl, nk, nr) = (
        prod(&a, &batch),
        prod(&a, &left),
        prod(&a, &inner),
        prod(&b, &right),
    );
    let pa: Vec<i64> = [pos(&a, &batch), pos(&a, &left), pos(&a, &inner)].concat();
    let pb: Vec<i64> = [pos(&b, &batch), pos(&b, &inner), pos(&b, &right)].concat();
    let ta = transpose(s, &a.name, &pa);
    let tb = transpose(s, &b.name, &pb);
    let ra = reshape(s, &ta, &[nb, nl, nk]);
    let rb = reshape(s, &tb, &[nb, nk, nr]);
    let mm = s.op("MatMul", &[&ra, &rb], vec![]);
    let labels: Vec<u32> = [batch, left, right.clone()].concat();
    let shape: Vec<usize> = labels
        .iter()
        .map(|&l| {
            if right.contains(&l) {
                size(&b, l)
            } else {
                size(&a, l)
            }
        })
        .collect();
    let name = reshape(s, &mm, &shape);
    Term {
        name,
        labels,
        shape,
    }
}
