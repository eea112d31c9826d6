//! Command-line syntax (the contract in DESIGN.md).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "ge",
    version,
    about = "Compile ONNX models into .om offline models and run them on a simulated NPU"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Compile an ONNX model into an .om blob.
    Compile {
        model: PathBuf,
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        #[command(flatten)]
        flags: CompileFlags,
        /// Write the compile report (JSON) here.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Run the fp32 and the --precision compile on the same inputs and write per-output
        /// errors, cosine similarity and top-1 agreement (JSON) here.
        #[arg(long = "accuracy-report", value_name = "FILE.json")]
        accuracy_report: Option<PathBuf>,
        /// Inputs for --accuracy-report and --auto-mixed-precision: DIR/<input name>.npy
        /// (default: seeded random).
        #[arg(long, value_name = "DIR")]
        calib: Option<PathBuf>,
        /// Search the smallest set of nodes that must stay in fp32 for every output to stay
        /// within --rtol of the fp32 compile, write it here as a --keep-dtype file and compile
        /// with it.
        #[arg(long = "auto-mixed-precision", value_name = "KEEP_FILE")]
        auto_mixed_precision: Option<PathBuf>,
        /// Tolerance of --auto-mixed-precision: max |reduced − fp32| / max |fp32| per output.
        #[arg(
            long,
            value_name = "R",
            default_value_t = 1e-2,
            requires = "auto_mixed_precision"
        )]
        rtol: f64,
    },
    /// Post-training static quantization: Conv/Gemm/MatMul to int8 with ranges calibrated on
    /// sample inputs; writes the QDQ ONNX model (.onnx) or compiles it (.om).
    Quantize {
        model: PathBuf,
        #[arg(short = 'o', long = "output", value_name = "OUT.onnx|OUT.om")]
        output: PathBuf,
        #[command(flatten)]
        quant: QuantizeFlags,
        #[command(flatten)]
        flags: CompileFlags,
    },
    /// Run an .om blob on the simulated device.
    Run {
        om: PathBuf,
        /// NAME=FILE.npy (or FILE.pb); repeat per input.
        #[arg(long = "input", value_name = "NAME=FILE")]
        inputs: Vec<String>,
        #[arg(long = "output-dir", default_value = ".")]
        output_dir: PathBuf,
        /// Print a per-task profile and totals (host_us: each kernel's wall time).
        #[arg(long)]
        profile: bool,
        /// Run the model this many times (outputs are the last run's; the profile's host
        /// times the fastest run of each task, so caches are warm).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        repeat: u32,
        /// Host threads the kernels split over (outputs are bitwise the same for any count).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        threads: u32,
        /// Write a Chrome/Perfetto trace (streams and cores) to this JSON file.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Verify that no two tasks unordered by streams/events touch overlapping arena bytes
        /// where one writes; fail with the two tasks if they do.
        #[arg(long = "check-races")]
        check_races: bool,
        #[command(flatten)]
        device: DeviceFlags,
    },
    /// List the supported ONNX operators (op × opsets × dtypes).
    Ops {
        /// Print the Markdown table of docs/OPERATORS.md.
        #[arg(long)]
        markdown: bool,
    },
    /// Check ONNX backend-test cases (model.onnx + test_data_set_*/) against expected outputs.
    Check {
        case: Option<PathBuf>,
        /// A folder of case folders.
        #[arg(long)]
        suite: Option<PathBuf>,
        #[command(flatten)]
        flags: CompileFlags,
        #[arg(long, default_value_t = 1e-3)]
        rtol: f64,
        #[arg(long, default_value_t = 1e-4)]
        atol: f64,
        /// Also prove every compiled schedule race-free (as `ge run --check-races`).
        #[arg(long = "check-races")]
        check_races: bool,
    },
    /// Time runs of an .om (or an .onnx, compiled first) on the host.
    Bench {
        model: PathBuf,
        /// NAME=FILE.npy (or .pb); inputs not given get valid random values.
        #[arg(long = "input")]
        inputs: Vec<String>,
        #[arg(long, default_value_t = 1)]
        threads: usize,
        #[arg(long, default_value_t = 10)]
        iters: usize,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// Also measure this CPU's one-thread multiply-add peak on the kernels' ISA path
        /// (GFLOP/s; JSON key `isa_peak_gflops`), the yardstick for convolution speed.
        #[arg(long)]
        peak: bool,
        #[command(flatten)]
        flags: CompileFlags,
    },
    /// Show an .om blob's header, sections, I/O and tasks.
    Inspect {
        om: PathBuf,
        /// Also list every task (stream, tensors with arena offsets) and event.
        #[arg(long)]
        tasks: bool,
    },
    /// Draw the graph before or after optimization (.svg or .dot by the output's extension).
    Viz {
        model: PathBuf,
        /// before: as imported; after: after the passes of --opt-level.
        #[arg(long, default_value = "after")]
        stage: String,
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        #[command(flatten)]
        flags: CompileFlags,
    },
}

/// Device selection shared by run/compile.
#[derive(Args, Debug, Clone)]
pub struct DeviceFlags {
    /// edge (default), datacenter, tiny, cortex-m (a Cortex-M4F at 120 MHz), or a JSON profile file.
    #[arg(long, default_value = "edge")]
    pub device: String,
    /// Limit the AI cores a task may use.
    #[arg(long)]
    pub cores: Option<u32>,
    /// Dispatch every task from the host instead of sink mode.
    #[arg(long)]
    pub host_dispatch: bool,
}

/// Flags of `ge compile` (also accepted by check and bench).
#[derive(Args, Debug, Clone)]
pub struct CompileFlags {
    /// NAME:D1,D2,... fixes an input's shape; repeat per input. With gears, -1 marks a dim
    /// the gears set (even one the model file fixes).
    #[arg(
        long = "input-shape",
        value_name = "NAME:DIMS",
        allow_hyphen_values = true
    )]
    pub input_shapes: Vec<String>,
    /// Batch gears: B1,B2,... for dim 0 of every input whose dim 0 is symbolic (or -1).
    #[arg(long = "dynamic-batch", value_name = "B1,B2,..")]
    pub dynamic_batch: Option<String>,
    /// Image-size gears: "H,W;H,W" for the spatial dims of NCHW/NHWC inputs.
    #[arg(long = "dynamic-image-size", value_name = "H,W;H,W")]
    pub dynamic_image_size: Option<String>,
    /// ND gears: "NAME:D1,D2;NAME:D1,D2", one value per symbolic dim (or the full shape).
    #[arg(long = "dynamic-dims", value_name = "NAME:D,..;..")]
    pub dynamic_dims: Option<String>,
    /// What `run` may zero-pad up to a gear: batch (default; dim 0 of batch gears) or
    /// spatial (any gear dim; ops over a padded axis see the zeros).
    #[arg(long = "gear-pad", default_value = "batch")]
    pub gear_pad: String,
    /// NAME=FILE.npy fixes a graph input's value at compile time (a shape tensor fed as an
    /// input: axes, pads, sizes…); the compiled model no longer takes that input.
    #[arg(long = "input-value", value_name = "NAME=FILE")]
    pub input_values: Vec<String>,
    #[arg(long = "opt-level", default_value = "O2")]
    pub opt_level: String,
    /// force_fp32 (default; fp32 is an alias), cube_fp16in_fp32out, must_keep_origin_dtype,
    /// allow_fp32_to_fp16, force_fp16, allow_mix_precision, allow_fp32_to_bf16, force_bf16,
    /// allow_mix_precision_bf16.
    #[arg(long, default_value = "force_fp32")]
    pub precision: String,
    /// Node names or op types kept in their original dtype, one per line (`OpName:NAME`,
    /// `OpType:TYPE`, or a bare name).
    #[arg(long = "keep-dtype", value_name = "FILE")]
    pub keep_dtype: Option<PathBuf>,
    /// Edits to the mixed-precision op lists:
    /// {"black-list": {"to-add": [...], "to-remove": [...]}, "white-list": ..., "gray-list": ...}.
    #[arg(long = "modify-mixlist", value_name = "FILE.json")]
    pub modify_mixlist: Option<PathBuf>,
    /// model (default): inputs and outputs in the model's dtypes; fp16 or bf16: in the
    /// precision mode's reduced dtype.
    #[arg(long = "io-dtype", default_value = "model")]
    pub io_dtype: String,
    #[command(flatten)]
    pub device: DeviceFlags,
    #[arg(long = "fusion-switch")]
    pub fusion_switch: Option<PathBuf>,
    /// Most streams for parallel branches (default: the device's cores, at most 4; 1 = serial).
    #[arg(long)]
    pub streams: Option<usize>,
    /// Plan memory ignoring stream concurrency: a deliberately racy plan, for demonstrating
    /// `ge run --check-races`. Never use it for real models.
    #[arg(long = "unsafe-linear-memory-plan", hide = true)]
    pub unsafe_linear_memory_plan: bool,
    /// on (default) or off (naive memory plan, for debugging).
    #[arg(long = "memory-reuse", default_value = "on")]
    pub memory_reuse: String,
    /// Blocked channels (NCHWc) for the host's convolutions: auto (default: on when this
    /// machine's kernels run AVX-512 or AVX2, where the blocked conv tiles are the faster
    /// path, and the plan pays for its reorders), on,
    /// or off (plain NCHW: a blob independent of the compiling machine, as firmware and
    /// `ge_model!` blobs are).
    #[arg(long = "blocked-channels", default_value = "auto")]
    pub blocked_channels: String,
    /// Whose arithmetic int8 models follow: onnx (default: onnxruntime's outputs) or tflite
    /// (TFLite Micro's and CMSIS-NN's fixed-point multipliers, double rounding and integer
    /// Add/Mul/Softmax/average pool: the outputs of the TFLite model it was converted from).
    #[arg(
        long = "int8-rounding",
        default_value = "onnx",
        value_name = "onnx|tflite"
    )]
    pub int8_rounding: String,
    /// Refuse a model with more nodes than this, subgraphs included (default 10000000).
    #[arg(long = "max-nodes", value_name = "N")]
    pub max_nodes: Option<String>,
    /// Refuse any one tensor larger than this many bytes (K, M, G suffixes; default 8G).
    #[arg(long = "max-tensor-bytes", value_name = "BYTES")]
    pub max_tensor_bytes: Option<String>,
    /// Refuse a model whose weights exceed this many bytes (default 8G).
    #[arg(long = "max-weight-bytes", value_name = "BYTES")]
    pub max_weight_bytes: Option<String>,
    /// Refuse a model whose activation arena exceeds this many bytes (default 8G).
    #[arg(long = "max-arena-bytes", value_name = "BYTES")]
    pub max_arena_bytes: Option<String>,
    /// Fold no value larger than this many bytes at compile time; a larger one runs as a task
    /// (default 64M).
    #[arg(long = "max-fold-bytes", value_name = "BYTES")]
    pub max_fold_bytes: Option<String>,
}

/// Flags of `ge quantize`.
#[derive(Args, Debug, Clone)]
pub struct QuantizeFlags {
    /// Calibration samples: DIR/<input name>.npy with samples stacked along dim 0, or one
    /// folder per sample holding <input name>.npy (or input_<i>.pb).
    #[arg(long, value_name = "DIR")]
    pub calib: PathBuf,
    /// One weight scale per output channel (needs opset 13); default one per tensor.
    #[arg(long = "per-channel")]
    pub per_channel: bool,
    /// How activation ranges are chosen: minmax, percentile (--percentile) or entropy
    /// (KL divergence, as TensorRT).
    #[arg(long, default_value = "minmax")]
    pub method: String,
    /// The percentile --method percentile keeps.
    #[arg(long, default_value_t = 99.999)]
    pub percentile: f64,
    /// int8 activations with zero point 0 (default: uint8 with a zero point).
    #[arg(long = "symmetric-activations")]
    pub symmetric_activations: bool,
    /// Even out the channel ranges of each conv output that feeds an activation and of each
    /// depthwise conv input before quantizing them per tensor (the scaling moves into the
    /// weights); helps MobileNet-style nets.
    #[arg(long)]
    pub equalize: bool,
    /// Nodes left in float: NODE,NODE… (ONNX node names); repeatable.
    #[arg(long, value_name = "NODE,..")]
    pub exclude: Vec<String>,
    /// Use at most N calibration samples (the first ones).
    #[arg(long = "max-samples", value_name = "N")]
    pub max_samples: Option<usize>,
    /// Write per-layer scales and zero points and the output error on the calibration set
    /// (JSON) here.
    #[arg(long, value_name = "FILE.json")]
    pub report: Option<PathBuf>,
}
