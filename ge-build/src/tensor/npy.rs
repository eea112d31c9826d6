//! NumPy `.npy` files (format versions 1.0, 2.0 and 3.0) ⇄ [`TensorData`], with the small
//! Python-literal parser their header dict needs.

use std::fmt::Write as _;
use std::path::Path;

use ge_runtime::format::DType;

use super::{TensorData, TensorError};

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
    use crate::tensor::tests::{ALL, sample, temp_dir};

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
}
