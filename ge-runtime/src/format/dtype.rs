//! Element types, numbered as ONNX's `TensorProto.DataType` so import needs no table.

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DType {
    F32 = 1,
    U8 = 2,
    I8 = 3,
    U16 = 4,
    I16 = 5,
    I32 = 6,
    I64 = 7,
    Bool = 9,
    F16 = 10,
    F64 = 11,
    U32 = 12,
    U64 = 13,
    Bf16 = 16,
}

impl DType {
    /// Every element type, in on-disk code order.
    pub const ALL: [DType; 13] = [
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

    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::U8 | DType::I8 | DType::Bool => 1,
            DType::U16 | DType::I16 | DType::F16 | DType::Bf16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    /// Decodes the on-disk / ONNX number.
    pub const fn from_u8(v: u8) -> Option<DType> {
        Some(match v {
            1 => DType::F32,
            2 => DType::U8,
            3 => DType::I8,
            4 => DType::U16,
            5 => DType::I16,
            6 => DType::I32,
            7 => DType::I64,
            9 => DType::Bool,
            10 => DType::F16,
            11 => DType::F64,
            12 => DType::U32,
            13 => DType::U64,
            16 => DType::Bf16,
            _ => return None,
        })
    }

    /// Lower-case name as numpy spells it (`float32`, `int64`, …).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::U16 => "uint16",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::Bool => "bool",
            DType::F16 => "float16",
            DType::F64 => "float64",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::Bf16 => "bfloat16",
        }
    }

    /// The Rust element type used in generated bindings.
    pub const fn rust_type(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::U16 | DType::F16 | DType::Bf16 => "u16",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::Bool => "bool",
            DType::F64 => "f64",
            DType::U32 => "u32",
            DType::U64 => "u64",
        }
    }
}

#[cfg(test)]
mod all_tests {
    use super::DType;

    #[test]
    fn all_lists_every_decodable_dtype_once() {
        let decodable: usize = (0..=u8::MAX).filter_map(DType::from_u8).count();
        assert_eq!(decodable, DType::ALL.len());
        for (i, d) in DType::ALL.iter().enumerate() {
            assert_eq!(DType::from_u8(*d as u8), Some(*d));
            assert!(!DType::ALL[..i].contains(d));
        }
    }
}
