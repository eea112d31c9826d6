//! Fuzz target bodies, shared by the cargo-fuzz harnesses in `fuzz/` (nightly, libFuzzer)
//! and the stable tests that replay the committed seeds and run a bounded mutation loop
//! (`tests/tests/fuzz_replay.rs`). Each body must return normally for every input: an error
//! value is fine, a panic, abort, hang or out-of-memory is a bug.
//!
//! Bounds keep one input cheap: inputs over [`MAX_INPUT`] are skipped, compiles use small
//! [`ge_runtime::Limits`], and runs get an arena of at most [`FUZZ_ARENA`] bytes.

use ge_build::onnx::proto::TensorProto;
use ge_build::tensor::{decode_tensor, npy_from_bytes};
use ge_build::{CompileOptions, OptLevel, compile_bytes};
use ge_runtime::format::{Header, MAX_TASK_IO, SectionEntry};
use ge_runtime::{AlignedBlob, Limits, MAX_SECTIONS, Model, Session, header_checksum, header_len};
use ge_sim::{LaunchMode, Profile, SimDevice};
use prost::Message;

use crate::onnx_builder::{Attr, ModelBuilder};

/// Largest input a body looks at.
pub const MAX_INPUT: usize = 1 << 20;
/// Largest arena a fuzzed model may ask for (and the arena runs get).
pub const FUZZ_ARENA: usize = 4 << 20;
/// Limits for fuzzed blobs and compiles.
pub const FUZZ_LIMITS: Limits = Limits {
    max_arena_bytes: FUZZ_ARENA as u64,
    max_weight_bytes: 16 << 20,
};
/// Largest input or output buffer a fuzzed run allocates.
const MAX_IO_BYTES: usize = 4 << 20;

/// Recomputes a blob's checksums (header CRC over header + section table, body CRC over the
/// rest) so that a mutated blob reaches the validator behind them. Blobs too short to hold
/// a header are left alone. With `fix_len`, also sets `file_len` to the blob's length.
pub fn fix_checksums(blob: &mut [u8], fix_len: bool) {
    let hl = header_len();
    if blob.len() < hl {
        return;
    }
    let mut h: Header = bytemuck::pod_read_unaligned(&blob[..hl]);
    if fix_len {
        h.file_len = blob.len() as u64;
    }
    let count = (h.section_count as usize).min(MAX_SECTIONS);
    let table_end = hl + count * core::mem::size_of::<SectionEntry>();
    if table_end > blob.len() {
        blob[..hl].copy_from_slice(bytemuck::bytes_of(&h));
        return;
    }
    h.body_crc = crc32fast::hash(&blob[table_end..]);
    h.header_crc = header_checksum(&h, &blob[hl..table_end]);
    blob[..hl].copy_from_slice(bytemuck::bytes_of(&h));
}

/// What happened to one blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OmOutcome {
    /// `Model::from_bytes` refused it.
    LoadError,
    /// Loaded, but `Session::new` refused it (arena too small for the fuzz arena).
    SessionError,
    /// Loaded and bound; `run` returned an error.
    RunError,
    /// Loaded and ran to completion.
    Ran,
}

/// Loads `blob` (copied to aligned storage) with [`FUZZ_LIMITS`], binds a session with a
/// small arena and runs it on zero inputs, in sink then host-dispatched mode.
pub fn load_and_run(blob: &[u8]) -> OmOutcome {
    let aligned = AlignedBlob::from_bytes(blob);
    let Ok(model) = Model::from_bytes_with_limits(aligned.as_bytes(), &FUZZ_LIMITS) else {
        return OmOutcome::LoadError;
    };
    // Exercise the accessors callers use.
    let _ = (
        model.name(),
        model.meta(),
        model.events(),
        model.stream_count(),
    );
    let ni = model.input_count();
    let no = model.output_count();
    if ni > MAX_TASK_IO || no > MAX_TASK_IO {
        return OmOutcome::SessionError;
    }
    let mut in_bufs: Vec<Vec<u8>> = Vec::with_capacity(ni);
    for i in 0..ni {
        let n = model.input(i).map_or(0, |io| io.bytes());
        if n > MAX_IO_BYTES {
            return OmOutcome::SessionError;
        }
        in_bufs.push(vec![0u8; n]);
    }
    let mut out_bufs: Vec<Vec<u8>> = Vec::with_capacity(no);
    for i in 0..no {
        let n = model.output(i).map_or(0, |io| io.bytes());
        if n > MAX_IO_BYTES {
            return OmOutcome::SessionError;
        }
        out_bufs.push(vec![0u8; n]);
    }
    let mut arena = vec![0u8; model.arena_bytes_unaligned().min(FUZZ_ARENA + 64)];
    let mut outcome = OmOutcome::Ran;
    for mode in [LaunchMode::Sink, LaunchMode::HostDispatched] {
        let mut dev = SimDevice::new(Profile::EDGE);
        dev.mode = mode;
        let _ = dev.predict(&model);
        let Ok(mut s) = Session::new(&model, &mut arena, dev) else {
            return OmOutcome::SessionError;
        };
        let ins: Vec<&[u8]> = in_bufs.iter().map(Vec::as_slice).collect();
        let mut outs: Vec<&mut [u8]> = out_bufs.iter_mut().map(Vec::as_mut_slice).collect();
        if s.run(&ins, &mut outs).is_err() {
            outcome = OmOutcome::RunError;
        }
    }
    outcome
}

/// `.om` loader target: byte 0 is a flags byte, the rest the blob. Unless the low nibble is
/// 0 (1 input in 16), checksums are recomputed so mutations reach the validator; bit 4
/// also fixes `file_len`.
pub fn om_loader(data: &[u8]) {
    let Some((&flags, blob)) = data.split_first() else {
        return;
    };
    if blob.len() > MAX_INPUT {
        return;
    }
    let mut b = blob.to_vec();
    if flags & 0x0f != 0 {
        fix_checksums(&mut b, flags & 0x10 != 0);
    }
    load_and_run(&b);
}

/// ONNX importer target: byte 0 picks the opt level and whether to run the compiled model;
/// the rest is a `.onnx` file. Compiles with small limits; a successful compile must give a
/// blob that loads.
pub fn onnx_import(data: &[u8]) {
    let Some((&flags, model)) = data.split_first() else {
        return;
    };
    if model.len() > MAX_INPUT {
        return;
    }
    let opt_level = match flags & 3 {
        0 => OptLevel::O0,
        1 => OptLevel::O1,
        2 => OptLevel::O2,
        _ => OptLevel::O3,
    };
    let opts = CompileOptions {
        opt_level,
        limits: FUZZ_LIMITS.into(),
        ..CompileOptions::default()
    };
    if let Ok(c) = compile_bytes(model, None, &opts) {
        let a = AlignedBlob::from_bytes(&c.blob);
        if let Err(e) = Model::from_bytes(a.as_bytes()) {
            panic!("a compiled blob does not load: {e}");
        }
        if flags & 4 != 0 {
            load_and_run(&c.blob);
        }
    }
}

/// CLI input readers target: byte 0 even → `.npy` bytes, odd → a serialized `TensorProto`
/// (as `ge run --input` and `ge check` read them).
pub fn tensor_readers(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    if rest.len() > MAX_INPUT {
        return;
    }
    if flags & 1 == 0 {
        if let Ok(t) = npy_from_bytes(rest) {
            assert_eq!(t.bytes.len(), t.numel() * t.dtype.size());
        }
    } else if let Ok(p) = TensorProto::decode(rest)
        && let Ok(t) = decode_tensor(&p, None)
    {
        assert_eq!(t.bytes.len(), t.numel() * t.dtype.size());
    }
}

/// A small deterministic generator (xorshift64*), for mutation loops without dependencies.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// Values that make good mutations of length, count and offset fields.
const INTERESTING: [u64; 12] = [
    0,
    1,
    2,
    0x7f,
    0x80,
    0xff,
    0x7fff,
    0xffff,
    0x7fff_ffff,
    0xffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX,
];

/// Mutates `data` in place the way a simple fuzzer does: bit flips, byte sets, interesting
/// integers, inserts, deletes, truncation and splices from `other`.
pub fn mutate(data: &mut Vec<u8>, other: &[u8], rng: &mut Rng) {
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let len = data.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = rng.next_u64() as u8;
            }
            2 if len > 0 => {
                let v = INTERESTING[rng.below(INTERESTING.len())];
                let w = [1usize, 2, 4, 8][rng.below(4)];
                let i = rng.below(len);
                let end = (i + w).min(len);
                data[i..end].copy_from_slice(&v.to_le_bytes()[..end - i]);
            }
            3 => {
                let i = rng.below(len + 1);
                let n = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                data.splice(i..i, bytes);
            }
            4 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below(16.min(len - i));
                data.drain(i..i + n);
            }
            5 if len > 0 => {
                data.truncate(rng.below(len));
            }
            6 if !other.is_empty() && len > 0 => {
                let i = rng.below(len);
                let j = rng.below(other.len());
                let n = 1 + rng.below(64.min(other.len() - j));
                let end = (i + n).min(len);
                data[i..end].copy_from_slice(&other[j..j + (end - i)]);
            }
            _ if len > 0 => {
                // Small arithmetic on a byte (varint lengths, counts).
                let i = rng.below(len);
                data[i] = data[i].wrapping_add((rng.below(33) as u8).wrapping_sub(16));
            }
            _ => data.push(rng.next_u64() as u8),
        }
    }
}

/// Two conv branches (two streams, so there are events), pooling, concat, reshape, gemm and
/// softmax: most table fields and several parameter records are in play (the corruption
/// sweep's model); two source nodes, so schedulers see ties.
pub fn branchy_model() -> Vec<u8> {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[1, 3, 8, 8])
        .weight("w1", &[4, 3, 3, 3], -0.5, 0.5)
        .weight("b1", &[4], -0.1, 0.1)
        .weight("w2", &[4, 3, 1, 1], -0.5, 0.5)
        .weight("wg", &[10, 128], -0.1, 0.1)
        .weight("bg", &[10], -0.1, 0.1)
        .ints("shape", &[1, 128])
        .node(
            "Conv",
            &["x", "w1", "b1"],
            &["c1"],
            &[("pads", Attr::Is(vec![1, 1, 1, 1]))],
        )
        .node("Relu", &["c1"], &["r1"], &[])
        .node(
            "MaxPool",
            &["r1"],
            &["p1"],
            &[
                ("kernel_shape", Attr::Is(vec![2, 2])),
                ("strides", Attr::Is(vec![2, 2])),
            ],
        )
        .node("Conv", &["x", "w2"], &["c2"], &[])
        .node(
            "AveragePool",
            &["c2"],
            &["p2"],
            &[
                ("kernel_shape", Attr::Is(vec![2, 2])),
                ("strides", Attr::Is(vec![2, 2])),
            ],
        )
        .node("Concat", &["p1", "p2"], &["cat"], &[("axis", Attr::I(1))])
        .node("Reshape", &["cat", "shape"], &["flat"], &[])
        .node(
            "Gemm",
            &["flat", "wg", "bg"],
            &["g"],
            &[("transB", Attr::I(1))],
        )
        .node("Softmax", &["g"], &["y"], &[("axis", Attr::I(1))])
        .node("Sigmoid", &["p2"], &["z"], &[])
        .output("y", &[1, 10])
        .output("z", &[1, 4, 4, 4]);
    m.build()
}
