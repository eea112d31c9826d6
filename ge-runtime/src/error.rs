//! Errors of loading and running a model. No allocation: every variant carries `'static`
//! text and numbers, enough to name the section, tensor or task at fault. `Display` exists
//! only with `std`, so that no `core::fmt` formatting code is linked into firmware.

#[cfg(feature = "std")]
use core::fmt;

use crate::format::{KernelId, OpKind, ViewError};

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
    /// The workspace given is smaller than the compiler planned.
    Workspace,
}

impl From<ViewError> for KernelError {
    fn from(e: ViewError) -> Self {
        KernelError::DType(e)
    }
}

#[cfg(feature = "std")]
impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::BadParams(m) => write!(f, "bad parameters: {m}"),
            KernelError::DType(e) => write!(
                f,
                "dtype {} where {} was expected (or misaligned data)",
                e.found.name(),
                e.expected.name()
            ),
            KernelError::UnsupportedDType(m) => write!(f, "unsupported dtype: {m}"),
            KernelError::Shape(m) => write!(f, "shape error: {m}"),
            KernelError::MissingTensor(m) => write!(f, "missing tensor: {m}"),
            KernelError::Workspace => write!(f, "workspace too small"),
        }
    }
}

/// Errors of [`crate::Model`] and [`crate::Session`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The blob is not a valid `.om` file: `what` says which check failed, `index` which
    /// record (or 0).
    Malformed { what: &'static str, index: u64 },
    /// The blob was written by a format version this reader does not know (`supported`:
    /// the newest it reads; it reads every version from `MIN_FORMAT_VERSION` on).
    Version { found: u32, supported: u32 },
    /// A checksum does not match: the file is corrupt.
    Checksum { section: &'static str },
    /// The blob's start is not aligned as weights used in place require.
    Misaligned { required: usize },
    /// The arena given is smaller than the plan needs.
    ArenaTooSmall { needed: usize, given: usize },
    /// Wrong number of inputs or outputs.
    IoCount {
        what: &'static str,
        expected: usize,
        given: usize,
    },
    /// An input or output buffer has the wrong byte length.
    IoSize {
        what: &'static str,
        index: usize,
        expected: usize,
        given: usize,
    },
    /// A task failed on the device.
    Task {
        task: u32,
        op: OpKind,
        reason: KernelError,
    },
    /// The device cannot run this model (e.g. too many streams).
    Device(&'static str),
    /// The model needs more than the caller's [`crate::Limits`] allow.
    Limit {
        what: &'static str,
        needed: u64,
        limit: u64,
    },
    /// The model runs a kernel the device was not built with (its kernel set lacks it).
    MissingKernel { kernel: KernelId },
    /// No gear of the model takes these inputs (or gear `given` does not exist): `what`
    /// says why, for input `input`'s dim `dim` of size `given`.
    Gear {
        what: &'static str,
        input: usize,
        dim: usize,
        given: usize,
    },
}

#[cfg(feature = "std")]
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Malformed { what, index } => write!(
                f,
                "malformed .om blob: {what} (record {index}); recompile the model with `ge compile`"
            ),
            Error::Version { found, supported } => write!(
                f,
                ".om format version {found} is not supported (this runtime reads versions {} to {supported}); recompile the model with a matching ge",
                crate::format::MIN_FORMAT_VERSION
            ),
            Error::Checksum { section } => {
                write!(f, ".om checksum mismatch in {section}: the file is corrupt")
            }
            Error::Misaligned { required } => write!(
                f,
                ".om blob must start at a {required}-byte aligned address; embed it with include_bytes_aligned!(64, ..) or load it with Model::open"
            ),
            Error::ArenaTooSmall { needed, given } => write!(
                f,
                "arena too small: the model needs {needed} bytes, {given} were given"
            ),
            Error::IoCount {
                what,
                expected,
                given,
            } => write!(f, "expected {expected} {what}, got {given}"),
            Error::IoSize {
                what,
                index,
                expected,
                given,
            } => write!(f, "{what} {index} must be {expected} bytes, got {given}"),
            Error::Task { task, op, reason } => {
                write!(f, "task {task} ({}) failed: {reason}", op.name())
            }
            Error::Device(m) => write!(f, "device: {m}"),
            Error::Limit {
                what,
                needed,
                limit,
            } => write!(
                f,
                "the model needs {needed} bytes of {what}, over the limit of {limit} bytes"
            ),
            Error::Gear {
                what,
                input,
                dim,
                given,
            } => write!(f, "gears: input {input}, dim {dim} = {given}: {what}"),
            Error::MissingKernel { kernel } => write!(
                f,
                "the model needs kernel {kernel}, which this device's kernel set lacks; give \
                 the device the model's generated KERNELS or KernelSet::ALL"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}
