//! Compiles the digits model into `OUT_DIR` with typed bindings in `ge_models.rs`, the
//! compile report in `digits.report.json`, and `cargo:rerun-if-changed` for the model.

fn main() {
    ge_build::Builder::new()
        .input_shape("x", [1, 1, 8, 8])
        .opt_level(ge_build::OptLevel::O2)
        .model_as("Digits", "../digits/models/digits.onnx")
        .compile()
        .unwrap_or_else(|e| panic!("{e}"));
}
