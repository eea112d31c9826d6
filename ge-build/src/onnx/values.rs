//! Reading constant tensors as plain numbers (shapes, axes, pads, scales) at import.

use ge_runtime::format::DType;

use crate::tensor::TensorData;

impl TensorData {
    /// The elements as i64 (integer and bool tensors; floats are truncated).
    pub fn to_i64_vec(&self) -> Result<Vec<i64>, String> {
        let b = &self.bytes;
        Ok(match self.dtype {
            DType::I64 => b
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect(),
            DType::I32 => b
                .chunks_exact(4)
                .map(|c| i64::from(i32::from_le_bytes(c.try_into().unwrap_or([0; 4]))))
                .collect(),
            DType::U64 => b
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as i64)
                .collect(),
            DType::U32 => b
                .chunks_exact(4)
                .map(|c| i64::from(u32::from_le_bytes(c.try_into().unwrap_or([0; 4]))))
                .collect(),
            DType::I16 => b
                .chunks_exact(2)
                .map(|c| i64::from(i16::from_le_bytes([c[0], c[1]])))
                .collect(),
            DType::U16 => b
                .chunks_exact(2)
                .map(|c| i64::from(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
            DType::I8 => b.iter().map(|&v| i64::from(v as i8)).collect(),
            DType::U8 | DType::Bool => b.iter().map(|&v| i64::from(v)).collect(),
            DType::F32 | DType::F64 | DType::F16 | DType::Bf16 => {
                self.to_f64_vec()?.into_iter().map(|v| v as i64).collect()
            }
        })
    }

    /// The elements as f64.
    pub fn to_f64_vec(&self) -> Result<Vec<f64>, String> {
        let b = &self.bytes;
        Ok(match self.dtype {
            DType::F32 => b
                .chunks_exact(4)
                .map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap_or([0; 4]))))
                .collect(),
            DType::F64 => b
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect(),
            DType::F16 => b
                .chunks_exact(2)
                .map(|c| half::f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f64())
                .collect(),
            DType::Bf16 => b
                .chunks_exact(2)
                .map(|c| half::bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f64())
                .collect(),
            _ => self.to_i64_vec()?.into_iter().map(|v| v as f64).collect(),
        })
    }

    /// A 1-D i64 tensor.
    pub fn from_i64s(values: &[i64]) -> TensorData {
        TensorData {
            dtype: DType::I64,
            dims: vec![values.len()],
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }
}
