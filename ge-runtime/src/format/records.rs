//! Fixed-size little-endian records of the `.om` file. Every record is `Pod`, so the reader can
//! view tables in place (after checking length and alignment) and the writer can emit them with
//! `bytemuck::bytes_of`. The only supported hosts are little-endian, which the reader checks.

use bytemuck::{Pod, Zeroable};

use super::shape::MAX_RANK;

/// File magic: `GEOM` then the major format version as text-free bytes.
pub const MAGIC: [u8; 8] = *b"GE-OM\0\x01\0";
/// The newest format version this crate reads and writes. A version adds to the previous
/// one only (new task kinds: [`super::OpKind::since_version`]); the writer stamps a blob with
/// the oldest version that holds everything in it, so blobs without the newer kinds stay
/// readable by older runtimes, and this reader takes every version from
/// [`MIN_FORMAT_VERSION`] on.
///
/// - 1: the original format.
/// - 2: `Recurrent` tasks (whole RNN / GRU / LSTM layers).
/// - 3: gears (a [`SectionKind::Gears`] table: several static shapes in one blob).
/// - 4: `QGemm` tasks (int8 matrix products on int8 weights).
/// - 5: Conv weights pre-packed at compile time ([`super::WeightLayout::Panels`]) and the
///   `QGemm`/`QConv` output kind [`super::QGEMM_OUT_Q8_F32`] (onnxruntime's f32
///   requantization): which tasks need it is [`super::task_since_version`]'s.
/// - 6: `GemmW8` tasks (f32 activations × weight-only int8 weights).
/// - 7: `QConvFused` tasks (an int8 convolution with a vector-program epilogue), and
///   `Fused` programs that load or store int8/uint8 ([`super::FUSED_8BIT_IO`]).
/// - 8: the [`super::UnaryOp::Silu`] activation (`x · σ(x)`) in any record or vector program.
/// - 9: blocked channels: `Reorder` tasks, Conv and pool records whose activations are
///   blocked ([`super::ChannelLayout`]) and [`super::WeightLayout::Blocked`] conv weights.
/// - 10: GemmW8's int8 B pre-packed at compile time ([`super::GEMM_B_PANELS`]).
/// - 11: `GemmPacked` tasks (a Gemm's constant f32 B pre-packed at compile time).
/// - 12: TFLite Micro's int8 arithmetic (`--int8-rounding tflite`): `QBinary`,
///   `QSoftmax` and `QMean` tasks and the `QGemm`/`QConv` output kind [`super::QGEMM_OUT_Q8_TFLITE`].
/// - 13: `QConv` weights in quads ([`super::QCONV_ROW_QUADS`], [`super::QCONV_CHANNEL_QUADS`]).
/// - 14: `QBinary`'s onnxruntime Add ([`super::QBINARY_ADD_F32`]).
pub const FORMAT_VERSION: u32 = 14;
/// The first format version that may hold a gears section.
pub const GEARS_VERSION: u32 = 3;
/// Most gears one blob may hold (atc's limit).
pub const MAX_GEARS: usize = 100;
/// The oldest format version this crate reads.
pub const MIN_FORMAT_VERSION: u32 = 1;
/// Alignment of the weights section and of every arena offset.
pub const ALIGN: usize = 64;
/// Marks an absent optional tensor in a task's input list.
pub const NO_TENSOR: u32 = u32::MAX;
/// Most inputs or outputs one task may have.
pub const MAX_TASK_IO: usize = 64;

/// File header: the first 64 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Header {
    pub magic: [u8; 8],
    pub version: u32,
    pub flags: u32,
    pub file_len: u64,
    pub section_count: u32,
    /// CRC-32 of the header (with this field and `body_crc` zeroed) and the section table.
    pub header_crc: u32,
    /// CRC-32 of every byte after the section table.
    pub body_crc: u32,
    pub reserved: [u32; 7],
}

/// What a section holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum SectionKind {
    Meta = 1,
    Strings = 2,
    Io = 3,
    Tensors = 4,
    Tasks = 5,
    TaskIo = 6,
    Params = 7,
    Weights = 8,
    Events = 9,
    /// The kernels the tasks need ([`crate::format::KernelId`], sorted, unique); optional.
    Kernels = 10,
    /// One [`GearDesc`] per gear (format version 3); absent in single-shape blobs.
    Gears = 11,
}

impl SectionKind {
    /// All kinds, in file order.
    pub const ALL: [SectionKind; 11] = [
        SectionKind::Meta,
        SectionKind::Strings,
        SectionKind::Io,
        SectionKind::Tensors,
        SectionKind::Tasks,
        SectionKind::TaskIo,
        SectionKind::Params,
        SectionKind::Weights,
        SectionKind::Events,
        SectionKind::Kernels,
        SectionKind::Gears,
    ];

    /// Section name for messages and `ge inspect`.
    pub const fn name(self) -> &'static str {
        match self {
            SectionKind::Meta => "meta",
            SectionKind::Strings => "strings",
            SectionKind::Io => "io",
            SectionKind::Tensors => "tensors",
            SectionKind::Tasks => "tasks",
            SectionKind::TaskIo => "task_io",
            SectionKind::Params => "params",
            SectionKind::Weights => "weights",
            SectionKind::Events => "events",
            SectionKind::Kernels => "kernels",
            SectionKind::Gears => "gears",
        }
    }
}

/// One row of the section table.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct SectionEntry {
    pub kind: u32,
    pub reserved: u32,
    pub offset: u64,
    pub len: u64,
}

/// A UTF-8 string in the strings section.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable, PartialEq, Eq)]
pub struct StrRef {
    pub offset: u32,
    pub len: u32,
}

/// Model-wide facts.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Meta {
    pub name: StrRef,
    pub producer: StrRef,
    /// Bytes of activation memory the plan needs (excluding alignment slack of the caller's buffer).
    pub arena_bytes: u64,
    pub input_count: u32,
    pub output_count: u32,
    pub stream_count: u32,
    /// The precision mode it was compiled with: 0 = force_fp32, 1 = force_fp16,
    /// 2 = allow_fp32_to_fp16, 3 = cube_fp16in_fp32out, 4 = must_keep_origin_dtype,
    /// 5 = allow_mix_precision, 6 = allow_fp32_to_bf16, 7 = force_bf16,
    /// 8 = allow_mix_precision_bf16. Informative: tensors carry their own dtypes.
    pub precision: u32,
    pub opset: u32,
    /// [`GEAR_PAD_BATCH`] / [`GEAR_PAD_ANY`]: which dims `Session::run` may zero-pad up to
    /// a gear's (0 in single-shape blobs, which were written with zeros here).
    pub gear_flags: u32,
    pub reserved: [u32; 4],
}

/// `Meta::gear_flags`: inputs may be zero-padded along dim 0 (the batch of `--dynamic-batch`).
pub const GEAR_PAD_BATCH: u32 = 1;
/// `Meta::gear_flags`: any gear dim may be zero-padded at its end (`--gear-pad spatial`: the
/// user accepts that ops over a padded axis, e.g. Softmax, see the zeros).
pub const GEAR_PAD_ANY: u32 = 2;

/// One gear of a blob with several static shapes: its slices of the io, tensor, task,
/// task-I/O and event tables. Ids inside a gear (task I/O, io entries, workspaces, events,
/// `io_start`) are relative to the gear's slices, so a gear reads as a whole single-shape
/// model; params, weights and strings are shared by all gears. Gears are stored smallest
/// first (by input elements).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable, PartialEq, Eq)]
pub struct GearDesc {
    /// First io entry (each gear has `input_count + output_count`).
    pub io_start: u32,
    pub tensor_start: u32,
    pub tensor_count: u32,
    pub task_start: u32,
    pub task_count: u32,
    pub task_io_start: u32,
    pub task_io_count: u32,
    pub event_start: u32,
    pub event_count: u32,
    pub stream_count: u32,
    /// The gear's own activation plan; every gear's plan starts at arena offset 0.
    pub arena_bytes: u64,
}

/// A model input or output.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct IoDesc {
    pub name: StrRef,
    pub tensor: u32,
    /// 0 = input, 1 = output.
    pub direction: u32,
}

/// Where a tensor's bytes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Location {
    /// In the caller's activation arena, at `offset`.
    Arena = 0,
    /// In the weights section, at `offset` (used in place).
    Weight = 1,
    /// The caller's input buffer number `index`.
    Input = 2,
}

/// One tensor of the compiled graph.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct TensorDesc {
    pub dtype: u8,
    pub rank: u8,
    pub location: u8,
    pub reserved: u8,
    /// Input number when `location` is `Input`.
    pub index: u32,
    pub dims: [u32; MAX_RANK],
    pub offset: u64,
    pub bytes: u64,
    pub name: StrRef,
}

/// One task (kernel launch) of the compiled graph.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct TaskDesc {
    /// An [`crate::format::OpKind`] number.
    pub op: u16,
    pub input_count: u8,
    pub output_count: u8,
    pub stream: u16,
    /// `k + 1` when input `k` and output 0 are the same bytes (the kernel updates them in
    /// place: the input dies here, so the planner gave the output its buffer); 0 otherwise.
    /// Only kinds for which [`crate::format::OpKind::runs_in_place`] holds may set it.
    pub in_place: u16,
    /// First entry in the task-I/O section: inputs, then outputs.
    pub io_start: u32,
    /// Byte offset and length of the op's parameter record in the params section.
    pub params_offset: u32,
    pub params_len: u32,
    /// Scratch tensor for the kernel (im2col, packing), or [`NO_TENSOR`].
    pub workspace: u32,
    pub name: StrRef,
}

/// A cross-stream dependency: task `wait` (on another stream) starts only after task
/// `record` has finished. `record < wait` in the task table's order, which is itself a valid
/// execution order, so running tasks in table order honours every event.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, PartialEq, Eq)]
pub struct EventDesc {
    pub record: u32,
    pub wait: u32,
}
