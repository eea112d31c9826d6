//! `QConvFused`: an int8 convolution whose 8-bit result a vector program finishes (a
//! residual Add, an activation between a DequantizeLinear and a QuantizeLinear) before
//! anything else reads it. The conv writes its requantized output, then the program runs
//! over that buffer in place, tile by tile: on the device the tile never leaves the unified
//! buffer, and on the host it is still in cache. The bytes equal the two tasks' it replaces.

use ge_runtime::format::{
    OpKind, QCONV_INPUTS, QConvFusedParams, QConvParams, Shape, TensorMut, TensorRef,
};

use super::conv::{run_qconv, workspace_bytes, workspace_levels};
use crate::ops::WORKSPACE_LEVELS;
use crate::ops::fused::run_fused_in_place;
use crate::ops::{KernelError, KernelResult};
use ge_runtime::format::read_params;

/// Runs one `QConvFused` task.
pub fn run_qconv_fused(
    p: &QConvFusedParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    if ins.len() < QCONV_INPUTS {
        return Err(KernelError::MissingTensor(
            "int8 conv epilogue: the conv's inputs",
        ));
    }
    let (conv, program) = ins.split_at(QCONV_INPUTS);
    run_qconv(&p.conv, conv, outs, ws)?;
    run_fused_in_place(&p.program, program, outs)
}

/// The QConv's scratch: the program needs none.
pub fn workspace(p: &QConvFusedParams, ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    workspace_bytes(&p.conv, ins.get(..QCONV_INPUTS).unwrap_or(ins), outs)
}

/// The workspace levels of a `QConv` or `QConvFused` task ([`workspace_levels`]); `None`
/// for other kinds. A malformed record has all levels 0 (execution then fails).
pub fn workspace_levels_of(
    kind: OpKind,
    params: &[u8],
    ins: &[Option<Shape>],
    outs: &[Shape],
) -> Option<[usize; WORKSPACE_LEVELS]> {
    let none = [0; WORKSPACE_LEVELS];
    Some(match kind {
        OpKind::QConv => {
            read_params::<QConvParams>(params).map_or(none, |p| workspace_levels(&p, ins, outs))
        }
        OpKind::QConvFused => read_params::<QConvFusedParams>(params).map_or(none, |p| {
            workspace_levels(&p.conv, ins.get(..QCONV_INPUTS).unwrap_or(ins), outs)
        }),
        _ => return None,
    })
}
