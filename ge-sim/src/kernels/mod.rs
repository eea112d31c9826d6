//! Kernels: real results on the host. One file per family; [`execute`] dispatches a task's
//! kind to its kernel after decoding the parameter record. Kernels never allocate: scratch
//! space comes from the planned workspace tensor (size from [`workspace_bytes`]).

pub mod broadcast;

use ge_runtime::format::{OpKind, TensorMut, TensorRef, ViewError};

/// Work a kernel did, for the cost model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Multiply-accumulates suited to the cube (matrix) unit.
    pub cube_macs: u64,
    /// Elementwise operations on the vector unit.
    pub vector_ops: u64,
}

/// Why a kernel refused to run. Validated models only hit these on malformed blobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelError {
    /// The parameter record has the wrong size or an invalid field.
    BadParams(&'static str),
    /// An input or output has an unexpected dtype or misaligned bytes.
    DType(ViewError),
    /// An element type the kernel does not implement.
    UnsupportedDType(&'static str),
    /// Shapes are inconsistent with the op.
    Shape(&'static str),
    /// A required input or output is missing.
    MissingTensor(&'static str),
    /// The workspace given is smaller than [`workspace_bytes`] said.
    Workspace,
}

impl From<ViewError> for KernelError {
    fn from(e: ViewError) -> Self {
        KernelError::DType(e)
    }
}

impl core::fmt::Display for KernelError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            KernelError::BadParams(m) => write!(f, "bad parameters: {m}"),
            KernelError::DType(e) => write!(f, "dtype {} where {} was expected (or misaligned data)", e.found.name(), e.expected.name()),
            KernelError::UnsupportedDType(m) => write!(f, "unsupported dtype: {m}"),
            KernelError::Shape(m) => write!(f, "shape error: {m}"),
            KernelError::MissingTensor(m) => write!(f, "missing tensor: {m}"),
            KernelError::Workspace => write!(f, "workspace too small"),
        }
    }
}

/// Result of a kernel.
pub type KernelResult = Result<Work, KernelError>;

/// Reads the `Pod` parameter record of a task.
pub fn read_params<P: bytemuck::Pod>(bytes: &[u8]) -> Result<P, KernelError> {
    if bytes.len() != core::mem::size_of::<P>() {
        return Err(KernelError::BadParams("parameter record has the wrong length"));
    }
    Ok(bytemuck::pod_read_unaligned(bytes))
}

/// Input `i`, which must be present.
pub fn input<'a, 'b>(ins: &'b [Option<TensorRef<'a>>], i: usize, what: &'static str) -> Result<&'b TensorRef<'a>, KernelError> {
    ins.get(i).and_then(|t| t.as_ref()).ok_or(KernelError::MissingTensor(what))
}

/// Output `i`, which must be present.
pub fn output<'a, 'b>(outs: &'b mut [TensorMut<'a>], i: usize, what: &'static str) -> Result<&'b mut TensorMut<'a>, KernelError> {
    outs.get_mut(i).ok_or(KernelError::MissingTensor(what))
}

/// Runs one task's kernel.
pub fn execute(
    kind: OpKind,
    params: &[u8],
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    workspace: &mut [u8],
) -> KernelResult {
    let _ = (kind, params, ins, outs, workspace);
    Err(KernelError::BadParams("kernel not wired yet"))
}

/// Scratch bytes a task needs, decided at compile time from its kind, params and shapes.
pub fn workspace_bytes(kind: OpKind, params: &[u8], in_shapes: &[Option<ge_runtime::format::Shape>], out_shapes: &[ge_runtime::format::Shape]) -> usize {
    let _ = (kind, params, in_shapes, out_shapes);
    0
}
