// A wrong input shape at the call site is a type error, not a runtime one.
ge::ge_model!(Digits = "models/digits.onnx", input_shape(x = [1, 1, 8, 8]));

fn main() {
    let mut arena = digits::Arena::new();
    let mut net = digits::Digits::new(&mut arena).unwrap();
    let image = [[0.5f32; 8]; 7];
    let inputs = digits::Inputs { x: [[image]] };
    let batch_of_two = [[[[0.0f32; 8]; 8]; 1]; 2];
    let more = digits::Inputs { x: batch_of_two };
    let mut outputs = digits::Outputs::zeroed();
    net.run(&inputs, &mut outputs).unwrap();
    net.run(&more, &mut outputs).unwrap();
}
