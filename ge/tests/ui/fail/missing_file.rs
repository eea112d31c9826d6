// The model file does not exist.
ge::ge_model!("models/missing.onnx");

fn main() {}
