//! QConv epilogue fusion: a vector program (autofusion's) that is the only reader of an int8
//! convolution's result becomes that convolution's epilogue (`QConvFused`): the requantized
//! tile is finished — the residual Add of a QDQ ResNet block, an activation between a
//! DequantizeLinear and a QuantizeLinear, the requantization after them — before it is
//! stored, so the intermediate never crosses memory and one task replaces two. The program
//! must store the conv's own 8-bit type over the conv's shape (it runs in place over the
//! conv's output) and read the conv's result unbroadcast. Runs after autofusion. O(V + E).

use ge_runtime::format::{DType, FusedParams, QCONV_INPUTS, QConvFusedParams};
use petgraph::stable_graph::NodeIndex;

use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op, ValueId};

/// QConv + the vector program reading it.
pub struct FuseQConvEpilogue;

/// `p` with registers 0 and `r` exchanged (the conv's result goes to register 0).
fn swap_registers(mut p: FusedParams, r: u8) -> FusedParams {
    let swap = |x: &mut u8| {
        if *x == 0 {
            *x = r;
        } else if *x == r {
            *x = 0;
        }
    };
    let n = p.instr_count as usize;
    for i in p.instrs.iter_mut().take(n) {
        swap(&mut i.dst);
        swap(&mut i.a);
        swap(&mut i.b);
    }
    let mut out = p.out as u8;
    swap(&mut out);
    p.out = u32::from(out);
    p
}

/// The program input of `f` that is a QConv's 8-bit result shaped like `f`'s output and
/// read by `f` alone: (its register, the conv).
fn conv_input(
    g: &Graph,
    users: &std::collections::HashMap<ValueId, Vec<NodeIndex>>,
    f: NodeIndex,
) -> Option<(usize, NodeIndex)> {
    let [y] = g.g[f].outputs[..] else {
        return None;
    };
    let out = g.value(y);
    if !matches!(out.dtype, DType::I8 | DType::U8) {
        return None;
    }
    g.g[f].inputs.iter().enumerate().find_map(|(r, v)| {
        let v = (*v)?;
        let val = g.value(v);
        let conv = val.producer?;
        let ok = matches!(g.g[conv].op, Op::QConv(_))
            && g.g[conv].outputs.len() == 1
            && g.g[conv].inputs.len() <= QCONV_INPUTS
            && val.dtype == out.dtype
            && val.shape == out.shape
            && !g.is_output(v)
            && users.get(&v).is_some_and(|u| u.as_slice() == [f]);
        ok.then_some((r, conv))
    })
}

impl Pass for FuseQConvEpilogue {
    pass_info!("fuse_qconv_epilogue", O2, fusion);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let users = g.users();
        let mut changed = false;
        for f in g.topo_order() {
            let Op::Fused(program) = g.g[f].op else {
                continue;
            };
            let Some((r, conv)) = conv_input(g, &users, f) else {
                continue;
            };
            let (Op::QConv(cp), Ok(reg)) = (g.g[conv].op, u8::try_from(r)) else {
                continue;
            };
            let mut inputs = g.g[conv].inputs.clone();
            inputs.resize(QCONV_INPUTS, None);
            let mut registers = g.g[f].inputs.clone();
            registers.swap(0, r);
            inputs.extend(registers.into_iter().skip(1));
            let name = format!("{}#{}", g.g[conv].name, g.g[f].name);
            let op_type = format!("{}+{}", g.g[conv].op_type, g.g[f].op_type);
            g.merge_into(conv, Some(f));
            let node = &mut g.g[f];
            node.op = Op::QConvFused(QConvFusedParams {
                conv: cp,
                program: swap_registers(program, reg),
            });
            node.name = name;
            node.op_type = op_type;
            g.set_inputs(f, inputs);
            changed = true;
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use ge_runtime::format::{VInstr, VOP_BINARY};

    use super::*;

    #[test]
    fn swapping_registers_renames_every_operand() {
        let mut p: FusedParams = bytemuck::Zeroable::zeroed();
        p.input_count = 3;
        p.instr_count = 2;
        p.instrs[0] = VInstr {
            op: VOP_BINARY,
            dst: 3,
            a: 0,
            b: 2,
            ..Default::default()
        };
        p.instrs[1] = VInstr {
            op: VOP_BINARY,
            dst: 2,
            a: 3,
            b: 2,
            ..Default::default()
        };
        p.out = 2;
        let q = swap_registers(p, 2);
        let ops = |p: &FusedParams, i: usize| (p.instrs[i].dst, p.instrs[i].a, p.instrs[i].b);
        assert_eq!(ops(&q, 0), (3, 2, 0));
        assert_eq!(ops(&q, 1), (0, 3, 0));
        assert_eq!(q.out, 0);
    }
}
