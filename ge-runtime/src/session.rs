//! A session binds a validated model to a caller-given arena and a device, and runs it
//! without touching the heap.

use crate::error::Error;
use crate::format::ALIGN;
use crate::memory::Memory;
use crate::model::Model;

/// Something that executes a model's task list: the simulated NPU implements this.
pub trait Device {
    /// What one run reports (time, traffic, launches…).
    type Report;
    /// Executes every task of `model` in `mem`.
    fn execute(&mut self, model: &Model<'_>, mem: &mut Memory<'_>) -> Result<Self::Report, Error>;

    /// Refuses a model the device cannot run (e.g. one needing a kernel it was built
    /// without), when a session binds it rather than midway through a run.
    fn check(&self, model: &Model<'_>) -> Result<(), Error> {
        let _ = model;
        Ok(())
    }
}

/// A model bound to an arena and a device.
pub struct Session<'m, 'a, D: Device> {
    pub(crate) model: &'m Model<'m>,
    pub(crate) arena: &'a mut [u8],
    pub(crate) device: D,
}

impl<'m, 'a, D: Device> Session<'m, 'a, D> {
    /// Binds `arena` (any alignment; the session aligns it to 64 bytes internally). Errors
    /// with the size needed when it is too small.
    pub fn new(model: &'m Model<'m>, arena: &'a mut [u8], device: D) -> Result<Self, Error> {
        let skip = arena.as_ptr().align_offset(ALIGN);
        let needed = model.arena_bytes();
        if skip > arena.len() || arena.len() - skip < needed {
            let needed = if skip == 0 {
                needed
            } else {
                model.arena_bytes_unaligned()
            };
            return Err(Error::ArenaTooSmall {
                needed,
                given: arena.len(),
            });
        }
        device.check(model)?;
        let arena = &mut arena[skip..skip + needed];
        Ok(Session {
            model,
            arena,
            device,
        })
    }

    /// The model.
    pub fn model(&self) -> &Model<'m> {
        self.model
    }

    /// The device, e.g. to read its configuration.
    pub fn device(&self) -> &D {
        &self.device
    }

    /// The device, mutably (e.g. to switch modes between runs).
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.device
    }

    /// Runs the model: `inputs[i]` holds input `i`'s bytes (C order, the input's dtype),
    /// `outputs[i]` receives output `i`. Allocates nothing. On a model with gears (feature
    /// `gears`), inputs of a gear's sizes run that gear, and batch gears take any batch up to
    /// the largest, padded (see `Session::run_shaped`).
    pub fn run(&mut self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Result<D::Report, Error> {
        #[cfg(feature = "gears")]
        if self.model.gear_count() > 0 {
            return self.run_auto(inputs, outputs);
        }
        let m = self.model;
        self.run_on(m, inputs, outputs)
    }

    /// Runs `m` (this session's model or one of its gears) on exact-size buffers.
    pub(crate) fn run_on(
        &mut self,
        m: &Model<'_>,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> Result<D::Report, Error> {
        if inputs.len() != m.input_count() {
            return Err(Error::IoCount {
                what: "inputs",
                expected: m.input_count(),
                given: inputs.len(),
            });
        }
        if outputs.len() != m.output_count() {
            return Err(Error::IoCount {
                what: "outputs",
                expected: m.output_count(),
                given: outputs.len(),
            });
        }
        for (i, b) in inputs.iter().enumerate() {
            let want = m.input(i).map_or(0, |io| io.bytes());
            if b.len() != want {
                return Err(Error::IoSize {
                    what: "input",
                    index: i,
                    expected: want,
                    given: b.len(),
                });
            }
        }
        for (i, b) in outputs.iter().enumerate() {
            let want = m.output(i).map_or(0, |io| io.bytes());
            if b.len() != want {
                return Err(Error::IoSize {
                    what: "output",
                    index: i,
                    expected: want,
                    given: b.len(),
                });
            }
        }
        let mut mem = Memory::new(self.arena, m.weights(), inputs);
        let report = self.device.execute(m, &mut mem)?;
        for (i, out) in outputs.iter_mut().enumerate() {
            let info = m.output(i).ok_or(Error::Malformed {
                what: "output missing",
                index: i as u64,
            })?;
            let t = &m.tensors()[info.tensor as usize];
            out.copy_from_slice(mem.tensor_bytes(t)?);
        }
        Ok(report)
    }

    /// [`Session::run`] for models whose inputs and outputs are all `f32`.
    pub fn run_f32(
        &mut self,
        inputs: &[&[f32]],
        outputs: &mut [&mut [f32]],
    ) -> Result<D::Report, Error> {
        const MAX: usize = crate::format::MAX_TASK_IO;
        if inputs.len() > MAX || outputs.len() > MAX {
            return Err(Error::IoCount {
                what: "inputs/outputs (at most 64)",
                expected: MAX,
                given: inputs.len().max(outputs.len()),
            });
        }
        let mut ins: [&[u8]; MAX] = [&[]; MAX];
        for (d, s) in ins.iter_mut().zip(inputs) {
            *d = bytemuck::cast_slice(s);
        }
        let n_out = outputs.len();
        let mut outs: [&mut [u8]; MAX] = core::array::from_fn(|_| &mut [][..]);
        for (d, s) in outs.iter_mut().zip(outputs.iter_mut()) {
            *d = bytemuck::cast_slice_mut(s);
        }
        self.run(&ins[..inputs.len()], &mut outs[..n_out])
    }
}
