//! Plans blocked channels (NCHWc, c = [`BLOCK`]; Da Vinci's NC1HWC0 and GE's TransData) for
//! the host's AVX-512 and AVX2 kernels: 2-D f32 convolutions (one group, or depthwise) whose output
//! channels are a multiple of the block run on blocked activations ([`ChannelLayout`]), and so do the pools and the
//! elementwise tasks between them, so a ResNet or VGG body runs with no reorder inside it.
//! `Reorder` tasks are inserted only where a blocked value meets a task that reads plain
//! channels (or a graph output), and where a plain value with whole blocks of channels feeds
//! a blocked conv; a conv on a few plain channels (the stem) reads them in place. Every
//! blocked value has its plain form's shape and byte count, so the memory plan and the cost
//! model see the same tensors plus the reorders' traffic. The weights of blocked convs are
//! packed here ([`pack_blocked_weights`]).
//!
//! Under `--blocked-channels auto` the plan is kept only when its blocked convolutions'
//! multiply-adds outweigh the reorders' traffic ([`MACS_PER_REORDER_BYTE`]): a lone conv
//! between plain ops (a depthwise network's pointwise convs, a single conv in a
//! transformer) would pay two reorders for little gain.
//!
//! Runs after the precision pass and before `pack_weights`. O(V + E + weight bytes): one
//! walk in topological order (under `auto`, on a copy kept or dropped), each value
//! reordered at most once each way.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ge_runtime::format::{
    BLOCK, ChannelLayout, ConvParams, DType, MAX_RANK, PoolKind, ReorderParams, ResizeMode,
    SliceParams, WeightLayout, input_block, pack_blocked_weights,
};
use petgraph::stable_graph::NodeIndex;

use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Node, Op, Value, ValueId};
use crate::tensor::TensorData;

/// Most plain input channels a conv reads in place (a stem on RGB or a few planes);
/// more are reordered to blocks first.
const PLAIN_INPUT_MAX: usize = 8;

/// A conv's output channels are padded to whole blocks only when the padding adds at most
/// 1/`MAX_PAD_WASTE` of its filters ([`padded_output_conv`]).
const MAX_PAD_WASTE: usize = 8;

/// Blocked-conv multiply-adds per byte of reorder traffic (read + write) below which the
/// `auto` plan is dropped. Measured on an AVX-512 Xeon (session 23): the blocked tile saves
/// ~3.5 ms per G multiply-add over the plain path; a reorder moves ~4.4 GB/s (0.23 ns/B), so
/// break-even is ~65 multiply-adds per byte.
const MACS_PER_REORDER_BYTE: u64 = 64;

/// Activations → blocked channels where the host kernels have blocked forms.
pub struct BlockedLayout {
    /// Keep the plan only when it pays for its reorders (`auto`); else always (`on`).
    pub only_if_profitable: bool,
}

impl Pass for BlockedLayout {
    pass_info!("blocked_layout", O2);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        if !self.only_if_profitable {
            return Ok(plan(g)?.changed);
        }
        // `auto`: plan on a copy (weights are shared), kept only when it pays.
        let mut planned = g.clone();
        let st = plan(&mut planned)?;
        if !st.changed || st.macs < MACS_PER_REORDER_BYTE * st.reorder_bytes {
            return Ok(false);
        }
        *g = planned;
        Ok(true)
    }
}

/// Plans blocked channels on `g`.
fn plan(g: &mut Graph) -> Result<State> {
    let mut st = State::default();
    let users = g.users();
    for n in g.topo_order() {
        let op = g.g[n].op;
        let decided = match op {
            Op::Conv(_) => conv(g, &mut st, n, &users)?,
            Op::Pool(p) if blockable_pool(p.pool_kind()) && st.blocked_in(g, n, 0) => {
                g.g[n].op = Op::Pool(p.with_channel_layout(ChannelLayout::Blocked));
                st.mark_output(g, n);
                true
            }
            Op::GlobalPool(p) if blockable_pool(p.pool_kind()) && st.blocked_in(g, n, 0) => {
                // `[N, C, 1, …]`: the same bytes in both layouts.
                g.g[n].op = Op::GlobalPool(p.with_channel_layout(ChannelLayout::BlockedToPlain));
                true
            }
            Op::Unary(_) | Op::Binary(_) | Op::Fused(_) if elementwise_blocked(g, &st, n) => {
                st.mark_output(g, n);
                true
            }
            Op::Binary(_) | Op::Fused(_) if channel_elementwise(g, &mut st, n, &users) => true,
            Op::Resize(_) if blocked_resize(g, &mut st, n, &users) => true,
            Op::Concat(p) if p.axis == 1 && concat_blocked(g, &st, n) => {
                for slot in 0..g.g[n].inputs.len() {
                    if let Some(v) = g.g[n].inputs[slot] {
                        let b = st.as_blocked(g, v);
                        g.rewire_input(n, v, b);
                    }
                }
                st.mark_output(g, n);
                true
            }
            Op::Split(p) if p.axis == 1 && split_blocked(g, &st, n) => {
                for &v in &g.g[n].outputs {
                    st.blocked.insert(v);
                }
                st.changed = true;
                true
            }
            _ => false,
        };
        if !decided {
            // Plain channels in: reorder every blocked input back.
            for slot in 0..g.g[n].inputs.len() {
                if let Some(v) = g.g[n].inputs[slot]
                    && st.blocked.contains(&v)
                {
                    let p = st.as_plain(g, v);
                    g.rewire_input(n, v, p);
                }
            }
        }
    }
    // Graph outputs are plain, under their own names.
    for i in 0..g.outputs.len() {
        let v = g.outputs[i];
        if st.blocked.contains(&v) && !one_pixel(g, v) {
            let p = st.as_plain(g, v);
            let name = std::mem::take(&mut g.value_mut(v).name);
            g.value_mut(v).name = format!("{name}::blocked");
            g.value_mut(p).name = name;
            g.outputs[i] = p;
        }
    }
    Ok(st)
}

fn blockable_pool(kind: Option<PoolKind>) -> bool {
    matches!(kind, Some(PoolKind::Max | PoolKind::Average))
}

/// Which values are blocked and their twins in the other layout.
#[derive(Default)]
struct State {
    blocked: HashSet<ValueId>,
    /// Plain value → its blocked reorder.
    to_blocked: HashMap<ValueId, ValueId>,
    /// Blocked value → its plain reorder.
    to_plain: HashMap<ValueId, ValueId>,
    changed: bool,
    /// Multiply-adds of the blocked convs.
    macs: u64,
    /// Bytes the reorders read and write.
    reorder_bytes: u64,
}

impl State {
    fn blocked_in(&self, g: &Graph, n: NodeIndex, slot: usize) -> bool {
        g.g[n]
            .inputs
            .get(slot)
            .copied()
            .flatten()
            .is_some_and(|v| self.blocked.contains(&v))
    }

    /// Output 0 of `n` (already switched to blocked channels) is blocked.
    fn mark_output(&mut self, g: &Graph, n: NodeIndex) {
        if let Some(&v) = g.g[n].outputs.first() {
            self.blocked.insert(v);
        }
        self.changed = true;
    }

    /// `v` in plain channels: itself (plain, or one pixel per channel), or its (one)
    /// reorder back.
    fn as_plain(&mut self, g: &mut Graph, v: ValueId) -> ValueId {
        if !self.blocked.contains(&v) || one_pixel(g, v) {
            return v;
        }
        if let Some(&p) = self.to_plain.get(&v) {
            return p;
        }
        let p = reorder(g, v, ChannelLayout::BlockedToPlain, "plain");
        self.reorder_bytes += 2 * g.value(v).bytes() as u64;
        self.to_plain.insert(v, p);
        self.changed = true;
        p
    }

    /// `v` in blocked channels: itself (blocked, or one pixel per channel), or its (one)
    /// reorder.
    fn as_blocked(&mut self, g: &mut Graph, v: ValueId) -> ValueId {
        if self.blocked.contains(&v) {
            return v;
        }
        if one_pixel(g, v) {
            self.blocked.insert(v);
            self.changed = true;
            return v;
        }
        if let Some(&b) = self.to_blocked.get(&v) {
            return b;
        }
        let b = reorder(g, v, ChannelLayout::Blocked, "blocked");
        self.reorder_bytes += 2 * g.value(v).bytes() as u64;
        self.blocked.insert(b);
        self.to_blocked.insert(v, b);
        self.changed = true;
        b
    }
}

/// A Reorder task from `v` into a new value in layout `to`.
fn reorder(g: &mut Graph, v: ValueId, to: ChannelLayout, suffix: &str) -> ValueId {
    let src = g.value(v);
    let out = Value {
        name: format!("{}::{suffix}", src.name),
        dtype: src.dtype,
        shape: src.shape.clone(),
        producer: None,
        data: None,
    };
    let out = g.add_value(out);
    let name = format!("{}::reorder_{suffix}", g.value(v).name);
    let op = Op::Reorder(ReorderParams { to: to as u32 });
    add_one_to_one(g, name, "Reorder", op, v, out);
    out
}

/// Whether `v` holds one pixel per channel (`[N, C, 1, 1]`, a squeeze-excite vector): its
/// bytes are the same in both layouts, so it needs no reorder either way.
fn one_pixel(g: &Graph, v: ValueId) -> bool {
    g.value(v)
        .shape
        .get(2..)
        .is_some_and(|s| s.iter().product::<usize>() == 1)
}

/// Whether an f32 value has whole blocks of channels on axis 1 of a rank-4 shape.
fn blockable(g: &Graph, v: ValueId) -> bool {
    padded_blockable(g, v) && g.value(v).shape[1].is_multiple_of(BLOCK)
}

/// Whether an f32 rank-4 value could be blocked once its channels are padded to whole
/// blocks ([`padded_output_conv`]).
fn padded_blockable(g: &Graph, v: ValueId) -> bool {
    let val = g.value(v);
    val.dtype == DType::F32 && val.shape.len() == 4 && val.data.is_none()
}

/// An elementwise task whose every input is blocked and shaped like its output (no
/// broadcast): it runs unchanged on blocked channels.
fn elementwise_blocked(g: &Graph, st: &State, n: NodeIndex) -> bool {
    let node = &g.g[n];
    let [out] = node.outputs[..] else {
        return false;
    };
    let shape = &g.value(out).shape;
    !node.inputs.is_empty()
        && node
            .inputs
            .iter()
            .all(|i| i.is_some_and(|v| st.blocked.contains(&v) && &g.value(v).shape == shape))
}

/// A binary op or vector program over a blocked `[N, C, H, W]` value and per-channel
/// `[N or 1, C, 1, 1]` ones (a squeeze-excite scale, a BatchNorm's scale and shift after a
/// residual sum) or single values: blocked, they are `[N, C/16, H·W, 16]` and
/// `[·, C/16, 1, 16]`, which the plain kernels broadcast as they are. The node reads and
/// writes byte views of those shapes (Reshapes, which the memory plan makes zero-copy; a
/// constant is re-shaped) and the output, viewed back as `[N, C, H, W]`, stays blocked.
/// Every full-size input must be blocked already. Whether it was rewritten. O(inputs).
fn channel_elementwise(
    g: &mut Graph,
    st: &mut State,
    n: NodeIndex,
    users: &HashMap<ValueId, Vec<NodeIndex>>,
) -> bool {
    let node = &g.g[n];
    let &[y] = &node.outputs[..] else {
        return false;
    };
    let yv = g.value(y);
    let &[nb, c, h, w] = &yv.shape[..] else {
        return false;
    };
    if yv.dtype != DType::F32 || !c.is_multiple_of(BLOCK) || node.inputs.is_empty() {
        return false;
    }
    /// How an input is read blocked.
    enum Read {
        Full,
        PerChannel(usize),
        Single,
    }
    let mut reads = Vec::with_capacity(node.inputs.len());
    for &i in &node.inputs {
        let Some(v) = i else {
            return false;
        };
        let val = g.value(v);
        let read = if val.shape == yv.shape && st.blocked.contains(&v) {
            Read::Full
        } else if val.shape.iter().product::<usize>() == 1 {
            Read::Single
        } else if let &[ns, sc, 1, 1] = &val.shape[..]
            && (ns == 1 || ns == nb)
            && sc == c
        {
            // (A one-pixel value may be blocked too: its bytes are both layouts.)
            Read::PerChannel(ns)
        } else {
            return false;
        };
        if val.dtype != yv.dtype {
            return false;
        }
        reads.push(read);
    }
    if !reads.iter().any(|r| matches!(r, Read::Full)) {
        return false;
    }
    let blocks = c / BLOCK;
    let inputs = g.g[n].inputs.clone();
    let viewed = inputs
        .iter()
        .zip(&reads)
        .map(|(&i, read)| {
            let v = i?;
            Some(match *read {
                Read::Full => byte_view(g, v, vec![nb, blocks, h * w, BLOCK]),
                Read::PerChannel(ns) => byte_view(g, v, vec![ns, blocks, 1, BLOCK]),
                Read::Single => v,
            })
        })
        .collect();
    g.set_inputs(n, viewed);
    view_output(g, st, n, vec![nb, blocks, h * w, BLOCK], users);
    true
}

/// A nearest Resize of a blocked `[N, C, H, W]` value that leaves N and C as they are: blocked, it
/// is a resize of `[N, C/16, H, W, 16]` that also leaves the last axis, which the any-rank
/// kernel runs as it is (on byte views, as [`channel_elementwise`]). Whether it was rewritten.
fn blocked_resize(
    g: &mut Graph,
    st: &mut State,
    n: NodeIndex,
    users: &HashMap<ValueId, Vec<NodeIndex>>,
) -> bool {
    let Op::Resize(p) = g.g[n].op else {
        return false;
    };
    let (&[Some(x)], &[y]) = (&g.g[n].inputs[..], &g.g[n].outputs[..]) else {
        return false;
    };
    let (xv, yv) = (g.value(x), g.value(y));
    let (&[nb, c, h, w], &[yn, yc, oh, ow]) = (&xv.shape[..], &yv.shape[..]) else {
        return false;
    };
    let kept = |a: usize, e: usize| ge_sim::target::resize_leaves_axis(&p, a, e, e);
    // Nearest only: the linear kernel computes its outer axes' taps per row, which on rows
    // of 16 values cost more than the reorders (u2netp: 30 -> 81 ms).
    let nearest = p.mode == ResizeMode::Nearest as u32;
    if !nearest || !st.blocked.contains(&x) || yn != nb || yc != c || !kept(0, nb) || !kept(1, c) {
        return false;
    }
    // Axis 4 (the lanes) left as it is: scale 1, the whole axis as region of interest.
    let mut p5 = p;
    p5.scales[4] = 1.0;
    p5.roi[4] = 0.0;
    p5.roi[MAX_RANK + 4] = 1.0;
    let blocks = c / BLOCK;
    let x5 = byte_view(g, x, vec![nb, blocks, h, w, BLOCK]);
    g.rewire_input(n, x, x5);
    g.g[n].op = Op::Resize(p5);
    view_output(g, st, n, vec![nb, blocks, oh, ow, BLOCK], users);
    true
}

/// Node `n` (whose output 0 is `y`) writes a byte view of `shape` instead; a Reshape gives
/// `y` (and its readers) back its shape, and `y` is blocked.
fn view_output(
    g: &mut Graph,
    st: &mut State,
    n: NodeIndex,
    shape: Vec<usize>,
    users: &HashMap<ValueId, Vec<NodeIndex>>,
) {
    let y = g.g[n].outputs[0];
    let src = g.value(y);
    let out_view = g.add_value(Value {
        name: format!("{}::blocked_view", src.name),
        dtype: src.dtype,
        shape,
        producer: Some(n),
        data: None,
    });
    g.g[n].outputs[0] = out_view;
    let name = format!("{}::view_back", g.g[n].name);
    add_reshape(g, out_view, y, name);
    // Readers of `y` now read it from the Reshape.
    relink_readers(g, y, users);
    st.blocked.insert(y);
    st.changed = true;
}

/// `v`'s bytes under another shape: a constant re-shaped, else a Reshape (zero-copy).
fn byte_view(g: &mut Graph, v: ValueId, shape: Vec<usize>) -> ValueId {
    let src = g.value(v);
    let data = src.data.as_ref().map(|d| {
        Arc::new(TensorData {
            dims: shape.clone(),
            ..(**d).clone()
        })
    });
    let constant = data.is_some();
    let view = g.add_value(Value {
        name: format!("{}::blocked_view", src.name),
        dtype: src.dtype,
        shape,
        producer: None,
        data,
    });
    if !constant {
        let name = format!("{}::view", g.value(v).name);
        add_reshape(g, v, view, name);
    }
    view
}

/// A Reshape node `from → to` (a byte view: the memory plan aliases it).
fn add_reshape(g: &mut Graph, from: ValueId, to: ValueId, name: String) {
    add_one_to_one(g, name, "Reshape", Op::Reshape, from, to);
}

/// A node of one input and one output, `from → to` (`to` gets it as its producer).
fn add_one_to_one(g: &mut Graph, name: String, op_type: &str, op: Op, from: ValueId, to: ValueId) {
    let opset = g.opset;
    g.add_node(Node {
        name,
        op_type: op_type.into(),
        opset,
        op,
        inputs: vec![Some(from)],
        outputs: vec![to],
    });
}

/// Re-links the readers of `v` (from `users`) to its new producer.
fn relink_readers(g: &mut Graph, v: ValueId, users: &HashMap<ValueId, Vec<NodeIndex>>) {
    for &u in users.get(&v).map_or(&[][..], |u| &u[..]) {
        g.rewire_input(u, v, v);
    }
}

/// A channel concat of whole blocks, at least one input blocked (plain ones with whole
/// blocks are reordered): per image each input is one contiguous run of `C_i·H·W` values in
/// either layout, so the plain kernel (and the planner's zero-copy slices) concatenate
/// blocked tensors unchanged.
fn concat_blocked(g: &Graph, st: &State, n: NodeIndex) -> bool {
    let node = &g.g[n];
    node.outputs.len() == 1
        && blockable(g, node.outputs[0])
        && node
            .inputs
            .iter()
            .any(|i| i.is_some_and(|v| st.blocked.contains(&v)))
        && node
            .inputs
            .iter()
            .all(|i| i.is_some_and(|v| st.blocked.contains(&v) || blockable(g, v)))
}

/// A channel split of a blocked value into whole blocks: the same bytes as the plain split
/// (each part one contiguous run per image in either layout).
fn split_blocked(g: &Graph, st: &State, n: NodeIndex) -> bool {
    let node = &g.g[n];
    st.blocked_in(g, n, 0)
        && node
            .inputs
            .iter()
            .skip(1)
            .all(|i| i.is_none_or(|v| g.value(v).data.is_some()))
        && !node.outputs.is_empty()
        && node.outputs.iter().all(|&v| blockable(g, v))
}

/// Blocks conv `n` when it can run on blocked channels: packs its weights, reorders its
/// input and residual as needed. Whether it was blocked.
fn conv(
    g: &mut Graph,
    st: &mut State,
    n: NodeIndex,
    users: &HashMap<ValueId, Vec<NodeIndex>>,
) -> Result<bool> {
    let Op::Conv(p) = g.g[n].op else {
        return Ok(false);
    };
    let node = &g.g[n];
    let (Some(Some(x)), Some(Some(w)), Some(&y)) = (
        node.inputs.first().copied(),
        node.inputs.get(1).copied(),
        node.outputs.first(),
    ) else {
        return Ok(false);
    };
    let prologue = p.prologue.op != 0 || node.inputs.iter().skip(4).any(Option::is_some);
    if p.rank() != 2
        || (prologue && !blocked_prologue(st, &p, x))
        || p.weight_layout() != Some(WeightLayout::Oihw)
        || g.value(x).dtype != DType::F32
        || !(blockable(g, y) || padded_blockable(g, y))
        || g.single_use(w, users) != Some(n)
        || node.inputs.iter().filter(|&&i| i == Some(w)).count() != 1
    {
        return Ok(false);
    }
    let Some(data) = g.constant(w) else {
        return Ok(false);
    };
    let &[cout, cin, kh, kw] = &data.dims[..] else {
        return Ok(false);
    };
    // One channel per group: the blocked depthwise kernel (input blocked like the output).
    let depthwise = p.group as usize == cout && cin == 1 && g.value(x).shape.get(1) == Some(&cout);
    if data.dtype != DType::F32 || (p.group != 1 && !depthwise) {
        return Ok(false);
    }
    if !cout.is_multiple_of(BLOCK) {
        return padded_output_conv(g, st, n, users, p, [x, w, y]);
    }
    let blocks_in = cin.is_multiple_of(BLOCK) || depthwise;
    let layout = if st.blocked.contains(&x) || (blocks_in && blockable(g, x)) {
        ChannelLayout::Blocked
    } else if cin <= PLAIN_INPUT_MAX && !depthwise {
        ChannelLayout::PlainToBlocked
    } else {
        return Ok(false);
    };
    let src = data.to_f32_vec();
    let mut packed = vec![0.0f32; src.len()];
    // A depthwise conv's weights are `[C, 1, kh, kw]`: blocks of one input channel.
    let cb = if depthwise { 1 } else { input_block(layout) };
    pack_blocked_weights(&src, [cout, cin, kh, kw], cb, &mut packed);
    let Ok(t) = TensorData::from_elements(DType::F32, data.dims.clone(), &packed) else {
        return Ok(false);
    };
    g.value_mut(w).data = Some(Arc::new(t));
    st.macs += (g.value(y).shape.iter().product::<usize>() * cin * kh * kw) as u64;
    if layout == ChannelLayout::Blocked {
        let xb = st.as_blocked(g, x);
        g.rewire_input(n, x, xb);
    }
    // A fused residual (input 3) is read like the output.
    if let Some(Some(r)) = g.g[n].inputs.get(3).copied() {
        let rb = st.as_blocked(g, r);
        g.rewire_input(n, r, rb);
    }
    g.g[n].op = Op::Conv(
        p.with_weight_layout(WeightLayout::Blocked)
            .with_channel_layout(layout),
    );
    st.mark_output(g, n);
    Ok(true)
}

/// Whether a conv's fused prologue (a BatchNorm and activation on its input, DenseNet's
/// pre-activation) can run blocked: on an input already blocked, with an activation the
/// kernel applies as a clamp or leak (`ge_sim`'s blocked conv transforms a copy of the input
/// first). A plain input keeps the plain conv, which applies it while packing.
fn blocked_prologue(st: &State, p: &ConvParams, x: ValueId) -> bool {
    st.blocked.contains(&x) && p.group == 1 && ge_sim::target::tile_applies(&p.prologue)
}

/// A dense conv on a blocked input whose output channels are not whole blocks (a
/// classifier's 1×1 conv to 1,000 classes): the conv runs blocked on weights padded with
/// zero filters to the next block (bias with zeros), into a padded value that a Reorder
/// brings to plain channels and a Slice crops (onnxruntime's NCHWc pads the same way). The
/// reorder the plain conv would have needed on its input goes; the padded conv's output
/// side costs a reorder and a copy of the output. Only when the input is blocked already,
/// with constant single-use weights and bias and no fused residual. O(weight bytes).
fn padded_output_conv(
    g: &mut Graph,
    st: &mut State,
    n: NodeIndex,
    users: &HashMap<ValueId, Vec<NodeIndex>>,
    p: ConvParams,
    [x, w, y]: [ValueId; 3],
) -> Result<bool> {
    let node = &g.g[n];
    let bias = node.inputs.get(2).copied().flatten();
    if p.group != 1
        || !st.blocked.contains(&x)
        || node.inputs.get(3).copied().flatten().is_some()
        || node.outputs.len() != 1
        || bias.is_some_and(|b| g.constant(b).is_none() || g.single_use(b, users) != Some(n))
    {
        return Ok(false);
    }
    let Some(data) = g.constant(w) else {
        return Ok(false);
    };
    let &[cout, cin, kh, kw] = &data.dims[..] else {
        return Ok(false);
    };
    let ys = g.value(y).shape.clone();
    let &[nb, yc, oh, ow] = &ys[..] else {
        return Ok(false);
    };
    let padded = cout.next_multiple_of(BLOCK);
    // At most 1/8 of the padded conv's work wasted (1,000 → 1,008 filters: 0.8%; a
    // one-channel side output would cost 16×).
    if yc != cout
        || !cin.is_multiple_of(BLOCK)
        || g.value(y).dtype != DType::F32
        || (padded - cout) * MAX_PAD_WASTE > cout
    {
        return Ok(false);
    }
    let mut src = data.to_f32_vec();
    src.resize(padded * cin * kh * kw, 0.0);
    let mut packed = vec![0.0f32; src.len()];
    pack_blocked_weights(&src, [padded, cin, kh, kw], BLOCK, &mut packed);
    let dims = vec![padded, cin, kh, kw];
    let Ok(t) = TensorData::from_elements(DType::F32, dims.clone(), &packed) else {
        return Ok(false);
    };
    if let Some(b) = bias {
        let Some(mut bv) = g.constant(b).map(TensorData::to_f32_vec) else {
            return Ok(false);
        };
        if bv.len() != cout {
            return Ok(false);
        }
        bv.resize(padded, 0.0);
        let Ok(bt) = TensorData::from_elements(DType::F32, vec![padded], &bv) else {
            return Ok(false);
        };
        let bval = g.value_mut(b);
        bval.data = Some(Arc::new(bt));
        bval.shape = vec![padded];
    }
    let wval = g.value_mut(w);
    wval.data = Some(Arc::new(t));
    wval.shape = dims;
    st.macs += (nb * padded * oh * ow * cin * kh * kw) as u64;
    // The padded output, blocked; its plain form cropped into `y`.
    let src_val = g.value(y);
    let wide = g.add_value(Value {
        name: format!("{}::padded", src_val.name),
        dtype: src_val.dtype,
        shape: vec![nb, padded, oh, ow],
        producer: Some(n),
        data: None,
    });
    g.g[n].outputs[0] = wide;
    g.g[n].op = Op::Conv(
        p.with_weight_layout(WeightLayout::Blocked)
            .with_channel_layout(ChannelLayout::Blocked),
    );
    st.mark_output(g, n);
    let plain = st.as_plain(g, wide);
    let name = format!("{}::crop", g.g[n].name);
    let crop = Op::Slice(SliceParams {
        starts: [0; MAX_RANK],
        steps: [1; MAX_RANK],
    });
    add_one_to_one(g, name, "Slice", crop, plain, y);
    // Readers of `y` now read it from the Slice.
    relink_readers(g, y, users);
    Ok(true)
}
