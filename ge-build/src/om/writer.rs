//! Writes `.om` blobs: header, section table, then 64-byte aligned sections, with CRC-32
//! checksums over the header+table and over the body. The format itself is defined in
//! `ge_runtime::format`, which this writer only fills in. O(blob size).

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};

use ge_runtime::format::{
    ALIGN, EventDesc, FORMAT_VERSION, GEARS_VERSION, GearDesc, Header, IoDesc, KernelId, MAGIC,
    MIN_FORMAT_VERSION, Meta, OpKind, SectionEntry, SectionKind, StrRef, TaskDesc, TensorDesc,
    task_since_version,
};

/// Tables of a model being written.
#[derive(Default, Debug)]
pub struct OmBuilder {
    strings: Vec<u8>,
    /// Each string written so far (gears repeat every name), ordered so that one that
    /// begins with a new string is found by a range query.
    string_of: BTreeMap<String, StrRef>,
    /// Weight offsets by a hash of their bytes, to store identical constants once.
    weight_of: HashMap<u64, Vec<(u64, usize)>>,
    /// One record per gear; empty for a single-shape blob.
    pub gears: Vec<GearDesc>,
    pub io: Vec<IoDesc>,
    pub tensors: Vec<TensorDesc>,
    pub tasks: Vec<TaskDesc>,
    pub task_io: Vec<u32>,
    pub events: Vec<EventDesc>,
    params: Vec<u8>,
    weights: Vec<u8>,
}

impl OmBuilder {
    /// Interns a string: each distinct string once, and one that begins a string already
    /// written points into it (tf2onnx names a node `X`, its output `X:0`, its constants
    /// `X:const1`…: a third of a small model's blob was such names). O(log n + |s|).
    pub fn string(&mut self, s: &str) -> StrRef {
        if let Some((longer, &r)) = self
            .string_of
            .range::<str, _>((core::ops::Bound::Included(s), core::ops::Bound::Unbounded))
            .next()
            && longer.starts_with(s)
        {
            return StrRef {
                offset: r.offset,
                len: s.len() as u32,
            };
        }
        let r = StrRef {
            offset: self.strings.len() as u32,
            len: s.len() as u32,
        };
        self.strings.extend_from_slice(s.as_bytes());
        self.string_of.insert(s.to_string(), r);
        r
    }

    /// Appends a parameter record (8-byte aligned) and returns (offset, len).
    pub fn params(&mut self, bytes: &[u8]) -> (u32, u32) {
        while !self.params.len().is_multiple_of(8) {
            self.params.push(0);
        }
        let off = self.params.len() as u32;
        self.params.extend_from_slice(bytes);
        (off, bytes.len() as u32)
    }

    /// Appends weight bytes at a 64-byte aligned offset and returns it; bytes identical to
    /// some already written (the same constant in another gear) are not written again, and
    /// their offset is returned. O(len) expected.
    pub fn weights(&mut self, bytes: &[u8]) -> u64 {
        let mut h = DefaultHasher::new();
        bytes.hash(&mut h);
        let same = self.weight_of.entry(h.finish()).or_default();
        let w = &self.weights;
        if let Some(&(off, _)) = same
            .iter()
            .find(|&&(o, n)| n == bytes.len() && &w[o as usize..o as usize + n] == bytes)
        {
            return off;
        }
        let pad = self.weights.len().next_multiple_of(ALIGN);
        self.weights.resize(pad, 0);
        let off = self.weights.len() as u64;
        self.weights.extend_from_slice(bytes);
        same.push((off, bytes.len()));
        off
    }

    /// Bytes of weights so far.
    pub fn weight_bytes(&self) -> usize {
        self.weights.len()
    }

    /// The kernels the tasks run, sorted and unique (the `kernels` section).
    fn kernels(&self) -> Vec<KernelId> {
        let whole = GearDesc {
            tensor_count: self.tensors.len() as u32,
            task_count: self.tasks.len() as u32,
            task_io_count: self.task_io.len() as u32,
            ..GearDesc::default()
        };
        let gears = if self.gears.is_empty() {
            std::slice::from_ref(&whole)
        } else {
            &self.gears
        };
        let mut k: Vec<KernelId> = gears
            .iter()
            .flat_map(|g| {
                let r = |s: u32, n: u32| s as usize..(s + n) as usize;
                let tensors = &self.tensors[r(g.tensor_start, g.tensor_count)];
                let task_io = &self.task_io[r(g.task_io_start, g.task_io_count)];
                self.tasks[r(g.task_start, g.task_count)]
                    .iter()
                    .filter_map(move |t| KernelId::of_task(t, tensors, task_io))
            })
            .collect();
        k.sort_unstable();
        k.dedup();
        k
    }

    /// Serializes everything with `meta`.
    pub fn finish(self, meta: Meta) -> Vec<u8> {
        let kernels = self.kernels();
        // The oldest format version that holds every task (see `FORMAT_VERSION`).
        let version = self
            .tasks
            .iter()
            .filter_map(|t| {
                let op = OpKind::from_u16(t.op)?;
                let at = t.params_offset as usize;
                let params = self.params.get(at..at + t.params_len as usize)?;
                Some(task_since_version(op, params))
            })
            .max()
            .unwrap_or(1)
            .max(if self.gears.is_empty() {
                1
            } else {
                GEARS_VERSION
            })
            .clamp(MIN_FORMAT_VERSION, FORMAT_VERSION);
        let gears = (!self.gears.is_empty()).then(|| {
            (
                SectionKind::Gears,
                bytemuck::cast_slice(&self.gears).to_vec(),
            )
        });
        let mut sections: Vec<(SectionKind, Vec<u8>)> = vec![
            (SectionKind::Meta, bytemuck::bytes_of(&meta).to_vec()),
            (SectionKind::Strings, self.strings),
            (SectionKind::Io, bytemuck::cast_slice(&self.io).to_vec()),
            (
                SectionKind::Tensors,
                bytemuck::cast_slice(&self.tensors).to_vec(),
            ),
            (
                SectionKind::Tasks,
                bytemuck::cast_slice(&self.tasks).to_vec(),
            ),
            (
                SectionKind::TaskIo,
                bytemuck::cast_slice(&self.task_io).to_vec(),
            ),
            (SectionKind::Params, self.params),
            (SectionKind::Weights, self.weights),
            (
                SectionKind::Events,
                bytemuck::cast_slice(&self.events).to_vec(),
            ),
            (
                SectionKind::Kernels,
                bytemuck::cast_slice(&kernels).to_vec(),
            ),
        ];
        sections.extend(gears);
        let hl = std::mem::size_of::<Header>();
        let table_len = sections.len() * std::mem::size_of::<SectionEntry>();
        let mut out = vec![0u8; hl + table_len];
        let mut entries = Vec::with_capacity(sections.len());
        for (kind, bytes) in &sections {
            out.resize(out.len().next_multiple_of(ALIGN), 0);
            entries.push(SectionEntry {
                kind: *kind as u32,
                reserved: 0,
                offset: out.len() as u64,
                len: bytes.len() as u64,
            });
            out.extend_from_slice(bytes);
        }
        out.resize(out.len().next_multiple_of(ALIGN), 0);
        let table: &[u8] = bytemuck::cast_slice(&entries);
        out[hl..hl + table_len].copy_from_slice(table);
        let mut header = Header {
            magic: MAGIC,
            version,
            flags: 0,
            file_len: out.len() as u64,
            section_count: sections.len() as u32,
            header_crc: 0,
            body_crc: ge_runtime::crc32(&out[hl + table_len..]),
            reserved: [0; 7],
        };
        header.header_crc = ge_runtime::header_checksum(&header, table);
        out[..hl].copy_from_slice(bytemuck::bytes_of(&header));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::OmBuilder;

    /// A string that begins one already written points into it; others are appended.
    #[test]
    fn strings_share_prefixes_of_strings_written() {
        let mut om = OmBuilder::default();
        let long = om.string("conv1/Relu:0");
        let prefix = om.string("conv1/Relu");
        let again = om.string("conv1/Relu:0");
        let other = om.string("conv2");
        assert_eq!((prefix.offset, prefix.len), (long.offset, 10));
        assert_eq!((again.offset, again.len), (long.offset, long.len));
        assert_eq!(other.offset, 12, "a new string is appended");
        assert_eq!(om.strings, b"conv1/Relu:0conv2");
        // A longer string after its prefix cannot share it: stored whole.
        let longer = om.string("conv2/Add");
        assert_eq!((longer.offset, longer.len), (17, 9));
    }
}
