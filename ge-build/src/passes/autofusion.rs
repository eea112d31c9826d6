//! Autofusion: chains of elementwise f32 ops (unary math, arithmetic binary ops with
//! broadcasting, and their fused activations) become one task running a vector program on the
//! device's vector unit, so intermediates never leave the chip. A Cast from int8/uint8 feeding
//! the chain and one to int8/uint8 ending it (DequantizeLinear's and QuantizeLinear's, as
//! imported) fold into its loads and store.
//!
//! A chain grows from a node through single-use intermediates, within the fusion switch's
//! `min_ops..=max_ops`, the program's instruction and register limits, and only while its
//! tile working set (registers × tile × 4 B) fits the device's unified buffer. The chain's
//! last node becomes the fused task; the rest are removed. The chain then takes in the
//! fusable producers only it reads (see [`absorb_producers`]), so a residual Add of two
//! dequantized branches is one program. At O3 chains may be twice as long as the switch
//! allows at O2. Two rounds over the nodes (see `run`). O(V + E · chain length²).

use std::collections::{HashMap, HashSet};

use ge_runtime::format::{
    DType, FUSED_8BIT_IO, FusedParams, MAX_FUSED_INSTRS, MAX_FUSED_REGS, UnaryOp, VInstr,
    VOP_BINARY,
};
use ge_sim::target::{FUSED_TILE as TILE, fusable_binary_task, fusable_unary};
use petgraph::stable_graph::NodeIndex;

use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op, ValueId};
use crate::options::OptLevel;

/// Elementwise chain fusion into vector programs.
pub struct AutoFusion;

/// Vector instructions a node becomes (0 when it cannot join a chain).
fn instr_count(g: &Graph, n: NodeIndex) -> usize {
    let node = &g.g[n];
    if node.outputs.len() != 1 || g.value(node.outputs[0]).dtype != DType::F32 {
        return 0;
    }
    if node
        .inputs
        .iter()
        .any(|i| i.is_none_or(|v| g.value(v).dtype != DType::F32))
    {
        return 0;
    }
    match node.op {
        Op::Unary(p) if UnaryOp::from_u32(p.act.op).is_some_and(fusable_unary) => 1,
        Op::Binary(p) if fusable_binary_task(&p) => {
            if p.act.is_none() {
                1
            } else {
                2
            }
        }
        _ => 0,
    }
}

/// A Cast a vector program does while loading an input (`load`: int8/uint8 to f32, as a
/// DequantizeLinear starts) or storing its output (f32 to int8/uint8, as a QuantizeLinear
/// ends): the kernel converts exactly as the Cast kernel does, and the int8 tensor is all
/// that crosses memory.
fn folds_cast(g: &Graph, n: NodeIndex, load: bool) -> bool {
    let node = &g.g[n];
    let (Op::Cast, [Some(x)], [y]) = (&node.op, node.inputs.as_slice(), node.outputs.as_slice())
    else {
        return false;
    };
    let int8 = |d: DType| matches!(d, DType::I8 | DType::U8);
    let (from, to) = (g.value(*x).dtype, g.value(*y).dtype);
    if load {
        int8(from) && to == DType::F32
    } else {
        from == DType::F32 && int8(to)
    }
}

struct Program {
    params: FusedParams,
    inputs: Vec<ValueId>,
    regs: Vec<(ValueId, u8)>,
    temps: usize,
}

impl Program {
    fn new() -> Program {
        Program {
            params: bytemuck::Zeroable::zeroed(),
            inputs: Vec::new(),
            regs: Vec::new(),
            temps: 0,
        }
    }

    fn reg_of(&self, v: ValueId) -> Option<u8> {
        self.regs.iter().find(|(x, _)| *x == v).map(|(_, r)| *r)
    }

    fn push(&mut self, i: VInstr) {
        let k = self.params.instr_count as usize;
        self.params.instrs[k] = i;
        self.params.instr_count += 1;
    }
}

/// Builds the program for `chain` (in order); None if it exceeds the limits.
fn build(g: &Graph, chain: &[NodeIndex]) -> Option<Program> {
    let mut prog = Program::new();
    let internal: HashSet<ValueId> = chain.iter().map(|&n| g.g[n].outputs[0]).collect();
    for &n in chain {
        for v in g.g[n].inputs.iter().flatten() {
            if !internal.contains(v) && !prog.inputs.contains(v) {
                prog.inputs.push(*v);
            }
        }
    }
    let k = prog.inputs.len();
    if k > MAX_FUSED_REGS {
        return None;
    }
    for (i, &v) in prog.inputs.clone().iter().enumerate() {
        prog.regs.push((v, i as u8));
    }
    // A register is free again after the last member reading its value (inputs' too: each
    // tile loads them afresh), so a long chain needs only as many as are live at once.
    let mut last_read: HashMap<ValueId, usize> = HashMap::new();
    for (i, &n) in chain.iter().enumerate() {
        for v in g.g[n].inputs.iter().flatten() {
            last_read.insert(*v, i);
        }
    }
    let mut free: Vec<u8> = Vec::new();
    let mut out = 0u8;
    for (i, &n) in chain.iter().enumerate() {
        let node = &g.g[n];
        if matches!(node.op, Op::Cast) {
            // The final Cast to int8 ([`folds_cast`]): the store converts, no instruction.
            let a = node.inputs[0].and_then(|v| prog.reg_of(v))?;
            prog.regs.push((node.outputs[0], a));
            out = a;
            continue;
        }
        for v in node.inputs.iter().flatten() {
            if last_read.get(v) == Some(&i)
                && let Some(r) = prog.reg_of(*v)
                && !free.contains(&r)
            {
                free.push(r);
            }
        }
        let dst = match free.pop() {
            Some(r) => r,
            None => {
                prog.temps += 1;
                (k + prog.temps - 1) as u8
            }
        };
        if dst as usize >= MAX_FUSED_REGS
            || prog.params.instr_count as usize + instr_count(g, n) > MAX_FUSED_INSTRS
        {
            return None;
        }
        let reg = |v: Option<ValueId>| v.and_then(|v| prog.reg_of(v));
        match node.op {
            Op::Unary(p) => {
                let a = reg(node.inputs[0])?;
                prog.push(VInstr {
                    op: p.act.op as u16,
                    dst,
                    a,
                    b: 0,
                    reserved: [0; 3],
                    alpha: p.act.alpha,
                    beta: p.act.beta,
                });
            }
            Op::Binary(p) => {
                let (a, b) = (reg(node.inputs[0])?, reg(node.inputs[1])?);
                prog.push(VInstr {
                    op: VOP_BINARY + p.op as u16,
                    dst,
                    a,
                    b,
                    reserved: [0; 3],
                    alpha: 0.0,
                    beta: 0.0,
                });
                if !p.act.is_none() {
                    prog.push(VInstr {
                        op: p.act.op as u16,
                        dst,
                        a: dst,
                        b: 0,
                        reserved: [0; 3],
                        alpha: p.act.alpha,
                        beta: p.act.beta,
                    });
                }
            }
            _ => return None,
        }
        prog.regs.push((node.outputs[0], dst));
        out = dst;
    }
    prog.params.input_count = k as u32;
    prog.params.out = u32::from(out);
    Some(prog)
}

/// True when node `n`'s result is read by more than one node, all of them fusable and not
/// yet fused, and is no graph output.
fn fans_out_to_fusable(
    g: &Graph,
    users: &HashMap<ValueId, Vec<NodeIndex>>,
    taken: &HashSet<NodeIndex>,
    n: NodeIndex,
) -> bool {
    let v = g.g[n].outputs[0];
    users.get(&v).is_some_and(|us| {
        us.len() > 1
            && us
                .iter()
                .all(|&u| !taken.contains(&u) && instr_count(g, u) > 0)
    }) && !g.is_output(v)
}

/// A program's size limits: members, and registers the unified buffer holds.
#[derive(Clone, Copy)]
struct Limits {
    max_ops: usize,
    max_regs: usize,
}

/// Pulls into `chain` the fusable producers of its inputs that only the chain reads (the
/// other operand of a residual Add, a second DequantizeLinear), one at a time while the
/// program still builds within `limits`: a fan-in of chains becomes one program instead of
/// one writing f32 for the other to read back. Members stay in topological order (`pos`).
/// O(max_ops²) builds per chain at most.
fn absorb_producers(
    g: &Graph,
    users: &HashMap<ValueId, Vec<NodeIndex>>,
    taken: &HashSet<NodeIndex>,
    pos: &HashMap<NodeIndex, usize>,
    limits: Limits,
    chain: &mut Vec<NodeIndex>,
    prog: &mut Program,
) {
    let mut grown = true;
    while grown && chain.len() < limits.max_ops {
        grown = false;
        for v in prog.inputs.clone() {
            let Some(p) = g.value(v).producer else {
                continue;
            };
            let only_chain = users
                .get(&v)
                .is_some_and(|us| us.iter().all(|u| chain.contains(u)));
            if !only_chain
                || g.is_output(v)
                || taken.contains(&p)
                || chain.contains(&p)
                || instr_count(g, p) == 0
            {
                continue;
            }
            let mut wider = chain.clone();
            wider.push(p);
            wider.sort_by_key(|n| pos.get(n).copied().unwrap_or(usize::MAX));
            if let Some(q) =
                build(g, &wider).filter(|q| q.inputs.len() + q.temps <= limits.max_regs)
            {
                *chain = wider;
                *prog = q;
                grown = true;
                break;
            }
        }
    }
}

impl Pass for AutoFusion {
    pass_info!("autofusion", O2, fusion);
    fn run(&self, g: &mut Graph, cx: &PassContext<'_>) -> Result<bool> {
        let users = g.users();
        let max_regs_for_ub =
            (cx.device.unified_buffer_bytes as usize / (TILE * 4)).min(MAX_FUSED_REGS);
        // O3 is aggressive: twice the chain length the switch file allows at O2.
        let max_ops = if cx.level >= OptLevel::O3 {
            2 * cx.switch.max_ops
        } else {
            cx.switch.max_ops
        };
        let mut taken: HashSet<NodeIndex> = HashSet::new();
        let mut changed = false;
        let order = g.topo_order();
        let pos: HashMap<NodeIndex, usize> =
            order.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        // Two rounds: the first leaves alone a chain whose result fans out to fusable
        // readers only (a DequantizeLinear read by a Sigmoid and by the Mul after it), so the
        // chain of those readers takes it in ([`absorb_producers`]) instead of reading it
        // back from memory; the second fuses whatever is left as it comes.
        for (round, &start) in [0, 1]
            .into_iter()
            .flat_map(|r| order.iter().map(move |n| (r, n)))
        {
            if !g.g.contains_node(start) || taken.contains(&start) || instr_count(g, start) == 0 {
                continue;
            }
            let mut chain = vec![start];
            let mut best: Option<(usize, Program)> = None;
            loop {
                if chain.len() >= cx.switch.min_ops
                    && let Some(p) = build(g, &chain)
                    && p.inputs.len() + p.temps <= max_regs_for_ub
                {
                    best = Some((chain.len(), p));
                }
                let Some(&last) = chain.last() else { break };
                let out = g.g[last].outputs[0];
                let Some(next) = g.single_use(out, &users) else {
                    break;
                };
                if chain.len() >= max_ops || taken.contains(&next) || instr_count(g, next) == 0 {
                    break;
                }
                chain.push(next);
            }
            let Some((len, mut prog)) = best else {
                continue;
            };
            chain.truncate(len);
            if round == 0 && fans_out_to_fusable(g, &users, &taken, chain[len - 1]) {
                continue;
            }
            absorb_producers(
                g,
                &users,
                &taken,
                &pos,
                Limits {
                    max_ops,
                    max_regs: max_regs_for_ub,
                },
                &mut chain,
                &mut prog,
            );
            let len = chain.len();
            // A QuantizeLinear's final Cast: the program stores int8 itself.
            if let Some(c) = g
                .single_use(g.g[chain[len - 1]].outputs[0], &users)
                .filter(|&c| !taken.contains(&c) && folds_cast(g, c, false))
            {
                chain.push(c);
                match build(g, &chain) {
                    Some(p) => prog = p,
                    None => {
                        chain.pop();
                    }
                }
            }
            // A DequantizeLinear's Casts: the program reads their int8 inputs, when nothing
            // else reads the widened values.
            let members: HashSet<NodeIndex> = chain.iter().copied().collect();
            let mut loads = Vec::new();
            for i in 0..prog.inputs.len() {
                let v = prog.inputs[i];
                let Some(c) = g.value(v).producer else {
                    continue;
                };
                let only_here = users
                    .get(&v)
                    .is_some_and(|us| us.iter().all(|u| members.contains(u)));
                if taken.contains(&c) || g.is_output(v) || !only_here || !folds_cast(g, c, true) {
                    continue;
                }
                if let Some(Some(x)) = g.g[c].inputs.first().copied() {
                    prog.inputs[i] = x;
                    loads.push(c);
                }
            }
            let len = chain.len();
            let last = chain[len - 1];
            taken.extend(chain.iter().copied());
            taken.extend(loads.iter().copied());
            let label: Vec<String> = loads
                .iter()
                .chain(&chain)
                .map(|&n| g.g[n].op_type.clone())
                .collect();
            for &n in loads.iter().chain(&chain[..len - 1]) {
                g.merge_into(n, Some(last));
            }
            let eight_bit = !loads.is_empty() || matches!(g.g[last].op, Op::Cast);
            if eight_bit {
                prog.params.reserved |= FUSED_8BIT_IO;
            }
            g.g[last].op = Op::Fused(prog.params);
            g.g[last].op_type = format!("Fused[{}]", label.join("+"));
            g.set_inputs(last, prog.inputs.into_iter().map(Some).collect());
            changed = true;
        }
        Ok(changed)
    }
}
