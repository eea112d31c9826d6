// The file is not an ONNX protobuf.
ge::ge_model!("models/garbage.onnx");

fn main() {}
