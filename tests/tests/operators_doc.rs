//! `docs/OPERATORS.md` must match what `ge ops --markdown` generates from the importers'
//! table. Regenerate with `cargo run -p ge-cli -- ops --markdown > docs/OPERATORS.md`.

#[test]
fn operators_doc_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/OPERATORS.md");
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    let generated = ge_build::onnx::table::markdown();
    assert!(
        checked_in == generated,
        "{} is stale: regenerate it with `cargo run -p ge-cli -- ops --markdown > docs/OPERATORS.md`",
        path.display()
    );
}
