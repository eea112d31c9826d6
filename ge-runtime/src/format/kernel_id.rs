//! Which kernels a blob needs: an op kind on an element type, in a variant. The writer lists
//! them in the optional `kernels` section so that a device linked with only some kernels
//! (firmware) can refuse a blob up front, naming the first one it lacks; blobs without the
//! section (older writers) have the same list derived from their task table.

use bytemuck::{Pod, Zeroable};

use super::{DType, NO_TENSOR, OpKind, TaskDesc, TensorDesc};

/// How a kernel runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum KernelVariant {
    /// Inputs and outputs are separate buffers.
    Plain = 0,
    /// Output 0 overwrites one of the inputs (`TaskDesc::in_place`).
    InPlace = 1,
}

impl KernelVariant {
    /// Decodes the on-disk number.
    pub const fn from_u8(v: u8) -> Option<KernelVariant> {
        match v {
            0 => Some(KernelVariant::Plain),
            1 => Some(KernelVariant::InPlace),
            _ => None,
        }
    }
}

/// One kernel: an [`OpKind`] producing a [`DType`] (output 0's), in a [`KernelVariant`].
/// Ordered by kind, then dtype, then variant: the order of the `kernels` section.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelId {
    /// An [`OpKind`] number.
    pub op: u16,
    /// A [`DType`] number.
    pub dtype: u8,
    /// A [`KernelVariant`] number.
    pub variant: u8,
}

impl KernelId {
    /// The kernel of `kind` producing `dtype` in `variant`.
    pub const fn new(kind: OpKind, dtype: DType, variant: KernelVariant) -> KernelId {
        KernelId {
            op: kind as u16,
            dtype: dtype as u8,
            variant: variant as u8,
        }
    }

    /// The kernel a task runs: its kind, output 0's element type, and whether it runs in
    /// place. `None` when a table index is out of range (a malformed blob).
    pub fn of_task(task: &TaskDesc, tensors: &[TensorDesc], task_io: &[u32]) -> Option<KernelId> {
        let out = (task.io_start as usize).checked_add(task.input_count as usize)?;
        let id = *task_io.get(out)?;
        if id == NO_TENSOR {
            return None;
        }
        let t = tensors.get(id as usize)?;
        Some(KernelId {
            op: task.op,
            dtype: t.dtype,
            variant: if task.in_place == 0 {
                KernelVariant::Plain
            } else {
                KernelVariant::InPlace
            } as u8,
        })
    }

    /// The op kind, if known.
    pub const fn kind(self) -> Option<OpKind> {
        OpKind::from_u16(self.op)
    }

    /// The element type, if known.
    pub const fn dtype(self) -> Option<DType> {
        DType::from_u8(self.dtype)
    }

    /// The variant, if known.
    pub const fn variant(self) -> Option<KernelVariant> {
        KernelVariant::from_u8(self.variant)
    }

    /// True when kind, dtype and variant are all known numbers.
    pub const fn is_known(self) -> bool {
        self.kind().is_some() && self.dtype().is_some() && self.variant().is_some()
    }
}

/// `Conv/float32`, `Binary/float32/in-place` (`?N` for an unknown number).
#[cfg(feature = "std")]
impl core::fmt::Display for KernelId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.kind() {
            Some(k) => write!(f, "{}", k.name())?,
            None => write!(f, "?{}", self.op)?,
        }
        match self.dtype() {
            Some(d) => write!(f, "/{}", d.name())?,
            None => write!(f, "/?{}", self.dtype)?,
        }
        match self.variant() {
            Some(KernelVariant::Plain) => Ok(()),
            Some(KernelVariant::InPlace) => write!(f, "/in-place"),
            None => write!(f, "/?{}", self.variant),
        }
    }
}
