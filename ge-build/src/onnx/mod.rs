//! ONNX import layer: the protobuf schema and the importer into [`crate::ir`].
//!
//! * [`proto`] — hand-written prost messages mirroring `onnx.proto` (proto2, IR
//!   version 14): decode a model with
//!   `<proto::ModelProto as prost::Message>::decode(bytes)`.
//! * Tensor payloads (`TensorProto` decoding, `.pb` and `.npy` files) live in
//!   [`crate::tensor`], shared with the IR, the passes and the tools.

pub mod proto;

mod ctx;
mod import;
mod legalize;
mod ops;
mod sequence;
mod values;

pub use ctx::{Imported, InputInfo, NodeCtx};
pub(crate) use import::constant_owner;
pub use import::{
    ImportOptions, declared_dims, decode_model, default_opset, import_model, tensor_bytes,
};
pub use legalize::cast_data;
pub use ops::{broadcast_shapes, is_float, registry, supported, table};
pub(crate) use ops::{int_range, weight_only};
