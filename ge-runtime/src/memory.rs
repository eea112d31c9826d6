//! Views of a task's tensors over the arena, the weights and the caller's inputs.
//!
//! The arena is one `&mut [u8]`; a task reads some of its tensors and writes others. The
//! loader proved that a task's written tensors (outputs, workspace) overlap nothing else the
//! task touches, so handing out one `&mut` view per written tensor next to `&` views of the
//! read ones is sound. All views of a task borrow the `Memory` mutably, so they end before
//! the next task's begin.

use core::marker::PhantomData;

use crate::error::{Error, KernelError};
use crate::format::{
    Location, MAX_TASK_IO, NO_TENSOR, Shape, TaskDesc, TensorDesc, TensorMut, TensorRef,
};
use crate::model::{Model, tensor_dtype, tensor_shape};

/// A written tensor's bytes in the arena at `base` (of `len` bytes).
///
/// # Safety
/// `base..base + len` must be a live, exclusively borrowed arena for `'x`, and no other view
/// of the returned range may exist during `'x` (the loader proved a task's written tensors
/// disjoint from everything else the task touches).
unsafe fn arena_mut<'x>(
    base: *mut u8,
    len: usize,
    t: &TensorDesc,
) -> Result<&'x mut [u8], KernelError> {
    let (o, n) = (t.offset as usize, t.bytes as usize);
    if t.location != Location::Arena as u8 || o.checked_add(n).is_none_or(|e| e > len) {
        return Err(KernelError::MissingTensor(
            "written tensor is not in the arena",
        ));
    }
    // SAFETY: in bounds (checked above); exclusivity per the caller's contract.
    Ok(unsafe { core::slice::from_raw_parts_mut(base.add(o), n) })
}

/// The memory one run executes in.
pub struct Memory<'a> {
    arena: *mut u8,
    arena_len: usize,
    weights: &'a [u8],
    inputs: &'a [&'a [u8]],
    _arena: PhantomData<&'a mut [u8]>,
}

/// Views a side that [`Memory::with_task`] keeps on the stack for most tasks.
const SMALL_TASK_IO: usize = 8;

impl<'a> Memory<'a> {
    /// Binds an aligned arena (at least the model's `arena_bytes`), the model's weights and
    /// the caller's input buffers (sizes already checked).
    pub(crate) fn new(arena: &'a mut [u8], weights: &'a [u8], inputs: &'a [&'a [u8]]) -> Self {
        Memory {
            arena: arena.as_mut_ptr(),
            arena_len: arena.len(),
            weights,
            inputs,
            _arena: PhantomData,
        }
    }

    fn bytes(&self, t: &TensorDesc) -> Result<&[u8], KernelError> {
        let (o, n) = (t.offset as usize, t.bytes as usize);
        let missing = KernelError::MissingTensor("tensor bytes out of range");
        match t.location {
            l if l == Location::Arena as u8 => {
                if o.checked_add(n).is_none_or(|e| e > self.arena_len) {
                    return Err(missing);
                }
                // SAFETY: in bounds (checked above); the arena outlives `self`; the loader
                // proved no written tensor of the task overlaps this range.
                Ok(unsafe { core::slice::from_raw_parts(self.arena.add(o), n) })
            }
            l if l == Location::Weight as u8 => self.weights.get(o..o + n).ok_or(missing),
            _ => {
                let b = self.inputs.get(t.index as usize).ok_or(missing)?;
                if b.len() != n {
                    return Err(missing);
                }
                Ok(b)
            }
        }
    }

    /// Runs `f` with views of `task`'s inputs (`None` for absent optional inputs and for
    /// the input an in-place task updates through output 0), outputs and workspace (empty
    /// when the task has none).
    pub fn with_task<R>(
        &mut self,
        model: &Model<'_>,
        task: &TaskDesc,
        f: impl FnOnce(
            &[Option<TensorRef<'_>>],
            &mut [TensorMut<'_>],
            &mut [u8],
        ) -> Result<R, KernelError>,
    ) -> Result<R, KernelError> {
        // Views are ~100 bytes each: most tasks get 8 slots a side, not MAX_TASK_IO, so
        // a run's stack stays small (the views of 64 are 12 KiB).
        let n = model
            .task_inputs(task)
            .len()
            .max(model.task_outputs(task).len());
        if n <= SMALL_TASK_IO {
            self.views::<SMALL_TASK_IO, R>(model, task, f)
        } else {
            self.views::<MAX_TASK_IO, R>(model, task, f)
        }
    }

    /// [`Memory::with_task`] with room for `N` views a side; never inlined, so the views'
    /// frame exists only while the task runs. Only the arrays depend on `N`: the views are
    /// made by [`Memory::fill_views`], one copy of that code for both sizes.
    #[inline(never)]
    fn views<const N: usize, R>(
        &mut self,
        model: &Model<'_>,
        task: &TaskDesc,
        f: impl FnOnce(
            &[Option<TensorRef<'_>>],
            &mut [TensorMut<'_>],
            &mut [u8],
        ) -> Result<R, KernelError>,
    ) -> Result<R, KernelError> {
        let mut ins: [Option<TensorRef<'_>>; N] = [None; N];
        let mut outs: [TensorMut<'_>; N] = core::array::from_fn(|_| TensorMut {
            dtype: crate::format::DType::U8,
            shape: Shape::scalar(),
            data: &mut [],
        });
        let (ni, no, ws) = self.fill_views(model, task, &mut ins, &mut outs)?;
        f(&ins[..ni], &mut outs[..no], ws)
    }

    /// Fills `ins` and `outs` with views of `task`'s tensors and returns how many of each
    /// there are and the task's workspace.
    fn fill_views<'s>(
        &'s mut self,
        model: &Model<'_>,
        task: &TaskDesc,
        ins: &mut [Option<TensorRef<'s>>],
        outs: &mut [TensorMut<'s>],
    ) -> Result<(usize, usize, &'s mut [u8]), KernelError> {
        let this: &'s Self = self;
        let tensors = model.tensors();
        let get = |id: u32| {
            tensors
                .get(id as usize)
                .ok_or(KernelError::MissingTensor("task names no tensor"))
        };
        let in_ids = model.task_inputs(task);
        let out_ids = model.task_outputs(task);
        if in_ids.len() > ins.len() || out_ids.len() > outs.len() {
            return Err(KernelError::BadParams("too many task inputs or outputs"));
        }
        // An in-place input is output 0's bytes: no shared view of it is made.
        let in_place = (task.in_place as usize).checked_sub(1);
        for (i, (slot, &id)) in ins.iter_mut().zip(in_ids).enumerate() {
            if id != NO_TENSOR && in_place != Some(i) {
                let t = get(id)?;
                *slot = Some(TensorRef {
                    dtype: tensor_dtype(t),
                    shape: tensor_shape(t),
                    data: this.bytes(t)?,
                });
            }
        }
        for (slot, &id) in outs.iter_mut().zip(out_ids) {
            let t = get(id)?;
            *slot = TensorMut {
                dtype: tensor_dtype(t),
                shape: tensor_shape(t), // SAFETY: `self` is borrowed mutably for the views' lifetime; see `arena_mut`.
                data: unsafe { arena_mut(this.arena, this.arena_len, t)? },
            };
        }
        let ws: &mut [u8] = if task.workspace == NO_TENSOR {
            &mut []
        } else {
            // SAFETY: as for the outputs.
            unsafe { arena_mut(this.arena, this.arena_len, get(task.workspace)?)? }
        };
        Ok((in_ids.len(), out_ids.len(), ws))
    }

    /// Bytes of any tensor, for copying outputs out after a run.
    pub(crate) fn tensor_bytes(&self, t: &TensorDesc) -> Result<&[u8], Error> {
        self.bytes(t).map_err(|_| Error::Malformed {
            what: "output tensor out of range",
            index: 0,
        })
    }
}
