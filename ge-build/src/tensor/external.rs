//! External tensor data: the `location` / `offset` / `length` of a `TensorProto` stored
//! outside the model, resolved and read safely inside the model's directory.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use super::TensorError;
use super::proto::dtype_from_onnx;
use crate::onnx::proto::TensorProto;

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

pub(super) fn read_external(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::proto::StringStringEntryProto;
    use crate::onnx::proto::tensor_proto::DataLocation;
    use crate::tensor::decode_tensor;
    use crate::tensor::tests::{proto, temp_dir};

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
}
