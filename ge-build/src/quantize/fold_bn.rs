//! BatchNormalization folded into the Conv before it, on the ONNX graph, before calibration:
//! the int8 weights then carry the batch norm's scale (quantizing the unfolded weights and
//! running the batch norm in float after a requantized conv loses accuracy), as onnxruntime's
//! quantization preprocessing does. `W'[m] = W[m]·s[m]`, `b'[m] = (b[m] − mean[m])·s[m] + β[m]`
//! with `s = γ / √(var + ε)`. O(nodes + weight elements).

use std::path::Path;

use ge_runtime::format::DType;

use super::graph::{
    Names, consumers, ctx, drop_unused_initializers, f32_value, initializers, outputs, producers,
};
use crate::error::Result;
use crate::onnx::proto::GraphProto;
use crate::tensor::{TensorData, encode_tensor};

/// Folds every foldable Conv → BatchNormalization pair of `g`; returns how many.
/// A pair folds when the Conv's output feeds only the batch norm (and is no graph output),
/// the Conv's weight and bias are f32 initializers only it reads, and the batch norm is in
/// inference mode with f32 initializer parameters; others are left as they are.
pub fn fold_batch_norms(g: &mut GraphProto, model_dir: Option<&Path>, opset: i64) -> Result<usize> {
    let users = consumers(g);
    let graph_outputs = outputs(g);
    let producer = producers(g);
    let mut pairs = Vec::new();
    for (bi, bn) in g.node.iter().enumerate() {
        if bn.op_type() != "BatchNormalization" || !matches!(bn.domain(), "" | "ai.onnx") {
            continue;
        }
        let c = ctx(bn, opset);
        if bn.output.iter().skip(1).any(|o| !o.is_empty())
            || c.attr_i_or("training_mode", 0) != 0
            || bn.input.len() != 5
        {
            continue;
        }
        let Some(&ci) = producer.get(bn.input[0].as_str()) else {
            continue;
        };
        let conv = &g.node[ci];
        let only_bn = users.get(&bn.input[0]).is_some_and(|u| u == &[bi]);
        let single_use = |v: &String| users.get(v).is_some_and(|u| u.len() == 1);
        if conv.op_type() == "Conv"
            && matches!(conv.domain(), "" | "ai.onnx")
            && only_bn
            && !graph_outputs.contains(&bn.input[0])
            && conv.input.len() >= 2
            && conv.input.iter().skip(1).all(single_use)
        {
            pairs.push((ci, bi, c.attr_f_or("epsilon", 1e-5)));
        }
    }
    let inits = initializers(g);
    let mut names = Names::of(g);
    let mut folded = Vec::new();
    for (ci, bi, eps) in pairs {
        let get = |name: &str| -> Result<Option<TensorData>> {
            match inits.get(name) {
                Some(&i) => f32_value(&g.initializer[i], model_dir),
                None => Ok(None),
            }
        };
        let (conv, bn) = (&g.node[ci], &g.node[bi]);
        let params: Vec<Option<TensorData>> = bn.input[1..]
            .iter()
            .map(|n| get(n))
            .collect::<Result<_>>()?;
        let (Some(w), Some(gamma), Some(beta), Some(mean), Some(var)) = (
            get(&conv.input[1])?,
            params[0].clone(),
            params[1].clone(),
            params[2].clone(),
            params[3].clone(),
        ) else {
            continue;
        };
        let m = w.dims.first().copied().unwrap_or(0);
        let vals = |t: &TensorData| t.to_f32_vec();
        let (gamma, beta, mean, var) = (vals(&gamma), vals(&beta), vals(&mean), vals(&var));
        if m == 0 || [&gamma, &beta, &mean, &var].iter().any(|v| v.len() != m) {
            continue;
        }
        let bias = match conv.input.get(2).filter(|b| !b.is_empty()) {
            Some(b) => match get(b)? {
                Some(t) if t.numel() == m => t.to_f32_vec(),
                _ => continue,
            },
            None => vec![0.0; m],
        };
        let s: Vec<f32> = (0..m).map(|k| gamma[k] / (var[k] + eps).sqrt()).collect();
        let per = w.numel() / m;
        let wv: Vec<f32> = w
            .to_f32_vec()
            .iter()
            .enumerate()
            .map(|(i, x)| x * s[i / per])
            .collect();
        let bv: Vec<f32> = (0..m)
            .map(|k| (bias[k] - mean[k]) * s[k] + beta[k])
            .collect();
        let (Ok(wt), Ok(bt)) = (
            TensorData::from_elements(DType::F32, w.dims.clone(), &wv),
            TensorData::from_elements(DType::F32, vec![m], &bv),
        ) else {
            continue;
        };
        let wname = names.fresh(&format!("{}_folded", conv.input[1]));
        let bname = names.fresh(&format!("{}_bias_folded", keep(conv)));
        folded.push((ci, bi, (wname, wt), (bname, bt)));
    }
    let count = folded.len();
    let mut removed = vec![false; g.node.len()];
    for (ci, bi, (wn, wt), (bn_name, bt)) in folded {
        let out = g.node[bi].output[0].clone();
        let conv = &mut g.node[ci];
        conv.input.truncate(2);
        conv.input[1] = wn.clone();
        conv.input.push(bn_name.clone());
        conv.output[0] = out;
        g.initializer.push(encode_tensor(&wn, &wt));
        g.initializer.push(encode_tensor(&bn_name, &bt));
        removed[bi] = true;
    }
    let mut i = 0;
    g.node.retain(|_| {
        i += 1;
        !removed[i - 1]
    });
    drop_unused_initializers(g);
    Ok(count)
}

fn keep(n: &crate::onnx::proto::NodeProto) -> &str {
    crate::accuracy::probe::keep_name(n)
}
