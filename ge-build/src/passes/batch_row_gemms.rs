//! Gemms (and MatMuls) that multiply rows of one tensor by the same constant B become one
//! Gemm over those rows. An exported unrolled recurrent layer (PyTorch's `LSTMCell` in a
//! Python loop: captcha_crnn) projects step `t`'s input with `Gemm(Gather(X, t), W_ih, b_ih)`:
//! a matrix-vector product per step, each reading all of `W_ih` again (6.5 MB a step there).
//! Batched, `W_ih` is read once and the product runs as a GEMM with one row per step — the
//! gate GEMMs batched over the sequence, as the `Recurrent` task does for ONNX LSTM nodes.
//! Each original output becomes a Gather of its row of the batched result (16 bytes of
//! indices, one small copy, where the Gather of X's row was before).
//!
//! Pattern: two or more nodes `Gemm(A_i, B, C)` (transA = 0, no residual) or
//! `MatMul(A_i, B)` with the same parameters, the same constant 2-D B, the same C (absent,
//! or one value per column or a scalar: the same for every row) and `A_i = Gather(X, t_i,
//! axis 0)` of one X with a constant one-element index. X precedes every node of the group,
//! so the batched node creates no cycle; rows repeat nothing (a row read twice is computed
//! once). The batched result holds every member's output until the last one is read: the
//! arena grows by the group's outputs (what an LSTM task's gate buffer holds too).
//! O(V + E + rows · log rows).

use std::collections::HashMap;

use ge_runtime::format::{AxisParams, DType};
use petgraph::stable_graph::NodeIndex;

use super::pattern::i64_tensor;
use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Node, Op, Value, ValueId};

/// Row-wise Gemms on one constant B → one Gemm.
pub struct BatchRowGemms;

/// What members of one group share.
#[derive(Clone, Hash, PartialEq, Eq)]
struct Key {
    x: ValueId,
    b: ValueId,
    c: Option<ValueId>,
    /// The op's parameter bytes (`None` for MatMul).
    params: Option<Vec<u8>>,
    a_shape: Vec<usize>,
}

/// One member: the node and the row of X its A is.
struct Member {
    node: NodeIndex,
    row: usize,
}

impl Pass for BatchRowGemms {
    pass_info!("batch_row_gemms", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        // Groups in the order their first member comes (deterministic blobs).
        let mut index: HashMap<Key, usize> = HashMap::new();
        let mut groups: Vec<(Key, Vec<Member>)> = Vec::new();
        for n in g.topo_order() {
            let Some((key, row)) = member(g, n) else {
                continue;
            };
            let i = *index.entry(key.clone()).or_insert_with(|| {
                groups.push((key, Vec::new()));
                groups.len() - 1
            });
            groups[i].1.push(Member { node: n, row });
        }
        let mut changed = false;
        for (key, members) in groups.iter().filter(|(_, m)| m.len() >= 2) {
            batch(g, key, members);
            changed = true;
        }
        Ok(changed)
    }
}

/// `n`'s group key and row, when `n` is a row-wise product on a constant B.
fn member(g: &Graph, n: NodeIndex) -> Option<(Key, usize)> {
    let node = &g.g[n];
    let params = match node.op {
        Op::Gemm(p) if p.trans_a == 0 && !p.b_panels() && node.inputs.len() <= 3 => {
            Some(bytemuck::bytes_of(&p).to_vec())
        }
        Op::MatMul if node.inputs.len() == 2 => None,
        _ => return None,
    };
    let [y] = node.outputs[..] else { return None };
    let (Some(Some(a)), Some(Some(b))) = (node.inputs.first(), node.inputs.get(1)) else {
        return None;
    };
    let c = node.inputs.get(2).copied().flatten();
    let (av, yv) = (g.value(*a), g.value(y));
    let n_cols = *yv.shape.last()?;
    if !crate::onnx::is_float(yv.dtype)
        || g.constant(*b).is_none()
        || g.value(*b).shape.len() != 2
        || av.shape.len() < 2
        || yv.shape.len() != av.shape.len()
        || c.is_some_and(|c| {
            let numel = g.value(c).numel();
            numel != 1 && (numel != n_cols || g.value(c).shape.last() != Some(&n_cols))
        })
    {
        return None;
    }
    let gather = av.producer?;
    let (Op::Gather(AxisParams { axis: 0 }), [Some(x), Some(t)]) =
        (&g.g[gather].op, &g.g[gather].inputs[..])
    else {
        return None;
    };
    let rows = *g.value(*x).shape.first()?;
    let t = g.constant(*t)?;
    let [t] = t.to_i64_vec().ok()?[..] else {
        return None;
    };
    let row = usize::try_from(if t < 0 { t + rows as i64 } else { t }).ok()?;
    if row >= rows {
        return None;
    }
    let key = Key {
        x: *x,
        b: *b,
        c,
        params,
        a_shape: av.shape.clone(),
    };
    Some((key, row))
}

/// Replaces a group (members sharing `key`) by one product over X's rows and a Gather of
/// each member's row.
fn batch(g: &mut Graph, key: &Key, group: &[Member]) {
    let first = group[0].node;
    let (name, op_type, opset, op) = {
        let f = &g.g[first];
        (f.name.clone(), f.op_type.clone(), f.opset, f.op)
    };
    let (x, a_shape) = (key.x, &key.a_shape);
    let y = g.g[first].outputs[0];
    let (x_shape, y_shape, dtype) = (
        g.value(x).shape.clone(),
        g.value(y).shape.clone(),
        g.value(y).dtype,
    );
    let mut rows: Vec<usize> = group.iter().map(|m| m.row).collect();
    rows.sort_unstable();
    rows.dedup();
    let k = *a_shape.last().unwrap_or(&1);
    let n_cols = *y_shape.last().unwrap_or(&1);
    let per_member = a_shape.iter().product::<usize>() / k.max(1);
    let m = rows.len() * per_member;

    // X's rows the group reads, in order: X itself when it is all of them.
    let mut row_shape = x_shape.clone();
    row_shape[0] = rows.len();
    let picked = if rows.iter().copied().eq(0..x_shape[0]) {
        x
    } else {
        let idx: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
        let idx = g.add_constant(format!("{name}::rows"), i64_tensor(vec![rows.len()], &idx));
        let v = new_value(g, format!("{name}::rows_of_x"), g.value(x).dtype, row_shape);
        add(
            g,
            &name,
            "Gather",
            opset,
            gather_axis0(),
            vec![x, idx],
            v,
            "::gather_rows",
        );
        v
    };
    let flat_a = new_value(g, format!("{name}::a"), g.value(x).dtype, vec![m, k]);
    add(
        g,
        &name,
        "Reshape",
        opset,
        Op::Reshape,
        vec![picked],
        flat_a,
        "::flatten_rows",
    );
    let mut ins = vec![Some(flat_a), Some(key.b)];
    ins.extend(key.c.map(Some));
    let product = new_value(g, format!("{name}::batched"), dtype, vec![m, n_cols]);
    let batched = g.add_node(Node {
        name: format!("{name}::batched"),
        op_type,
        opset,
        op,
        inputs: ins,
        outputs: vec![product],
    });
    if group.iter().any(|mb| g.kept.contains(&mb.node)) {
        g.kept.insert(batched);
    }
    let mut by_row = vec![rows.len()];
    by_row.extend_from_slice(&y_shape);
    let stacked = new_value(g, format!("{name}::by_row"), dtype, by_row);
    add(
        g,
        &name,
        "Reshape",
        opset,
        Op::Reshape,
        vec![product],
        stacked,
        "::by_row",
    );
    for mb in group {
        let Ok(pos) = rows.binary_search(&mb.row) else {
            continue;
        };
        let member_name = g.g[mb.node].name.clone();
        let idx = g.add_constant(
            format!("{member_name}::row"),
            i64_tensor(vec![], &[pos as i64]),
        );
        let node = &mut g.g[mb.node];
        node.op = gather_axis0();
        node.op_type = "Gather".into();
        g.set_inputs(mb.node, vec![Some(stacked), Some(idx)]);
    }
}

fn gather_axis0() -> Op {
    Op::Gather(AxisParams { axis: 0 })
}

fn new_value(g: &mut Graph, name: String, dtype: DType, shape: Vec<usize>) -> ValueId {
    g.add_value(Value {
        name,
        dtype,
        shape,
        producer: None,
        data: None,
    })
}

/// Adds a one-output node named after the group's first member.
#[allow(clippy::too_many_arguments)]
fn add(
    g: &mut Graph,
    name: &str,
    op_type: &str,
    opset: i64,
    op: Op,
    inputs: Vec<ValueId>,
    out: ValueId,
    suffix: &str,
) {
    g.add_node(Node {
        name: format!("{name}{suffix}"),
        op_type: op_type.into(),
        opset,
        op,
        inputs: inputs.into_iter().map(Some).collect(),
        outputs: vec![out],
    });
}
