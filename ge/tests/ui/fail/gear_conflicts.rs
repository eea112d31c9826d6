// Gears that conflict with fixed dims: input_shape fixes the batch that batch gears set,
// and a dims gear changes a dim the model file fixes.
ge::ge_model!(A = "models/digits.onnx", input_shape(x = [1, 1, 8, 8]), gears(batch = [1, 4]));
ge::ge_model!(B = "models/digits.onnx", gears(x = [[1, 1, 8, 8], [2, 1, 8, 9]]));

// -1 dims are for gears only.
ge::ge_model!(C = "models/digits.onnx", input_shape(x = [-1, 1, 8, 8]));

fn main() {}
