//! Lowers a planned IR graph into `.om` tables: one tensor per used value (inputs bound to
//! input slots, constants to the weights section, activations and workspaces to planned arena
//! offsets, aliases inside their root's bytes) and one task per non-elided node in execution
//! order. O(nodes + values + weight bytes).

use std::collections::HashMap;

use ge_runtime::format::{
    DType, EventDesc, IoDesc, Location, MAX_RANK, Meta, NO_TENSOR, TaskDesc, TensorDesc,
};

use super::OmBuilder;
use crate::error::{CompileError, Result};
use crate::ir::{Graph, ValueId};
use crate::plan::{Aliases, Lifetimes, MemoryPlan, Plan};

/// What emission produced besides the blob.
#[derive(Clone, Debug)]
pub struct Emitted {
    pub blob: Vec<u8>,
    pub streams: usize,
    pub events: usize,
    pub tasks: usize,
    pub weight_bytes: usize,
}

/// Serializes `g` as planned by `plan` (see [`crate::plan::plan`]); decides nothing itself.
pub fn emit(g: &Graph, plan: &Plan, producer_name: &str) -> Result<Emitted> {
    let (order, aliases, streams, lt, memory) = (
        plan.order(),
        &plan.aliases,
        &plan.streams,
        &plan.lifetimes,
        &plan.memory,
    );
    let mut t = Tables {
        om: OmBuilder::default(),
        tensor_of: HashMap::new(),
        weight_of: HashMap::new(),
        g,
        memory,
        lt,
        aliases,
    };
    for (i, &v) in g.inputs.iter().enumerate() {
        t.add_tensor(v, Location::Input, i as u32, 0)?;
    }
    let mut task_of_step = vec![u32::MAX; order.len()];
    for (step, &n) in order.iter().enumerate() {
        if aliases.elided.contains(&n) {
            continue;
        }
        task_of_step[step] = t.om.tasks.len() as u32;
        let node = &g.g[n];
        let io_start = t.om.task_io.len() as u32;
        let mut ids = Vec::with_capacity(node.inputs.len() + node.outputs.len());
        for i in &node.inputs {
            ids.push(match i {
                Some(v) => t.tensor(*v)?,
                None => NO_TENSOR,
            });
        }
        for &v in &node.outputs {
            ids.push(t.tensor(v)?);
        }
        t.om.task_io.extend_from_slice(&ids);
        let workspace = match lt.workspace_of[step] {
            Some(b) => {
                let name = t.om.string(&format!("{}:workspace", node.name));
                let mut dims = [0u32; MAX_RANK];
                dims[0] = u32::try_from(lt.buffers[b].bytes).map_err(|_| {
                    CompileError::Model(format!("node '{}': workspace above 4 GiB", node.name))
                })?;
                t.om.tensors.push(TensorDesc {
                    dtype: DType::U8 as u8,
                    rank: 1,
                    location: Location::Arena as u8,
                    reserved: 0,
                    index: 0,
                    dims,
                    offset: memory.offsets[b] as u64,
                    bytes: lt.buffers[b].bytes as u64,
                    name,
                });
                (t.om.tensors.len() - 1) as u32
            }
            None => NO_TENSOR,
        };
        let (kind, params) = node.op.lower();
        let (params_offset, params_len) = t.om.params(&params);
        let name = t.om.string(&node.name);
        t.om.tasks.push(TaskDesc {
            op: kind as u16,
            input_count: node.inputs.len() as u8,
            output_count: node.outputs.len() as u8,
            stream: streams.stream_of[step],
            in_place: aliases.in_place.get(&n).map_or(0, |&k| k as u16 + 1),
            io_start,
            params_offset,
            params_len,
            workspace,
            name,
        });
    }
    for (i, &v) in g.inputs.iter().enumerate() {
        let name = t.om.string(&g.value(v).name);
        t.om.io.push(IoDesc {
            name,
            tensor: i as u32,
            direction: 0,
        });
    }
    for (i, &v) in g.outputs.iter().enumerate() {
        let id = t.tensor(v)?;
        let out_name = g.output_names.get(i).unwrap_or(&g.value(v).name);
        let name = t.om.string(out_name);
        t.om.io.push(IoDesc {
            name,
            tensor: id,
            direction: 1,
        });
    }
    for &(record, wait) in &streams.events {
        let (r, w) = (task_of_step[record], task_of_step[wait]);
        if r != u32::MAX && w != u32::MAX {
            t.om.events.push(EventDesc { record: r, wait: w });
        }
    }
    let weight_bytes = t.om.weight_bytes();
    let tasks = t.om.tasks.len();
    let mut om = t.om;
    let meta = Meta {
        name: om.string(&g.name),
        producer: om.string(producer_name),
        arena_bytes: memory.arena_bytes as u64,
        input_count: g.inputs.len() as u32,
        output_count: g.outputs.len() as u32,
        stream_count: streams.stream_count as u32,
        precision: 0,
        opset: g.opset as u32,
        reserved: [0; 5],
    };
    let events = om.events.len();
    Ok(Emitted {
        blob: om.finish(meta),
        tasks,
        weight_bytes,
        streams: streams.stream_count,
        events,
    })
}

/// The tensor table being built, and the value → tensor id map.
struct Tables<'a> {
    om: OmBuilder,
    tensor_of: HashMap<ValueId, u32>,
    /// Weight offset of each constant root written so far.
    weight_of: HashMap<ValueId, u64>,
    g: &'a Graph,
    memory: &'a MemoryPlan,
    lt: &'a Lifetimes,
    aliases: &'a Aliases,
}

impl Tables<'_> {
    fn add_tensor(
        &mut self,
        v: ValueId,
        location: Location,
        index: u32,
        offset: u64,
    ) -> Result<u32> {
        let val = self.g.value(v);
        if val.shape.len() > MAX_RANK {
            return Err(CompileError::Model(format!(
                "value '{}' has rank {} > {MAX_RANK}",
                val.name,
                val.shape.len()
            )));
        }
        let mut dims = [0u32; MAX_RANK];
        for (d, &s) in dims.iter_mut().zip(&val.shape) {
            *d = u32::try_from(s).map_err(|_| {
                CompileError::Model(format!("value '{}' has a dimension above 2^32", val.name))
            })?;
        }
        let name = self.om.string(&val.name);
        self.om.tensors.push(TensorDesc {
            dtype: val.dtype as u8,
            rank: val.shape.len() as u8,
            location: location as u8,
            reserved: 0,
            index,
            dims,
            offset,
            bytes: val.bytes() as u64,
            name,
        });
        let id = (self.om.tensors.len() - 1) as u32;
        self.tensor_of.insert(v, id);
        Ok(id)
    }

    /// The tensor of `v`, added on first use: in the bytes of its alias root.
    fn tensor(&mut self, v: ValueId) -> Result<u32> {
        if let Some(&t) = self.tensor_of.get(&v) {
            return Ok(t);
        }
        let (root, off) = self.aliases.resolve(v);
        let rv = self.g.value(root);
        if let Some(data) = &rv.data {
            let base = match self.weight_of.get(&root) {
                Some(&o) => o,
                None => {
                    let o = self.om.weights(&data.bytes);
                    self.weight_of.insert(root, o);
                    o
                }
            };
            self.add_tensor(v, Location::Weight, 0, base + off as u64)
        } else if let Some(i) = self.g.inputs.iter().position(|&x| x == root) {
            self.add_tensor(v, Location::Input, i as u32, off as u64)
        } else if let Some(&b) = self.lt.buffer_of.get(&root) {
            let base = self.memory.offsets[b] as u64;
            self.add_tensor(v, Location::Arena, 0, base + off as u64)
        } else {
            Err(CompileError::Model(format!(
                "value '{}' has no producer",
                self.g.value(v).name
            )))
        }
    }
}
