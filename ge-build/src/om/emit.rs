//! Lowers a planned IR graph into `.om` tables: one tensor per used value (inputs bound to
//! input slots, constants to the weights section, activations and workspaces to planned arena
//! offsets) and one task per node in execution order. O(nodes + values + weight bytes).

use std::collections::HashMap;

use ge_runtime::format::{
    IoDesc, Location, MAX_RANK, Meta, NO_TENSOR, Shape, TaskDesc, TensorDesc,
};
use petgraph::stable_graph::NodeIndex;

use super::OmBuilder;
use crate::error::{CompileError, Result};
use crate::ir::{Graph, ValueId};
use crate::plan::{Buffer, MemoryPlan, plan};

/// What emission produced besides the blob.
#[derive(Clone, Debug)]
pub struct Emitted {
    pub blob: Vec<u8>,
    pub memory: MemoryPlan,
    pub tasks: usize,
    pub weight_bytes: usize,
}

fn shape_of(dims: &[usize]) -> Shape {
    Shape::new(dims).unwrap_or_default()
}

/// Emits `g` executed in `order`. `reuse` enables arena sharing by liveness.
pub fn emit(g: &Graph, order: &[NodeIndex], reuse: bool, producer_name: &str) -> Result<Vec<u8>> {
    emit_full(g, order, reuse, producer_name).map(|e| e.blob)
}

/// [`emit`] with the plan's figures.
pub fn emit_full(
    g: &Graph,
    order: &[NodeIndex],
    reuse: bool,
    producer_name: &str,
) -> Result<Emitted> {
    let steps = order.len().max(1);
    // Lifetimes of activations (values produced by nodes) and workspaces.
    let mut buffers: Vec<Buffer> = Vec::new();
    let mut buffer_of: HashMap<ValueId, usize> = HashMap::new();
    let mut step_of: HashMap<NodeIndex, usize> = HashMap::new();
    let mut workspace_of: Vec<Option<usize>> = vec![None; order.len()];
    let mut lowered = Vec::with_capacity(order.len());
    for (step, &n) in order.iter().enumerate() {
        step_of.insert(n, step);
        let node = &g.g[n];
        for &v in &node.outputs {
            buffer_of.insert(v, buffers.len());
            buffers.push(Buffer {
                bytes: g.value(v).bytes(),
                first: step,
                last: step,
            });
        }
        let (kind, params) = node.op.lower();
        let ins: Vec<Option<Shape>> = node
            .inputs
            .iter()
            .map(|i| i.map(|v| shape_of(&g.value(v).shape)))
            .collect();
        let outs: Vec<Shape> = node
            .outputs
            .iter()
            .map(|&v| shape_of(&g.value(v).shape))
            .collect();
        let ws = ge_sim::kernels::workspace_bytes(kind, &params, &ins, &outs);
        if ws > 0 {
            workspace_of[step] = Some(buffers.len());
            buffers.push(Buffer {
                bytes: ws,
                first: step,
                last: step,
            });
        }
        lowered.push((kind, params));
    }
    for (step, &n) in order.iter().enumerate() {
        for v in g.g[n].inputs.iter().flatten() {
            if let Some(&b) = buffer_of.get(v) {
                buffers[b].last = buffers[b].last.max(step);
            }
        }
    }
    for v in &g.outputs {
        if let Some(&b) = buffer_of.get(v) {
            buffers[b].last = steps - 1;
        }
    }
    let memory = plan(&buffers, steps, reuse);

    let mut t = Tables {
        om: OmBuilder::default(),
        tensor_of: HashMap::new(),
        g,
        memory: &memory,
        buffer_of: &buffer_of,
    };
    for (i, &v) in g.inputs.iter().enumerate() {
        t.add_tensor(v, Location::Input, i as u32, 0)?;
    }
    for (step, &n) in order.iter().enumerate() {
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
        let workspace = match workspace_of[step] {
            Some(b) => {
                let name = t.om.string(&format!("{}:workspace", node.name));
                t.om.tensors.push(TensorDesc {
                    dtype: ge_runtime::format::DType::U8 as u8,
                    rank: 1,
                    location: Location::Arena as u8,
                    reserved: 0,
                    index: 0,
                    dims: {
                        let mut d = [0u32; MAX_RANK];
                        d[0] = buffers[b].bytes as u32;
                        d
                    },
                    offset: memory.offsets[b] as u64,
                    bytes: buffers[b].bytes as u64,
                    name,
                });
                (t.om.tensors.len() - 1) as u32
            }
            None => NO_TENSOR,
        };
        let (kind, params) = &lowered[step];
        let (params_offset, params_len) = t.om.params(params);
        let name = t.om.string(&node.name);
        t.om.tasks.push(TaskDesc {
            op: *kind as u16,
            input_count: node.inputs.len() as u8,
            output_count: node.outputs.len() as u8,
            stream: 0,
            reserved: 0,
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
    let weight_bytes = t.om.weight_bytes();
    let meta = Meta {
        name: t.om.string(&g.name),
        producer: t.om.string(producer_name),
        arena_bytes: memory.arena_bytes as u64,
        input_count: g.inputs.len() as u32,
        output_count: g.outputs.len() as u32,
        stream_count: 1,
        precision: 0,
        opset: g.opset as u32,
        reserved: [0; 5],
    };
    let tasks = t.om.tasks.len();
    let om = t.om;
    Ok(Emitted {
        blob: om.finish(meta),
        memory,
        tasks,
        weight_bytes,
    })
}

/// The tensor table being built, and the value → tensor id map.
struct Tables<'a> {
    om: OmBuilder,
    tensor_of: HashMap<ValueId, u32>,
    g: &'a Graph,
    memory: &'a MemoryPlan,
    buffer_of: &'a HashMap<ValueId, usize>,
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

    /// The tensor of `v`, added on first use.
    fn tensor(&mut self, v: ValueId) -> Result<u32> {
        if let Some(&t) = self.tensor_of.get(&v) {
            return Ok(t);
        }
        let val = self.g.value(v);
        if let Some(data) = &val.data {
            let off = self.om.weights(&data.bytes);
            self.add_tensor(v, Location::Weight, 0, off)
        } else if let Some(&b) = self.buffer_of.get(&v) {
            let off = self.memory.offsets[b] as u64;
            self.add_tensor(v, Location::Arena, 0, off)
        } else {
            Err(CompileError::Model(format!(
                "value '{}' has no producer",
                val.name
            )))
        }
    }
}
