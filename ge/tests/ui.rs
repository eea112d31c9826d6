//! trybuild UI tests of `ge_model!`: each diagnostic (missing file, unparsable model,
//! unsupported op, bad options, a hostile constant shape, unset symbolic dim, gears: too large, conflicting, too many,
//! mixed, padded without opt-in) and a wrong input shape at the call site,
//! with their expected stderr committed next to them; plus a case that must build and run.
//!
//! trybuild compiles the cases as a crate in `<target>/tests/trybuild/ge/`, which is then
//! their `CARGO_MANIFEST_DIR`: the models they name (`models/…`) are copied there first.
//! Regenerate the expected stderr with `TRYBUILD=overwrite cargo test -p ge --test ui`.
//!
//! `tests/ui/models/unsupported.onnx` is one `TfIdfVectorizer` node (opset 13), made with
//! `onnx.helper`; `garbage.onnx` is a line of text; `widths.onnx` (for image-size gears) is
//! x `[1, 1, H, W]` → Conv 3×3 (2 channels, pad 1, seeded normal weights) → MaxPool 2×2 → y
//! `[1, 2, H/2, W/2]`, opset 17, made with `onnx.helper`; `hostile_shape.onnx` is one
//! ConstantOfShape node `huge` of shape [100000, 100000] (40 GB of f32), opset 17.

use std::path::Path;

#[test]
fn ui() {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target>/tmp");
    let models = target.join("tests/trybuild/ge/models");
    std::fs::create_dir_all(&models).unwrap();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixtures = [
        here.join("tests/ui/models/garbage.onnx"),
        here.join("tests/ui/models/unsupported.onnx"),
        here.join("tests/ui/models/widths.onnx"),
        here.join("tests/ui/models/hostile_shape.onnx"),
        here.join("../examples/digits/models/digits.onnx"),
    ];
    for f in fixtures {
        let dest = models.join(f.file_name().unwrap());
        // Copy only when different: a fresh mtime would make cargo rebuild the cases.
        if std::fs::read(&dest).ok() != std::fs::read(&f).ok() {
            std::fs::copy(&f, &dest).unwrap();
        }
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
