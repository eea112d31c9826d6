//! libFuzzer harness of the structured fuzzer: the input bytes are the choices that build a
//! hostile graph from ge's op registry and the onnx schemas (`ge_tests::structured`; its
//! bounded run on stable is `tests/tests/structured_fuzz.rs`). Needs `corpus/op_schemas`
//! (`python3 tools/gen_corpus.py`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(cat) = ge_tests::structured::Catalog::shared() {
        ge_tests::structured::compile_and_run(cat, &mut ge_tests::structured::Choices::bytes(data));
    }
});
