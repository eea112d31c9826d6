// A ConstantOfShape of [100000, 100000] (40 GB) aborted the compiler inside rustc: the
// shape is checked before anything is allocated, and the limit is a spanned compile error.
ge::ge_model!("models/hostile_shape.onnx");

fn main() {}
