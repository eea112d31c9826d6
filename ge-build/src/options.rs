//! Compile options, mirroring `ge compile`'s flags (and atc's where they mean something).

use std::collections::BTreeMap;
use std::path::PathBuf;

use ge_runtime::format::DType;
use ge_sim::Profile;

use crate::error::{CompileError, Result};

/// Optimization level: O0 none, O1 cleanups, O2 (default) fusion, O3 aggressive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OptLevel {
    O0,
    O1,
    #[default]
    O2,
    O3,
}

impl std::str::FromStr for OptLevel {
    type Err = CompileError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "O0" | "0" => Ok(OptLevel::O0),
            "O1" | "1" => Ok(OptLevel::O1),
            "O2" | "2" => Ok(OptLevel::O2),
            "O3" | "3" => Ok(OptLevel::O3),
            _ => Err(CompileError::Option(format!(
                "opt level '{s}' is not O0, O1, O2 or O3"
            ))),
        }
    }
}

/// Numeric precision of compute (`--precision`, atc's `precision_mode`). The default is
/// fp32-exact; the others trade accuracy for half the bytes (see docs/PRECISION.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// Everything in fp32 (`fp32` is an alias).
    #[default]
    ForceFp32,
    /// Cube ops (Conv, ConvTranspose, Gemm, MatMul, Attention) read fp16, write fp32.
    CubeFp16InFp32Out,
    /// The model's own dtypes: fp16/bf16 models run in their dtype, fp32 ones in fp32.
    MustKeepOriginDtype,
    /// Cube ops in fp16 (fp32 accumulation); vector ops stay fp32.
    AllowFp32ToFp16,
    /// Every float op in fp16.
    ForceFp16,
    /// fp16 by the white/black/gray op lists.
    AllowMixPrecision,
    /// [`Precision::AllowFp32ToFp16`] with bf16.
    AllowFp32ToBf16,
    /// [`Precision::ForceFp16`] with bf16.
    ForceBf16,
    /// [`Precision::AllowMixPrecision`] with bf16.
    AllowMixPrecisionBf16,
}

/// Which nodes a mode lowers, independent of the low dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LowerPolicy {
    /// None.
    Nothing,
    /// Cube ops' inputs only (their outputs stay fp32).
    CubeInputs,
    /// Cube ops.
    Cube,
    /// Every float op.
    All,
    /// By the white/black/gray lists.
    Lists,
}

impl Precision {
    /// Every mode, by its `--precision` name.
    pub const ALL: [(&'static str, Precision); 9] = [
        ("force_fp32", Precision::ForceFp32),
        ("cube_fp16in_fp32out", Precision::CubeFp16InFp32Out),
        ("must_keep_origin_dtype", Precision::MustKeepOriginDtype),
        ("allow_fp32_to_fp16", Precision::AllowFp32ToFp16),
        ("force_fp16", Precision::ForceFp16),
        ("allow_mix_precision", Precision::AllowMixPrecision),
        ("allow_fp32_to_bf16", Precision::AllowFp32ToBf16),
        ("force_bf16", Precision::ForceBf16),
        ("allow_mix_precision_bf16", Precision::AllowMixPrecisionBf16),
    ];

    /// Other spellings: our old `fp32`, atc's `allow_mix_precision_fp16`.
    const ALIASES: [(&'static str, Precision); 2] = [
        ("fp32", Precision::ForceFp32),
        ("allow_mix_precision_fp16", Precision::AllowMixPrecision),
    ];

    /// The `--precision` name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, p)| *p == self)
            .map_or("force_fp32", |(n, _)| n)
    }

    /// The mode's number in the blob's `Meta::precision` (0 = force_fp32, as blobs written
    /// before the modes existed; 1 and 2 as that field always documented).
    pub fn code(self) -> u32 {
        match self {
            Precision::ForceFp32 => 0,
            Precision::ForceFp16 => 1,
            Precision::AllowFp32ToFp16 => 2,
            Precision::CubeFp16InFp32Out => 3,
            Precision::MustKeepOriginDtype => 4,
            Precision::AllowMixPrecision => 5,
            Precision::AllowFp32ToBf16 => 6,
            Precision::ForceBf16 => 7,
            Precision::AllowMixPrecisionBf16 => 8,
        }
    }

    /// The mode a blob's `Meta::precision` names.
    pub fn from_code(code: u32) -> Option<Precision> {
        Self::ALL.iter().map(|&(_, p)| p).find(|p| p.code() == code)
    }

    /// The reduced dtype this mode stores lowered values in (`None`: nothing is lowered).
    pub fn low_dtype(self) -> Option<DType> {
        match self {
            Precision::ForceFp32 | Precision::MustKeepOriginDtype => None,
            Precision::CubeFp16InFp32Out
            | Precision::AllowFp32ToFp16
            | Precision::ForceFp16
            | Precision::AllowMixPrecision => Some(DType::F16),
            Precision::AllowFp32ToBf16
            | Precision::ForceBf16
            | Precision::AllowMixPrecisionBf16 => Some(DType::Bf16),
        }
    }

    /// Which nodes the mode lowers.
    pub fn policy(self) -> LowerPolicy {
        match self {
            Precision::ForceFp32 | Precision::MustKeepOriginDtype => LowerPolicy::Nothing,
            Precision::CubeFp16InFp32Out => LowerPolicy::CubeInputs,
            Precision::AllowFp32ToFp16 | Precision::AllowFp32ToBf16 => LowerPolicy::Cube,
            Precision::ForceFp16 | Precision::ForceBf16 => LowerPolicy::All,
            Precision::AllowMixPrecision | Precision::AllowMixPrecisionBf16 => LowerPolicy::Lists,
        }
    }
}

impl std::str::FromStr for Precision {
    type Err = CompileError;
    fn from_str(s: &str) -> Result<Self> {
        if let Some((_, p)) = Self::ALL
            .iter()
            .chain(&Self::ALIASES)
            .find(|(n, _)| *n == s)
        {
            return Ok(*p);
        }
        let names: Vec<&str> = Self::ALL.iter().map(|(n, _)| *n).collect();
        Err(CompileError::Option(format!(
            "precision '{s}' is not a mode{} (modes: {})",
            crate::suggest::did_you_mean(s, names.iter().copied()),
            names.join(", ")
        )))
    }
}

/// Everything that changes what `compile` produces.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Fixed shapes for inputs with symbolic dims (`--input-shape NAME:D1,D2,…`).
    pub input_shapes: BTreeMap<String, Vec<usize>>,
    pub opt_level: OptLevel,
    pub precision: Precision,
    /// Nodes (by ONNX node name) or op types kept in their original dtype (`--keep-dtype`).
    pub keep_dtype: Option<PathBuf>,
    /// Changes to the mixed-precision op lists (`--modify-mixlist FILE.json`).
    pub modify_mixlist: Option<PathBuf>,
    /// Graph inputs and outputs in this reduced dtype instead of the model's
    /// (`--io-dtype fp16|bf16`); it must be the precision mode's.
    pub io_dtype: Option<DType>,
    /// Device the model is planned for (and the report's simulated figures use).
    pub device: Profile,
    /// `false` gives the naive memory plan (`--memory-reuse off`).
    pub memory_reuse: bool,
    /// Most streams for parallel branches (`--streams N`); `None`: as many as the device has
    /// cores, at most 4.
    pub max_streams: Option<usize>,
    /// Plan memory ignoring stream concurrency: a deliberately racy plan, only for testing the
    /// race checker (`--unsafe-linear-memory-plan`).
    pub unsafe_linear_memory_plan: bool,
    /// Fusion switch file (`--fusion-switch`).
    pub fusion_switch: Option<PathBuf>,
    /// Inputs frozen to constant values (shape tensors: axes, pads, sizes… given as graph
    /// inputs). A frozen input is no longer an input of the compiled model.
    pub input_values: BTreeMap<String, crate::tensor::TensorData>,
    /// What the compile may take (nodes, one tensor, weights, arena).
    pub limits: Limits,
    /// Several static shapes in one blob (`--dynamic-batch`, `--dynamic-image-size`,
    /// `--dynamic-dims`); see [`crate::gears`].
    pub gears: crate::gears::GearSpec,
    /// Which dims `Session::run` may zero-pad up to a gear (`--gear-pad`).
    pub gear_pad: crate::gears::GearPad,
    /// Inputs given with `-1` dims (`--input-shape x:-1,3,224,224`): the gears set those
    /// dims, even where the model file fixes them.
    pub gear_inputs: BTreeMap<String, Vec<Option<usize>>>,
    /// Post-training static quantization before the compile (`quantize = "calib/dir"` in
    /// `ge_model!`, [`crate::Builder::quantize`]): the model is quantized on those samples
    /// ([`crate::quantize`], as `ge quantize` does) and the QDQ model is what compiles.
    pub quantize: Option<QuantizeSpec>,
    /// Blocked channels for the host's convolutions (`--blocked-channels`).
    pub blocked_channels: BlockedChannels,
    /// Whose arithmetic the int8 ops follow (`--int8-rounding onnx|tflite`).
    pub int8_rounding: Int8Rounding,
}

/// Whose arithmetic the int8 (QDQ and QOperator) ops follow: the results a user compares
/// against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub enum Int8Rounding {
    /// onnxruntime's (the ONNX rule): scales multiplied in f32, `f32(acc)·scale` rounded
    /// half to even; the outputs are onnxruntime's CPU provider's.
    #[default]
    Onnx,
    /// TFLite Micro's and CMSIS-NN's: Q31 multipliers and shifts with gemmlowp's double
    /// rounding, and their integer Add, Mul, Softmax and average pool; the outputs are
    /// TFLite Micro's for a model converted from TFLite (docs/research/tflite-int8-rounding.md).
    Tflite,
}

impl Int8Rounding {
    /// Parses `onnx|tflite`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "onnx" => Some(Self::Onnx),
            "tflite" => Some(Self::Tflite),
            _ => None,
        }
    }

    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Self::Onnx => "onnx",
            Self::Tflite => "tflite",
        }
    }
}

/// Whether the compiler plans blocked channels (NCHWc, `passes::BlockedLayout`): a host
/// speed choice that changes the blob (`Reorder` tasks, blocked conv weights; format 9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BlockedChannels {
    /// Plain NCHW everywhere: blobs independent of the compiling machine, for firmware.
    #[default]
    Off,
    /// Blocked where the kernels have blocked forms (at O2 and above).
    On,
    /// On when the compiling machine's kernels run AVX-512 or AVX2 (`GE_ISA` honoured): the blob is
    /// planned for a CPU like it (others run it correctly on the portable blocked kernels).
    Auto,
}

impl BlockedChannels {
    /// Parses `off|on|auto`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "off" => Some(Self::Off),
            "on" => Some(Self::On),
            "auto" => Some(Self::Auto),
            _ => None,
        }
    }

    /// Whether this compile blocks.
    pub fn enabled(self) -> bool {
        match self {
            Self::Off => false,
            Self::On => true,
            Self::Auto => ge_sim::target::host_has_blocked_kernels(),
        }
    }
}

/// What [`CompileOptions::quantize`] quantizes with.
#[derive(Clone, Debug)]
pub struct QuantizeSpec {
    /// The calibration samples ([`crate::quantize::calib_set`]).
    pub calib: PathBuf,
    pub options: crate::quantize::QuantizeOptions,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            input_shapes: BTreeMap::new(),
            opt_level: OptLevel::O2,
            precision: Precision::ForceFp32,
            keep_dtype: None,
            modify_mixlist: None,
            io_dtype: None,
            device: Profile::EDGE,
            memory_reuse: true,
            fusion_switch: None,
            max_streams: None,
            unsafe_linear_memory_plan: false,
            input_values: BTreeMap::new(),
            limits: Limits::DEFAULT,
            gears: crate::gears::GearSpec::None,
            gear_pad: crate::gears::GearPad::Batch,
            gear_inputs: BTreeMap::new(),
            quantize: None,
            blocked_channels: BlockedChannels::Off,
            int8_rounding: Int8Rounding::Onnx,
        }
    }
}

/// Resource limits of one compile, so that a huge or hostile model is refused with the
/// limit named instead of exhausting the host: `ge compile --max-nodes N --max-tensor-bytes
/// B --max-weight-bytes B --max-arena-bytes B`, `ge_model!(…, max_nodes = N, …)`,
/// [`crate::Builder::limits`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most nodes in the ONNX graph, subgraphs included; checked right after parsing.
    pub max_nodes: usize,
    /// Largest single tensor (initializer, constant or activation); checked during import,
    /// before anything that size is allocated.
    pub max_tensor_bytes: u64,
    /// Largest weights section of the blob (also the loader's limit).
    pub max_weight_bytes: u64,
    /// Largest activation arena (also the loader's limit).
    pub max_arena_bytes: u64,
    /// Largest value constant folding computes at compile time: a node whose outputs are
    /// larger runs as a task (its constant inputs become weights; a ConstantOfShape becomes
    /// an Expand of its one value), so a hostile or merely large constant shape costs the
    /// compile neither the memory nor the blob bytes.
    pub max_fold_bytes: u64,
}

impl Limits {
    /// 10 million nodes; 8 GiB for one tensor, the weights and the arena; 64 MiB folded.
    pub const DEFAULT: Limits = Limits {
        max_nodes: 10_000_000,
        max_tensor_bytes: 8 << 30,
        max_weight_bytes: 8 << 30,
        max_arena_bytes: 8 << 30,
        max_fold_bytes: 64 << 20,
    };

    /// The names [`Limits::set`] takes (as flags they are spelled with `-`).
    pub const NAMES: [&'static str; 5] = [
        "max_nodes",
        "max_tensor_bytes",
        "max_weight_bytes",
        "max_arena_bytes",
        "max_fold_bytes",
    ];

    /// The part the `.om` loader enforces.
    pub fn runtime(&self) -> ge_runtime::Limits {
        ge_runtime::Limits {
            max_arena_bytes: self.max_arena_bytes,
            max_weight_bytes: self.max_weight_bytes,
        }
    }

    /// Sets the limit `name` (`max_nodes` or `max-nodes`, …) from a decimal number with an
    /// optional `K`, `M` or `G` suffix (KiB, MiB, GiB): one parser for the CLI and the macro.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let bad = || {
            CompileError::Option(format!(
                "{name} '{value}' must be a positive integer, optionally with K, M or G"
            ))
        };
        let v = value.trim();
        let (digits, shift) = match v.char_indices().last() {
            Some((i, 'K' | 'k')) => (&v[..i], 10),
            Some((i, 'M' | 'm')) => (&v[..i], 20),
            Some((i, 'G' | 'g')) => (&v[..i], 30),
            _ => (v, 0),
        };
        let n = digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(1u64 << shift))
            .filter(|&n| n > 0)
            .ok_or_else(bad)?;
        match name.replace('-', "_").as_str() {
            "max_nodes" => self.max_nodes = usize::try_from(n).map_err(|_| bad())?,
            "max_tensor_bytes" => self.max_tensor_bytes = n,
            "max_weight_bytes" => self.max_weight_bytes = n,
            "max_arena_bytes" => self.max_arena_bytes = n,
            "max_fold_bytes" => self.max_fold_bytes = n,
            _ => {
                return Err(CompileError::Option(format!(
                    "unknown limit '{name}' (one of {})",
                    Self::NAMES.join(", ")
                )));
            }
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// The loader's limits, with one tensor allowed as large as the larger of them.
impl From<ge_runtime::Limits> for Limits {
    fn from(l: ge_runtime::Limits) -> Limits {
        Limits {
            max_tensor_bytes: l.max_arena_bytes.max(l.max_weight_bytes),
            max_weight_bytes: l.max_weight_bytes,
            max_arena_bytes: l.max_arena_bytes,
            ..Limits::DEFAULT
        }
    }
}

/// Parses `NAME:D1,D2,…` (the name may itself contain `:`; the last `:` splits).
pub fn parse_input_shape(spec: &str) -> Result<(String, Vec<usize>)> {
    let (name, dims) = parse_input_shape_gears(spec)?;
    let dims = dims.into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| {
        CompileError::Option(format!(
            "--input-shape '{spec}': dimensions must be non-negative integers (-1 only with gears)"
        ))
    })?;
    Ok((name, dims))
}

/// [`parse_input_shape`] where a dim may be `-1` (`None`): a dim the gears set.
pub fn parse_input_shape_gears(spec: &str) -> Result<(String, Vec<Option<usize>>)> {
    let (name, dims) = spec.rsplit_once(':').ok_or_else(|| {
        CompileError::Option(format!(
            "--input-shape '{spec}' must look like NAME:D1,D2,..."
        ))
    })?;
    let dims = if dims.trim().is_empty() {
        Vec::new()
    } else {
        dims.split(',')
            .map(|d| match d.trim() {
                "-1" => Ok(None),
                d => d.parse::<usize>().map(Some),
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| {
                CompileError::Option(format!(
                    "--input-shape '{spec}': dimensions must be non-negative integers or -1"
                ))
            })?
    };
    Ok((name.to_string(), dims))
}
