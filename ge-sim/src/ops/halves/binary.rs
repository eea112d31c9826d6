//! Half elementwise binary ops — the float arithmetic a vector program may use (Add, Sub,
//! Mul, Div, Pow, Max, Min, PRelu) with their fused activation: each is the one- or
//! two-instruction vector program it stands for, run by the half vector-program kernel (its
//! slicing, its broadcasting, one rounding).

use ge_runtime::format::{BinaryParams, FusedParams, TensorMut, TensorRef, VInstr, VOP_BINARY};

use super::super::fused::fusable_binary_task;
use super::super::{KernelError, KernelResult, read_params};

/// The vector program `act(a op b)` over inputs 0 and 1.
fn program(p: &BinaryParams) -> Result<FusedParams, KernelError> {
    if !fusable_binary_task(p) {
        return Err(KernelError::UnsupportedDType(
            "fp16/bf16 binary ops are Add, Sub, Mul, Div, Pow, Max, Min and PRelu",
        ));
    }
    let mut f: FusedParams = bytemuck::Zeroable::zeroed();
    f.input_count = 2;
    f.instrs[0] = VInstr {
        op: VOP_BINARY + p.op as u16,
        dst: 2,
        a: 0,
        b: 1,
        ..VInstr::default()
    };
    f.instr_count = 1;
    if p.act.op != 0 {
        f.instrs[1] = VInstr {
            op: p.act.op as u16,
            dst: 2,
            a: 2,
            b: 2,
            alpha: p.act.alpha,
            beta: p.act.beta,
            ..VInstr::default()
        };
        f.instr_count = 2;
    }
    f.out = 2;
    Ok(f)
}

/// `act(a op b)` with broadcasting on 16-bit (or f32) operands into a 16-bit output.
pub(crate) fn run(
    params: &[u8],
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let p: BinaryParams = read_params(params)?;
    let ins = ins
        .get(..2)
        .ok_or(KernelError::Shape("binary op needs two inputs"))?;
    super::fused::run(&program(&p)?, ins, outs, ws)
}
