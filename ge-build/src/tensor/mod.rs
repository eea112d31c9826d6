//! Tensor payloads: ONNX `TensorProto` ⇄ owned bytes, plus NumPy `.npy` files.
//!
//! [`TensorData`] is ge's owned, validated form of a dense tensor: element type,
//! dimensions and the elements as little-endian bytes in C (row-major) order.
//! `bool` is one byte per element (0 or 1); `float16` / `bfloat16` are stored as
//! their `u16` bit patterns.
//!
//! * [`decode_tensor`] reads every storage form ONNX allows for the supported
//!   element types: `raw_data`, the typed `*_data` fields and external data files.
//! * [`encode_tensor`] writes the `raw_data` form.
//! * [`read_tensor_pb`] / [`write_tensor_pb`] handle serialized `TensorProto`
//!   files (the ONNX backend-test layout `test_data_set_0/input_0.pb`).
//! * [`read_npy`] / [`write_npy`] (and the in-memory [`npy_from_bytes`] /
//!   [`npy_to_bytes`]) handle NumPy `.npy` files, format versions 1, 2 and 3.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use ge_runtime::format::DType;
use prost::Message;

use crate::onnx::proto::TensorProto;
use crate::onnx::proto::tensor_proto::{DataLocation, DataType};

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

fn display_name(t: &TensorProto) -> String {
    match t.name.as_deref() {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => "<unnamed>".to_string(),
    }
}

/// Maps an ONNX `TensorProto.DataType` number to a [`DType`], with a descriptive error otherwise.
pub fn dtype_from_onnx(code: i32, tensor_name: &str) -> Result<DType, TensorError> {
    if let Ok(v) = u8::try_from(code)
        && let Some(d) = DType::from_u8(v)
    {
        return Ok(d);
    }
    let type_name = DataType::try_from(code).map_or("unknown", DataType::as_str_name);
    if code == DataType::String as i32 {
        return Err(TensorError::StringTensor {
            name: tensor_name.to_string(),
        });
    }
    Err(TensorError::UnsupportedDType {
        name: tensor_name.to_string(),
        code,
        type_name,
    })
}

fn check_dims(dims: &[i64], name: &str) -> Result<Vec<usize>, TensorError> {
    dims.iter()
        .enumerate()
        .map(|(index, &value)| {
            usize::try_from(value).map_err(|_| {
                if value < 0 {
                    TensorError::NegativeDim {
                        name: name.to_string(),
                        index,
                        value,
                    }
                } else {
                    TensorError::TooLarge {
                        name: name.to_string(),
                        dims: dims.to_vec(),
                    }
                }
            })
        })
        .collect()
}

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

/// Decodes a `TensorProto` into owned little-endian bytes.
///
/// Reads `raw_data` when present, otherwise the typed field ONNX prescribes for
/// the element type (`float_data`, `double_data`, `int64_data`, `uint64_data`,
/// or `int32_data`, which also carries 8/16-bit integers, bools and the bit
/// patterns of float16/bfloat16). With `data_location = EXTERNAL` the bytes
/// come from the file named by the `location` key (relative to `model_dir`,
/// which must be given), starting at `offset` (default 0) and `length` bytes
/// long (default: exactly the bytes the tensor needs).
pub fn decode_tensor(t: &TensorProto, model_dir: Option<&Path>) -> Result<TensorData, TensorError> {
    let name = display_name(t);
    let code = t.data_type.unwrap_or(0);
    if code == DataType::Undefined as i32 {
        return Err(TensorError::Invalid {
            name,
            reason: "data_type is missing (UNDEFINED); the model is malformed".into(),
        });
    }
    let dtype = dtype_from_onnx(code, &name)?;
    if t.segment.is_some() {
        return Err(TensorError::Invalid {
            name,
            reason: "segmented tensors (TensorProto.segment) are not supported; \
                     merge the segments into one tensor"
                .into(),
        });
    }
    let dims = check_dims(&t.dims, &name)?;
    let nbytes = byte_len(dtype, &dims, &name)?;
    let count = nbytes / dtype.size();

    let location = t.data_location.unwrap_or(DataLocation::Default as i32);
    let mut bytes = match DataLocation::try_from(location) {
        Ok(DataLocation::External) => read_external(t, &name, nbytes, model_dir)?,
        Ok(DataLocation::Default) => match &t.raw_data {
            Some(raw) => {
                if raw.len() != nbytes {
                    return Err(TensorError::DataLength {
                        name,
                        field: "raw_data",
                        actual: raw.len(),
                        expected: nbytes,
                        dtype,
                        dims: t.dims.clone(),
                    });
                }
                raw.clone()
            }
            None => decode_typed(t, &name, dtype, count)?,
        },
        Err(_) => {
            return Err(TensorError::Invalid {
                name,
                reason: format!(
                    "unknown data_location {location} (expected 0 DEFAULT or 1 EXTERNAL)"
                ),
            });
        }
    };
    if dtype == DType::Bool {
        for b in &mut bytes {
            *b = u8::from(*b != 0);
        }
    }
    Ok(TensorData { dtype, dims, bytes })
}

/// The typed field that holds `dtype` elements, per `onnx.proto`.
fn typed_field(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "float_data",
        DType::F64 => "double_data",
        DType::I64 => "int64_data",
        DType::U32 | DType::U64 => "uint64_data",
        DType::I32
        | DType::I16
        | DType::U16
        | DType::I8
        | DType::U8
        | DType::Bool
        | DType::F16
        | DType::Bf16 => "int32_data",
    }
}

fn decode_typed(
    t: &TensorProto,
    name: &str,
    dtype: DType,
    count: usize,
) -> Result<Vec<u8>, TensorError> {
    let want = typed_field(dtype);
    let fields: [(&'static str, usize); 6] = [
        ("float_data", t.float_data.len()),
        ("double_data", t.double_data.len()),
        ("int32_data", t.int32_data.len()),
        ("int64_data", t.int64_data.len()),
        ("uint64_data", t.uint64_data.len()),
        ("string_data", t.string_data.len()),
    ];
    if let Some((field, _)) = fields.iter().find(|(f, n)| *f != want && *n > 0) {
        return Err(TensorError::Invalid {
            name: name.to_string(),
            reason: format!(
                "{} data is stored in {field}, but ONNX stores {} elements in {want} or raw_data; \
                 the model is malformed",
                dtype.name(),
                dtype.name()
            ),
        });
    }
    let actual = fields.iter().find(|(f, _)| *f == want).map_or(0, |f| f.1);
    if actual != count {
        if actual == 0 {
            return Err(TensorError::Invalid {
                name: name.to_string(),
                reason: format!(
                    "tensor has dims {:?} but no data (no raw_data, {want} or external data)",
                    t.dims
                ),
            });
        }
        return Err(TensorError::ElementCount {
            name: name.to_string(),
            field: want,
            actual,
            expected: count,
            dims: t.dims.clone(),
        });
    }
    let mut out = Vec::with_capacity(count * dtype.size());
    let range_err = |value: i64| TensorError::OutOfRange {
        name: name.to_string(),
        field: want,
        value,
        dtype,
    };
    match dtype {
        DType::F32 => t
            .float_data
            .iter()
            .for_each(|v| out.extend(v.to_le_bytes())),
        DType::F64 => t
            .double_data
            .iter()
            .for_each(|v| out.extend(v.to_le_bytes())),
        DType::I64 => t
            .int64_data
            .iter()
            .for_each(|v| out.extend(v.to_le_bytes())),
        DType::U64 => t
            .uint64_data
            .iter()
            .for_each(|v| out.extend(v.to_le_bytes())),
        DType::U32 => {
            for &v in &t.uint64_data {
                let v = u32::try_from(v).map_err(|_| range_err(v as i64))?;
                out.extend(v.to_le_bytes());
            }
        }
        DType::I32 => t
            .int32_data
            .iter()
            .for_each(|v| out.extend(v.to_le_bytes())),
        DType::I16 => {
            for &v in &t.int32_data {
                let v = i16::try_from(v).map_err(|_| range_err(v.into()))?;
                out.extend(v.to_le_bytes());
            }
        }
        DType::U16 => {
            for &v in &t.int32_data {
                let v = u16::try_from(v).map_err(|_| range_err(v.into()))?;
                out.extend(v.to_le_bytes());
            }
        }
        DType::F16 | DType::Bf16 => {
            // Bit patterns: ONNX writes them as unsigned 16-bit values; accept
            // sign-extended ones too, as some exporters produce them.
            for &v in &t.int32_data {
                if !(i32::from(i16::MIN)..=i32::from(u16::MAX)).contains(&v) {
                    return Err(range_err(v.into()));
                }
                out.extend((v as u16).to_le_bytes());
            }
        }
        DType::I8 => {
            for &v in &t.int32_data {
                let v = i8::try_from(v).map_err(|_| range_err(v.into()))?;
                out.extend(v.to_le_bytes());
            }
        }
        DType::U8 => {
            for &v in &t.int32_data {
                let v = u8::try_from(v).map_err(|_| range_err(v.into()))?;
                out.push(v);
            }
        }
        DType::Bool => t
            .int32_data
            .iter()
            .for_each(|&v| out.push(u8::from(v != 0))),
    }
    Ok(out)
}

/// Checks an external-data `location` and resolves it inside `model_dir`.
fn resolve_external(model_dir: &Path, location: &str) -> Result<PathBuf, String> {
    if location.is_empty() {
        return Err("the location is empty".into());
    }
    if location.contains('\0') {
        return Err("the location contains a NUL byte".into());
    }
    let bytes = location.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if location.starts_with('/')
        || location.starts_with('\\')
        || drive
        || Path::new(location).is_absolute()
    {
        return Err(
            "absolute paths are not allowed; external data must be a path relative to the \
             model's directory"
                .into(),
        );
    }
    if location.split(['/', '\\']).any(|c| c == "..") {
        return Err(
            "paths containing '..' are not allowed; external data must stay inside the \
             model's directory"
                .into(),
        );
    }
    let joined = model_dir.join(location);
    if joined
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err("paths containing '..' are not allowed".into());
    }
    let canon_dir = model_dir
        .canonicalize()
        .map_err(|e| format!("cannot open model directory {}: {e}", model_dir.display()))?;
    let canon = joined
        .canonicalize()
        .map_err(|e| format!("cannot open {}: {e}", joined.display()))?;
    if !canon.starts_with(&canon_dir) {
        return Err(format!(
            "it resolves to {}, outside the model's directory {} (via a symbolic link)",
            canon.display(),
            canon_dir.display()
        ));
    }
    Ok(canon)
}

fn read_external(
    t: &TensorProto,
    name: &str,
    nbytes: usize,
    model_dir: Option<&Path>,
) -> Result<Vec<u8>, TensorError> {
    let mut location = None;
    let mut offset: u64 = 0;
    let mut length: Option<u64> = None;
    let loc_for_err = |t: &TensorProto| {
        t.external_data
            .iter()
            .find(|e| e.key() == "location")
            .map_or_else(String::new, |e| e.value().to_string())
    };
    let err = |reason: String| TensorError::ExternalData {
        name: name.to_string(),
        location: loc_for_err(t),
        reason,
    };
    for entry in &t.external_data {
        match entry.key() {
            "location" => location = Some(entry.value()),
            "offset" => {
                offset = entry.value().trim().parse().map_err(|_| {
                    err(format!(
                        "offset '{}' is not a non-negative integer",
                        entry.value()
                    ))
                })?;
            }
            "length" => {
                length = Some(entry.value().trim().parse().map_err(|_| {
                    err(format!(
                        "length '{}' is not a non-negative integer",
                        entry.value()
                    ))
                })?);
            }
            _ => {} // checksum, basepath, …: not needed to read the bytes.
        }
    }
    let Some(location) = location else {
        return Err(err(
            "data_location is EXTERNAL but external_data has no 'location' key".into(),
        ));
    };
    let Some(model_dir) = model_dir else {
        return Err(err(
            "no model directory is known; load the model from a file path so that \
             external data can be found next to it"
                .into(),
        ));
    };
    let path = resolve_external(model_dir, location).map_err(err)?;
    if let Some(len) = length
        && len != nbytes as u64
    {
        return Err(TensorError::DataLength {
            name: name.to_string(),
            field: "external data length",
            actual: usize::try_from(len).unwrap_or(usize::MAX),
            expected: nbytes,
            dtype: dtype_from_onnx(t.data_type(), name)?,
            dims: t.dims.clone(),
        });
    }
    let io_err = |source| TensorError::Io {
        path: path.clone(),
        source,
    };
    let mut file = File::open(&path).map_err(io_err)?;
    let file_len = file.metadata().map_err(io_err)?.len();
    let available = file_len.saturating_sub(offset);
    if offset > file_len || available < nbytes as u64 {
        return Err(err(format!(
            "{} is {file_len} bytes long, too short for {nbytes} bytes at offset {offset}; \
             the external data file is truncated or does not belong to this model",
            path.display()
        )));
    }
    file.seek(SeekFrom::Start(offset)).map_err(io_err)?;
    let mut bytes = vec![0u8; nbytes];
    file.read_exact(&mut bytes).map_err(io_err)?;
    Ok(bytes)
}

/// Encodes `data` as a `TensorProto` in the `raw_data` form.
pub fn encode_tensor(name: &str, data: &TensorData) -> TensorProto {
    TensorProto {
        dims: data.dims.iter().map(|&d| d as i64).collect(),
        data_type: Some(data.dtype as i32),
        name: Some(name.to_string()),
        raw_data: Some(data.bytes.clone()),
        ..Default::default()
    }
}

/// Reads a serialized `TensorProto` file (e.g. an ONNX test's `input_0.pb`).
///
/// External data, if any, is resolved relative to the file's directory.
pub fn read_tensor_pb(path: &Path) -> Result<TensorData, TensorError> {
    let buf = std::fs::read(path).map_err(|source| TensorError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let t = TensorProto::decode(buf.as_slice()).map_err(|source| TensorError::Decode {
        path: path.to_path_buf(),
        source,
    })?;
    decode_tensor(&t, path.parent())
}

/// Writes `data` as a serialized `TensorProto` (raw_data form) named `name`.
pub fn write_tensor_pb(path: &Path, name: &str, data: &TensorData) -> Result<(), TensorError> {
    std::fs::write(path, encode_tensor(name, data).encode_to_vec()).map_err(|source| {
        TensorError::Io {
            path: path.to_path_buf(),
            source,
        }
    })
}

// ---------------------------------------------------------------------------
// NumPy .npy
// ---------------------------------------------------------------------------

const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";
const NPY_ALIGN: usize = 64;

/// The `descr` string numpy uses for `dtype`, or `None` when numpy has no such type.
fn npy_descr(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::F16 => "<f2",
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::U16 => "<u2",
        DType::I32 => "<i4",
        DType::U32 => "<u4",
        DType::I64 => "<i8",
        DType::U64 => "<u8",
        DType::Bf16 => return None,
    })
}

fn dtype_from_descr(descr: &str) -> Result<DType, String> {
    let (order, rest) = descr.split_at(descr.chars().next().map_or(0, char::len_utf8));
    let dtype = match rest {
        "f4" => DType::F32,
        "f8" => DType::F64,
        "f2" => DType::F16,
        "b1" => DType::Bool,
        "u1" => DType::U8,
        "i1" => DType::I8,
        "i2" => DType::I16,
        "u2" => DType::U16,
        "i4" => DType::I32,
        "u4" => DType::U32,
        "i8" => DType::I64,
        "u8" => DType::U64,
        _ => {
            return Err(format!(
                "dtype '{descr}' is not supported; save the array as one of float16/32/64, \
                 (u)int8/16/32/64 or bool (e.g. arr.astype(np.float32))"
            ));
        }
    };
    match order {
        "<" | "|" | "=" => Ok(dtype),
        ">" if dtype.size() == 1 => Ok(dtype),
        ">" => Err(format!(
            "dtype '{descr}' is big-endian; save a little-endian array \
             (arr.astype(arr.dtype.newbyteorder('<')))"
        )),
        _ => Err(format!(
            "dtype '{descr}' has an unknown byte-order character"
        )),
    }
}

/// A Python literal as found in a `.npy` header dict.
#[derive(Debug, PartialEq)]
enum PyValue {
    Str(String),
    Bool(bool),
    Int(u64),
    None,
    Tuple(Vec<PyValue>),
    List(Vec<PyValue>),
    Dict(Vec<(PyValue, PyValue)>),
}

/// A tiny recursive-descent parser for the Python literals numpy writes.
struct PyParser<'a> {
    s: &'a [u8],
    pos: usize,
    /// Nesting depth of the value being parsed (bounded: a crafted header must not
    /// overflow the stack).
    depth: usize,
}

/// Deepest nesting of tuples, lists and dicts a `.npy` header may use (numpy writes 2).
const MAX_PY_DEPTH: usize = 16;

impl PyParser<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!(
                "expected '{}' at byte {} of the header",
                c as char, self.pos
            ))
        }
    }

    /// Parses `open item (, item)* ,? close`; `item` parses one element.
    fn seq<T>(
        &mut self,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Result<T, String>,
    ) -> Result<(Vec<T>, bool), String> {
        let mut out = Vec::new();
        let mut trailing_comma = false;
        loop {
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok((out, trailing_comma));
            }
            out.push(item(self)?);
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    trailing_comma = true;
                }
                Some(c) if c == close => {
                    trailing_comma = false;
                }
                _ => {
                    return Err(format!(
                        "expected ',' or '{}' at byte {} of the header",
                        close as char, self.pos
                    ));
                }
            }
        }
    }

    fn value(&mut self) -> Result<PyValue, String> {
        if self.depth >= MAX_PY_DEPTH {
            return Err(format!(
                "the header nests deeper than {MAX_PY_DEPTH} levels"
            ));
        }
        self.depth += 1;
        let v = self.value_inner();
        self.depth -= 1;
        v
    }

    fn value_inner(&mut self) -> Result<PyValue, String> {
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                self.pos += 1;
                let start = self.pos;
                while self.pos < self.s.len() && self.s[self.pos] != q {
                    if self.s[self.pos] == b'\\' {
                        return Err("escape sequences in header strings are not supported".into());
                    }
                    self.pos += 1;
                }
                if self.pos >= self.s.len() {
                    return Err("unterminated string in the header".into());
                }
                let text = std::str::from_utf8(&self.s[start..self.pos])
                    .map_err(|_| "header string is not UTF-8".to_string())?;
                self.pos += 1;
                Ok(PyValue::Str(text.to_string()))
            }
            Some(b'(') => {
                self.pos += 1;
                let (items, trailing) = self.seq(b')', Self::value)?;
                if items.len() == 1 && !trailing {
                    // `(x)` is just a parenthesised value in Python.
                    Ok(items.into_iter().next().unwrap())
                } else {
                    Ok(PyValue::Tuple(items))
                }
            }
            Some(b'[') => {
                self.pos += 1;
                Ok(PyValue::List(self.seq(b']', Self::value)?.0))
            }
            Some(b'{') => {
                self.pos += 1;
                let (items, _) = self.seq(b'}', |p| {
                    let k = p.value()?;
                    p.expect(b':')?;
                    Ok((k, p.value()?))
                })?;
                Ok(PyValue::Dict(items))
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.pos;
                while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
                    self.pos += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap();
                let v = text
                    .parse()
                    .map_err(|_| format!("integer {text} in the header is too large"))?;
                // Python 2 era files write longs as `3L`.
                if matches!(self.s.get(self.pos), Some(b'L' | b'l')) {
                    self.pos += 1;
                }
                Ok(PyValue::Int(v))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.pos;
                while self.pos < self.s.len() && self.s[self.pos].is_ascii_alphanumeric() {
                    self.pos += 1;
                }
                match &self.s[start..self.pos] {
                    b"True" => Ok(PyValue::Bool(true)),
                    b"False" => Ok(PyValue::Bool(false)),
                    b"None" => Ok(PyValue::None),
                    other => Err(format!(
                        "unexpected word '{}' in the header",
                        String::from_utf8_lossy(other)
                    )),
                }
            }
            Some(b'-') => Err("negative numbers are not valid in a .npy header".into()),
            Some(c) => Err(format!(
                "unexpected character '{}' at byte {} of the header",
                c as char, self.pos
            )),
            None => Err("the header ends early".into()),
        }
    }
}

struct NpyHeader {
    dtype: DType,
    fortran_order: bool,
    shape: Vec<usize>,
}

fn parse_npy_header(text: &[u8]) -> Result<NpyHeader, String> {
    let mut p = PyParser {
        s: text,
        pos: 0,
        depth: 0,
    };
    let dict = match p.value()? {
        PyValue::Dict(d) => d,
        _ => return Err("the header is not a Python dict".into()),
    };
    if p.peek().is_some() {
        return Err(format!(
            "unexpected text after the header dict at byte {}",
            p.pos
        ));
    }
    let get = |key: &str| {
        dict.iter()
            .find(|(k, _)| *k == PyValue::Str(key.to_string()))
            .map(|(_, v)| v)
            .ok_or_else(|| format!("the header has no '{key}' key"))
    };
    let dtype = match get("descr")? {
        PyValue::Str(s) => dtype_from_descr(s)?,
        PyValue::List(_) => {
            return Err("structured (record) arrays are not supported; save a plain array".into());
        }
        other => return Err(format!("'descr' has an unexpected value {other:?}")),
    };
    let fortran_order = match get("fortran_order")? {
        PyValue::Bool(b) => *b,
        other => {
            return Err(format!(
                "'fortran_order' is {other:?}, expected True or False"
            ));
        }
    };
    let shape = match get("shape")? {
        PyValue::Tuple(items) => items
            .iter()
            .map(|v| match v {
                PyValue::Int(n) => {
                    usize::try_from(*n).map_err(|_| format!("dimension {n} is too large"))
                }
                other => Err(format!(
                    "shape entry {other:?} is not a non-negative integer"
                )),
            })
            .collect::<Result<Vec<_>, _>>()?,
        PyValue::Int(n) => {
            vec![usize::try_from(*n).map_err(|_| format!("dimension {n} is too large"))?]
        }
        other => {
            return Err(format!(
                "'shape' is {other:?}, expected a tuple of integers"
            ));
        }
    };
    Ok(NpyHeader {
        dtype,
        fortran_order,
        shape,
    })
}

/// Parses the bytes of a `.npy` file (format version 1.0, 2.0 or 3.0).
pub fn npy_from_bytes(buf: &[u8]) -> Result<TensorData, TensorError> {
    parse_npy(buf).map_err(|reason| TensorError::Npy {
        source_name: "<memory>".into(),
        reason,
    })
}

fn parse_npy(buf: &[u8]) -> Result<TensorData, String> {
    if buf.len() < 10 || &buf[..6] != NPY_MAGIC {
        return Err("missing the \\x93NUMPY magic; is this a .npy file (not .npz)?".into());
    }
    let (major, minor) = (buf[6], buf[7]);
    let (header_len, start) = match major {
        1 => (usize::from(u16::from_le_bytes([buf[8], buf[9]])), 10),
        2 | 3 => {
            if buf.len() < 12 {
                return Err("the file ends inside the header length".into());
            }
            let n = u32::from_le_bytes([buf[8], buf[9], buf[10], buf[11]]);
            (
                usize::try_from(n).map_err(|_| "header too long".to_string())?,
                12,
            )
        }
        _ => {
            return Err(format!(
                "format version {major}.{minor} is not supported (only 1.0, 2.0, 3.0)"
            ));
        }
    };
    let data_start = start + header_len;
    if buf.len() < data_start {
        return Err(format!(
            "the header claims {header_len} bytes but the file has only {}",
            buf.len() - start
        ));
    }
    let header = parse_npy_header(&buf[start..data_start])?;
    if header.fortran_order {
        return Err("fortran_order is True; ge reads C-order arrays only \
             (save np.ascontiguousarray(arr) instead)"
            .into());
    }
    let expected = header
        .shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .and_then(|n| n.checked_mul(header.dtype.size()))
        .ok_or_else(|| format!("shape {:?} is too large", header.shape))?;
    let data = &buf[data_start..];
    if data.len() != expected {
        return Err(format!(
            "shape {:?} of {} needs {expected} data bytes but the file has {}",
            header.shape,
            header.dtype.name(),
            data.len()
        ));
    }
    let mut t = TensorData {
        dtype: header.dtype,
        dims: header.shape,
        bytes: data.to_vec(),
    };
    t.normalize_bools();
    Ok(t)
}

/// Serializes `data` as a `.npy` file, byte-identical to what numpy 2.x `np.save` writes.
///
/// `bfloat16` has no numpy dtype and is rejected.
pub fn npy_to_bytes(data: &TensorData) -> Result<Vec<u8>, TensorError> {
    let Some(descr) = npy_descr(data.dtype) else {
        return Err(TensorError::Npy {
            source_name: "<memory>".into(),
            reason: "bfloat16 has no NumPy dtype; convert the tensor to float32 first".into(),
        });
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (");
    for (i, d) in data.dims.iter().enumerate() {
        if i > 0 {
            dict.push_str(", ");
        }
        write!(dict, "{d}").unwrap();
    }
    if data.dims.len() == 1 {
        dict.push(',');
    }
    dict.push_str("), }");
    // numpy leaves room for the first axis to grow in place (GROWTH_AXIS_MAX_DIGITS = 21).
    if let Some(first) = data.dims.first() {
        let digits = first.to_string().len();
        dict.extend(std::iter::repeat_n(' ', 21usize.saturating_sub(digits)));
    }
    let (version, prefix_len) = if dict.len() + 1 + 10 + NPY_ALIGN <= usize::from(u16::MAX) {
        (1u8, 10)
    } else {
        (2u8, 12)
    };
    let hlen = dict.len() + 1;
    let pad = NPY_ALIGN - (prefix_len + hlen) % NPY_ALIGN;
    let total_header = hlen + pad;
    let mut out = Vec::with_capacity(prefix_len + total_header + data.bytes.len());
    out.extend_from_slice(NPY_MAGIC);
    out.extend([version, 0]);
    if version == 1 {
        out.extend((total_header as u16).to_le_bytes());
    } else {
        let n = u32::try_from(total_header).map_err(|_| TensorError::Npy {
            source_name: "<memory>".into(),
            reason: "header too long".into(),
        })?;
        out.extend(n.to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out.extend_from_slice(&data.bytes);
    Ok(out)
}

/// Reads a NumPy `.npy` file (C order, little-endian numeric dtypes).
pub fn read_npy(path: &Path) -> Result<TensorData, TensorError> {
    let buf = std::fs::read(path).map_err(|source| TensorError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_npy(&buf).map_err(|reason| TensorError::Npy {
        source_name: path.display().to_string(),
        reason,
    })
}

/// Writes `data` as a NumPy `.npy` file (format 1.0, or 2.0 for huge headers).
pub fn write_npy(path: &Path, data: &TensorData) -> Result<(), TensorError> {
    let bytes = npy_to_bytes(data).map_err(|e| match e {
        TensorError::Npy { reason, .. } => TensorError::Npy {
            source_name: path.display().to_string(),
            reason,
        },
        other => other,
    })?;
    std::fs::write(path, bytes).map_err(|source| TensorError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::proto::{ModelProto, StringStringEntryProto, attribute_proto::AttributeType};
    use std::sync::atomic::{AtomicUsize, Ordering};

    const ALL: [DType; 13] = [
        DType::F32,
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::Bool,
        DType::F16,
        DType::F64,
        DType::U32,
        DType::U64,
        DType::Bf16,
    ];

    /// A fresh, empty directory under the system temp dir.
    fn temp_dir(tag: &str) -> PathBuf {
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
    fn sample(dtype: DType, dims: &[usize]) -> TensorData {
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

    fn proto(dtype: i32, dims: &[i64]) -> TensorProto {
        TensorProto {
            name: Some("t".into()),
            data_type: Some(dtype),
            dims: dims.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn raw_round_trip_every_dtype() {
        for dtype in ALL {
            for dims in [&[][..], &[0][..], &[3][..], &[2, 3, 1][..]] {
                let data = sample(dtype, dims);
                let p = encode_tensor("x", &data);
                // Through the wire format too.
                let p = TensorProto::decode(p.encode_to_vec().as_slice()).unwrap();
                assert_eq!(p.name(), "x");
                assert_eq!(decode_tensor(&p, None).unwrap(), data, "{dtype:?} {dims:?}");
            }
        }
    }

    #[test]
    fn typed_fields() {
        let mut p = proto(1, &[2, 2]);
        p.float_data = vec![1.0, -2.5, 0.0, 3.25];
        let t = decode_tensor(&p, None).unwrap();
        assert_eq!(t.to_f32_vec(), [1.0, -2.5, 0.0, 3.25]);

        let mut p = proto(7, &[3]);
        p.int64_data = vec![-1, i64::MAX, 5];
        let t = decode_tensor(&p, None).unwrap();
        assert_eq!(t.bytes, bytemuck::cast_slice::<i64, u8>(&[-1, i64::MAX, 5]));

        let mut p = proto(11, &[]);
        p.double_data = vec![0.5];
        assert_eq!(decode_tensor(&p, None).unwrap().bytes, 0.5f64.to_le_bytes());

        // float16 bits in int32_data (onnx.helper writes them unsigned; accept sign-extended too).
        let mut p = proto(10, &[3]);
        p.int32_data = vec![0x3c00, 0xc000, -16384];
        let t = decode_tensor(&p, None).unwrap();
        assert_eq!(t.to_f32_vec(), [1.0, -2.0, -2.0]);

        let mut p = proto(16, &[1]);
        p.int32_data = vec![0x3f80];
        assert_eq!(decode_tensor(&p, None).unwrap().to_f32_vec(), [1.0]);

        let mut p = proto(9, &[4]);
        p.int32_data = vec![1, 0, 1, 1];
        assert_eq!(decode_tensor(&p, None).unwrap().bytes, [1, 0, 1, 1]);

        let mut p = proto(3, &[2]);
        p.int32_data = vec![-128, 127];
        assert_eq!(decode_tensor(&p, None).unwrap().bytes, [0x80, 0x7f]);

        let mut p = proto(4, &[1]);
        p.int32_data = vec![65535];
        assert_eq!(decode_tensor(&p, None).unwrap().bytes, [0xff, 0xff]);

        let mut p = proto(12, &[1]);
        p.uint64_data = vec![0xdead_beef];
        assert_eq!(
            decode_tensor(&p, None).unwrap().bytes,
            0xdead_beefu32.to_le_bytes()
        );

        // Empty tensors need no data.
        let p = proto(1, &[0, 4]);
        assert!(decode_tensor(&p, None).unwrap().bytes.is_empty());
    }

    #[test]
    fn typed_field_errors() {
        let mut p = proto(2, &[1]);
        p.int32_data = vec![256];
        assert!(matches!(
            decode_tensor(&p, None),
            Err(TensorError::OutOfRange { .. })
        ));

        let mut p = proto(12, &[1]);
        p.uint64_data = vec![1 << 40];
        assert!(matches!(
            decode_tensor(&p, None),
            Err(TensorError::OutOfRange { .. })
        ));

        let mut p = proto(1, &[3]);
        p.float_data = vec![1.0, 2.0];
        assert!(matches!(
            decode_tensor(&p, None),
            Err(TensorError::ElementCount { .. })
        ));

        let mut p = proto(7, &[1]);
        p.float_data = vec![1.0];
        let e = decode_tensor(&p, None).unwrap_err().to_string();
        assert!(e.contains("float_data") && e.contains("int64_data"), "{e}");

        let p = proto(1, &[2]);
        let e = decode_tensor(&p, None).unwrap_err().to_string();
        assert!(e.contains("no data"), "{e}");
    }

    #[test]
    fn malformed_tensors() {
        let mut p = proto(1, &[2, 3]);
        p.raw_data = Some(vec![0; 20]);
        let e = decode_tensor(&p, None).unwrap_err();
        assert!(
            matches!(
                e,
                TensorError::DataLength {
                    actual: 20,
                    expected: 24,
                    ..
                }
            ),
            "{e}"
        );

        let mut p = proto(1, &[2, -1]);
        p.raw_data = Some(vec![]);
        assert!(matches!(
            decode_tensor(&p, None),
            Err(TensorError::NegativeDim {
                index: 1,
                value: -1,
                ..
            })
        ));

        let mut p = proto(1, &[1 << 40, 1 << 40]);
        p.raw_data = Some(vec![]);
        assert!(matches!(
            decode_tensor(&p, None),
            Err(TensorError::TooLarge { .. })
        ));
        let mut p = proto(7, &[i64::MAX / 4]);
        p.raw_data = Some(vec![]);
        assert!(matches!(
            decode_tensor(&p, None),
            Err(TensorError::TooLarge { .. })
        ));

        let e = decode_tensor(&proto(8, &[1]), None).unwrap_err();
        assert_eq!(
            e.to_string().split(';').next().unwrap(),
            "tensor 't': string tensors are not supported"
        );

        let e = decode_tensor(&proto(14, &[1]), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("data type 14 (COMPLEX64)"), "{e}");
        let e = decode_tensor(&proto(77, &[1]), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("data type 77"), "{e}");
        let e = decode_tensor(&proto(0, &[1]), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("UNDEFINED"), "{e}");

        let mut p = proto(1, &[1]);
        p.raw_data = Some(vec![0; 4]);
        p.data_location = Some(7);
        assert!(decode_tensor(&p, None).is_err());
    }

    fn external(location: &str, offset: Option<u64>, length: Option<u64>) -> TensorProto {
        let mut p = proto(1, &[2, 2]);
        p.data_location = Some(DataLocation::External as i32);
        let kv = |k: &str, v: String| StringStringEntryProto {
            key: Some(k.into()),
            value: Some(v),
        };
        p.external_data.push(kv("location", location.into()));
        if let Some(o) = offset {
            p.external_data.push(kv("offset", o.to_string()));
        }
        if let Some(l) = length {
            p.external_data.push(kv("length", l.to_string()));
        }
        p
    }

    #[test]
    fn external_data() {
        let dir = temp_dir("ext");
        std::fs::create_dir_all(dir.join("weights")).unwrap();
        let values = [1.0f32, 2.0, 3.0, 4.0];
        let mut file = vec![0xaa; 8]; // some other tensor first
        file.extend_from_slice(bytemuck::cast_slice(&values));
        file.extend_from_slice(&[0xbb; 4]);
        std::fs::write(dir.join("weights/w.bin"), &file).unwrap();

        let t = decode_tensor(&external("weights/w.bin", Some(8), Some(16)), Some(&dir)).unwrap();
        assert_eq!(t.to_f32_vec(), values);
        assert_eq!(t.dims, [2, 2]);
        // Without length: exactly the bytes the tensor needs.
        let t = decode_tensor(&external("weights/w.bin", Some(8), None), Some(&dir)).unwrap();
        assert_eq!(t.to_f32_vec(), values);
        // Without offset: from the start.
        let t = decode_tensor(&external("weights/w.bin", None, Some(16)), Some(&dir)).unwrap();
        assert_eq!(t.bytes[..8], [0xaa; 8]);

        // Wrong length, too short, missing file, no model dir.
        assert!(matches!(
            decode_tensor(&external("weights/w.bin", Some(8), Some(12)), Some(&dir)),
            Err(TensorError::DataLength { .. })
        ));
        let e = decode_tensor(&external("weights/w.bin", Some(20), None), Some(&dir)).unwrap_err();
        assert!(e.to_string().contains("too short"), "{e}");
        assert!(decode_tensor(&external("nope.bin", None, None), Some(&dir)).is_err());
        let e = decode_tensor(&external("weights/w.bin", None, None), None).unwrap_err();
        assert!(e.to_string().contains("model directory"), "{e}");
        let mut p = external("weights/w.bin", None, None);
        p.external_data[0].key = Some("path".into());
        let e = decode_tensor(&p, Some(&dir)).unwrap_err();
        assert!(e.to_string().contains("'location'"), "{e}");

        // Escapes.
        std::fs::write(dir.join("../outside.bin"), [0u8; 16]).ok();
        for bad in [
            "../outside.bin",
            "weights/../../outside.bin",
            "weights\\..\\..\\outside.bin",
            "/etc/passwd",
            "\\\\server\\share\\x",
            "C:\\x.bin",
            "",
        ] {
            let e = decode_tensor(&external(bad, None, None), Some(&dir)).unwrap_err();
            assert!(matches!(e, TensorError::ExternalData { .. }), "{bad}: {e}");
        }
        let e = decode_tensor(&external("../x.bin", None, None), Some(&dir)).unwrap_err();
        assert!(e.to_string().contains("'..'"), "{e}");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.join("../outside.bin"), dir.join("link.bin")).unwrap();
            let e = decode_tensor(&external("link.bin", None, None), Some(&dir)).unwrap_err();
            assert!(e.to_string().contains("outside"), "{e}");
        }
        let _ = std::fs::remove_file(dir.join("../outside.bin"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tensor_pb_files() {
        let dir = temp_dir("pb");
        let data = sample(DType::I32, &[2, 5]);
        let path = dir.join("input_0.pb");
        write_tensor_pb(&path, "x", &data).unwrap();
        assert_eq!(read_tensor_pb(&path).unwrap(), data);
        std::fs::write(&path, [0xff, 0xff, 0xff]).unwrap();
        assert!(matches!(
            read_tensor_pb(&path),
            Err(TensorError::Decode { .. })
        ));
        assert!(matches!(
            read_tensor_pb(&dir.join("missing.pb")),
            Err(TensorError::Io { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bools_are_normalised() {
        let mut p = proto(9, &[3]);
        p.raw_data = Some(vec![0, 2, 255]);
        assert_eq!(decode_tensor(&p, None).unwrap().bytes, [0, 1, 1]);
    }

    #[test]
    fn from_elements_checks_sizes() {
        let t = TensorData::from_elements(DType::F32, vec![2], &[1.5f32, 2.5]).unwrap();
        assert_eq!(t.to_f32_vec(), [1.5, 2.5]);
        assert!(TensorData::from_elements(DType::F64, vec![2], &[1.5f32, 2.5]).is_err());
        assert!(TensorData::from_elements(DType::F32, vec![3], &[1.5f32, 2.5]).is_err());
    }

    /// numpy 2.x: `np.save(f, np.arange(6, dtype='<f4').reshape(2, 3))`.
    fn numpy_f4_2x3() -> Vec<u8> {
        let mut v = b"\x93NUMPY\x01\x00v\x00".to_vec();
        v.extend_from_slice(b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
        v.extend([b' '; 58]);
        v.push(b'\n');
        for x in 0..6 {
            v.extend((x as f32).to_le_bytes());
        }
        v
    }

    #[test]
    fn npy_reads_numpy_output() {
        let buf = numpy_f4_2x3();
        assert_eq!(buf.len(), 152);
        let t = npy_from_bytes(&buf).unwrap();
        assert_eq!(t.dtype, DType::F32);
        assert_eq!(t.dims, [2, 3]);
        assert_eq!(t.to_f32_vec(), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        // And we write exactly what numpy writes.
        assert_eq!(npy_to_bytes(&t).unwrap(), buf);

        // numpy: np.array([True, False, True]) → '|b1', shape (3,), 60 spaces of padding.
        let mut b = b"\x93NUMPY\x01\x00v\x00".to_vec();
        b.extend_from_slice(b"{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }");
        b.extend([b' '; 60]);
        b.extend(b"\n\x01\x00\x01");
        let t = npy_from_bytes(&b).unwrap();
        assert_eq!(
            (t.dtype, t.dims.as_slice(), t.bytes.as_slice()),
            (DType::Bool, &[3][..], &[1, 0, 1][..])
        );
        assert_eq!(npy_to_bytes(&t).unwrap(), b);
    }

    #[test]
    fn npy_header_variants() {
        let make = |major: u8, header: &str, data: &[u8]| {
            let mut v = NPY_MAGIC.to_vec();
            v.extend([major, 0]);
            if major == 1 {
                v.extend((header.len() as u16).to_le_bytes());
            } else {
                v.extend((header.len() as u32).to_le_bytes());
            }
            v.extend(header.as_bytes());
            v.extend(data);
            v
        };
        // Key order, quotes, spacing, Python-2 longs, v2/v3, no trailing comma.
        let t = npy_from_bytes(&make(
            2,
            "{\"shape\":(2L,1L),'fortran_order':False,'descr':'<i2'}\n",
            &[1, 0, 2, 0],
        ))
        .unwrap();
        assert_eq!((t.dtype, t.dims.clone()), (DType::I16, vec![2, 1]));
        let t = npy_from_bytes(&make(
            3,
            "{'descr': '<u8', 'fortran_order': False, 'shape': (), }   \n",
            &[7, 0, 0, 0, 0, 0, 0, 0],
        ))
        .unwrap();
        assert_eq!((t.dtype, t.dims.len(), t.bytes[0]), (DType::U64, 0, 7));

        let bad = [
            (
                "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",
                "fortran_order",
            ),
            (
                "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                "big-endian",
            ),
            (
                "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                "'<c8'",
            ),
            (
                "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                "structured",
            ),
            ("{'descr': '<f4', 'shape': (1,), }", "fortran_order"),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x",
                "after",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                "needs 8",
            ),
            ("{'descr': '<f4' 'fortran_order': False}", "expected ','"),
        ];
        for (header, needle) in bad {
            let e = npy_from_bytes(&make(1, header, &[0; 4]))
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{header}: {e}");
        }
        assert!(npy_from_bytes(b"PK\x03\x04 not npy").is_err());
    }

    #[test]
    fn npy_round_trip() {
        let dir = temp_dir("npy");
        for (i, dtype) in ALL.into_iter().enumerate() {
            for dims in [
                &[][..],
                &[1][..],
                &[0][..],
                &[4][..],
                &[2, 3][..],
                &[1, 2, 3, 4][..],
                &[12345, 1][..],
            ] {
                let data = sample(dtype, dims);
                let path = dir.join(format!("t{i}.npy"));
                if dtype == DType::Bf16 {
                    let e = write_npy(&path, &data).unwrap_err().to_string();
                    assert!(e.contains("bfloat16"), "{e}");
                    continue;
                }
                write_npy(&path, &data).unwrap();
                let raw = std::fs::read(&path).unwrap();
                assert_eq!((raw.len() - data.bytes.len()) % NPY_ALIGN, 0);
                assert_eq!(read_npy(&path).unwrap(), data, "{dtype:?} {dims:?}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    /// `tests/fixtures/tiny_add.onnx` was produced with onnx 1.23 by:
    ///
    /// ```python
    /// X = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 3])
    /// Y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 2])
    /// B = numpy_helper.from_array(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32), "B")
    /// S = helper.make_tensor("S", TensorProto.INT64, [2], [3, 2])
    /// H = helper.make_tensor("H", TensorProto.FLOAT16, [2], np.array([1.0, -2.0], dtype=np.float16))
    /// nodes = [helper.make_node("Add", ["X", "B"], ["T"], name="add0"),
    ///          helper.make_node("LeakyRelu", ["T"], ["U"], alpha=0.25),
    ///          helper.make_node("Reshape", ["U", "S"], ["V"]),
    ///          helper.make_node("Transpose", ["V"], ["Y"], perm=[1, 0])]
    /// g = helper.make_graph(nodes, "tiny", [X], [Y], [B, S, H])
    /// m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
    ///                       producer_name="ge-test", ir_version=8)
    /// onnx.save(m, "tiny_add.onnx")
    /// ```
    #[test]
    fn decodes_tiny_model() {
        use crate::onnx::proto::{tensor_shape_proto::dimension::Value as Dim, type_proto};
        let path = fixture("tiny_add.onnx");
        let bytes = std::fs::read(&path).unwrap();
        let m = ModelProto::decode(bytes.as_slice()).unwrap();
        // Field numbers and proto2 labels are right iff re-encoding is byte-identical.
        assert_eq!(m.encode_to_vec(), bytes);

        assert_eq!(m.ir_version, Some(8));
        assert_eq!(m.producer_name(), "ge-test");
        assert_eq!(m.opset_import.len(), 1);
        assert_eq!(
            (m.opset_import[0].domain(), m.opset_import[0].version()),
            ("", 17)
        );

        let g = m.graph.as_ref().unwrap();
        assert_eq!(g.name(), "tiny");
        let ops: Vec<&str> = g.node.iter().map(|n| n.op_type()).collect();
        assert_eq!(ops, ["Add", "LeakyRelu", "Reshape", "Transpose"]);
        assert_eq!(g.node[0].name(), "add0");
        assert_eq!(g.node[0].input, ["X", "B"]);
        assert_eq!(g.node[2].output, ["V"]);

        let alpha = &g.node[1].attribute[0];
        assert_eq!(
            (alpha.name(), alpha.r#type()),
            ("alpha", AttributeType::Float)
        );
        assert_eq!(alpha.f, Some(0.25));
        let perm = &g.node[3].attribute[0];
        assert_eq!((perm.name(), perm.r#type()), ("perm", AttributeType::Ints));
        assert_eq!(perm.ints, [1, 0]);

        let x = &g.input[0];
        assert_eq!(x.name(), "X");
        let Some(type_proto::Value::TensorType(tt)) = &x.r#type.as_ref().unwrap().value else {
            panic!("X is not a tensor");
        };
        assert_eq!(tt.elem_type(), 1);
        let dims: Vec<_> = tt
            .shape
            .as_ref()
            .unwrap()
            .dim
            .iter()
            .map(|d| d.value.clone())
            .collect();
        assert_eq!(
            dims,
            [Some(Dim::DimParam("N".into())), Some(Dim::DimValue(3))]
        );

        let inits: Vec<TensorData> = g
            .initializer
            .iter()
            .map(|t| decode_tensor(t, path.parent()).unwrap())
            .collect();
        assert!(g.initializer[0].raw_data.is_some());
        assert_eq!(
            (inits[0].dtype, inits[0].dims.as_slice()),
            (DType::F32, &[2, 3][..])
        );
        assert_eq!(inits[0].to_f32_vec(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(g.initializer[1].int64_data, [3, 2]);
        assert_eq!(inits[1].bytes, bytemuck::cast_slice::<i64, u8>(&[3, 2]));
        assert_eq!(g.initializer[2].int32_data, [0x3c00, 0xc000]);
        assert_eq!(
            (inits[2].dtype, inits[2].to_f32_vec()),
            (DType::F16, vec![1.0, -2.0])
        );
    }

    /// Set `GE_ONNX_TEST_MODELS` to a directory of `.onnx` files (e.g. the onnx wheel's
    /// `backend/test/data/light`) to check that each decodes and re-encodes losslessly.
    #[test]
    fn decodes_external_models_if_present() {
        let Some(dir) = std::env::var_os("GE_ONNX_TEST_MODELS") else {
            return;
        };
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "onnx") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let m = ModelProto::decode(bytes.as_slice())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let g = m.graph.as_ref().unwrap();
            assert!(!g.node.is_empty(), "{}", path.display());
            for t in &g.initializer {
                decode_tensor(t, path.parent()).unwrap();
            }
            assert!(
                m.encode_to_vec() == bytes,
                "{} does not re-encode identically",
                path.display()
            );
        }
    }
}
