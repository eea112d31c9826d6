//! Scan, unrolled over its static sequence axis: ge compiles static graphs, so the body is
//! inlined once per iteration (names made unique per copy), the state values threaded from
//! one copy to the next and the per-iteration scan outputs stacked.

use std::collections::{HashMap, HashSet};

use super::super::ctx::{Imported, NodeCtx};
use super::super::proto::{GraphProto, NodeProto};
use super::decomp::{in_name, out, unsqueeze};
use super::registry::OpEntry;
use super::registry::dtypes::ANY;
use super::sub::{A, Sub};
use crate::error::Result;

/// Bound on iterations × body nodes, so a long sequence fails clearly instead of
/// producing an enormous graph.
const MAX_UNROLLED_NODES: usize = 100_000;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[OpEntry::decomposed("Scan", 8, ANY, scan)
    .note("unrolled over the static sequence axis; opset 8 sequence_lens must be full")];

/// One scan input: its value name, the axis iterated (non-negative) and whether backwards.
struct ScanIn {
    name: String,
    axis: usize,
    reverse: bool,
}

/// How one scan output is stacked: the (possibly negative) axis and whether backwards.
#[derive(Clone, Copy)]
struct ScanOut {
    axis: i64,
    reverse: bool,
}

/// A graph attribute of the node.
pub fn graph_attr<'a>(ctx: &NodeCtx<'a>, name: &str) -> Result<&'a GraphProto> {
    ctx.node
        .attribute
        .iter()
        .find(|a| a.name() == name)
        .and_then(|a| a.g.as_ref())
        .ok_or_else(|| ctx.err(format!("graph attribute '{name}' is missing")))
}

fn scan(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let body = graph_attr(ctx, "body")?;
    let m = ctx
        .attr_i("num_scan_inputs")
        .ok_or_else(|| ctx.err("num_scan_inputs is required"))?;
    let first = if ctx.opset < 9 { 1 } else { 0 };
    let total = ctx.input_count().saturating_sub(first);
    let m = usize::try_from(m)
        .ok()
        .filter(|&m| m >= 1 && m <= total)
        .ok_or_else(|| ctx.err(format!("num_scan_inputs {m} for {total} inputs")))?;
    let n = total - m;
    let k = body
        .output
        .len()
        .checked_sub(n)
        .ok_or_else(|| ctx.err("the body has fewer outputs than state variables"))?;
    if body.input.len() != n + m {
        return Err(ctx.err(format!(
            "the body takes {} inputs but the node has {n} states and {m} scan inputs",
            body.input.len()
        )));
    }
    if ctx.node.output.len() > n + k {
        return Err(ctx.err("the node has more outputs than the body"));
    }
    let ints_or = |name: &str, len: usize, default: i64| -> Result<Vec<i64>> {
        match ctx.attr_ints(name) {
            Some(v) if v.len() == len => Ok(v),
            Some(v) => Err(ctx.err(format!("{name} has {} entries, expected {len}", v.len()))),
            None => Ok(vec![default; len]),
        }
    };
    let mut s = Sub::new(ctx);
    if ctx.opset < 9 {
        return scan8(ctx, s, body, [n, m, k], &ints_or("directions", m, 0)?);
    }
    let in_axes = ints_or("scan_input_axes", m, 0)?;
    let in_dirs = ints_or("scan_input_directions", m, 0)?;
    let out_axes = ints_or("scan_output_axes", k, 0)?;
    let out_dirs = ints_or("scan_output_directions", k, 0)?;
    let states: Vec<String> = (0..n).map(|i| in_name(ctx, i)).collect();
    let mut scans = Vec::with_capacity(m);
    for j in 0..m {
        let x = ctx.input(n + j)?;
        scans.push(ScanIn {
            name: in_name(ctx, n + j),
            axis: ctx.axis(in_axes[j], x.shape.len())?,
            reverse: in_dirs[j] != 0,
        });
    }
    let len = seq_len(ctx, &scans, n)?;
    let outs: Vec<ScanOut> = (0..k)
        .map(|i| ScanOut {
            axis: out_axes[i],
            reverse: out_dirs[i] != 0,
        })
        .collect();
    let (fin, stacked) = unroll(ctx, &mut s, body, states, &scans, len, &outs)?;
    for (i, v) in fin.iter().chain(&stacked).enumerate() {
        if let Some(o) = out(ctx, i) {
            s.to("Identity", &[v], &[&o], vec![]);
        }
    }
    Ok(s.done())
}

/// The common length of the scan inputs along their scan axes (at least 1).
fn seq_len(ctx: &NodeCtx<'_>, scans: &[ScanIn], first: usize) -> Result<usize> {
    let mut len = None;
    for (j, sc) in scans.iter().enumerate() {
        let l = ctx.input(first + j)?.shape[sc.axis];
        if len.is_some_and(|p| p != l) {
            return Err(ctx.err("scan inputs differ in sequence length"));
        }
        len = Some(l);
    }
    match len {
        Some(l) if l > 0 => Ok(l),
        _ => Err(ctx.unsupported("an empty scan sequence (its outputs have no static shape)")),
    }
}

/// Opset 8: a batch axis 0 on every input, the sequence on axis 1 of the scan inputs and an
/// optional `sequence_lens` (only full lengths are supported). Each batch entry is unrolled
/// separately and the results stacked back along axis 0.
fn scan8(
    ctx: &NodeCtx<'_>,
    mut s: Sub,
    body: &GraphProto,
    [n, m, k]: [usize; 3],
    dirs: &[i64],
) -> Result<Imported> {
    let x0 = ctx.input(1 + n)?;
    if x0.shape.len() < 2 {
        return Err(ctx.err("scan inputs need a batch and a sequence axis"));
    }
    let batch = x0.shape[0];
    let len = x0.shape[1];
    for j in 0..m {
        let x = ctx.input(1 + n + j)?;
        if x.shape.len() < 2 || x.shape[0] != batch || x.shape[1] != len {
            return Err(ctx.err(format!(
                "scan input {j} has shape {:?}, expected [{batch}, {len}, ...]",
                x.shape
            )));
        }
    }
    if let Some(lens) = ctx.const_ints(0, "sequence_lens")?
        && lens.iter().any(|&l| l != len as i64)
    {
        return Err(ctx.unsupported(
            "sequence_lens shorter than the scan axis (only full-length sequences are unrolled)",
        ));
    }
    if batch == 0 || len == 0 {
        return Err(ctx.unsupported("an empty batch or sequence"));
    }
    let outs = vec![
        ScanOut {
            axis: 0,
            reverse: false
        };
        k
    ];
    let mut per_batch: Vec<Vec<String>> = vec![Vec::with_capacity(batch); n + k];
    for b in 0..batch {
        let idx = s.i64s(&[b as i64], &[]);
        let pick = |s: &mut Sub, i: usize| s.op("Gather", &[&in_name(ctx, i), &idx], vec![]);
        let states: Vec<String> = (1..=n).map(|i| pick(&mut s, i)).collect();
        let scans: Vec<ScanIn> = (0..m)
            .map(|j| ScanIn {
                name: pick(&mut s, 1 + n + j),
                axis: 0,
                reverse: dirs[j] != 0,
            })
            .collect();
        let (fin, stacked) = unroll(ctx, &mut s, body, states, &scans, len, &outs)?;
        for (i, v) in fin.iter().chain(&stacked).enumerate() {
            per_batch[i].push(unsqueeze(&mut s, ctx.opset, v, &[0]));
        }
    }
    for (i, parts) in per_batch.iter().enumerate() {
        if let Some(o) = out(ctx, i) {
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            s.to("Concat", &refs, &[&o], vec![A::I("axis", 0)]);
        }
    }
    Ok(s.done())
}

/// Inlines `body` `len` times; returns the final states and the stacked scan outputs.
fn unroll(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    body: &GraphProto,
    mut states: Vec<String>,
    scans: &[ScanIn],
    len: usize,
    outs: &[ScanOut],
) -> Result<(Vec<String>, Vec<String>)> {
    if len.saturating_mul(body.node.len()) > MAX_UNROLLED_NODES {
        return Err(ctx.unsupported(format!(
            "unrolling {len} iterations of a {}-node body exceeds {MAX_UNROLLED_NODES} nodes",
            body.node.len()
        )));
    }
    let n = states.len();
    let mut collected: Vec<Vec<String>> = vec![Vec::with_capacity(len); outs.len()];
    for t in 0..len {
        let mut bound = states.clone();
        for sc in scans {
            let pos = if sc.reverse { len - 1 - t } else { t };
            let idx = s.i64s(&[pos as i64], &[]);
            bound.push(s.op(
                "Gather",
                &[&sc.name, &idx],
                vec![A::I("axis", sc.axis as i64)],
            ));
        }
        let results = inline_body(ctx, s, body, &bound)?;
        states = results[..n].to_vec();
        for (c, r) in collected.iter_mut().zip(&results[n..]) {
            c.push(r.clone());
        }
    }
    let mut stacked = Vec::with_capacity(outs.len());
    for (parts, o) in collected.iter_mut().zip(outs) {
        if o.reverse {
            parts.reverse();
        }
        let ups: Vec<String> = parts
            .iter()
            .map(|p| unsqueeze(s, ctx.opset, p, &[o.axis]))
            .collect();
        let refs: Vec<&str> = ups.iter().map(String::as_str).collect();
        stacked.push(s.op("Concat", &refs, vec![A::I("axis", o.axis)]));
    }
    Ok((states, stacked))
}

/// Inlines one copy of `body` with its inputs bound to `bound` (in order); every name the
/// body defines gets a fresh prefix, so copies never collide. Returns the copy's outputs.
pub fn inline_body(
    ctx: &NodeCtx<'_>,
    s: &mut Sub,
    body: &GraphProto,
    bound: &[String],
) -> Result<Vec<String>> {
    if bound.len() != body.input.len() {
        return Err(ctx.err(format!(
            "the body takes {} inputs, {} are bound",
            body.input.len(),
            bound.len()
        )));
    }
    let mut defined = HashSet::new();
    defined_names(body, &mut defined);
    let base = s.fresh();
    let mut map: HashMap<String, String> = defined
        .into_iter()
        .map(|d| {
            let r = format!("{base}/{d}");
            (d, r)
        })
        .collect();
    for (vi, b) in body.input.iter().zip(bound) {
        map.insert(vi.name().to_string(), b.clone());
    }
    let rn = |name: &str| map.get(name).cloned().unwrap_or_else(|| name.to_string());
    for init in &body.initializer {
        let data = crate::tensor::decode_tensor(init, None)
            .map_err(|e| ctx.err(format!("body initializer: {e}")))?;
        s.constant_named(&rn(init.name()), data);
    }
    for node in &body.node {
        let mut node = node.clone();
        rename_node(&mut node, &map);
        s.push(node);
    }
    Ok(body.output.iter().map(|o| rn(o.name())).collect())
}

/// Every name a graph defines (inputs, initializers, node outputs), nested graphs included.
fn defined_names(g: &GraphProto, out: &mut HashSet<String>) {
    out.extend(g.input.iter().map(|i| i.name().to_string()));
    out.extend(g.initializer.iter().map(|i| i.name().to_string()));
    for n in &g.node {
        out.extend(n.output.iter().filter(|o| !o.is_empty()).cloned());
        for a in &n.attribute {
            for sg in a.g.iter().chain(&a.graphs) {
                defined_names(sg, out);
            }
        }
    }
}

/// Renames a node's values (and those of its nested graphs) through `map`; names not in it
/// come from an enclosing scope and stay.
fn rename_node(node: &mut NodeProto, map: &HashMap<String, String>) {
    let rn = |v: &mut String| {
        if let Some(r) = map.get(v.as_str()) {
            *v = r.clone();
        }
    };
    node.input.iter_mut().for_each(rn);
    node.output.iter_mut().for_each(rn);
    // Unique node names per copy, so errors point at one iteration.
    if let Some(name) = node.name.as_mut()
        && let Some(first) = node.output.first()
    {
        *name = format!("{name}@{first}");
    }
    for a in &mut node.attribute {
        for g in a.g.iter_mut().chain(a.graphs.iter_mut()) {
            rename_graph(g, map);
        }
    }
}

fn rename_graph(g: &mut GraphProto, map: &HashMap<String, String>) {
    for vi in g
        .input
        .iter_mut()
        .chain(&mut g.output)
        .chain(&mut g.value_info)
    {
        if let Some(r) = map.get(vi.name()) {
            vi.name = Some(r.clone());
        }
    }
    for t in &mut g.initializer {
        if let Some(r) = map.get(t.name()) {
            t.name = Some(r.clone());
        }
    }
    for n in &mut g.node {
        rename_node(n, map);
    }
}
