//! Reproducible builds: compiling the same model with the same options gives byte-identical
//! `.om` files — twice in one process, and in separate `ge compile` processes started from
//! different working directories with different thread-count settings. The compiler must
//! not depend on hash-map iteration order, thread count, the working directory or time.

use std::path::{Path, PathBuf};
use std::process::Command;

use ge_build::{CompileOptions, compile_file};

fn corpus(part: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("corpus");
    let p = std::env::var_os("GE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or(root)
        .join(part);
    assert!(
        p.is_dir(),
        "{} missing: run python3 tools/gen_corpus.py",
        p.display()
    );
    p.canonicalize().expect("corpus path")
}

/// Multi-branch (streams, events), fused and transformer models.
fn models() -> Vec<PathBuf> {
    vec![
        corpus("light").join("inception_v1/model.onnx"),
        corpus("light").join("squeezenet/model.onnx"),
        corpus("transformer").join("encoder_block/model.onnx"),
    ]
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ge-repro-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn ge_compile(model: &Path, cwd: &Path, threads: &str, extra: &[&str]) -> Vec<u8> {
    let out = cwd.join("out.om");
    let o = Command::new(env!("CARGO_BIN_EXE_ge"))
        .current_dir(cwd)
        .env("GE_THREADS", threads)
        .env("RAYON_NUM_THREADS", threads)
        .arg("compile")
        .arg(model)
        .arg("-o")
        .arg("out.om")
        .args(extra)
        .output()
        .expect("runs ge");
    assert!(
        o.status.success(),
        "ge compile {}: {}",
        model.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read(out).expect("output written")
}

#[test]
fn separate_processes_give_identical_blobs() {
    let (a, b) = (tmp("a"), tmp("b/nested"));
    for m in models() {
        for extra in [
            &[][..],
            &["--opt-level", "O3", "--device", "datacenter"][..],
        ] {
            let x = ge_compile(&m, &a, "1", extra);
            let y = ge_compile(&m, &b, "2", extra);
            assert!(!x.is_empty());
            assert!(
                x == y,
                "{} {extra:?}: blobs differ ({} vs {} bytes, first difference at byte {:?})",
                m.display(),
                x.len(),
                y.len(),
                x.iter().zip(&y).position(|(p, q)| p != q)
            );
        }
    }
    let _ = std::fs::remove_dir_all(a);
    let _ = std::fs::remove_dir_all(b.parent().unwrap_or(&b));
}

#[test]
fn one_process_gives_identical_blobs() {
    for m in models() {
        let opts = CompileOptions::default();
        let x = compile_file(&m, &opts).expect("compiles").blob;
        let y = compile_file(&m, &opts).expect("compiles").blob;
        assert!(
            x == y,
            "{}: two compiles in one process differ",
            m.display()
        );
    }
}
