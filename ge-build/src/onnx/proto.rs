//! Hand-written prost messages for the ONNX IR (`onnx.proto`, `syntax = "proto2"`).
//!
//! Field numbers, wire types and labels follow `onnx/onnx.proto` of ONNX 1.23
//! (IR version 14). Because the schema is proto2:
//!
//! * every singular scalar / string / bytes / enum field is `optional` and is
//!   represented as `Option<T>`; prost generates getters of the same name that
//!   return the proto default when the field is unset (e.g. [`NodeProto::op_type`]
//!   returns `&str`, [`AttributeProto::r#type`] returns [`attribute_proto::AttributeType`]);
//! * repeated scalar fields are encoded *unpacked* unless `onnx.proto` marks them
//!   `[packed = true]` (the `TensorProto.*_data` fields). Decoding accepts both
//!   encodings either way, as the protobuf spec requires.
//!
//! Messages that ge does not interpret (device configuration, sharding) are
//! still declared so that re-encoding a decoded model loses nothing.
//! Unknown fields are skipped by prost when decoding.

/// The IR version this schema corresponds to (`onnx.Version.IR_VERSION`).
pub const IR_VERSION: i64 = 14;

/// `onnx.AttributeProto`: a named attribute of a node or function.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    /// Attribute name (unique within a node).
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// In a function body: the name of the enclosing function's attribute this one refers to.
    #[prost(string, optional, tag = "21")]
    pub ref_attr_name: Option<String>,
    #[prost(string, optional, tag = "13")]
    pub doc_string: Option<String>,
    /// Discriminator saying which of the value fields below is in use.
    #[prost(enumeration = "attribute_proto::AttributeType", optional, tag = "20")]
    pub r#type: Option<i32>,
    #[prost(float, optional, tag = "2")]
    pub f: Option<f32>,
    #[prost(int64, optional, tag = "3")]
    pub i: Option<i64>,
    /// UTF-8 string (stored as bytes).
    #[prost(bytes = "vec", optional, tag = "4")]
    pub s: Option<Vec<u8>>,
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    #[prost(message, optional, tag = "6")]
    pub g: Option<GraphProto>,
    #[prost(message, optional, tag = "22")]
    pub sparse_tensor: Option<SparseTensorProto>,
    #[prost(message, optional, tag = "14")]
    pub tp: Option<TypeProto>,
    #[prost(float, repeated, packed = "false", tag = "7")]
    pub floats: Vec<f32>,
    #[prost(int64, repeated, packed = "false", tag = "8")]
    pub ints: Vec<i64>,
    #[prost(bytes = "vec", repeated, tag = "9")]
    pub strings: Vec<Vec<u8>>,
    #[prost(message, repeated, tag = "10")]
    pub tensors: Vec<TensorProto>,
    #[prost(message, repeated, tag = "11")]
    pub graphs: Vec<GraphProto>,
    #[prost(message, repeated, tag = "23")]
    pub sparse_tensors: Vec<SparseTensorProto>,
    #[prost(message, repeated, tag = "15")]
    pub type_protos: Vec<TypeProto>,
}

/// Nested types of [`AttributeProto`].
pub mod attribute_proto {
    /// `onnx.AttributeProto.AttributeType`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum AttributeType {
        Undefined = 0,
        Float = 1,
        Int = 2,
        String = 3,
        Tensor = 4,
        Graph = 5,
        SparseTensor = 11,
        TypeProto = 13,
        Floats = 6,
        Ints = 7,
        Strings = 8,
        Tensors = 9,
        Graphs = 10,
        SparseTensors = 12,
        TypeProtos = 14,
    }

    impl AttributeType {
        /// The name as spelled in `onnx.proto` (`FLOAT`, `INTS`, …).
        pub const fn as_str_name(self) -> &'static str {
            match self {
                AttributeType::Undefined => "UNDEFINED",
                AttributeType::Float => "FLOAT",
                AttributeType::Int => "INT",
                AttributeType::String => "STRING",
                AttributeType::Tensor => "TENSOR",
                AttributeType::Graph => "GRAPH",
                AttributeType::SparseTensor => "SPARSE_TENSOR",
                AttributeType::TypeProto => "TYPE_PROTO",
                AttributeType::Floats => "FLOATS",
                AttributeType::Ints => "INTS",
                AttributeType::Strings => "STRINGS",
                AttributeType::Tensors => "TENSORS",
                AttributeType::Graphs => "GRAPHS",
                AttributeType::SparseTensors => "SPARSE_TENSORS",
                AttributeType::TypeProtos => "TYPE_PROTOS",
            }
        }
    }
}

/// `onnx.ValueInfoProto`: name and type of a graph input, output or intermediate value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
    #[prost(string, optional, tag = "3")]
    pub doc_string: Option<String>,
    #[prost(message, repeated, tag = "4")]
    pub metadata_props: Vec<StringStringEntryProto>,
}

/// `onnx.NodeProto`: one operator invocation.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub op_type: Option<String>,
    /// Operator domain; empty / unset means the default `ai.onnx` domain.
    #[prost(string, optional, tag = "7")]
    pub domain: Option<String>,
    #[prost(string, optional, tag = "8")]
    pub overload: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
    #[prost(string, optional, tag = "6")]
    pub doc_string: Option<String>,
    #[prost(message, repeated, tag = "9")]
    pub metadata_props: Vec<StringStringEntryProto>,
    #[prost(message, repeated, tag = "10")]
    pub device_configurations: Vec<NodeDeviceConfigurationProto>,
}

/// `onnx.IntIntListEntryProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct IntIntListEntryProto {
    #[prost(int64, optional, tag = "1")]
    pub key: Option<i64>,
    #[prost(int64, repeated, packed = "false", tag = "2")]
    pub value: Vec<i64>,
}

/// `onnx.NodeDeviceConfigurationProto` (multi-device annotations; not interpreted by ge).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeDeviceConfigurationProto {
    #[prost(string, optional, tag = "1")]
    pub configuration_id: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub sharding_spec: Vec<ShardingSpecProto>,
    #[prost(int32, optional, tag = "3")]
    pub pipeline_stage: Option<i32>,
}

/// `onnx.ShardingSpecProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ShardingSpecProto {
    #[prost(string, optional, tag = "1")]
    pub tensor_name: Option<String>,
    #[prost(int64, repeated, packed = "false", tag = "2")]
    pub device: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub index_to_device_group_map: Vec<IntIntListEntryProto>,
    #[prost(message, repeated, tag = "4")]
    pub sharded_dim: Vec<ShardedDimProto>,
}

/// `onnx.ShardedDimProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ShardedDimProto {
    #[prost(int64, optional, tag = "1")]
    pub axis: Option<i64>,
    #[prost(message, repeated, tag = "2")]
    pub simple_sharding: Vec<SimpleShardedDimProto>,
}

/// `onnx.SimpleShardedDimProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SimpleShardedDimProto {
    #[prost(oneof = "simple_sharded_dim_proto::Dim", tags = "1, 2")]
    pub dim: Option<simple_sharded_dim_proto::Dim>,
    #[prost(int64, optional, tag = "3")]
    pub num_shards: Option<i64>,
}

/// Nested types of [`SimpleShardedDimProto`].
pub mod simple_sharded_dim_proto {
    /// `oneof dim`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Dim {
        #[prost(int64, tag = "1")]
        DimValue(i64),
        #[prost(string, tag = "2")]
        DimParam(String),
    }
}

/// `onnx.TrainingInfoProto` (training graphs; decoded but not interpreted by ge).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrainingInfoProto {
    #[prost(message, optional, tag = "1")]
    pub initialization: Option<GraphProto>,
    #[prost(message, optional, tag = "2")]
    pub algorithm: Option<GraphProto>,
    #[prost(message, repeated, tag = "3")]
    pub initialization_binding: Vec<StringStringEntryProto>,
    #[prost(message, repeated, tag = "4")]
    pub update_binding: Vec<StringStringEntryProto>,
}

/// `onnx.ModelProto`: the top-level message of a `.onnx` file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    #[prost(int64, optional, tag = "1")]
    pub ir_version: Option<i64>,
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    #[prost(string, optional, tag = "2")]
    pub producer_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub producer_version: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub domain: Option<String>,
    #[prost(int64, optional, tag = "5")]
    pub model_version: Option<i64>,
    #[prost(string, optional, tag = "6")]
    pub doc_string: Option<String>,
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    #[prost(message, repeated, tag = "14")]
    pub metadata_props: Vec<StringStringEntryProto>,
    #[prost(message, repeated, tag = "20")]
    pub training_info: Vec<TrainingInfoProto>,
    #[prost(message, repeated, tag = "25")]
    pub functions: Vec<FunctionProto>,
    #[prost(message, repeated, tag = "26")]
    pub configuration: Vec<DeviceConfigurationProto>,
}

/// `onnx.DeviceConfigurationProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeviceConfigurationProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub num_devices: Option<i32>,
    #[prost(string, repeated, tag = "3")]
    pub device: Vec<String>,
}

/// `onnx.StringStringEntryProto`: a key/value pair (metadata, external data locations).
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringEntryProto {
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

/// `onnx.TensorAnnotation` (quantization parameters of a tensor).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorAnnotation {
    #[prost(string, optional, tag = "1")]
    pub tensor_name: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub quant_parameter_tensor_names: Vec<StringStringEntryProto>,
}

/// `onnx.GraphProto`: nodes in topological order plus initializers and I/O signature.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    #[prost(message, repeated, tag = "15")]
    pub sparse_initializer: Vec<SparseTensorProto>,
    #[prost(string, optional, tag = "10")]
    pub doc_string: Option<String>,
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "14")]
    pub quantization_annotation: Vec<TensorAnnotation>,
    #[prost(message, repeated, tag = "16")]
    pub metadata_props: Vec<StringStringEntryProto>,
}

/// `onnx.TensorProto`: a dense tensor value (initializers, constants, test data).
///
/// Use [`crate::tensor::decode_tensor`] to turn one into owned bytes.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    #[prost(int64, repeated, packed = "false", tag = "1")]
    pub dims: Vec<i64>,
    /// A [`tensor_proto::DataType`] number (declared `int32` in `onnx.proto`).
    #[prost(int32, optional, tag = "2")]
    pub data_type: Option<i32>,
    #[prost(message, optional, tag = "3")]
    pub segment: Option<tensor_proto::Segment>,
    #[prost(float, repeated, packed = "true", tag = "4")]
    pub float_data: Vec<f32>,
    #[prost(int32, repeated, packed = "true", tag = "5")]
    pub int32_data: Vec<i32>,
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub string_data: Vec<Vec<u8>>,
    #[prost(int64, repeated, packed = "true", tag = "7")]
    pub int64_data: Vec<i64>,
    #[prost(string, optional, tag = "8")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "12")]
    pub doc_string: Option<String>,
    #[prost(bytes = "vec", optional, tag = "9")]
    pub raw_data: Option<Vec<u8>>,
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    #[prost(enumeration = "tensor_proto::DataLocation", optional, tag = "14")]
    pub data_location: Option<i32>,
    #[prost(double, repeated, packed = "true", tag = "10")]
    pub double_data: Vec<f64>,
    #[prost(uint64, repeated, packed = "true", tag = "11")]
    pub uint64_data: Vec<u64>,
    #[prost(message, repeated, tag = "16")]
    pub metadata_props: Vec<StringStringEntryProto>,
}

/// Nested types of [`TensorProto`].
pub mod tensor_proto {
    /// `onnx.TensorProto.Segment`: this proto holds elements `[begin, end)` of a larger tensor.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Segment {
        #[prost(int64, optional, tag = "1")]
        pub begin: Option<i64>,
        #[prost(int64, optional, tag = "2")]
        pub end: Option<i64>,
    }

    /// `onnx.TensorProto.DataType`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum DataType {
        Undefined = 0,
        Float = 1,
        Uint8 = 2,
        Int8 = 3,
        Uint16 = 4,
        Int16 = 5,
        Int32 = 6,
        Int64 = 7,
        String = 8,
        Bool = 9,
        Float16 = 10,
        Double = 11,
        Uint32 = 12,
        Uint64 = 13,
        Complex64 = 14,
        Complex128 = 15,
        Bfloat16 = 16,
        Float8e4m3fn = 17,
        Float8e4m3fnuz = 18,
        Float8e5m2 = 19,
        Float8e5m2fnuz = 20,
        Uint4 = 21,
        Int4 = 22,
        Float4e2m1 = 23,
        Float8e8m0 = 24,
        Uint2 = 25,
        Int2 = 26,
        Float6e2m3 = 27,
        Float6e3m2 = 28,
    }

    impl DataType {
        /// The name as spelled in `onnx.proto` (`FLOAT`, `INT64`, …).
        pub const fn as_str_name(self) -> &'static str {
            match self {
                DataType::Undefined => "UNDEFINED",
                DataType::Float => "FLOAT",
                DataType::Uint8 => "UINT8",
                DataType::Int8 => "INT8",
                DataType::Uint16 => "UINT16",
                DataType::Int16 => "INT16",
                DataType::Int32 => "INT32",
                DataType::Int64 => "INT64",
                DataType::String => "STRING",
                DataType::Bool => "BOOL",
                DataType::Float16 => "FLOAT16",
                DataType::Double => "DOUBLE",
                DataType::Uint32 => "UINT32",
                DataType::Uint64 => "UINT64",
                DataType::Complex64 => "COMPLEX64",
                DataType::Complex128 => "COMPLEX128",
                DataType::Bfloat16 => "BFLOAT16",
                DataType::Float8e4m3fn => "FLOAT8E4M3FN",
                DataType::Float8e4m3fnuz => "FLOAT8E4M3FNUZ",
                DataType::Float8e5m2 => "FLOAT8E5M2",
                DataType::Float8e5m2fnuz => "FLOAT8E5M2FNUZ",
                DataType::Uint4 => "UINT4",
                DataType::Int4 => "INT4",
                DataType::Float4e2m1 => "FLOAT4E2M1",
                DataType::Float8e8m0 => "FLOAT8E8M0",
                DataType::Uint2 => "UINT2",
                DataType::Int2 => "INT2",
                DataType::Float6e2m3 => "FLOAT6E2M3",
                DataType::Float6e3m2 => "FLOAT6E3M2",
            }
        }
    }

    /// `onnx.TensorProto.DataLocation`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum DataLocation {
        /// Data is in `raw_data` (if set) or the typed `*_data` field.
        Default = 0,
        /// Data is in a file described by `external_data`.
        External = 1,
    }
}

/// `onnx.SparseTensorProto` (COO format).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SparseTensorProto {
    /// Non-default values, a 1-D tensor of length NNZ.
    #[prost(message, optional, tag = "1")]
    pub values: Option<TensorProto>,
    /// INT64 indices, shape `[NNZ, rank]` or linearised `[NNZ]`.
    #[prost(message, optional, tag = "2")]
    pub indices: Option<TensorProto>,
    /// Shape of the dense tensor.
    #[prost(int64, repeated, packed = "false", tag = "3")]
    pub dims: Vec<i64>,
}

/// `onnx.TensorShapeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<tensor_shape_proto::Dimension>,
}

/// Nested types of [`TensorShapeProto`].
pub mod tensor_shape_proto {
    /// `onnx.TensorShapeProto.Dimension`: a fixed size, a symbolic name, or unknown (neither).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Dimension {
        #[prost(oneof = "dimension::Value", tags = "1, 2")]
        pub value: Option<dimension::Value>,
        #[prost(string, optional, tag = "3")]
        pub denotation: Option<String>,
    }

    /// Nested types of [`Dimension`].
    pub mod dimension {
        /// `oneof value`.
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Value {
            #[prost(int64, tag = "1")]
            DimValue(i64),
            #[prost(string, tag = "2")]
            DimParam(String),
        }
    }
}

/// `onnx.TypeProto`: the type of a value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    #[prost(oneof = "type_proto::Value", tags = "1, 4, 5, 9, 8, 7")]
    pub value: Option<type_proto::Value>,
    #[prost(string, optional, tag = "6")]
    pub denotation: Option<String>,
}

/// Nested types of [`TypeProto`].
pub mod type_proto {
    use super::{TensorShapeProto, TypeProto};

    /// `onnx.TypeProto.Tensor`: a dense tensor type.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Tensor {
        /// A [`super::tensor_proto::DataType`] number.
        #[prost(int32, optional, tag = "1")]
        pub elem_type: Option<i32>,
        #[prost(message, optional, tag = "2")]
        pub shape: Option<TensorShapeProto>,
    }

    /// `onnx.TypeProto.Sequence`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sequence {
        #[prost(message, optional, boxed, tag = "1")]
        pub elem_type: Option<Box<TypeProto>>,
    }

    /// `onnx.TypeProto.Map`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Map {
        #[prost(int32, optional, tag = "1")]
        pub key_type: Option<i32>,
        #[prost(message, optional, boxed, tag = "2")]
        pub value_type: Option<Box<TypeProto>>,
    }

    /// `onnx.TypeProto.Optional`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Optional {
        #[prost(message, optional, boxed, tag = "1")]
        pub elem_type: Option<Box<TypeProto>>,
    }

    /// `onnx.TypeProto.SparseTensor`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SparseTensor {
        #[prost(int32, optional, tag = "1")]
        pub elem_type: Option<i32>,
        #[prost(message, optional, tag = "2")]
        pub shape: Option<TensorShapeProto>,
    }

    /// `onnx.TypeProto.Opaque`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Opaque {
        #[prost(string, optional, tag = "1")]
        pub domain: Option<String>,
        #[prost(string, optional, tag = "2")]
        pub name: Option<String>,
    }

    /// `oneof value`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(message, tag = "1")]
        TensorType(Tensor),
        #[prost(message, tag = "4")]
        SequenceType(Sequence),
        #[prost(message, tag = "5")]
        MapType(Map),
        #[prost(message, tag = "9")]
        OptionalType(Optional),
        #[prost(message, tag = "8")]
        SparseTensorType(SparseTensor),
        #[prost(message, tag = "7")]
        OpaqueType(Opaque),
    }
}

/// `onnx.OperatorSetIdProto`: an opset import (`domain` empty / unset = `ai.onnx`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    #[prost(string, optional, tag = "1")]
    pub domain: Option<String>,
    #[prost(int64, optional, tag = "2")]
    pub version: Option<i64>,
}

/// `onnx.FunctionProto`: a model-local function (its body is a list of nodes).
#[derive(Clone, PartialEq, prost::Message)]
pub struct FunctionProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, repeated, tag = "4")]
    pub input: Vec<String>,
    #[prost(string, repeated, tag = "5")]
    pub output: Vec<String>,
    /// Names of attributes without defaults.
    #[prost(string, repeated, tag = "6")]
    pub attribute: Vec<String>,
    /// Attributes with default values.
    #[prost(message, repeated, tag = "11")]
    pub attribute_proto: Vec<AttributeProto>,
    #[prost(message, repeated, tag = "7")]
    pub node: Vec<NodeProto>,
    #[prost(string, optional, tag = "8")]
    pub doc_string: Option<String>,
    #[prost(message, repeated, tag = "9")]
    pub opset_import: Vec<OperatorSetIdProto>,
    #[prost(string, optional, tag = "10")]
    pub domain: Option<String>,
    #[prost(string, optional, tag = "13")]
    pub overload: Option<String>,
    #[prost(message, repeated, tag = "12")]
    pub value_info: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "14")]
    pub metadata_props: Vec<StringStringEntryProto>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn proto2_optional_fields_keep_presence() {
        let a = AttributeProto {
            name: Some("axis".into()),
            r#type: Some(attribute_proto::AttributeType::Int as i32),
            i: Some(0),
            ..Default::default()
        };
        let bytes = a.encode_to_vec();
        // name (tag 1, "axis"), i (tag 3, 0 — present even though default), type (tag 20, 2).
        assert_eq!(
            bytes,
            [0x0a, 4, b'a', b'x', b'i', b's', 0x18, 0, 0xa0, 0x01, 2]
        );
        let b = AttributeProto::decode(bytes.as_slice()).unwrap();
        assert_eq!(b.i, Some(0));
        assert_eq!(b.f, None);
        assert_eq!(b.r#type(), attribute_proto::AttributeType::Int);
        assert_eq!(b.name(), "axis");
    }

    #[test]
    fn repeated_scalars_accept_packed_and_unpacked() {
        // dims (tag 1) unpacked: 2, 3; int64_data (tag 7) packed: [1, 2].
        let unpacked = [0x08, 2, 0x08, 3, 0x3a, 2, 1, 2];
        let t = TensorProto::decode(&unpacked[..]).unwrap();
        assert_eq!(t.dims, [2, 3]);
        assert_eq!(t.int64_data, [1, 2]);
        // dims packed, int64_data unpacked.
        let packed = [0x0a, 2, 2, 3, 0x38, 1, 0x38, 2];
        let t2 = TensorProto::decode(&packed[..]).unwrap();
        assert_eq!(t, t2);
        // Re-encoding uses the proto2 layout from onnx.proto.
        assert_eq!(t2.encode_to_vec(), unpacked);
    }

    #[test]
    fn recursive_type_proto_round_trips() {
        let elem = TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(tensor_proto::DataType::Float as i32),
                shape: Some(TensorShapeProto {
                    dim: vec![
                        tensor_shape_proto::Dimension {
                            value: Some(tensor_shape_proto::dimension::Value::DimParam("N".into())),
                            denotation: None,
                        },
                        tensor_shape_proto::Dimension {
                            value: Some(tensor_shape_proto::dimension::Value::DimValue(4)),
                            denotation: Some("DATA_CHANNEL".into()),
                        },
                    ],
                }),
            })),
            denotation: None,
        };
        let seq = TypeProto {
            value: Some(type_proto::Value::SequenceType(type_proto::Sequence {
                elem_type: Some(Box::new(elem)),
            })),
            denotation: None,
        };
        let opt = TypeProto {
            value: Some(type_proto::Value::OptionalType(type_proto::Optional {
                elem_type: Some(Box::new(seq)),
            })),
            denotation: None,
        };
        let back = TypeProto::decode(opt.encode_to_vec().as_slice()).unwrap();
        assert_eq!(back, opt);
    }

    #[test]
    fn enum_names_and_numbers() {
        use tensor_proto::DataType;
        assert_eq!(DataType::try_from(16).unwrap(), DataType::Bfloat16);
        assert_eq!(DataType::Float8e5m2.as_str_name(), "FLOAT8E5M2");
        assert!(DataType::try_from(99).is_err());
        assert_eq!(
            attribute_proto::AttributeType::try_from(13).unwrap(),
            attribute_proto::AttributeType::TypeProto
        );
    }
}
