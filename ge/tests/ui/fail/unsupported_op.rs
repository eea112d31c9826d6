// The model uses an op ge does not implement: the error names the node, op type and opset.
ge::ge_model!("models/unsupported.onnx");

fn main() {}
