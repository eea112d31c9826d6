//! ONNX `TensorProto` ⇄ [`TensorData`]: every storage form ONNX allows (`raw_data`, the
//! typed `*_data` fields, external data), and serialized `TensorProto` (`.pb`) files.

use std::path::Path;

use ge_runtime::format::DType;
use prost::Message;

use super::external::read_external;
use super::{TensorData, TensorError, byte_len};
use crate::onnx::proto::TensorProto;
use crate::onnx::proto::tensor_proto::{DataLocation, DataType};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::proto::{ModelProto, attribute_proto::AttributeType};
    use crate::tensor::tests::{ALL, proto, sample, temp_dir};
    use std::path::PathBuf;

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
