// digits.onnx has a symbolic batch dimension `N` and no input_shape fixes it.
ge::ge_model!("models/digits.onnx");

// input_shape names an input the model does not have.
ge::ge_model!(Other = "models/digits.onnx", input_shape(image = [1, 1, 8, 8]));

fn main() {}
