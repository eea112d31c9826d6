//! Reproducible builds in one process: every compile of the same model with the same
//! options gives the same bytes, whatever the hash maps' random state (each compile builds
//! new maps with new keys). The model has two source nodes and parallel branches, so any
//! tie broken by hash-map iteration order would show. The separate-process check (working
//! directory, thread count) is `ge-cli/tests/reproducible.rs`.

use ge_build::{CompileOptions, OptLevel, compile_bytes};
use ge_tests::fuzz::branchy_model;

#[test]
fn repeated_compiles_are_byte_identical() {
    let onnx = branchy_model();
    for level in [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3] {
        let opts = CompileOptions {
            opt_level: level,
            ..CompileOptions::default()
        };
        let first = compile_bytes(&onnx, None, &opts).expect("compiles").blob;
        for i in 1..8 {
            let again = compile_bytes(&onnx, None, &opts).expect("compiles").blob;
            assert!(
                again == first,
                "{level:?}: compile {i} differs from the first at byte {:?}",
                again.iter().zip(&first).position(|(a, b)| a != b)
            );
        }
    }
}
