//! RNN, GRU and LSTM as one `Recurrent` task per node (every direction): the node's inputs
//! are the kernel's (`ge_sim::ops::recurrent`), constant W and R transposed here to
//! `[dirs, in, gates·H]` / `[dirs, H, gates·H]`, the layout the kernel's step streams, so
//! `run` never rearranges weights. Attributes become a `RecurrentParams` record; `layout`,
//! `sequence_lens`, initial states, peepholes, clip, `linear_before_reset`, `input_forget`
//! and every spec activation are the kernel's. O(weights) (the transposes).

use ge_runtime::format::{
    DType, RECURRENT_BIDIRECTIONAL, RECURRENT_FORWARD, RECURRENT_R_TRANSPOSED, RECURRENT_REVERSE,
    RECURRENT_W_TRANSPOSED, RecurrentAct, RecurrentActivation, RecurrentCell, RecurrentParams,
};

use super::super::ctx::{Imported, NodeCtx};
use crate::error::Result;
use crate::ir::Op;
use crate::tensor::TensorData;

/// What [`task`] needs of a validated node.
pub(super) struct Layer<'a> {
    pub cell: RecurrentCell,
    pub dtype: DType,
    pub dirs: usize,
    pub t: usize,
    pub b: usize,
    pub h: usize,
    pub layout: bool,
    /// Per direction, the cell's activations as (lower-case name, alpha, beta), defaults
    /// resolved.
    pub acts: &'a [Vec<(String, f32, f32)>],
}

/// True when the kernel computes nodes of this element type (f32, and halves widened to
/// it at import); f64 layers stay unrolled.
pub(super) fn covers(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::F16 | DType::Bf16)
}

fn act_code(name: &str) -> Option<RecurrentAct> {
    Some(match name {
        "sigmoid" => RecurrentAct::Sigmoid,
        "tanh" => RecurrentAct::Tanh,
        "relu" => RecurrentAct::Relu,
        "leakyrelu" => RecurrentAct::LeakyRelu,
        "thresholdedrelu" => RecurrentAct::ThresholdedRelu,
        "elu" => RecurrentAct::Elu,
        "hardsigmoid" => RecurrentAct::HardSigmoid,
        "softsign" => RecurrentAct::Softsign,
        "softplus" => RecurrentAct::Softplus,
        "affine" => RecurrentAct::Affine,
        "scaledtanh" => RecurrentAct::ScaledTanh,
        _ => return None,
    })
}

/// `[d, r, c]` → `[d, c, r]` of any element type.
fn transpose_last2(t: &TensorData) -> Option<TensorData> {
    let [d, r, c] = t.dims[..] else { return None };
    let es = t.dtype.size();
    if t.bytes.len() != d * r * c * es {
        return None;
    }
    let mut out = vec![0u8; t.bytes.len()];
    for k in 0..d {
        let base = k * r * c;
        for i in 0..r {
            for j in 0..c {
                let (s, o) = ((base + i * c + j) * es, (base + j * r + i) * es);
                out[o..o + es].copy_from_slice(&t.bytes[s..s + es]);
            }
        }
    }
    Some(TensorData {
        dtype: t.dtype,
        dims: vec![d, c, r],
        bytes: out,
    })
}

/// The `Recurrent` task of a validated node.
pub(super) fn task(ctx: &NodeCtx<'_>, l: &Layer<'_>) -> Result<Imported> {
    let mut acts = [RecurrentActivation::default(); 6];
    for (d, list) in l.acts.iter().enumerate().take(2) {
        for (k, (name, alpha, beta)) in list.iter().enumerate().take(3) {
            let func =
                act_code(name).ok_or_else(|| ctx.unsupported(format!("activation '{name}'")))?;
            acts[d * 3 + k] = RecurrentActivation {
                func: func as u32,
                alpha: *alpha,
                beta: *beta,
            };
        }
    }
    let direction = match ctx.attr_s_or("direction", "forward").as_str() {
        "reverse" => RECURRENT_REVERSE,
        "bidirectional" => RECURRENT_BIDIRECTIONAL,
        _ => RECURRENT_FORWARD,
    };
    let clip = ctx.attr_f("clip");
    let mut overrides = Vec::new();
    let mut weights = 0;
    for (i, bit) in [(1, RECURRENT_W_TRANSPOSED), (2, RECURRENT_R_TRANSPOSED)] {
        if let Some(t) = ctx.input(i)?.data.and_then(transpose_last2) {
            overrides.push((i, t));
            weights |= bit;
        }
    }
    let p = RecurrentParams {
        cell: l.cell as u32,
        hidden: l.h as u32,
        direction,
        layout: l.layout as u32,
        linear_before_reset: (l.cell == RecurrentCell::Gru
            && ctx.attr_i_or("linear_before_reset", 0) != 0) as u32,
        input_forget: (l.cell == RecurrentCell::Lstm && ctx.attr_i_or("input_forget", 0) != 0)
            as u32,
        weights,
        has_clip: clip.is_some() as u32,
        clip: clip.unwrap_or(0.0),
        reserved: 0,
        acts,
    };
    let (t, b, d, h) = (l.t, l.b, l.dirs, l.h);
    let (y, state) = if l.layout {
        (vec![b, t, d, h], vec![b, d, h])
    } else {
        (vec![t, d, b, h], vec![d, b, h])
    };
    let mut outputs = vec![(l.dtype, y), (l.dtype, state.clone())];
    let inputs: Vec<usize> = if l.cell == RecurrentCell::Lstm {
        outputs.push((l.dtype, state));
        (0..8).collect()
    } else {
        (0..6).collect()
    };
    Ok(Imported::Op {
        op: Op::Recurrent(p),
        inputs,
        outputs,
        overrides,
    })
}
