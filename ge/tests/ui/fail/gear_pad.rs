// Image-size gears run exact shapes through the typed API: a narrower image does not
// silently pad into a gear (padding a non-batch dim is opted into with `pad = spatial`
// and goes through the untyped `run_shaped`), and `pad` takes batch or spatial.
ge::ge_model!(Widths = "models/widths.onnx", gears(image_size = [[4, 8], [4, 16]]));
ge::ge_model!(Other = "models/widths.onnx", gears(image_size = [[4, 8]], pad = sideways));

fn main() {
    let mut arena = widths::Arena::new();
    let mut net = widths::Widths::new(&mut arena).unwrap();
    let narrow = widths::h4_w8::Inputs { x: [[[[0.0f32; 6]; 4]; 1]; 1] };
    net.run(&narrow, &mut widths::h4_w8::Outputs::zeroed()).unwrap();
}
