//! Lowers planned IR graphs into `.om` tables: one tensor per used value (inputs bound to
//! input slots, constants to the weights section, activations and workspaces to planned arena
//! offsets, aliases inside their root's bytes) and one task per non-elided node in execution
//! order. Several plans of one model (gears) go into one blob, each over its own slices of the
//! tables, sharing weights (byte-identical constants stored once), params and strings.
//! O(nodes + values + weight bytes) per gear.

use std::collections::HashMap;

use ge_runtime::format::{
    ALIGN, DType, EventDesc, GearDesc, IoDesc, Location, MAX_RANK, Meta, NO_TENSOR, TaskDesc,
    TensorDesc,
};

use super::OmBuilder;
use crate::error::{CompileError, Result};
use crate::ir::{Graph, ValueId};
use crate::plan::{Aliases, Lifetimes, MemoryPlan, Plan};

/// What emission produced besides the blob (for a blob with gears: its largest gear's
/// figures, and the weights of all).
#[derive(Clone, Debug)]
pub struct Emitted {
    pub blob: Vec<u8>,
    pub streams: usize,
    pub events: usize,
    pub tasks: usize,
    pub weight_bytes: usize,
    /// Arena bytes past the largest gear's plan where padded inputs are staged (0 without
    /// gears).
    pub staging_bytes: u64,
}

/// Serializes `g` as planned by `plan` (see [`crate::plan::plan`]); decides nothing itself.
pub fn emit(g: &Graph, plan: &Plan, producer_name: &str) -> Result<Emitted> {
    emit_gears(&[(g, plan)], None, 0, producer_name)
}

/// Serializes one plan per gear (smallest first) into one blob with a gears table and
/// `gear_flags` (`None`: a single-shape blob, `gears` holding one plan). Every gear's tensor,
/// task and event ids are relative to its own slices; the arena holds the largest gear's
/// plan and then one staging buffer per input (the largest gear's input, 64-byte aligned).
/// `precision` is the mode's [`crate::options::Precision::code`].
pub fn emit_gears(
    gears: &[(&Graph, &Plan)],
    gear_flags: Option<u32>,
    precision: u32,
    producer_name: &str,
) -> Result<Emitted> {
    let (&(g0, _), &(top, top_plan)) = gears
        .first()
        .zip(gears.last())
        .ok_or_else(|| CompileError::Model("internal error: no plan to emit".into()))?;
    let mut om = OmBuilder::default();
    let mut weight_of: HashMap<ValueId, u64> = HashMap::new();
    let mut descs = Vec::with_capacity(gears.len());
    for &(g, plan) in gears {
        if g.inputs.len() != g0.inputs.len() || g.outputs.len() != g0.outputs.len() {
            return Err(CompileError::Model(
                "internal error: gears differ in their inputs or outputs".into(),
            ));
        }
        // Constants are per gear (shapes fold differently); the content dedup in
        // `OmBuilder::weights` shares the identical ones.
        weight_of.clear();
        descs.push(emit_plan(&mut om, &mut weight_of, g, plan)?);
    }
    let plan_bytes = descs.iter().map(|d| d.arena_bytes).max().unwrap_or(0);
    let staging_bytes = match gear_flags {
        None => 0,
        Some(_) => (0..g0.inputs.len())
            .map(|i| {
                gears
                    .iter()
                    .map(|(g, _)| {
                        (g.value(g.inputs[i]).bytes() as u64).next_multiple_of(ALIGN as u64)
                    })
                    .max()
                    .unwrap_or(0)
            })
            .sum(),
    };
    let arena_bytes = match gear_flags {
        None => plan_bytes,
        Some(_) => plan_bytes.next_multiple_of(ALIGN as u64) + staging_bytes,
    };
    let last = descs.last().copied().unwrap_or_default();
    let weight_bytes = om.weight_bytes();
    let stream_count = descs.iter().map(|d| d.stream_count).max().unwrap_or(1);
    if gear_flags.is_some() {
        om.gears = descs;
    }
    let meta = Meta {
        name: om.string(&top.name),
        producer: om.string(producer_name),
        arena_bytes,
        input_count: top.inputs.len() as u32,
        output_count: top.outputs.len() as u32,
        stream_count,
        precision,
        opset: top.opset as u32,
        gear_flags: gear_flags.unwrap_or(0),
        reserved: [0; 4],
    };
    Ok(Emitted {
        blob: om.finish(meta),
        tasks: last.task_count as usize,
        weight_bytes,
        streams: top_plan.streams.stream_count,
        events: last.event_count as usize,
        staging_bytes,
    })
}

/// Appends one plan's tensors, tasks, task I/O, io entries and events to `om`; returns the
/// slices it took.
fn emit_plan(
    om: &mut OmBuilder,
    weight_of: &mut HashMap<ValueId, u64>,
    g: &Graph,
    plan: &Plan,
) -> Result<GearDesc> {
    let (order, aliases, streams, lt, memory) = (
        plan.order(),
        &plan.aliases,
        &plan.streams,
        &plan.lifetimes,
        &plan.memory,
    );
    let start = GearDesc {
        io_start: om.io.len() as u32,
        tensor_start: om.tensors.len() as u32,
        task_start: om.tasks.len() as u32,
        task_io_start: om.task_io.len() as u32,
        event_start: om.events.len() as u32,
        stream_count: streams.stream_count as u32,
        arena_bytes: memory.arena_bytes as u64,
        ..GearDesc::default()
    };
    let mut t = Tables {
        om,
        tensor_start: start.tensor_start as usize,
        tensor_of: HashMap::new(),
        weight_of,
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
        task_of_step[step] = t.om.tasks.len() as u32 - start.task_start;
        let node = &g.g[n];
        let io_start = t.om.task_io.len() as u32 - start.task_io_start;
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
                // The task's own name (stored once): a workspace is known as such by the
                // task that points at it, and a copy of each name with a suffix was 10% of
                // a tf2onnx model's blob.
                let name = t.om.string(&node.name);
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
                t.local_id()
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
    let om = t.om;
    Ok(GearDesc {
        tensor_count: om.tensors.len() as u32 - start.tensor_start,
        task_count: om.tasks.len() as u32 - start.task_start,
        task_io_count: om.task_io.len() as u32 - start.task_io_start,
        event_count: om.events.len() as u32 - start.event_start,
        ..start
    })
}

/// The tensor table being built, and the value → tensor id map.
struct Tables<'a> {
    om: &'a mut OmBuilder,
    /// The gear's first tensor: ids are relative to it.
    tensor_start: usize,
    tensor_of: HashMap<ValueId, u32>,
    /// Weight offset of each constant root written so far.
    weight_of: &'a mut HashMap<ValueId, u64>,
    g: &'a Graph,
    memory: &'a MemoryPlan,
    lt: &'a Lifetimes,
    aliases: &'a Aliases,
}

impl Tables<'_> {
    /// The id of the tensor pushed last, relative to the gear.
    fn local_id(&self) -> u32 {
        (self.om.tensors.len() - 1 - self.tensor_start) as u32
    }

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
        // A constant the compiler derived for a node (its packed weight, corrections) is
        // known by that node's name, which the blob stores anyway: the tensor table says
        // which task reads it, and `X:const4` beside `X` cost a small model 5% of its blob.
        let stored = match location {
            Location::Weight => crate::onnx::constant_owner(&val.name),
            _ => None,
        };
        let name = self.om.string(stored.unwrap_or(&val.name));
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
        let id = self.local_id();
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
