//! Puts `memory.x` where cortex-m-rt's `link.x` finds it, and turns the MLPerf Tiny
//! keyword-spotting inputs (`.npy`, five real MFCC windows per form) into the raw
//! little-endian bytes the `kws_*` binaries embed (`$OUT_DIR/kws_int8.bin`, `kws_f32.bin`).

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    std::fs::copy(here.join("memory.x"), out.join("memory.x")).expect("copy memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-env-changed=GE_MLPERF_TINY");

    let corpus = std::env::var_os("GE_MLPERF_TINY")
        .map(PathBuf::from)
        .unwrap_or_else(|| here.join("../../../shared/corpus/mlperf-tiny"));
    for key in ["kws_int8", "kws_f32"] {
        let dir = corpus.join("data").join(key);
        let mut bytes = Vec::new();
        let mut sample = 0;
        // input_s00.npy, input_s01.npy, … as long as they exist (none: an empty file, and
        // the binary says it has no inputs).
        loop {
            let path = dir.join(format!("input_s{sample:02}.npy"));
            if !path.is_file() {
                break;
            }
            println!("cargo:rerun-if-changed={}", path.display());
            let t = ge_build::tensor::read_tensor_file(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            bytes.extend_from_slice(&t.bytes);
            sample += 1;
        }
        std::fs::write(out.join(format!("{key}.bin")), bytes).expect("write inputs");
    }
}
