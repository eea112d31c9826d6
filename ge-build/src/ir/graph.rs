//! The IR graph: nodes (typed ops) on a petgraph `StableDiGraph`, values (tensors) in a side
//! table. An edge `a → b` carries the value `a` produces that `b` consumes, so petgraph's
//! algorithms (topological sort, neighbours) work directly; node inputs/outputs keep ONNX's
//! ordered slots.

use std::sync::Arc;

use ge_runtime::format::DType;
use petgraph::Direction;
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;

use super::op::Op;
use crate::tensor::TensorData;

/// Index of a value (tensor) in [`Graph::values`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

/// A tensor of the graph: static dtype and shape; constants carry their data.
#[derive(Clone, Debug)]
pub struct Value {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub producer: Option<NodeIndex>,
    pub data: Option<Arc<TensorData>>,
}

impl Value {
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }
}

/// One operation.
#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    /// The ONNX op type it came from (for messages), or the fused pattern's name.
    pub op_type: String,
    pub opset: i64,
    pub op: Op,
    /// Input slots; `None` marks an absent optional input.
    pub inputs: Vec<Option<ValueId>>,
    pub outputs: Vec<ValueId>,
}

/// The whole model as the passes see it.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub name: String,
    pub g: StableDiGraph<Node, ValueId>,
    pub values: Vec<Value>,
    pub inputs: Vec<ValueId>,
    pub outputs: Vec<ValueId>,
    /// The graph outputs' names (kept when passes replace the values behind them).
    pub output_names: Vec<String>,
    /// Default-domain opset the model imports.
    pub opset: i64,
    /// Nodes `--keep-dtype` names by node name, and the nodes passes fused them into (see
    /// [`Graph::merge_into`]): the precision pass keeps these in their original dtype.
    pub kept: std::collections::HashSet<NodeIndex>,
}

impl Graph {
    /// Adds a value and returns its id.
    pub fn add_value(&mut self, v: Value) -> ValueId {
        self.values.push(v);
        ValueId((self.values.len() - 1) as u32)
    }

    /// The value `id`.
    pub fn value(&self, id: ValueId) -> &Value {
        &self.values[id.0 as usize]
    }

    /// The value `id`, mutably.
    pub fn value_mut(&mut self, id: ValueId) -> &mut Value {
        &mut self.values[id.0 as usize]
    }

    /// Adds a node, wiring edges from the producers of its inputs and marking it the producer
    /// of its outputs.
    pub fn add_node(&mut self, node: Node) -> NodeIndex {
        let inputs: Vec<ValueId> = node.inputs.iter().flatten().copied().collect();
        let outputs = node.outputs.clone();
        let n = self.g.add_node(node);
        for v in inputs {
            if let Some(p) = self.value(v).producer {
                self.g.add_edge(p, n, v);
            }
        }
        for v in outputs {
            self.value_mut(v).producer = Some(n);
        }
        n
    }

    /// Removes a node and its edges (its outputs lose their producer).
    pub fn remove_node(&mut self, n: NodeIndex) -> Option<Node> {
        let node = self.g.remove_node(n)?;
        for &v in &node.outputs {
            if self.value(v).producer == Some(n) {
                self.value_mut(v).producer = None;
            }
        }
        Some(node)
    }

    /// Removes `dead`, whose work the fused node `into` now does; `into` inherits `dead`'s
    /// keep-dtype mark ([`Graph::kept`]), so a fused node stays in the original dtype if any
    /// of its members was kept. O(degree).
    pub fn merge_into(&mut self, dead: NodeIndex, into: Option<NodeIndex>) {
        if self.kept.remove(&dead)
            && let Some(i) = into
        {
            self.kept.insert(i);
        }
        self.remove_node(dead);
    }

    /// Nodes consuming any output of `n`.
    pub fn consumers(&self, n: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.g
            .edges_directed(n, Direction::Outgoing)
            .map(|e| e.target())
    }

    /// Every node reading each value. O(V + E).
    pub fn users(&self) -> std::collections::HashMap<ValueId, Vec<NodeIndex>> {
        let mut m: std::collections::HashMap<ValueId, Vec<NodeIndex>> =
            std::collections::HashMap::new();
        for n in self.g.node_indices() {
            for v in self.g[n].inputs.iter().flatten() {
                let e = m.entry(*v).or_default();
                if e.last() != Some(&n) {
                    e.push(n);
                }
            }
        }
        m
    }

    /// Makes `node` read `new` wherever it read `old`, keeping edges in step.
    pub fn rewire_input(&mut self, node: NodeIndex, old: ValueId, new: ValueId) {
        let Some(n) = self.g.node_weight_mut(node) else {
            return;
        };
        let mut changed = false;
        for slot in n.inputs.iter_mut().flatten() {
            if *slot == old {
                *slot = new;
                changed = true;
            }
        }
        if !changed {
            return;
        }
        let stale: Vec<_> = self
            .g
            .edges_directed(node, Direction::Incoming)
            .filter(|e| *e.weight() == old)
            .map(|e| e.id())
            .collect();
        for e in stale {
            self.g.remove_edge(e);
        }
        if let Some(p) = self.value(new).producer {
            self.g.add_edge(p, node, new);
        }
    }

    /// Replaces every use of `old` (node inputs and graph outputs) by `new`, given the users
    /// map. O(users of old).
    pub fn replace_uses(&mut self, old: ValueId, new: ValueId, users: &[NodeIndex]) {
        for &u in users {
            self.rewire_input(u, old, new);
        }
        for o in self.outputs.iter_mut() {
            if *o == old {
                *o = new;
            }
        }
    }

    /// Replaces a node's inputs, rebuilding its incoming edges. O(degree).
    pub fn set_inputs(&mut self, node: NodeIndex, inputs: Vec<Option<ValueId>>) {
        let stale: Vec<_> = self
            .g
            .edges_directed(node, Direction::Incoming)
            .map(|e| e.id())
            .collect();
        for e in stale {
            self.g.remove_edge(e);
        }
        for v in inputs.iter().flatten() {
            if let Some(p) = self.value(*v).producer {
                self.g.add_edge(p, node, *v);
            }
        }
        if let Some(n) = self.g.node_weight_mut(node) {
            n.inputs = inputs;
        }
    }

    /// Adds a constant value.
    pub fn add_constant(&mut self, name: String, data: TensorData) -> ValueId {
        self.add_value(Value {
            name,
            dtype: data.dtype,
            shape: data.dims.clone(),
            producer: None,
            data: Some(Arc::new(data)),
        })
    }

    /// The constant data of `v`, if it is a constant.
    pub fn constant(&self, v: ValueId) -> Option<&TensorData> {
        self.value(v).data.as_deref()
    }

    /// True when `v` is read by exactly one node and is not a graph output.
    pub fn single_use(
        &self,
        v: ValueId,
        users: &std::collections::HashMap<ValueId, Vec<NodeIndex>>,
    ) -> Option<NodeIndex> {
        match users.get(&v).map(Vec::as_slice) {
            Some([u]) if !self.is_output(v) => Some(*u),
            _ => None,
        }
    }

    /// True when `v` is a graph output.
    pub fn is_output(&self, v: ValueId) -> bool {
        self.outputs.contains(&v)
    }

    /// Number of live nodes.
    pub fn node_count(&self) -> usize {
        self.g.node_count()
    }

    /// Nodes in a topological order (ties by insertion order). O(V + E).
    pub fn topo_order(&self) -> Vec<NodeIndex> {
        let mut indeg: std::collections::HashMap<NodeIndex, usize> = self
            .g
            .node_indices()
            .map(|n| (n, self.g.edges_directed(n, Direction::Incoming).count()))
            .collect();
        let mut ready: std::collections::BTreeSet<NodeIndex> = indeg
            .iter()
            .filter(|(_, d)| **d == 0)
            .map(|(n, _)| *n)
            .collect();
        let mut order = Vec::with_capacity(indeg.len());
        while let Some(n) = ready.pop_first() {
            order.push(n);
            for e in self.g.edges_directed(n, Direction::Outgoing) {
                let d = indeg.entry(e.target()).or_default();
                *d -= 1;
                if *d == 0 {
                    ready.insert(e.target());
                }
            }
        }
        order
    }
}
