//! Tensor payloads: ge's owned tensor type and the files that carry tensors.
//!
//! [`TensorData`] is ge's owned, validated form of a dense tensor: element type,
//! dimensions and the elements as little-endian bytes in C (row-major) order.
//! `bool` is one byte per element (0 or 1); `float16` / `bfloat16` are stored as
//! their `u16` bit patterns. The ONNX importer, the IR, the passes and the tools
//! all hold constants and input values in this form.
//!
//! * [`decode_tensor`] reads every storage form ONNX allows for the supported
//!   element types: `raw_data`, the typed `*_data` fields and external data files
//!   (`proto.rs`, with the external-file reader in `external.rs`).
//! * [`encode_tensor`] writes the `raw_data` form.
//! * [`read_tensor_pb`] / [`write_tensor_pb`] handle serialized `TensorProto`
//!   files (the ONNX backend-test layout `test_data_set_0/input_0.pb`).
//! * [`read_npy`] / [`write_npy`] (and the in-memory [`npy_from_bytes`] /
//!   [`npy_to_bytes`]) handle NumPy `.npy` files, format versions 1, 2 and 3 (`npy.rs`).
//! * [`read_tensor_file`] reads either, by extension (what the CLI, the builder and
//!   `ge_model!` read input values with).

use std::path::{Path, PathBuf};

use ge_runtime::format::DType;

mod external;
mod npy;
mod proto;

pub use npy::{npy_from_bytes, npy_to_bytes, read_npy, write_npy};
pub use proto::{decode_tensor, dtype_from_onnx, encode_tensor, read_tensor_pb, write_tensor_pb};

/// An owned dense tensor: little-endian element bytes in C order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorData {
    /// Element type.
    pub dtype: DType,
    /// Dimensions; empty for a scalar.
    pub dims: Vec<usize>,
    /// `numel() * dtype.size()` bytes, little-endian, C order.
    pub bytes: Vec<u8>,
}

impl TensorData {
    /// Builds a tensor, checking that `bytes` holds exactly the elements `dims` calls for.
    pub fn new(dtype: DType, dims: Vec<usize>, bytes: Vec<u8>) -> Result<Self, TensorError> {
        let expected = byte_len(dtype, &dims, "<new>")?;
        if bytes.len() != expected {
            return Err(TensorError::DataLength {
                name: "<new>".into(),
                field: "bytes",
                actual: bytes.len(),
                expected,
                dtype,
                dims: dims.iter().map(|&d| d as i64).collect(),
            });
        }
        let mut t = TensorData { dtype, dims, bytes };
        t.normalize_bools();
        Ok(t)
    }

    /// Builds a tensor from typed elements (e.g. `&[f32]` for `F32`, `&[u16]` bits for `F16`).
    ///
    /// Fails when `T` is not the size of one `dtype` element or the count does not match `dims`.
    pub fn from_elements<T: bytemuck::Pod>(
        dtype: DType,
        dims: Vec<usize>,
        elements: &[T],
    ) -> Result<Self, TensorError> {
        if size_of::<T>() != dtype.size() {
            return Err(TensorError::Invalid {
                name: "<new>".into(),
                reason: format!(
                    "element type of {} bytes cannot hold {} (which is {} bytes)",
                    size_of::<T>(),
                    dtype.name(),
                    dtype.size()
                ),
            });
        }
        let mut bytes = Vec::with_capacity(size_of_val(elements));
        for e in elements {
            let mut b = bytemuck::bytes_of(e).to_vec();
            if cfg!(target_endian = "big") {
                b.reverse();
            }
            bytes.extend_from_slice(&b);
        }
        Self::new(dtype, dims, bytes)
    }

    /// Number of elements (1 for a scalar).
    pub fn numel(&self) -> usize {
        self.dims.iter().product()
    }

    /// Converts every element to `f32` (integers and `f64` by `as`, halves exactly).
    pub fn to_f32_vec(&self) -> Vec<f32> {
        let n = self.dtype.size();
        self.bytes
            .chunks_exact(n)
            .map(|c| match self.dtype {
                DType::F32 => f32::from_le_bytes(c.try_into().unwrap()),
                DType::F64 => f64::from_le_bytes(c.try_into().unwrap()) as f32,
                DType::F16 => half::f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32(),
                DType::Bf16 => half::bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32(),
                DType::U8 | DType::Bool => c[0] as f32,
                DType::I8 => c[0] as i8 as f32,
                DType::U16 => u16::from_le_bytes([c[0], c[1]]) as f32,
                DType::I16 => i16::from_le_bytes([c[0], c[1]]) as f32,
                DType::I32 => i32::from_le_bytes(c.try_into().unwrap()) as f32,
                DType::U32 => u32::from_le_bytes(c.try_into().unwrap()) as f32,
                DType::I64 => i64::from_le_bytes(c.try_into().unwrap()) as f32,
                DType::U64 => u64::from_le_bytes(c.try_into().unwrap()) as f32,
            })
            .collect()
    }

    fn normalize_bools(&mut self) {
        if self.dtype == DType::Bool {
            for b in &mut self.bytes {
                *b = u8::from(*b != 0);
            }
        }
    }
}

/// The file stem a tensor named `name` is stored under (`ge run`'s `DIR/<name>.npy`, a
/// calibration directory's inputs): `/` and `:` become `_`.
pub fn file_stem(name: &str) -> String {
    name.replace(['/', ':'], "_")
}

/// Errors from decoding or reading tensors.
#[derive(Debug, thiserror::Error)]
pub enum TensorError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{} is not a serialized onnx TensorProto ({source}); \
         pass a tensor .pb file such as test_data_set_0/input_0.pb",
        path.display()
    )]
    Decode {
        path: PathBuf,
        #[source]
        source: prost::DecodeError,
    },
    #[error(
        "tensor '{name}': string tensors are not supported; \
         ge compiles numeric tensors only, so remove or pre-process the string input"
    )]
    StringTensor { name: String },
    #[error(
        "tensor '{name}': data type {code} ({type_name}) is not supported; ge supports \
         float32, float16, bfloat16, float64, int8/16/32/64, uint8/16/32/64 and bool \
         (convert the model, e.g. cast the tensor to float32)"
    )]
    UnsupportedDType {
        name: String,
        code: i32,
        type_name: &'static str,
    },
    #[error("tensor '{name}': dimension {index} is {value}; tensor dimensions must be >= 0")]
    NegativeDim {
        name: String,
        index: usize,
        value: i64,
    },
    #[error("tensor '{name}': dims {dims:?} describe more elements than fit in memory")]
    TooLarge { name: String, dims: Vec<i64> },
    #[error(
        "tensor '{name}': {field} holds {actual} bytes, but dims {dims:?} of {} need {expected} \
         bytes; the file is truncated or the tensor is malformed",
        dtype.name()
    )]
    DataLength {
        name: String,
        field: &'static str,
        actual: usize,
        expected: usize,
        dtype: DType,
        dims: Vec<i64>,
    },
    #[error("tensor '{name}': {field} holds {actual} elements, but dims {dims:?} need {expected}")]
    ElementCount {
        name: String,
        field: &'static str,
        actual: usize,
        expected: usize,
        dims: Vec<i64>,
    },
    #[error("tensor '{name}': {field} value {value} is out of range for {}", dtype.name())]
    OutOfRange {
        name: String,
        field: &'static str,
        value: i64,
        dtype: DType,
    },
    #[error("tensor '{name}': external data '{location}' cannot be used: {reason}")]
    ExternalData {
        name: String,
        location: String,
        reason: String,
    },
    #[error("tensor '{name}': {reason}")]
    Invalid { name: String, reason: String },
    #[error("{source_name}: invalid .npy file: {reason}")]
    Npy { source_name: String, reason: String },
}

/// Reads a tensor file by its extension: a `.pb` file holds a serialized ONNX `TensorProto`,
/// anything else is read as `.npy`. This is what `--input-value`, `ge run --input` and the
/// `ge_model!` `input_value` option read.
pub fn read_tensor_file(path: &Path) -> Result<TensorData, TensorError> {
    if path.extension().is_some_and(|e| e == "pb") {
        read_tensor_pb(path)
    } else {
        read_npy(path)
    }
}

/// Bytes of a `dtype` tensor of `dims`, or [`TensorError::TooLarge`] if that overflows.
fn byte_len(dtype: DType, dims: &[usize], name: &str) -> Result<usize, TensorError> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .and_then(|n| n.checked_mul(dtype.size()))
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| TensorError::TooLarge {
            name: name.to_string(),
            dims: dims.iter().map(|&d| d as i64).collect(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::proto::TensorProto;
    use std::sync::atomic::{AtomicUsize, Ordering};

    pub(super) const ALL: [DType; 13] = DType::ALL;

    /// A fresh, empty directory under the system temp dir.
    pub(super) fn temp_dir(tag: &str) -> PathBuf {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ge-onnx-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Deterministic sample bytes (bools as 0/1).
    pub(super) fn sample(dtype: DType, dims: &[usize]) -> TensorData {
        let n: usize = dims.iter().product::<usize>() * dtype.size();
        let bytes = (0..n)
            .map(|i| {
                if dtype == DType::Bool {
                    (i % 3 == 0) as u8
                } else {
                    (i * 37 + 11) as u8
                }
            })
            .collect();
        TensorData::new(dtype, dims.to_vec(), bytes).unwrap()
    }

    pub(super) fn proto(dtype: i32, dims: &[i64]) -> TensorProto {
        TensorProto {
            name: Some("t".into()),
            data_type: Some(dtype),
            dims: dims.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn from_elements_checks_sizes() {
        let t = TensorData::from_elements(DType::F32, vec![2], &[1.5f32, 2.5]).unwrap();
        assert_eq!(t.to_f32_vec(), [1.5, 2.5]);
        assert!(TensorData::from_elements(DType::F64, vec![2], &[1.5f32, 2.5]).is_err());
        assert!(TensorData::from_elements(DType::F32, vec![3], &[1.5f32, 2.5]).is_err());
    }
}
