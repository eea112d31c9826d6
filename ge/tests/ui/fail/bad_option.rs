// Each bad option is reported at that option.
ge::ge_model!(A = "models/digits.onnx", opt_level = 7, input_shape(x = [1, 1, 8, 8]));
ge::ge_model!(B = "models/digits.onnx", precision = "fp64", input_shape(x = [1, 1, 8, 8]));
ge::ge_model!(C = "models/digits.onnx", device = "gpu", input_shape(x = [1, 1, 8, 8]));
ge::ge_model!(D = "models/digits.onnx", cores = 0, input_shape(x = [1, 1, 8, 8]));
ge::ge_model!(E = "models/digits.onnx", colour = "blue", input_shape(x = [1, 1, 8, 8]));
ge::ge_model!(F = "models/digits.onnx", memory_reuse = 3, input_shape(x = [1, 1, 8, 8]));
ge::ge_model!(G = "models/digits.onnx", fusion_switch = "none.json", input_shape(x = [1, 1, 8, 8]));
ge::ge_model!(H = "models/digits.onnx", input_shape(x = [1, 1, 8, 8]), precision = fp16);
ge::ge_model!(I = "models/digits.onnx", int8_rounding = tfl, input_shape(x = [1, 1, 8, 8]));

fn main() {}
