//! Zero-copy, validating `.om` reader. [`Model::from_bytes`] checks every offset, length,
//! alignment, count and id once, so execution can index tables without further checks.
//! Validation is O(file size) (checksums) + O(tasks × task I/O) (overlap checks).

use bytemuck::Pod;

use crate::error::Error;
#[cfg(feature = "gears")]
use crate::format::GearDesc;
use crate::format::{
    ALIGN, DType, EventDesc, FORMAT_VERSION, Header, IoDesc, KernelId, Location, MAGIC, MAX_RANK,
    MAX_TASK_IO, MIN_FORMAT_VERSION, Meta, NO_TENSOR, OpKind, SectionEntry, SectionKind, Shape,
    StrRef, TaskDesc, TensorDesc, task_since_version,
};

/// Most sections a file may list.
pub const MAX_SECTIONS: usize = 16;

/// Resource limits a blob must respect to load: a crafted or corrupt file cannot make its
/// host allocate an absurd arena. [`Model::from_bytes`] uses [`Limits::DEFAULT`];
/// [`Model::from_bytes_with_limits`] takes the caller's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest activation arena (`Meta::arena_bytes`) accepted.
    pub max_arena_bytes: u64,
    /// Largest weights section accepted.
    pub max_weight_bytes: u64,
}

impl Limits {
    /// 8 GiB of arena and 8 GiB of weights.
    pub const DEFAULT: Limits = Limits {
        max_arena_bytes: 8 << 30,
        max_weight_bytes: 8 << 30,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

pub(crate) fn bad(what: &'static str, index: u64) -> Error {
    Error::Malformed { what, index }
}

/// A validated model, borrowing the blob.
#[derive(Clone, Copy, Debug)]
pub struct Model<'a> {
    pub(crate) meta: Meta,
    pub(crate) strings: &'a [u8],
    pub(crate) io: &'a [IoDesc],
    pub(crate) tensors: &'a [TensorDesc],
    pub(crate) tasks: &'a [TaskDesc],
    pub(crate) task_io: &'a [u32],
    pub(crate) params: &'a [u8],
    pub(crate) weights: &'a [u8],
    pub(crate) events: &'a [EventDesc],
    /// The `kernels` section, when the blob has one.
    pub(crate) kernels: Option<&'a [KernelId]>,
    /// The header's format version.
    pub(crate) version: u32,
    /// The gear table (empty in single-shape blobs and in a gear's own view).
    #[cfg(feature = "gears")]
    pub(crate) gears: &'a [GearDesc],
    /// The whole tables every gear's view slices (this model's own tables when it has no
    /// gears).
    #[cfg(feature = "gears")]
    pub(crate) all: Tables<'a>,
}

/// The tables a gear slices.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "gears"), allow(dead_code))]
pub(crate) struct Tables<'a> {
    pub io: &'a [IoDesc],
    pub tensors: &'a [TensorDesc],
    pub tasks: &'a [TaskDesc],
    pub task_io: &'a [u32],
    pub events: &'a [EventDesc],
}

/// A model input or output as seen by callers.
#[derive(Clone, Copy, Debug)]
pub struct IoInfo<'a> {
    pub name: &'a str,
    pub dtype: DType,
    pub shape: Shape,
    pub tensor: u32,
}

impl IoInfo<'_> {
    /// Byte length of the buffer this input or output needs.
    pub fn bytes(&self) -> usize {
        self.shape.numel() * self.dtype.size()
    }
}

/// Size of the file header plus a full section table, the smallest prefix worth reading.
pub const fn header_len() -> usize {
    core::mem::size_of::<Header>()
}

/// CRC-32 of the header with checksum fields zeroed, followed by the section table bytes.
pub fn header_checksum(header: &Header, table: &[u8]) -> u32 {
    let mut h = *header;
    h.header_crc = 0;
    h.body_crc = 0;
    let mut c = crate::crc::Crc32::new();
    c.update(bytemuck::bytes_of(&h));
    c.update(table);
    c.finalize()
}

fn table<'a, T: Pod>(bytes: &'a [u8], what: &'static str) -> Result<&'a [T], Error> {
    if !bytes.len().is_multiple_of(core::mem::size_of::<T>()) {
        return Err(bad(what, 0));
    }
    bytemuck::try_cast_slice(bytes).map_err(|_| bad(what, 0))
}

impl<'a> Model<'a> {
    /// Validates a blob and borrows its tables. The blob must start 64-byte aligned so
    /// weights can be used in place. Applies [`Limits::DEFAULT`].
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Model<'a>, Error> {
        Model::from_bytes_with_limits(bytes, &Limits::DEFAULT)
    }

    /// [`Model::from_bytes`] with the caller's resource limits.
    pub fn from_bytes_with_limits(bytes: &'a [u8], limits: &Limits) -> Result<Model<'a>, Error> {
        if !cfg!(target_endian = "little") {
            return Err(Error::Device("only little-endian hosts are supported"));
        }
        if !(bytes.as_ptr() as usize).is_multiple_of(ALIGN) {
            return Err(Error::Misaligned { required: ALIGN });
        }
        let hl = header_len();
        if bytes.len() < hl {
            return Err(bad("file shorter than the header", 0));
        }
        let header: Header = bytemuck::pod_read_unaligned(&bytes[..hl]);
        if header.magic != MAGIC {
            return Err(bad("not a .om file (bad magic)", 0));
        }
        if !(MIN_FORMAT_VERSION..=FORMAT_VERSION).contains(&header.version) {
            return Err(Error::Version {
                found: header.version,
                supported: FORMAT_VERSION,
            });
        }
        if header.file_len != bytes.len() as u64 {
            return Err(bad(
                "file length differs from the header (truncated or padded)",
                header.file_len,
            ));
        }
        let count = header.section_count as usize;
        if count > MAX_SECTIONS {
            return Err(bad("too many sections", count as u64));
        }
        let table_end = hl + count * core::mem::size_of::<SectionEntry>();
        let table_bytes = bytes
            .get(hl..table_end)
            .ok_or(bad("section table past end of file", 0))?;
        if header_checksum(&header, table_bytes) != header.header_crc {
            return Err(Error::Checksum { section: "header" });
        }
        let body = bytes
            .get(table_end..)
            .ok_or(bad("section table past end of file", 0))?;
        if crate::crc::crc32(body) != header.body_crc {
            return Err(Error::Checksum { section: "body" });
        }
        let entries: &[SectionEntry] = table(table_bytes, "section table")?;
        let mut found: [Option<&'a [u8]>; SectionKind::ALL.len() + 1] =
            [None; SectionKind::ALL.len() + 1];
        for (i, e) in entries.iter().enumerate() {
            let kind = SectionKind::ALL
                .iter()
                .copied()
                .find(|k| *k as u32 == e.kind)
                .ok_or(bad("unknown section kind", i as u64))?;
            let slot = &mut found[kind as usize];
            if slot.is_some() {
                return Err(bad("duplicate section", i as u64));
            }
            if !e.offset.is_multiple_of(ALIGN as u64) || e.offset < table_end as u64 {
                return Err(bad(
                    "section offset misaligned or inside the header",
                    i as u64,
                ));
            }
            let end = e
                .offset
                .checked_add(e.len)
                .ok_or(bad("section length overflows", i as u64))?;
            if end > bytes.len() as u64 {
                return Err(bad("section extends past end of file", i as u64));
            }
            *slot = Some(&bytes[e.offset as usize..end as usize]);
        }
        let get = |k: SectionKind| found[k as usize].ok_or(bad(k.name(), 0));
        let meta_bytes = get(SectionKind::Meta)?;
        if meta_bytes.len() != core::mem::size_of::<Meta>() {
            return Err(bad("meta section has the wrong size", 0));
        }
        let all = Tables {
            io: table(get(SectionKind::Io)?, "io table")?,
            tensors: table(get(SectionKind::Tensors)?, "tensor table")?,
            tasks: table(get(SectionKind::Tasks)?, "task table")?,
            task_io: table(get(SectionKind::TaskIo)?, "task io table")?,
            events: match found[SectionKind::Events as usize] {
                Some(b) => table(b, "event table")?,
                None => &[],
            },
        };
        let model = Model {
            meta: bytemuck::pod_read_unaligned(meta_bytes),
            strings: get(SectionKind::Strings)?,
            io: all.io,
            tensors: all.tensors,
            tasks: all.tasks,
            task_io: all.task_io,
            params: get(SectionKind::Params)?,
            weights: get(SectionKind::Weights)?,
            events: all.events,
            kernels: match found[SectionKind::Kernels as usize] {
                Some(b) => Some(table(b, "kernel table")?),
                None => None,
            },
            version: header.version,
            #[cfg(feature = "gears")]
            gears: &[],
            #[cfg(feature = "gears")]
            all,
        };
        if model.meta.arena_bytes > limits.max_arena_bytes {
            return Err(Error::Limit {
                what: "arena",
                needed: model.meta.arena_bytes,
                limit: limits.max_arena_bytes,
            });
        }
        if model.weights.len() as u64 > limits.max_weight_bytes {
            return Err(Error::Limit {
                what: "weights",
                needed: model.weights.len() as u64,
                limit: limits.max_weight_bytes,
            });
        }
        match found[SectionKind::Gears as usize] {
            None => {
                model.validate()?;
                Ok(model)
            }
            #[cfg(feature = "gears")]
            Some(b) => model.with_gears(table(b, "gear table")?),
            #[cfg(not(feature = "gears"))]
            Some(_) => Err(bad(
                "the blob has gears, which need ge-runtime's `gears` feature",
                0,
            )),
        }
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        let m = &self.meta;
        self.str_checked(m.name)?;
        self.str_checked(m.producer)?;
        if m.arena_bytes > usize::MAX as u64 / 2 {
            return Err(bad("arena size too large", m.arena_bytes));
        }
        if self.io.len() != (m.input_count as usize).saturating_add(m.output_count as usize) {
            return Err(bad("io table length differs from input + output counts", 0));
        }
        if m.stream_count == 0 {
            return Err(bad("stream count is zero", 0));
        }
        for (i, t) in self.tensors.iter().enumerate() {
            self.validate_tensor(i, t)?;
        }
        for (i, d) in self.io.iter().enumerate() {
            self.str_checked(d.name)?;
            let want_input = i < m.input_count as usize;
            if d.direction != u32::from(!want_input) {
                return Err(bad("io entry direction out of order", i as u64));
            }
            let t = self
                .tensors
                .get(d.tensor as usize)
                .ok_or(bad("io entry names no tensor", i as u64))?;
            if want_input && (t.location != Location::Input as u8 || t.index as usize != i) {
                return Err(bad("input tensor is not bound to its input slot", i as u64));
            }
        }
        for (i, t) in self.tasks.iter().enumerate() {
            self.validate_task(i, t)?;
        }
        let n = self.tasks.len() as u32;
        for (i, e) in self.events.iter().enumerate() {
            if e.record >= e.wait || e.wait >= n {
                return Err(bad(
                    "event must record an earlier task than it waits in",
                    i as u64,
                ));
            }
            let (r, w) = (&self.tasks[e.record as usize], &self.tasks[e.wait as usize]);
            if r.stream == w.stream {
                return Err(bad("event joins a stream to itself", i as u64));
            }
        }
        if let Some(list) = self.kernels {
            for (i, k) in list.iter().enumerate() {
                if !k.is_known() {
                    return Err(bad("kernel table names an unknown kernel", i as u64));
                }
                if i > 0 && list[i - 1] >= *k {
                    return Err(bad("kernel table is not sorted and unique", i as u64));
                }
            }
            for (i, t) in self.tasks.iter().enumerate() {
                let listed = KernelId::of_task(t, self.tensors, self.task_io)
                    .is_some_and(|k| list.binary_search(&k).is_ok());
                if !listed {
                    return Err(bad(
                        "task's kernel is missing from the kernel table",
                        i as u64,
                    ));
                }
            }
        }
        Ok(())
    }

    fn validate_tensor(&self, i: usize, t: &TensorDesc) -> Result<(), Error> {
        let i = i as u64;
        let dtype = DType::from_u8(t.dtype).ok_or(bad("tensor has an unknown dtype", i))?;
        if t.rank as usize > MAX_RANK {
            return Err(bad("tensor rank exceeds 8", i));
        }
        self.str_checked(t.name)?;
        let numel = t.dims[..t.rank as usize]
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(u64::from(d)))
            .and_then(|n| n.checked_mul(dtype.size() as u64))
            .ok_or(bad("tensor size overflows", i))?;
        if numel != t.bytes {
            return Err(bad("tensor byte length differs from its shape", i));
        }
        if t.bytes > isize::MAX as u64 {
            return Err(bad("tensor larger than the address space", i));
        }
        let end = t
            .offset
            .checked_add(t.bytes)
            .ok_or(bad("tensor extent overflows", i))?;
        match t.location {
            l if l == Location::Arena as u8 => {
                // Element-aligned (aliases such as concat slices need not start on 64 bytes).
                if !t.offset.is_multiple_of(dtype.size() as u64) || end > self.meta.arena_bytes {
                    return Err(bad("arena tensor misaligned or outside the arena", i));
                }
            }
            l if l == Location::Weight as u8 => {
                if !t.offset.is_multiple_of(dtype.size() as u64) || end > self.weights.len() as u64
                {
                    return Err(bad("weight tensor misaligned or outside the weights", i));
                }
            }
            l if l == Location::Input as u8 => {
                // The input's own tensor, or a zero-copy alias of it (same bytes, new shape).
                let d = self
                    .io
                    .get(t.index as usize)
                    .ok_or(bad("input tensor names no input", i))?;
                let own = self
                    .tensors
                    .get(d.tensor as usize)
                    .ok_or(bad("input names no tensor", i))?;
                if t.index >= self.meta.input_count || t.offset != 0 || t.bytes != own.bytes {
                    return Err(bad("input tensor does not match its input", i));
                }
            }
            _ => return Err(bad("tensor has an unknown location", i)),
        }
        Ok(())
    }

    fn validate_task(&self, i: usize, t: &TaskDesc) -> Result<(), Error> {
        let idx = i as u64;
        let op = OpKind::from_u16(t.op).ok_or(bad("task has an unknown op", idx))?;
        if op.since_version() > self.version {
            return Err(bad(
                "task kind is newer than the blob's format version",
                idx,
            ));
        }
        if t.params_len as usize != op.params_len() {
            return Err(bad("task parameter record has the wrong length", idx));
        }
        let pend = (t.params_offset as usize).checked_add(t.params_len as usize);
        let Some(params) = pend.and_then(|e| self.params.get(t.params_offset as usize..e)) else {
            return Err(bad("task parameters outside the params section", idx));
        };
        if task_since_version(op, params) > self.version {
            return Err(bad(
                "task parameters are newer than the blob's format version",
                idx,
            ));
        }
        let (ni, no) = (t.input_count as usize, t.output_count as usize);
        if ni > MAX_TASK_IO || no > MAX_TASK_IO || no == 0 {
            return Err(bad("task has too many (or no) inputs/outputs", idx));
        }
        let ids = self
            .task_io
            .get(t.io_start as usize..(t.io_start as usize).saturating_add(ni + no))
            .ok_or(bad("task io outside the io table", idx))?;
        if u32::from(t.stream) >= self.meta.stream_count {
            return Err(bad("task stream out of range", idx));
        }
        self.str_checked(t.name)?;
        for &id in &ids[..ni] {
            if id != NO_TENSOR && id as usize >= self.tensors.len() {
                return Err(bad("task input names no tensor", idx));
            }
        }
        // An in-place task's input `k` is exactly its output 0 (the memory views then hand out
        // only the `&mut` one).
        let in_place = match t.in_place {
            0 => None,
            k if !op.runs_in_place() || no != 1 || k as usize > ni => {
                return Err(bad("task marked in-place is not an in-place kind", idx));
            }
            k => {
                let (i, o) = (ids[k as usize - 1], ids[ni]);
                let same = match (self.tensors.get(i as usize), self.tensors.get(o as usize)) {
                    (Some(a), Some(b)) => {
                        i != NO_TENSOR
                            && a.location == Location::Arena as u8
                            && (a.offset, a.bytes) == (b.offset, b.bytes)
                    }
                    _ => false,
                };
                if !same {
                    return Err(bad("in-place task's input and output differ", idx));
                }
                Some(k as usize - 1)
            }
        };
        // Outputs and workspace are written: they must be arena tensors that overlap nothing
        // else the task touches, which makes handing out `&mut` views sound.
        let ws = (t.workspace != NO_TENSOR).then_some(t.workspace);
        for (k, &id) in ids[ni..].iter().chain(ws.iter()).enumerate() {
            let d = self
                .tensors
                .get(id as usize)
                .ok_or(bad("task output names no tensor", idx))?;
            if d.location != Location::Arena as u8 {
                return Err(bad("task output is not in the arena", idx));
            }
            // Extents of validated tensors cannot overflow (checked in `validate_tensor`).
            let a = (d.offset, d.offset.saturating_add(d.bytes));
            for (j, &other) in ids.iter().chain(ws.iter()).enumerate() {
                if j == ni + k || other == NO_TENSOR || (k == 0 && in_place == Some(j)) {
                    continue;
                }
                let o = self
                    .tensors
                    .get(other as usize)
                    .ok_or(bad("task names no tensor", idx))?;
                if o.location == Location::Arena as u8 && o.bytes > 0 && d.bytes > 0 {
                    let b = (o.offset, o.offset.saturating_add(o.bytes));
                    if a.0 < b.1 && b.0 < a.1 {
                        return Err(bad("task output overlaps another tensor of the task", idx));
                    }
                }
            }
        }
        Ok(())
    }

    fn str_checked(&self, r: StrRef) -> Result<&'a str, Error> {
        let end = (r.offset as usize)
            .checked_add(r.len as usize)
            .ok_or(bad("string out of range", 0))?;
        let b = self
            .strings
            .get(r.offset as usize..end)
            .ok_or(bad("string out of range", u64::from(r.offset)))?;
        core::str::from_utf8(b).map_err(|_| bad("string is not UTF-8", u64::from(r.offset)))
    }

    /// A string of the string table (validated at load; empty if somehow absent).
    pub fn str(&self, r: StrRef) -> &'a str {
        self.str_checked(r).unwrap_or("")
    }

    /// The blob's format version (see [`FORMAT_VERSION`]).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Model metadata.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The model's name.
    pub fn name(&self) -> &'a str {
        self.str(self.meta.name)
    }

    /// Activation memory the model needs, in bytes (plus up to 63 bytes if the caller's buffer
    /// is not 64-byte aligned; see [`Model::arena_bytes_unaligned`]).
    pub fn arena_bytes(&self) -> usize {
        self.meta.arena_bytes as usize
    }

    /// Arena size that works for a buffer of any alignment.
    pub fn arena_bytes_unaligned(&self) -> usize {
        self.arena_bytes() + ALIGN - 1
    }

    /// Number of inputs.
    pub fn input_count(&self) -> usize {
        self.meta.input_count as usize
    }

    /// Number of outputs.
    pub fn output_count(&self) -> usize {
        self.meta.output_count as usize
    }

    fn io_info(&self, i: usize) -> Option<IoInfo<'a>> {
        let d = self.io.get(i)?;
        let t = self.tensors.get(d.tensor as usize)?;
        Some(IoInfo {
            name: self.str(d.name),
            dtype: tensor_dtype(t),
            shape: tensor_shape(t),
            tensor: d.tensor,
        })
    }

    /// Input `i`'s name, dtype and shape.
    pub fn input(&self, i: usize) -> Option<IoInfo<'a>> {
        if i < self.input_count() {
            self.io_info(i)
        } else {
            None
        }
    }

    /// Output `i`'s name, dtype and shape.
    pub fn output(&self, i: usize) -> Option<IoInfo<'a>> {
        if i < self.output_count() {
            self.io_info(self.input_count() + i)
        } else {
            None
        }
    }

    /// The tensor table.
    pub fn tensors(&self) -> &'a [TensorDesc] {
        self.tensors
    }

    /// The task table, in execution order.
    pub fn tasks(&self) -> &'a [TaskDesc] {
        self.tasks
    }

    /// A task's op kind (validated at load).
    pub fn task_op(&self, t: &TaskDesc) -> OpKind {
        OpKind::from_u16(t.op).unwrap_or(OpKind::Copy)
    }

    /// A task's input tensor ids ([`NO_TENSOR`] for absent optional inputs).
    pub fn task_inputs(&self, t: &TaskDesc) -> &'a [u32] {
        let s = t.io_start as usize;
        self.task_io
            .get(s..s + t.input_count as usize)
            .unwrap_or(&[])
    }

    /// A task's output tensor ids.
    pub fn task_outputs(&self, t: &TaskDesc) -> &'a [u32] {
        let s = t.io_start as usize + t.input_count as usize;
        self.task_io
            .get(s..s + t.output_count as usize)
            .unwrap_or(&[])
    }

    /// The kernel a task runs (`None` only for a task without outputs, which validation
    /// refuses).
    pub fn task_kernel(&self, t: &TaskDesc) -> Option<KernelId> {
        KernelId::of_task(t, self.tensors, self.task_io)
    }

    /// A task's parameter record.
    pub fn task_params(&self, t: &TaskDesc) -> &'a [u8] {
        let s = t.params_offset as usize;
        self.params.get(s..s + t.params_len as usize).unwrap_or(&[])
    }

    /// Cross-stream events, in table order.
    pub fn events(&self) -> &'a [EventDesc] {
        self.events
    }

    /// The kernels the tasks run, each at least once: the blob's `kernels` section (sorted,
    /// unique), or for a blob without one, every task's kernel in task order.
    pub fn kernels(&self) -> impl Iterator<Item = KernelId> + 'a {
        let (listed, tasks) = match self.kernels {
            Some(list) => (list, &[][..]),
            None => (&[][..], self.tasks),
        };
        let (tensors, task_io) = (self.tensors, self.task_io);
        listed.iter().copied().chain(
            tasks
                .iter()
                .filter_map(move |t| KernelId::of_task(t, tensors, task_io)),
        )
    }

    /// Number of streams.
    pub fn stream_count(&self) -> usize {
        self.meta.stream_count as usize
    }

    /// The weights section (used in place).
    pub fn weights(&self) -> &'a [u8] {
        self.weights
    }
}

/// A tensor's dtype (validated at load).
pub fn tensor_dtype(t: &TensorDesc) -> DType {
    DType::from_u8(t.dtype).unwrap_or(DType::U8)
}

/// A tensor's shape (validated at load).
pub fn tensor_shape(t: &TensorDesc) -> Shape {
    let mut dims = [0usize; MAX_RANK];
    let r = (t.rank as usize).min(MAX_RANK);
    for (d, &s) in dims.iter_mut().zip(&t.dims[..r]) {
        *d = s as usize;
    }
    Shape::new(&dims[..r]).unwrap_or_default()
}
