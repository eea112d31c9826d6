//! The precision pass (`--precision`, atc's `precision_mode`): decides for every node whether
//! it runs in the mode's reduced dtype (fp16 or bf16), gives every value a dtype, and plans
//! the casts at the borders.
//!
//! Runs after the optimization passes, on the fused graph, so fusion patterns see the
//! model's own graph. A node is *lowered* when its mode and the op lists say so and no entry
//! of `--keep-dtype` names it (or any node fused into it). A lowered node reads its float
//! inputs rounded to the reduced dtype and stores its float outputs in it; a kernel that
//! reads halves gets them directly, the others compute in f32 between one cast up per input
//! and one cast down per output, so every stored value shows real fp16/bf16 rounding.
//! Constants read by lowered nodes are rounded to the reduced dtype (fp16: clamped to its
//! range, counted): stored in it for kernels that read halves, kept in f32 for the others
//! (a runtime cast would hold an f32 copy of the weights in the arena). Data-movement ops follow their inputs in every mode, so a reshape or a
//! concat never adds a cast. Each value gets at most one cast per dtype, shared by all its
//! readers. Graph inputs and outputs keep the model's dtypes unless `--io-dtype fp16`.
//!
//! O(V + E): one walk in topological order, O(1) amortized work per input slot.

pub mod lists;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use ge_runtime::format::DType;
use petgraph::Direction;
use petgraph::stable_graph::NodeIndex;
use petgraph::visit::EdgeRef;

use crate::error::{CompileError, Result};
use crate::ir::{Graph, Node, Op, Value, ValueId};
use crate::options::{CompileOptions, LowerPolicy, Precision};
use crate::report::PrecisionStat;
use crate::tensor::TensorData;
pub use lists::{KeepList, MixClass, MixLists};

/// Largest finite fp16 magnitude.
const F16_MAX: f32 = 65504.0;

/// What the pass needs to know besides the graph.
#[derive(Clone, Debug, Default)]
pub struct PrecisionConfig {
    pub mode: Precision,
    pub lists: MixLists,
    pub keep: KeepList,
    /// Graph inputs and outputs in the reduced dtype (`--io-dtype fp16`).
    pub io_low: bool,
}

impl PrecisionConfig {
    /// The configuration `opts` asks for: reads the list files, checking their names against
    /// the model's ONNX `node_names` and the known op types, and that the options agree.
    pub fn from_options(opts: &CompileOptions, node_names: &BTreeSet<&str>) -> Result<Self> {
        let mode = opts.precision;
        let conflict = |m: String| Err(CompileError::Option(m));
        if let Some(io) = opts.io_dtype
            && mode.low_dtype() != Some(io)
        {
            return conflict(format!(
                "--io-dtype {} conflicts with --precision {}, which {}; use --io-dtype model \
                 or a mode that computes in {}",
                flag_name(io),
                mode.name(),
                mode.low_dtype()
                    .map_or("keeps the model's dtypes".to_string(), |d| {
                        format!("computes in {}", flag_name(d))
                    }),
                flag_name(io)
            ));
        }
        if mode.low_dtype() == Some(DType::Bf16) && !opts.device.bf16 {
            return conflict(format!(
                "--precision {} computes in bf16, which device profile '{}' cannot (its cube \
                 takes fp16 and int8): use the fp16 variant of the mode, or a profile with \
                 \"bf16\": true (edge, datacenter)",
                mode.name(),
                opts.device.name
            ));
        }
        if opts.modify_mixlist.is_some() && mode.policy() != LowerPolicy::Lists {
            return conflict(format!(
                "--modify-mixlist only applies to allow_mix_precision modes, not --precision {}",
                mode.name()
            ));
        }
        let mut known: Vec<&str> = crate::onnx::table::table().iter().map(|r| r.op).collect();
        known.extend(lists::FUSED_OP_TYPES);
        known.sort_unstable();
        known.dedup();
        let mut lists = MixLists::default();
        if let Some(p) = &opts.modify_mixlist {
            lists.modify(p, &known)?;
        }
        let keep = match &opts.keep_dtype {
            Some(p) => KeepList::load(p, node_names, &known)?,
            None => KeepList::default(),
        };
        Ok(PrecisionConfig {
            mode,
            lists,
            keep,
            io_low: opts.io_dtype.is_some(),
        })
    }

    /// Marks the imported nodes the keep list names (a node the importer decomposed marks
    /// its parts, named `NAME:…`) in [`Graph::kept`]. O(V · log names).
    pub fn mark_kept(&self, g: &mut Graph) {
        if self.keep.nodes.is_empty() {
            return;
        }
        let marked: Vec<NodeIndex> =
            g.g.node_indices()
                .filter(|&n| {
                    let name = g.g[n].name.as_str();
                    let base = name.split_once(':').map_or(name, |(b, _)| b);
                    self.keep.nodes.contains(name) || self.keep.nodes.contains(base)
                })
                .collect();
        g.kept.extend(marked);
    }
}

/// A dtype as the command line spells it (`fp16`, `bf16`).
fn flag_name(d: DType) -> &'static str {
    match d {
        DType::F16 => "fp16",
        DType::Bf16 => "bf16",
        DType::F32 => "fp32",
        other => other.name(),
    }
}

/// How one node runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    /// In fp32 (or the model's dtype).
    Origin,
    /// Reads reduced-precision inputs, writes fp32 (`cube_fp16in_fp32out`).
    LowInputs,
    /// Reads and writes the reduced dtype.
    Low,
}

/// True when the op's kernel reads and writes `dtype` itself (the registry says which).
fn takes(op: &Op, dtype: DType) -> bool {
    !op.computes_in_f32() && ge_sim::target::takes_dtype(op.lower().0, dtype)
}

/// The op types a node stands for: its own, or an autofused chain's members.
fn op_types(node: &Node) -> std::str::Split<'_, char> {
    let t = node.op_type.as_str();
    t.strip_prefix("Fused[")
        .and_then(|m| m.strip_suffix(']'))
        .unwrap_or(t)
        .split('+')
}

/// Lowers `g` by `cfg` (nodes in [`Graph::kept`] stay in their dtype). Returns what
/// changed.
pub fn lower(g: &mut Graph, cfg: &PrecisionConfig) -> Result<PrecisionStat> {
    let mut stat = PrecisionStat {
        mode: cfg.mode.name().to_string(),
        ..PrecisionStat::default()
    };
    let Some(low) = cfg.mode.low_dtype() else {
        return Ok(stat);
    };
    let policy = cfg.mode.policy();
    let mut cx = Casts {
        low,
        lowered: HashSet::new(),
        memo: HashMap::new(),
        stat: &mut stat,
    };
    if cfg.io_low {
        for v in g.inputs.clone() {
            if g.value(v).dtype == DType::F32 {
                g.value_mut(v).dtype = low;
                cx.lowered.insert(v);
            }
        }
    }
    for n in g.topo_order() {
        let node = &g.g[n];
        let float_in: Vec<ValueId> = node
            .inputs
            .iter()
            .flatten()
            .copied()
            .filter(|v| g.value(*v).data.is_none() && cx.is_float(g, *v))
            .collect();
        let follows = !float_in.is_empty() && float_in.iter().all(|v| cx.lowered.contains(v));
        let has_float_out = node.outputs.iter().any(|v| g.value(*v).dtype == DType::F32);
        let is_kept = g.kept.contains(&n)
            || cfg.keep.nodes.contains(&node.name)
            || op_types(node).any(|t| cfg.keep.op_types.contains(t));
        // A vector program that reads or writes int8 (a folded Cast) runs in f32.
        let int8_program = matches!(node.op, Op::Fused(_))
            && node
                .inputs
                .iter()
                .flatten()
                .chain(&node.outputs)
                .any(|&v| !cx.is_float(g, v));
        let run = if !has_float_out || matches!(node.op, Op::Cast) || is_kept || int8_program {
            cx.stat.kept_nodes += usize::from(is_kept && has_float_out);
            Run::Origin
        } else if node.op.moves_elements() {
            if follows { Run::Low } else { Run::Origin }
        } else {
            match policy {
                LowerPolicy::Nothing => Run::Origin,
                LowerPolicy::CubeInputs if node.op.is_cube() => Run::LowInputs,
                LowerPolicy::Cube if node.op.is_cube() => Run::Low,
                LowerPolicy::CubeInputs | LowerPolicy::Cube => Run::Origin,
                LowerPolicy::All => Run::Low,
                LowerPolicy::Lists => match cfg.lists.class(op_types(node)) {
                    MixClass::White => Run::Low,
                    MixClass::Black => Run::Origin,
                    MixClass::Gray if follows => Run::Low,
                    MixClass::Gray => Run::Origin,
                },
            }
        };
        cx.rewrite(g, n, run)?;
    }
    let io = if cfg.io_low { low } else { DType::F32 };
    for i in 0..g.outputs.len() {
        let v = g.outputs[i];
        if cx.is_float(g, v) {
            g.outputs[i] = cx.convert(g, v, io);
        }
    }
    Ok(stat)
}

/// The casts planned so far.
struct Casts<'s> {
    low: DType,
    /// Values that were f32 and are now stored in `low`.
    lowered: HashSet<ValueId>,
    /// The one conversion of each value to each dtype.
    memo: HashMap<(ValueId, DType), ValueId>,
    stat: &'s mut PrecisionStat,
}

impl Casts<'_> {
    /// True for the values the pass may convert: f32 ones and the ones it lowered.
    fn is_float(&self, g: &Graph, v: ValueId) -> bool {
        g.value(v).dtype == DType::F32 || self.lowered.contains(&v)
    }

    /// Rewires `n`'s inputs and outputs for `run`.
    fn rewrite(&mut self, g: &mut Graph, n: NodeIndex, run: Run) -> Result<()> {
        let native = run == Run::Low && takes(&g.g[n].op, self.low);
        let widens = native && g.g[n].op.widens_operands();
        // A Cast reads any dtype: it folds the conversion of its input.
        let reads_any = matches!(g.g[n].op, Op::Cast);
        let mut inputs = g.g[n].inputs.clone();
        let mut changed = false;
        for slot in inputs.iter_mut() {
            let Some(v) = *slot else { continue };
            if !self.is_float(g, v) || reads_any {
                continue;
            }
            let u = match (run, native) {
                (Run::Origin, _) => self.convert(g, v, DType::F32),
                // A kernel that widens its operands reads an f32 activation as it is (the
                // graph input into the first conv, an fp32 pool's output): no Cast task, and
                // one rounding fewer. A cast some other reader needed is read instead.
                (_, true)
                    if widens && g.value(v).data.is_none() && g.value(v).dtype == DType::F32 =>
                {
                    self.memo.get(&(v, self.low)).copied().unwrap_or(v)
                }
                (_, true) => self.convert(g, v, self.low),
                // A constant for an f32 kernel: rounded now, kept f32 (a runtime cast would
                // hold an f32 copy of the weights in the arena on every run).
                (_, false) if g.value(v).data.is_some() => self.round_constant(g, v),
                (_, false) => {
                    let l = self.convert(g, v, self.low);
                    self.convert(g, l, DType::F32)
                }
            };
            changed |= u != v;
            *slot = Some(u);
        }
        if changed {
            g.set_inputs(n, inputs);
        }
        self.stat.lowered_nodes += usize::from(run != Run::Origin);
        if run != Run::Low {
            return Ok(());
        }
        for k in 0..g.g[n].outputs.len() {
            let v = g.g[n].outputs[k];
            if g.value(v).dtype != DType::F32 {
                continue;
            }
            if !native {
                self.narrow_output(g, n, k);
            }
            g.value_mut(v).dtype = self.low;
            self.lowered.insert(v);
        }
        Ok(())
    }

    /// Makes `n` write output `k` (value `v`) to a new f32 value that a Cast narrows into
    /// `v`, so `v`'s readers read the cast. O(out-degree of n).
    fn narrow_output(&mut self, g: &mut Graph, n: NodeIndex, k: usize) {
        let v = g.g[n].outputs[k];
        let val = g.value(v).clone();
        let wide = g.add_value(Value {
            name: format!("{}:wide", val.name),
            dtype: DType::F32,
            shape: val.shape,
            producer: Some(n),
            data: None,
        });
        g.g[n].outputs[k] = wide;
        let readers: Vec<_> =
            g.g.edges_directed(n, Direction::Outgoing)
                .filter(|e| *e.weight() == v)
                .map(|e| (e.id(), e.target()))
                .collect();
        for (e, _) in &readers {
            g.g.remove_edge(*e);
        }
        let opset = g.g[n].opset;
        let c = g.add_node(Node {
            name: format!("{}:narrow", g.g[n].name),
            op_type: "Cast".into(),
            opset,
            op: Op::Cast,
            inputs: vec![Some(wide)],
            outputs: vec![v],
        });
        for (_, r) in readers {
            g.g.add_edge(c, r, v);
        }
        self.stat.casts += 1;
    }

    /// The f32 constant `v` with its values rounded to the reduced dtype (fp16: clamped to
    /// its range), for a lowered node whose kernel reads f32. Memoized like the casts.
    fn round_constant(&mut self, g: &mut Graph, v: ValueId) -> ValueId {
        let Some(d) = g.value(v).data.clone().filter(|d| d.dtype == DType::F32) else {
            return v;
        };
        if let Some(&u) = self.memo.get(&(v, DType::F32)) {
            return u;
        }
        let (low, clamped) = narrow(&d, self.low);
        self.stat.rounded_weights += 1;
        self.stat.clamped_values += clamped;
        let wide = TensorData {
            dtype: DType::F32,
            dims: low.dims.clone(),
            bytes: low
                .to_f32_vec()
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        };
        let val = g.value(v).clone();
        let u = g.add_value(Value {
            name: format!("{}:rounded_{}", val.name, flag_name(self.low)),
            dtype: DType::F32,
            shape: val.shape,
            producer: None,
            data: Some(Arc::new(wide)),
        });
        self.memo.insert((v, DType::F32), u);
        u
    }

    /// `v` in dtype `to`: itself, its earlier conversion, a constant converted now, or a new
    /// Cast node.
    fn convert(&mut self, g: &mut Graph, v: ValueId, to: DType) -> ValueId {
        if g.value(v).dtype == to {
            return v;
        }
        if let Some(&u) = self.memo.get(&(v, to)) {
            return u;
        }
        let val = g.value(v).clone();
        let u = match &val.data {
            Some(d) if d.dtype == DType::F32 && to == self.low => {
                let (data, clamped) = narrow(d, to);
                self.stat.converted_weights += 1;
                self.stat.clamped_values += clamped;
                g.add_value(Value {
                    name: format!("{}:as_{}", val.name, to.name()),
                    dtype: to,
                    shape: val.shape,
                    producer: None,
                    data: Some(Arc::new(data)),
                })
            }
            _ => {
                let u = g.add_value(Value {
                    name: format!("{}:as_{}", val.name, to.name()),
                    dtype: to,
                    shape: val.shape,
                    producer: None,
                    data: None,
                });
                g.add_node(Node {
                    name: format!("{}:cast_{}", val.name, to.name()),
                    op_type: "Cast".into(),
                    opset: g.opset,
                    op: Op::Cast,
                    inputs: vec![Some(v)],
                    outputs: vec![u],
                });
                self.stat.casts += 1;
                u
            }
        };
        if to == self.low {
            self.lowered.insert(u);
        }
        self.memo.insert((v, to), u);
        u
    }
}

/// An f32 constant in `to` (f16 or bf16), rounded to nearest even; fp16 values beyond its
/// range are clamped to ±65504 and counted.
fn narrow(d: &TensorData, to: DType) -> (TensorData, u64) {
    let mut clamped = 0u64;
    let mut bytes = Vec::with_capacity(d.bytes.len() / 2);
    for x in d.to_f32_vec() {
        let b = if to == DType::Bf16 {
            half::bf16::from_f32(x).to_bits()
        } else {
            let c = if x.is_finite() && x.abs() > F16_MAX {
                clamped += 1;
                x.clamp(-F16_MAX, F16_MAX)
            } else {
                x
            };
            half::f16::from_f32(c).to_bits()
        };
        bytes.extend_from_slice(&b.to_le_bytes());
    }
    (
        TensorData {
            dtype: to,
            dims: d.dims.clone(),
            bytes,
        },
        clamped,
    )
}
