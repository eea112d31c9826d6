//! The compile report (`--report`): the contract keys outside tools read.

use serde::Serialize;

/// One pass's effect.
#[derive(Clone, Debug, Serialize)]
pub struct PassStat {
    pub name: String,
    pub changed: bool,
    pub millis: f64,
}

/// Memory plan figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MemoryStat {
    pub arena_bytes: u64,
    pub lower_bound_bytes: u64,
    pub naive_bytes: u64,
    /// Peak live activation bytes (before aliasing) under the plain topological order, and
    /// under the order the scheduler chose.
    pub topo_order_peak_bytes: u64,
    pub chosen_order_peak_bytes: u64,
    /// No execution order peaks below this (the largest single-node footprint).
    pub order_peak_lower_bound_bytes: u64,
    pub weight_bytes: u64,
    /// With gears: arena bytes after the largest gear's plan (`arena_bytes`) where
    /// `Session::run` stages padded inputs; the blob's arena is the sum. 0 without gears.
    pub gear_staging_bytes: u64,
}

/// Compile time per stage.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CompileMillis {
    pub total: f64,
    pub parse: f64,
    pub import: f64,
    pub passes: f64,
    pub plan_and_emit: f64,
}

/// Predicted device figures for one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SimStat {
    pub device: String,
    pub time_us: f64,
    pub gm_bytes: u64,
    pub launches: u64,
    pub tasks: u64,
    pub cube_macs: u64,
    pub vector_ops: u64,
}

/// What the precision pass did (`--precision`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PrecisionStat {
    pub mode: String,
    /// Nodes running in the reduced dtype (or reading it, under `cube_fp16in_fp32out`).
    pub lowered_nodes: usize,
    /// Nodes a keep-dtype entry kept in their original dtype.
    pub kept_nodes: usize,
    /// Cast tasks the pass added.
    pub casts: usize,
    /// Constants stored in the reduced dtype (read by kernels that take halves).
    pub converted_weights: usize,
    /// Constants rounded to the reduced dtype but stored in f32 (read by f32 kernels).
    pub rounded_weights: usize,
    /// Weight values beyond fp16's range, clamped to ±65504.
    pub clamped_values: u64,
}

/// Every task's element type, read back from the blob (issue 50: a quantized model shows
/// what still computes in float).
#[derive(Clone, Debug, Default, Serialize)]
pub struct DtypeStat {
    /// `--int8-rounding` (`onnx` or `tflite`): whose arithmetic the int8 tasks follow.
    pub int8_rounding: String,
    /// Tasks by the element type of their first output (`int8`, `uint8`, `int32`,
    /// `float32`, …).
    pub tasks_by_dtype: std::collections::BTreeMap<String, usize>,
    /// In a model with 8-bit tasks, the tasks that write float, as `name (Kind)`: the layers a
    /// fully quantized model should not have (a float tail, a group the QDQ rules left).
    pub float_tasks: Vec<String>,
}

impl DtypeStat {
    /// From a blob the compiler just wrote (an unreadable one gives an empty stat).
    pub fn of_blob(blob: &[u8], rounding: crate::Int8Rounding) -> DtypeStat {
        use ge_runtime::format::DType;
        let mut s = DtypeStat {
            int8_rounding: rounding.name().to_string(),
            ..DtypeStat::default()
        };
        let aligned = ge_runtime::AlignedBlob::from_bytes(blob);
        let Ok(m) = ge_runtime::Model::from_bytes(aligned.as_bytes()) else {
            return s;
        };
        let mut float = Vec::new();
        let mut eight_bit = false;
        for t in m.tasks() {
            let Some(dt) = m
                .task_outputs(t)
                .first()
                .and_then(|&o| m.tensors().get(o as usize))
                .map(ge_runtime::tensor_dtype)
            else {
                continue;
            };
            *s.tasks_by_dtype.entry(dt.name().to_string()).or_default() += 1;
            eight_bit |= matches!(dt, DType::I8 | DType::U8);
            if matches!(dt, DType::F32 | DType::F16 | DType::Bf16 | DType::F64) {
                float.push(format!("{} ({})", m.str(t.name), m.task_op(t).name()));
            }
        }
        if eight_bit {
            s.float_tasks = float;
        }
        s
    }
}

/// The whole report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub model: String,
    pub opset: i64,
    pub opt_level: String,
    pub nodes_before: usize,
    pub nodes_after: usize,
    pub tasks: usize,
    /// Streams the tasks were spread over, and cross-stream events between them.
    pub streams: usize,
    pub events: usize,
    pub passes: Vec<PassStat>,
    pub memory: MemoryStat,
    pub compile_millis: CompileMillis,
    pub sim: SimStat,
    pub blob_bytes: usize,
    /// One entry per gear, smallest first (empty without gears); the fields above describe
    /// the largest gear.
    pub gears: Vec<GearStat>,
    pub precision: PrecisionStat,
    /// Every task's element type ([`DtypeStat`]).
    pub dtypes: DtypeStat,
}

/// One gear of a multi-shape blob.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GearStat {
    /// Input shapes by name.
    pub inputs: std::collections::BTreeMap<String, Vec<usize>>,
    /// Output shapes, in output order.
    pub outputs: Vec<Vec<usize>>,
    /// The gear's own activation plan (every gear's starts at offset 0 of the one arena).
    pub arena_bytes: u64,
    pub tasks: usize,
    pub streams: usize,
    pub sim: SimStat,
}
