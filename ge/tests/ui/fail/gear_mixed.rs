// One kind of gears at a time.
ge::ge_model!(A = "models/digits.onnx", gears(batch = [1, 4], image_size = [[8, 8]]));
ge::ge_model!(B = "models/digits.onnx", gears(x = [[1, 1, 8, 8]], batch = [2]));

fn main() {}
