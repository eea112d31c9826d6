//! Compile options, mirroring `ge compile`'s flags (and atc's where they mean something).

use std::collections::BTreeMap;
use std::path::PathBuf;

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

/// Numeric precision of compute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    #[default]
    Fp32,
    Fp16,
    AllowFp32ToFp16,
}

impl std::str::FromStr for Precision {
    type Err = CompileError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "fp32" => Ok(Precision::Fp32),
            "fp16" => Ok(Precision::Fp16),
            "allow_fp32_to_fp16" => Ok(Precision::AllowFp32ToFp16),
            _ => Err(CompileError::Option(format!(
                "precision '{s}' is not fp32, fp16 or allow_fp32_to_fp16"
            ))),
        }
    }
}

/// Everything that changes what `compile` produces.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Fixed shapes for inputs with symbolic dims (`--input-shape NAME:D1,D2,…`).
    pub input_shapes: BTreeMap<String, Vec<usize>>,
    pub opt_level: OptLevel,
    pub precision: Precision,
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
    /// Largest arena and weights the compiled model may need; any one tensor larger than
    /// either is refused during import (before anything that size is allocated).
    pub limits: ge_runtime::Limits,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            input_shapes: BTreeMap::new(),
            opt_level: OptLevel::O2,
            precision: Precision::Fp32,
            device: Profile::EDGE,
            memory_reuse: true,
            fusion_switch: None,
            max_streams: None,
            unsafe_linear_memory_plan: false,
            input_values: BTreeMap::new(),
            limits: ge_runtime::Limits::DEFAULT,
        }
    }
}

/// Parses `NAME:D1,D2,…` (the name may itself contain `:`; the last `:` splits).
pub fn parse_input_shape(spec: &str) -> Result<(String, Vec<usize>)> {
    let (name, dims) = spec.rsplit_once(':').ok_or_else(|| {
        CompileError::Option(format!(
            "--input-shape '{spec}' must look like NAME:D1,D2,..."
        ))
    })?;
    let dims = if dims.trim().is_empty() {
        Vec::new()
    } else {
        dims.split(',')
            .map(|d| d.trim().parse::<usize>())
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| {
                CompileError::Option(format!(
                    "--input-shape '{spec}': dimensions must be non-negative integers"
                ))
            })?
    };
    Ok((name.to_string(), dims))
}
