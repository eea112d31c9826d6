//! libFuzzer harness: the body is `ge_tests::fuzz::tensor_readers` (also replayed on stable by
//! `tests/tests/fuzz_replay.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ge_tests::fuzz::tensor_readers(data));
