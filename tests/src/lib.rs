//! Shared helpers of the cross-crate tests: where the generated corpus lives.

use std::path::PathBuf;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// The corpus folder (`GE_CORPUS`, else `<workspace>/corpus`). Panics with the command to
/// run when it is missing: a test must not pass vacuously.
pub fn corpus(part: &str) -> PathBuf {
    let root = std::env::var_os("GE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("corpus"));
    let p = root.join(part);
    assert!(
        p.is_dir(),
        "corpus part {} is missing: run `python3 -m pip install -r tools/requirements.txt && python3 tools/gen_corpus.py`",
        p.display()
    );
    p
}
