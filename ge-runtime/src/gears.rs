//! Gears: several static shapes of one model in one blob (atc's dynamic batch / image size /
//! dims). Each gear is a complete plan over slices of the blob's tables ([`GearDesc`]); the
//! weights, params and strings are shared. A model with gears reads as its largest gear
//! (`input`, `output`, `tasks`…), and [`Model::gear`] gives any gear's own view.
//!
//! Running: [`Session::run_gear`] runs one gear on exact shapes; [`Session::run_shaped`] (and
//! [`Session::run`] for batch gears) picks the smallest gear every input fits, zero-pads the
//! inputs into a staging area at the end of the arena and cuts the outputs back. Nothing here
//! allocates.

use crate::error::Error;
use crate::format::{ALIGN, GEAR_PAD_ANY, GEAR_PAD_BATCH, GEARS_VERSION, GearDesc, MAX_GEARS};
use crate::format::{MAX_RANK, MAX_TASK_IO, Meta, Shape};
use crate::memory::Memory;
use crate::model::{Model, bad};
use crate::session::{Device, Session};

fn gear_error(what: &'static str, input: usize, dim: usize, given: usize) -> Error {
    Error::Gear {
        what,
        input,
        dim,
        given,
    }
}

impl<'a> Model<'a> {
    /// Validates every gear of a blob with a gears table and returns the model as its largest
    /// (last) gear, with the whole arena (plans and staging). O(blob size).
    pub(crate) fn with_gears(mut self, gears: &'a [GearDesc]) -> Result<Model<'a>, Error> {
        if self.version < GEARS_VERSION {
            return Err(bad("gears table in a blob older than format version 3", 0));
        }
        if gears.is_empty() || gears.len() > MAX_GEARS {
            return Err(bad("gear count is zero or above 100", gears.len() as u64));
        }
        self.gears = gears;
        let mut streams = 0;
        for i in 0..gears.len() {
            let g = self.gear(i)?;
            g.validate()?;
            streams = streams.max(g.meta.stream_count);
        }
        if self.staging_end() > self.meta.arena_bytes {
            return Err(bad("arena smaller than its gears' plans and staging", 0));
        }
        let mut top = self.gear(gears.len() - 1)?;
        top.meta = Meta {
            stream_count: streams,
            ..self.meta
        };
        top.gears = gears;
        Ok(top)
    }

    /// Number of gears (0 for a single-shape model).
    pub fn gear_count(&self) -> usize {
        self.gears.len()
    }

    /// Gear `i`'s record.
    pub fn gear_desc(&self, i: usize) -> Option<&'a GearDesc> {
        self.gears.get(i)
    }

    /// Gear `i` as a single-shape model (its I/O shapes, tasks, plan and arena size).
    pub fn gear(&self, i: usize) -> Result<Model<'a>, Error> {
        let g = self
            .gears
            .get(i)
            .ok_or(gear_error("no such gear", 0, 0, i))?;
        let missing = bad("gear slice outside its table", i as u64);
        fn slice<T>(s: &[T], start: u32, count: u32) -> Option<&[T]> {
            s.get(start as usize..(start as usize).checked_add(count as usize)?)
        }
        let n_io = self.input_count() + self.output_count();
        let all = self.all;
        Ok(Model {
            meta: Meta {
                arena_bytes: g.arena_bytes,
                stream_count: g.stream_count,
                ..self.meta
            },
            io: slice(all.io, g.io_start, n_io as u32).ok_or(missing)?,
            tensors: slice(all.tensors, g.tensor_start, g.tensor_count).ok_or(missing)?,
            tasks: slice(all.tasks, g.task_start, g.task_count).ok_or(missing)?,
            task_io: slice(all.task_io, g.task_io_start, g.task_io_count).ok_or(missing)?,
            events: slice(all.events, g.event_start, g.event_count).ok_or(missing)?,
            gears: &[],
            ..*self
        })
    }

    /// Where the padded copy of input `input` goes: (offset, capacity) in the arena, after
    /// every gear's plan. O(gears × inputs).
    fn staging(&self, input: usize) -> (usize, usize) {
        let cap = |i: usize| {
            (0..self.gears.len())
                .filter_map(|g| self.gear(g).ok()?.input(i))
                .map(|io| io.bytes().next_multiple_of(ALIGN))
                .max()
                .unwrap_or(0)
        };
        let start = self.gears.iter().map(|g| g.arena_bytes).max().unwrap_or(0) as usize;
        let off = (0..input).fold(start.next_multiple_of(ALIGN), |o, i| o + cap(i));
        (off, cap(input))
    }

    /// End of the staging area: the arena every gear (padded or not) needs.
    fn staging_end(&self) -> u64 {
        let (off, cap) = self.staging(self.input_count());
        (off + cap) as u64
    }

    /// The smallest gear that input shapes `shapes` fit: every dim at most the gear's, and
    /// smaller only where the blob allows padding (dim 0 of batch gears; any dim with
    /// `--gear-pad spatial`). Errors name the input and dim that no gear takes.
    pub fn gear_for(&self, shapes: &[&[usize]]) -> Result<usize, Error> {
        let flags = self.meta.gear_flags;
        let mut refused = None;
        let mut largest = gear_error("no gears", 0, 0, 0);
        for gi in 0..self.gears.len() {
            let g = self.gear(gi)?;
            let mut fits = Ok(());
            for (i, a) in shapes.iter().enumerate() {
                let gs = g
                    .input(i)
                    .ok_or(gear_error("no such input", i, 0, 0))?
                    .shape;
                if a.len() != gs.rank() {
                    return Err(gear_error("rank differs from the model's", i, a.len(), 0));
                }
                for (d, (&x, &y)) in a.iter().zip(gs.dims()).enumerate() {
                    let may_pad =
                        flags & GEAR_PAD_ANY != 0 || (flags & GEAR_PAD_BATCH != 0 && d == 0);
                    if x > y {
                        largest = gear_error(
                            "larger than every gear of the model; recompile with a larger gear",
                            i,
                            d,
                            x,
                        );
                        fits = Err(false);
                    } else if x < y && !may_pad && fits.is_ok() {
                        fits = Err(true);
                        refused.get_or_insert(gear_error(
                            "fits a gear only by zero-padding a non-batch dim, which this blob \
                             does not allow (padding changes ops over that axis); pass a gear's \
                             exact shape or recompile with --gear-pad spatial",
                            i,
                            d,
                            x,
                        ));
                    }
                }
            }
            if fits.is_ok() {
                return Ok(gi);
            }
        }
        Err(refused.unwrap_or(largest))
    }
}

impl Model<'_> {
    /// When `shapes` differ from gear `gear`'s input shapes only in dim 0, all by one actual
    /// batch: `(actual batch, gear batch)`. Outputs whose dim 0 is the gear batch are then cut
    /// back to the actual batch (the padded rows are dropped).
    pub fn batch_cut(&self, gear: usize, shapes: &[&[usize]]) -> Option<(usize, usize)> {
        let g = self.gear(gear).ok()?;
        let mut batch = None;
        for (i, a) in shapes.iter().enumerate() {
            let gs = g.input(i)?.shape;
            let gs = gs.dims();
            let (&x, &y) = a.first().zip(gs.first())?;
            if a[1..] != gs[1..] || batch.is_some_and(|b| b != (x, y)) {
                return None;
            }
            batch = Some((x, y));
        }
        batch.filter(|&(x, y)| x < y)
    }

    /// Output `i`'s shape when inputs of `shapes` run on gear `gear` ([`Session::run_shaped`]):
    /// the gear's, with dim 0 cut back under [`Model::batch_cut`].
    pub fn gear_output_shape(&self, gear: usize, shapes: &[&[usize]], i: usize) -> Option<Shape> {
        let s = self.gear(gear).ok()?.output(i)?.shape;
        let mut dims = [0usize; MAX_RANK];
        dims[..s.rank()].copy_from_slice(s.dims());
        if let Some((n, b)) = self.batch_cut(gear, shapes)
            && dims[0] == b
            && s.rank() > 0
        {
            dims[0] = n;
        }
        Shape::new(&dims[..s.rank()])
    }
}

/// Copies a C-order tensor of shape `a` into the start of every dim of shape `g` (`a ≤ g`
/// per dim) in `dst`, zeros elsewhere. O(dst).
fn pad_copy(src: &[u8], a: &[usize], g: &[usize], elem: usize, dst: &mut [u8]) {
    dst.fill(0);
    let r = a.len();
    if r == 0 {
        dst[..src.len()].copy_from_slice(src);
        return;
    }
    let row = a[r - 1] * elem;
    if row == 0 || a.contains(&0) {
        return;
    }
    let mut stride = [0usize; MAX_RANK];
    let mut s = g[r - 1] * elem;
    for d in (0..r - 1).rev() {
        stride[d] = s;
        s *= g[d];
    }
    let mut idx = [0usize; MAX_RANK];
    for chunk in src.chunks_exact(row) {
        let off: usize = (0..r - 1).map(|d| idx[d] * stride[d]).sum();
        dst[off..off + row].copy_from_slice(chunk);
        for d in (0..r - 1).rev() {
            idx[d] += 1;
            if idx[d] < a[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

impl<D: Device> Session<'_, '_, D> {
    /// Runs gear `gear` on inputs of exactly its shapes (see [`Model::gear`]).
    pub fn run_gear(
        &mut self,
        gear: usize,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> Result<D::Report, Error> {
        let g = self.model.gear(gear)?;
        self.run_on(&g, inputs, outputs)
    }

    /// Runs inputs of shapes `shapes` on the smallest gear they fit ([`Model::gear_for`]),
    /// zero-padded at the end of each padded dim; returns the report and the gear. When only
    /// dim 0 (the batch) was padded, outputs whose dim 0 is the gear's batch are cut back to
    /// the actual batch; otherwise outputs have the gear's shapes.
    pub fn run_shaped(
        &mut self,
        inputs: &[&[u8]],
        shapes: &[&[usize]],
        outputs: &mut [&mut [u8]],
    ) -> Result<(D::Report, usize), Error> {
        let m = self.model;
        let gi = m.gear_for(shapes)?;
        let g = m.gear(gi)?;
        let n_in = g.input_count();
        if inputs.len() != n_in || shapes.len() != n_in || n_in > MAX_TASK_IO {
            return Err(Error::IoCount {
                what: "inputs (and input shapes)",
                expected: n_in,
                given: inputs.len().min(shapes.len()),
            });
        }
        let exact = (0..n_in).all(|i| g.input(i).is_some_and(|io| io.shape.dims() == shapes[i]));
        if exact {
            return Ok((self.run_on(&g, inputs, outputs)?, gi));
        }
        let mut ins: [&[u8]; MAX_TASK_IO] = [&[]; MAX_TASK_IO];
        let (start, _) = m.staging(0);
        let arena: &mut [u8] = &mut *self.arena;
        let (plan, mut rest) = arena.split_at_mut(start.min(arena.len()));
        let mut pos = start;
        for (i, a) in shapes.iter().enumerate() {
            let io = g.input(i).ok_or(gear_error("no such input", i, 0, 0))?;
            let gs = io.shape.dims();
            let want = a.iter().product::<usize>() * io.dtype.size();
            if inputs[i].len() != want {
                return Err(Error::IoSize {
                    what: "input",
                    index: i,
                    expected: want,
                    given: inputs[i].len(),
                });
            }
            let (off, cap) = m.staging(i);
            let taken = core::mem::take(&mut rest);
            let skip = off.saturating_sub(pos).min(taken.len());
            let (_, tail) = taken.split_at_mut(skip);
            let (buf, tail) = tail.split_at_mut(cap.min(tail.len()));
            rest = tail;
            pos = off + cap;
            let buf = buf.get_mut(..io.bytes()).ok_or(Error::ArenaTooSmall {
                needed: off + io.bytes(),
                given: start,
            })?;
            pad_copy(inputs[i], a, gs, io.dtype.size(), buf);
            ins[i] = buf;
        }
        check_io_count(&g, outputs.len())?;
        let mut mem = Memory::new(plan, g.weights(), &ins[..n_in]);
        let report = self.device.execute(&g, &mut mem)?;
        for (i, out) in outputs.iter_mut().enumerate() {
            let info = g.output(i).ok_or(bad("output missing", i as u64))?;
            let bytes = mem.tensor_bytes(&g.tensors()[info.tensor as usize])?;
            let want = match m.batch_cut(gi, shapes) {
                Some((n, b)) if info.shape.dims().first() == Some(&b) => bytes.len() / b * n,
                _ => bytes.len(),
            };
            if out.len() != want {
                return Err(Error::IoSize {
                    what: "output",
                    index: i,
                    expected: want,
                    given: out.len(),
                });
            }
            out.copy_from_slice(&bytes[..want]);
        }
        Ok((report, gi))
    }

    /// [`Session::run`] on a model with gears: inputs of a gear's exact sizes run on the
    /// smallest such gear; otherwise, in batch gears, each input's batch is its length over one
    /// item of the largest gear, and the run is padded as [`Session::run_shaped`].
    pub(crate) fn run_auto(
        &mut self,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> Result<D::Report, Error> {
        let m = self.model;
        for gi in 0..m.gear_count() {
            let g = m.gear(gi)?;
            let same = inputs.len() == g.input_count()
                && inputs
                    .iter()
                    .enumerate()
                    .all(|(i, b)| g.input(i).is_some_and(|io| io.bytes() == b.len()));
            if same {
                return self.run_on(&g, inputs, outputs);
            }
        }
        if m.meta.gear_flags & GEAR_PAD_BATCH == 0 {
            return Err(gear_error(
                "the input sizes match no gear; give shapes with Session::run_shaped",
                0,
                0,
                inputs.first().map_or(0, |b| b.len()),
            ));
        }
        check_io_count(m, outputs.len())?;
        if inputs.len() != m.input_count() {
            return Err(Error::IoCount {
                what: "inputs",
                expected: m.input_count(),
                given: inputs.len(),
            });
        }
        let mut dims = [[0usize; MAX_RANK]; MAX_TASK_IO];
        let mut ranks = [0usize; MAX_TASK_IO];
        for (i, b) in inputs.iter().enumerate() {
            let io = m.input(i).ok_or(gear_error("no such input", i, 0, 0))?;
            let gs = io.shape.dims();
            let item = gs.iter().skip(1).product::<usize>() * io.dtype.size();
            if gs.is_empty() || item == 0 || !b.len().is_multiple_of(item) {
                return Err(gear_error(
                    "input length is not a whole number of batch items",
                    i,
                    0,
                    b.len(),
                ));
            }
            dims[i][..gs.len()].copy_from_slice(gs);
            dims[i][0] = b.len() / item;
            ranks[i] = gs.len();
        }
        let mut shapes: [&[usize]; MAX_TASK_IO] = [&[]; MAX_TASK_IO];
        for (i, s) in shapes.iter_mut().take(inputs.len()).enumerate() {
            *s = &dims[i][..ranks[i]];
        }
        Ok(self.run_shaped(inputs, &shapes[..inputs.len()], outputs)?.0)
    }
}

fn check_io_count(m: &Model<'_>, outputs: usize) -> Result<(), Error> {
    if outputs != m.output_count() {
        return Err(Error::IoCount {
            what: "outputs",
            expected: m.output_count(),
            given: outputs,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::pad_copy;

    #[test]
    fn pad_copy_puts_each_row_at_its_padded_place() {
        let src: [u8; 6] = [1, 2, 3, 4, 5, 6];
        let mut dst = [9u8; 12];
        pad_copy(&src, &[2, 3], &[3, 4], 1, &mut dst);
        assert_eq!(dst, [1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0, 0]);
        let mut dst = [9u8; 16];
        pad_copy(&src, &[1, 3], &[2, 4], 2, &mut dst);
        assert_eq!(dst, [1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let mut dst = [9u8; 8];
        pad_copy(&[], &[0, 2], &[2, 2], 2, &mut dst);
        assert_eq!(dst, [0; 8]);
    }
}
