//! ONNX import layer: the protobuf schema and tensor payload decoding.
//!
//! * [`proto`] — hand-written prost messages mirroring `onnx.proto` (proto2, IR
//!   version 14): decode a model with
//!   `<proto::ModelProto as prost::Message>::decode(bytes)`.
//! * [`tensor`] — turns `TensorProto`s (raw, typed-field or external data) into
//!   owned little-endian [`tensor::TensorData`], and reads/writes `.pb` tensor
//!   files and NumPy `.npy` files.

pub mod proto;
pub mod tensor;

mod ctx;
mod import;
mod legalize;
mod ops;
mod sequence;
mod values;

pub use ctx::{Imported, InputInfo, NodeCtx};
pub use import::{ImportOptions, decode_model, default_opset, import_model};
pub use ops::{broadcast_shapes, registry, supported, table};
