//! Tensor sequences resolved at compile time. A sequence whose length and element positions
//! are known while compiling is just a list of tensors: the sequence ops rewrite into plain
//! tensor nodes (Split, Concat, Reshape) or aliases. Positions or split sizes computed at run
//! time are unsupported (they would make shapes dynamic).

use std::collections::HashMap;
use std::sync::Arc;

use ge_runtime::format::{AxisParams, DType, MAX_TASK_IO};

use super::ops::registry::OpEntry;
use super::proto::NodeProto;
use crate::error::{CompileError, Result};
use crate::ir::{Graph, Node, Op, Value, ValueId};
use crate::tensor::TensorData;

/// Most elements a sequence may have: each becomes values of the unrolled graph.
const MAX_SEQUENCE_ITEMS: usize = 1 << 16;

/// The sequence ops this module resolves (all since opset 11).
pub const OPS: &[OpEntry] = &[
    OpEntry::sequence("SequenceConstruct", 11).note("lengths and positions known at compile time"),
    OpEntry::sequence("SequenceEmpty", 11).note("lengths and positions known at compile time"),
    OpEntry::sequence("SequenceInsert", 11).note("lengths and positions known at compile time"),
    OpEntry::sequence("SequenceErase", 11).note("lengths and positions known at compile time"),
    OpEntry::sequence("SequenceAt", 11).note("lengths and positions known at compile time"),
    OpEntry::sequence("SequenceLength", 11).note("lengths and positions known at compile time"),
    OpEntry::sequence("SplitToSequence", 11).note("lengths and positions known at compile time"),
    OpEntry::sequence("ConcatFromSequence", 11).note("lengths and positions known at compile time"),
];

/// Compile-time state: which names are sequences, and their elements.
#[derive(Default)]
pub struct Sequences {
    lists: HashMap<String, Vec<ValueId>>,
}

struct Cx<'a> {
    g: &'a mut Graph,
    by_name: &'a mut HashMap<String, ValueId>,
    node: &'a NodeProto,
    opset: i64,
}

impl Cx<'_> {
    fn err(&self, reason: impl Into<String>) -> CompileError {
        CompileError::Unsupported {
            node: self.node.name().into(),
            op_type: self.node.op_type().into(),
            opset: self.opset,
            reason: reason.into(),
        }
    }

    fn tensor(&self, i: usize) -> Result<ValueId> {
        let name = self
            .node
            .input
            .get(i)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| self.err(format!("input {i} is missing")))?;
        self.by_name.get(name).copied().ok_or_else(|| {
            self.err(format!(
                "input '{name}' is not a tensor known at this point"
            ))
        })
    }

    fn const_int(&self, i: usize, what: &str) -> Result<Option<i64>> {
        match self.node.input.get(i).filter(|n| !n.is_empty()) {
            None => Ok(None),
            Some(_) => {
                let v = self.g.value(self.tensor(i)?);
                let d = v.data.as_ref().ok_or_else(|| {
                    self.err(format!(
                        "{what} must be a constant: run-time positions make shapes dynamic"
                    ))
                })?;
                let ints = d.to_i64_vec().map_err(|e| self.err(e))?;
                Ok(ints.first().copied())
            }
        }
    }

    fn attr_i(&self, name: &str, default: i64) -> i64 {
        self.node
            .attribute
            .iter()
            .find(|a| a.name() == name)
            .and_then(|a| a.i)
            .unwrap_or(default)
    }

    fn output(&self, i: usize) -> Result<String> {
        self.node
            .output
            .get(i)
            .cloned()
            .ok_or_else(|| self.err("missing output"))
    }

    /// Adds a node computing one tensor per output name.
    fn add(
        &mut self,
        suffix: &str,
        op: Op,
        inputs: Vec<ValueId>,
        outputs: Vec<(String, DType, Vec<usize>)>,
    ) -> Vec<ValueId> {
        let ids: Vec<ValueId> = outputs
            .into_iter()
            .map(|(name, dtype, shape)| {
                let id = self.g.add_value(Value {
                    name: name.clone(),
                    dtype,
                    shape,
                    producer: None,
                    data: None,
                });
                self.by_name.insert(name, id);
                id
            })
            .collect();
        self.g.add_node(Node {
            name: format!("{}{suffix}", self.node.name()),
            op_type: self.node.op_type().into(),
            opset: self.opset,
            op,
            inputs: inputs.into_iter().map(Some).collect(),
            outputs: ids.clone(),
        });
        ids
    }

    /// `x` split along `axis` into `sizes`, one output per size named `{out}:{i}`. Past a
    /// task's slot limit (`MAX_TASK_IO`) it is a tree of Splits (groups of consecutive items
    /// first), as the importer does for Split itself: SplitToSequence of a 144-wide axis
    /// made a 144-output task the loader refused (found by tools/difftest.py, seed 7 graph
    /// 470). O(n) nodes, depth log_64 n.
    fn split_tree(
        &mut self,
        suffix: &str,
        x: ValueId,
        axis: usize,
        sizes: &[usize],
        first: usize,
        out: &str,
    ) -> Vec<ValueId> {
        let (dtype, shape) = (self.g.value(x).dtype, self.g.value(x).shape.clone());
        let piece = |name: String, s: usize| {
            let mut o = shape.clone();
            o[axis] = s;
            (name, dtype, o)
        };
        let op = Op::Split(AxisParams { axis: axis as u32 });
        if sizes.len() <= MAX_TASK_IO {
            let outs = (0..sizes.len())
                .map(|i| piece(format!("{out}:{}", first + i), sizes[i]))
                .collect();
            return self.add(suffix, op, vec![x], outs);
        }
        let chunk = sizes.len().div_ceil(MAX_TASK_IO);
        let groups: Vec<&[usize]> = sizes.chunks(chunk).collect();
        let outs = groups
            .iter()
            .enumerate()
            .map(|(k, g)| piece(format!("{out}{suffix}:{k}"), g.iter().sum()))
            .collect();
        let parts = self.add(suffix, op, vec![x], outs);
        let mut items = Vec::with_capacity(sizes.len());
        for (k, (g, p)) in groups.iter().zip(parts).enumerate() {
            items.extend(self.split_tree(
                &format!("{suffix}_{k}"),
                p,
                axis,
                g,
                first + k * chunk,
                out,
            ));
        }
        items
    }

    /// Concat of `parts` along `axis` into `out`; a tree of Concats past `MAX_TASK_IO` parts
    /// (ConcatFromSequence of a long sequence), like [`Cx::split_tree`].
    fn concat_tree(
        &mut self,
        suffix: &str,
        parts: Vec<ValueId>,
        axis: usize,
        out: String,
    ) -> Vec<ValueId> {
        let dtype = self.g.value(parts[0]).dtype;
        let mut shape = self.g.value(parts[0]).shape.clone();
        shape[axis] = parts.iter().map(|&p| self.g.value(p).shape[axis]).sum();
        let parts = if parts.len() <= MAX_TASK_IO {
            parts
        } else {
            let chunk = parts.len().div_ceil(MAX_TASK_IO);
            let groups: Vec<Vec<ValueId>> = parts.chunks(chunk).map(<[ValueId]>::to_vec).collect();
            let mut joined = Vec::with_capacity(groups.len());
            for (k, g) in groups.into_iter().enumerate() {
                let name = format!("{out}{suffix}:{k}");
                joined.extend(self.concat_tree(&format!("{suffix}_{k}"), g, axis, name));
            }
            joined
        };
        self.add(
            suffix,
            Op::Concat(AxisParams { axis: axis as u32 }),
            parts,
            vec![(out, dtype, shape)],
        )
    }
}

fn index(len: usize, pos: i64, inclusive_end: bool, cx: &Cx<'_>) -> Result<usize> {
    let n = len as i64;
    let p = if pos < 0 { pos + n } else { pos };
    let max = if inclusive_end { n } else { n - 1 };
    if p < 0 || p > max {
        return Err(cx.err(format!(
            "position {pos} is out of range for a sequence of {len}"
        )));
    }
    Ok(p as usize)
}

impl Sequences {
    /// True when `name` is a sequence.
    pub fn is_sequence(&self, name: &str) -> bool {
        self.lists.contains_key(name)
    }

    /// Imports one sequence op.
    pub fn import(
        &mut self,
        g: &mut Graph,
        by_name: &mut HashMap<String, ValueId>,
        node: &NodeProto,
        opset: i64,
    ) -> Result<()> {
        let mut cx = Cx {
            g,
            by_name,
            node,
            opset,
        };
        let seq = |s: &Self, cx: &Cx<'_>| -> Result<Vec<ValueId>> {
            let name = node
                .input
                .first()
                .ok_or_else(|| cx.err("sequence input missing"))?;
            s.lists
                .get(name)
                .cloned()
                .ok_or_else(|| cx.err(format!("'{name}' is not a sequence")))
        };
        let out = cx.output(0)?;
        match node.op_type() {
            "SequenceEmpty" => {
                self.lists.insert(out, Vec::new());
            }
            "SequenceConstruct" => {
                let items = (0..node.input.len())
                    .map(|i| cx.tensor(i))
                    .collect::<Result<Vec<_>>>()?;
                self.lists.insert(out, items);
            }
            "SequenceInsert" => {
                let mut items = seq(self, &cx)?;
                let t = cx.tensor(1)?;
                let at = match cx.const_int(2, "position")? {
                    Some(p) => index(items.len(), p, true, &cx)?,
                    None => items.len(),
                };
                items.insert(at, t);
                self.lists.insert(out, items);
            }
            "SequenceErase" => {
                let mut items = seq(self, &cx)?;
                if items.is_empty() {
                    return Err(cx.err("erasing from an empty sequence"));
                }
                let at = match cx.const_int(1, "position")? {
                    Some(p) => index(items.len(), p, false, &cx)?,
                    None => items.len() - 1,
                };
                items.remove(at);
                self.lists.insert(out, items);
            }
            "SequenceAt" => {
                let items = seq(self, &cx)?;
                let p = cx
                    .const_int(1, "position")?
                    .ok_or_else(|| cx.err("position is required"))?;
                let id = items[index(items.len(), p, false, &cx)?];
                cx.by_name.insert(out, id);
            }
            "SequenceLength" => {
                let n = seq(self, &cx)?.len() as i64;
                let data = TensorData {
                    dtype: DType::I64,
                    dims: vec![],
                    bytes: n.to_le_bytes().to_vec(),
                };
                let id = cx.g.add_value(Value {
                    name: out.clone(),
                    dtype: DType::I64,
                    shape: vec![],
                    producer: None,
                    data: Some(Arc::new(data)),
                });
                cx.by_name.insert(out, id);
            }
            "SplitToSequence" => {
                let x = cx.tensor(0)?;
                let (dtype, shape) = (cx.g.value(x).dtype, cx.g.value(x).shape.clone());
                let rank = shape.len() as i64;
                let a = cx.attr_i("axis", 0);
                let axis = if a < 0 { a + rank } else { a };
                if !(0..rank).contains(&axis) {
                    return Err(cx.err(format!("axis {a} out of range")));
                }
                let axis = axis as usize;
                let dim = shape[axis];
                let has_split = node.input.get(1).is_some_and(|n| !n.is_empty());
                // Each element is a value of the unrolled graph: counted before any is made
                // (an empty [2^31 + 1, …] input split into 2^31 elements exhausted memory).
                let too_many = |n: usize| {
                    (n > MAX_SEQUENCE_ITEMS).then(|| {
                        cx.err(format!(
                            "a sequence of {n} elements is over the {MAX_SEQUENCE_ITEMS} ge unrolls"
                        ))
                    })
                };
                let sizes: Vec<usize> = if has_split {
                    let v = cx.g.value(cx.tensor(1)?);
                    let d = v.data.as_ref().ok_or_else(|| {
                        cx.err("split must be a constant: run-time split sizes make shapes dynamic")
                    })?;
                    let s = d.to_i64_vec().map_err(|e| cx.err(e))?;
                    if d.dims.is_empty() {
                        let each = s.first().copied().unwrap_or(1).max(1) as usize;
                        if let Some(e) = too_many(dim.div_ceil(each)) {
                            return Err(e);
                        }
                        (0..dim.div_ceil(each))
                            .map(|i| each.min(dim - i * each))
                            .collect()
                    } else {
                        s.iter().map(|&v| v.max(0) as usize).collect()
                    }
                } else {
                    if let Some(e) = too_many(dim) {
                        return Err(e);
                    }
                    vec![1; dim]
                };
                if let Some(e) = too_many(sizes.len()) {
                    return Err(e);
                }
                if sizes.iter().sum::<usize>() != dim {
                    return Err(cx.err(format!("split sizes {sizes:?} do not cover dim {dim}")));
                }
                let squeeze = !has_split && cx.attr_i("keepdims", 1) == 0;
                let mut items = cx.split_tree("/split", x, axis, &sizes, 0, &out);
                if squeeze {
                    let mut sq = shape.clone();
                    sq.remove(axis);
                    items = items
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| {
                            cx.add(
                                &format!("/squeeze{i}"),
                                Op::Reshape,
                                vec![v],
                                vec![(format!("{out}:{i}/squeezed"), dtype, sq.clone())],
                            )[0]
                        })
                        .collect();
                }
                self.lists.insert(out, items);
            }
            "ConcatFromSequence" => {
                let items = seq(self, &cx)?;
                let first = *items
                    .first()
                    .ok_or_else(|| cx.err("concatenating an empty sequence"))?;
                let (dtype, shape) = (cx.g.value(first).dtype, cx.g.value(first).shape.clone());
                let new_axis = cx.attr_i("new_axis", 0) != 0;
                let rank = shape.len() as i64 + i64::from(new_axis);
                let a = cx.attr_i("axis", 0);
                let axis = if a < 0 { a + rank } else { a };
                if !(0..rank).contains(&axis) {
                    return Err(cx.err(format!("axis {a} out of range")));
                }
                let axis = axis as usize;
                let mut parts = Vec::with_capacity(items.len());
                for (i, &v) in items.iter().enumerate() {
                    let mut s = cx.g.value(v).shape.clone();
                    if new_axis {
                        s.insert(axis, 1);
                        parts.push(
                            cx.add(
                                &format!("/unsqueeze{i}"),
                                Op::Reshape,
                                vec![v],
                                vec![(format!("{out}:{i}/unsqueezed"), dtype, s)],
                            )[0],
                        );
                    } else {
                        parts.push(v);
                    }
                }
                let mut o = cx.g.value(parts[0]).shape.clone();
                o[axis] = 0;
                for &p in &parts {
                    let s = &cx.g.value(p).shape;
                    if s.len() != o.len()
                        || s.iter()
                            .zip(&o)
                            .enumerate()
                            .any(|(i, (x, y))| i != axis && x != y)
                    {
                        return Err(cx.err("sequence elements differ in shape outside the axis"));
                    }
                }
                cx.concat_tree("/concat", parts, axis, out);
            }
            other => return Err(cx.err(format!("{other} is not a sequence op"))),
        }
        Ok(())
    }
}
