// A batch above every gear is a type error where it is written.
ge::ge_model!(Digits = "models/digits.onnx", gears(batch = [1, 4, 8]));

fn main() {
    let _inputs = digits::Inputs::<9>::zeroed();
}
