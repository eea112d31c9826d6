//! [`Interface`]: what the bindings need to know about a compiled model (its I/O, arena
//! and size), read back from the blob.

use serde::{Deserialize, Serialize};

use ge_runtime::format::DType;

use crate::error::{CompileError, Result};

/// One model input or output as the bindings see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoSpec {
    /// The ONNX name.
    pub name: String,
    /// The `.om` dtype code ([`DType`]).
    pub dtype: u8,
    pub shape: Vec<usize>,
}

impl IoSpec {
    /// The element type.
    pub fn dtype(&self) -> DType {
        DType::from_u8(self.dtype).unwrap_or(DType::U8)
    }

    /// The Rust element type of the generated arrays. `bool` is `u8` (0 or 1) and the
    /// 16-bit floats are their raw `u16` bits, so every element type is plain old data.
    pub fn rust_elem(&self) -> &'static str {
        match self.dtype() {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::U8 | DType::Bool => "u8",
            DType::I8 => "i8",
            DType::U16 | DType::F16 | DType::Bf16 => "u16",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::U64 => "u64",
        }
    }

    /// Elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// `float32 [1, 1, 8, 8]`.
    pub fn describe(&self) -> String {
        let note = match self.dtype() {
            DType::Bool => " (as u8 0/1)",
            DType::F16 | DType::Bf16 => " (raw u16 bits)",
            _ => "",
        };
        format!("{} {:?}{note}", self.dtype().name(), self.shape)
    }
}

/// One gear of a model with gears: its I/O shapes (in model order) and plan size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GearIo {
    pub inputs: Vec<Vec<usize>>,
    pub outputs: Vec<Vec<usize>>,
    /// The gear's own plan (the arena holds the largest gear's plus staging).
    pub arena_bytes: usize,
    pub tasks: usize,
}

/// What the bindings need to know about a compiled model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    /// The graph's name.
    pub model_name: String,
    pub inputs: Vec<IoSpec>,
    pub outputs: Vec<IoSpec>,
    /// Arena bytes for a 64-byte aligned buffer.
    pub arena_bytes: usize,
    pub blob_bytes: usize,
    pub tasks: usize,
    /// The kernels the tasks run, sorted and unique: (op kind, dtype, variant) numbers of a
    /// [`ge_runtime::format::KernelId`].
    pub kernels: Vec<(u16, u8, u8)>,
    /// Every gear, smallest first (empty for a single-shape model); `inputs` and `outputs`
    /// above are the largest gear's.
    #[serde(default)]
    pub gears: Vec<GearIo>,
}

impl Interface {
    /// Reads the interface of a compiled blob (validating it).
    pub fn from_blob(blob: &[u8]) -> Result<Interface> {
        let aligned = ge_runtime::AlignedBlob::from_bytes(blob);
        let model = ge_runtime::Model::from_bytes(aligned.as_bytes())
            .map_err(|e| CompileError::Model(format!("the compiled blob does not load: {e}")))?;
        let spec = |io: ge_runtime::IoInfo<'_>| IoSpec {
            name: io.name.to_string(),
            dtype: io.dtype as u8,
            shape: io.shape.dims().to_vec(),
        };
        let dims = |io: Option<ge_runtime::IoInfo<'_>>| {
            io.map_or(Vec::new(), |io| io.shape.dims().to_vec())
        };
        let gears = (0..model.gear_count())
            .map(|g| {
                let g = model.gear(g).map_err(|e| {
                    CompileError::Model(format!("the compiled blob's gear {g} does not load: {e}"))
                })?;
                Ok(GearIo {
                    inputs: (0..g.input_count()).map(|i| dims(g.input(i))).collect(),
                    outputs: (0..g.output_count()).map(|i| dims(g.output(i))).collect(),
                    arena_bytes: g.arena_bytes(),
                    tasks: g.tasks().len(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Interface {
            gears,
            model_name: model.name().to_string(),
            inputs: (0..model.input_count())
                .filter_map(|i| model.input(i))
                .map(spec)
                .collect(),
            outputs: (0..model.output_count())
                .filter_map(|i| model.output(i))
                .map(spec)
                .collect(),
            arena_bytes: model.arena_bytes(),
            blob_bytes: blob.len(),
            tasks: model.tasks().len(),
            kernels: {
                let mut k: Vec<_> = model
                    .kernels()
                    .map(|k| (k.op, k.dtype, k.variant))
                    .collect();
                k.sort_unstable();
                k.dedup();
                k
            },
        })
    }
}
