//! Kernels: real results on the host. One file per family; [`execute`] dispatches a task's
//! kind to its kernel after decoding the parameter record. Kernels never allocate: scratch
//! space comes from the planned workspace tensor (size from [`workspace_bytes`]).

pub mod attention;
pub mod binary;
pub mod broadcast;
pub mod cast;
pub mod concat;
pub mod conv;
pub mod copy;
pub mod fused;
pub mod gather;
pub mod gemm;
pub mod grid_sample;
pub mod in_place;
pub mod indexing;
pub mod layer_norm;
pub mod norm;
pub mod ordered;
pub mod pad;
pub mod pool;
pub mod real;
pub mod reduce;
pub mod resize;
pub mod slice;
pub mod softmax;
#[cfg(test)]
mod test_util;
pub mod transpose;
pub mod unary;
pub mod vmath;

use ge_runtime::format::{ConvParams, OpKind, Shape, TensorMut, TensorRef};

/// Work a kernel did, for the cost model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Multiply-accumulates suited to the cube (matrix) unit.
    pub cube_macs: u64,
    /// Elementwise operations on the vector unit.
    pub vector_ops: u64,
}

pub use ge_runtime::KernelError;

/// Result of a kernel.
pub type KernelResult = Result<Work, KernelError>;

/// Reads the `Pod` parameter record of a task.
pub fn read_params<P: bytemuck::Pod>(bytes: &[u8]) -> Result<P, KernelError> {
    if bytes.len() != core::mem::size_of::<P>() {
        return Err(KernelError::BadParams(
            "parameter record has the wrong length",
        ));
    }
    Ok(bytemuck::pod_read_unaligned(bytes))
}

/// Input `i`, which must be present.
pub fn input<'a, 'b>(
    ins: &'b [Option<TensorRef<'a>>],
    i: usize,
    what: &'static str,
) -> Result<&'b TensorRef<'a>, KernelError> {
    ins.get(i)
        .and_then(|t| t.as_ref())
        .ok_or(KernelError::MissingTensor(what))
}

/// Output `i`, which must be present.
pub fn output<'a, 'b>(
    outs: &'b mut [TensorMut<'a>],
    i: usize,
    what: &'static str,
) -> Result<&'b mut TensorMut<'a>, KernelError> {
    outs.get_mut(i).ok_or(KernelError::MissingTensor(what))
}

/// Runs one task's kernel on the calling thread.
pub fn execute(
    kind: OpKind,
    params: &[u8],
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    execute_on(kind, params, ins, outs, ws, &crate::threads::Serial)
}

/// Runs one task's kernel, splitting the kernels that can be split between the slots of
/// `par` (results are bitwise the same whatever `par`).
pub fn execute_on(
    kind: OpKind,
    params: &[u8],
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn crate::threads::Parallel,
) -> KernelResult {
    let p = params;
    match kind {
        OpKind::Unary => unary::run_unary(&read_params(p)?, ins, outs),
        OpKind::Binary => binary::run_binary(&read_params(p)?, ins, outs),
        OpKind::Variadic => binary::run_variadic(&read_params(p)?, ins, outs),
        OpKind::Where => binary::run_where(ins, outs),
        OpKind::Conv => conv::run_conv_on(&read_params(p)?, ins, outs, ws, par),
        OpKind::ConvTranspose => conv::run_conv_transpose(&read_params(p)?, ins, outs, ws),
        OpKind::Gemm => gemm::run_gemm(&read_params(p)?, ins, outs, ws, par),
        OpKind::MatMul => gemm::run_matmul(ins, outs, ws, par),
        OpKind::Pool => pool::run_pool(&read_params(p)?, ins, outs),
        OpKind::GlobalPool => pool::run_global_pool(&read_params(p)?, ins, outs),
        OpKind::Lrn => norm::run_lrn(&read_params(p)?, ins, outs),
        OpKind::BatchNorm => norm::run_batch_norm(&read_params(p)?, ins, outs),
        OpKind::InstanceNorm => norm::run_instance_norm(&read_params(p)?, ins, outs),
        OpKind::Softmax => softmax::run_softmax(&read_params(p)?, ins, outs),
        OpKind::Reduce => reduce::run_reduce(&read_params(p)?, ins, outs),
        OpKind::ArgReduce => reduce::run_arg_reduce(&read_params(p)?, ins, outs),
        OpKind::Transpose => transpose::run_transpose(&read_params(p)?, ins, outs),
        OpKind::Slice => slice::run_slice(&read_params(p)?, ins, outs),
        OpKind::Concat => concat::run_concat(&read_params(p)?, ins, outs),
        OpKind::Split => concat::run_split(&read_params(p)?, ins, outs),
        OpKind::Gather => gather::run_gather(&read_params(p)?, ins, outs),
        OpKind::Pad => pad::run_pad(&read_params(p)?, ins, outs),
        OpKind::Copy => copy::run_copy(ins, outs),
        OpKind::Expand => copy::run_expand(ins, outs),
        OpKind::Tile => copy::run_tile(ins, outs),
        OpKind::Resize => resize::run_resize(&read_params(p)?, ins, outs),
        OpKind::Cast => cast::run_cast(ins, outs),
        OpKind::Fused => fused::run_fused(&read_params(p)?, ins, outs),
        OpKind::LayerNorm => layer_norm::run_layer_norm(&read_params(p)?, ins, outs),
        OpKind::Attention => attention::run_attention(&read_params(p)?, ins, outs, ws),
        OpKind::GatherElements => indexing::run_gather_elements(&read_params(p)?, ins, outs),
        OpKind::ScatterElements => indexing::run_scatter_elements(&read_params(p)?, ins, outs),
        OpKind::ScatterNd => indexing::run_scatter_nd(&read_params(p)?, ins, outs),
        OpKind::GatherNd => indexing::run_gather_nd(&read_params(p)?, ins, outs),
        OpKind::TopK => ordered::run_top_k(&read_params(p)?, ins, outs),
        OpKind::Cumulative => ordered::run_cumulative(&read_params(p)?, ins, outs),
        OpKind::GridSample => grid_sample::run_grid_sample(&read_params(p)?, ins, outs),
    }
}

/// Scratch bytes a task needs, decided at compile time from its kind, params and shapes.
/// Kinds that need none return 0; a malformed record also returns 0 (execution then fails
/// with a parameter error instead).
pub fn workspace_bytes(
    kind: OpKind,
    params: &[u8],
    in_shapes: &[Option<Shape>],
    out_shapes: &[Shape],
) -> usize {
    match kind {
        OpKind::Conv | OpKind::ConvTranspose => match read_params::<ConvParams>(params) {
            Ok(p) => {
                conv::conv_workspace_bytes(&p, kind == OpKind::ConvTranspose, in_shapes, out_shapes)
            }
            Err(_) => 0,
        },
        OpKind::Gemm | OpKind::MatMul => gemm::gemm_workspace_bytes(in_shapes, out_shapes),
        OpKind::Attention => attention::attention_workspace_bytes(in_shapes),
        _ => 0,
    }
}
