//! Compile errors. Every error about a node names the node, its op type and opset, and says
//! what to do.

use std::path::PathBuf;

/// Why a model could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("not a valid ONNX model: {0}")]
    Parse(String),
    #[error("node '{node}' ({op_type}, opset {opset}): {reason}")]
    Node {
        node: String,
        op_type: String,
        opset: i64,
        reason: String,
    },
    #[error("node '{node}' ({op_type}, opset {opset}) is not supported: {reason}")]
    Unsupported {
        node: String,
        op_type: String,
        opset: i64,
        reason: String,
    },
    #[error("input '{input}': {reason}")]
    Input { input: String, reason: String },
    #[error("{0}")]
    Model(String),
    #[error("invalid option: {0}")]
    Option(String),
    /// One gear of a multi-shape compile failed (`shapes`: its input shapes).
    #[error("gear {gear} ({shapes}): {source}{hint}")]
    Gear {
        gear: usize,
        shapes: String,
        source: Box<CompileError>,
        /// Why the gear's shapes may have caused it, or empty.
        hint: String,
    },
}

/// Result of compiler steps.
pub type Result<T, E = CompileError> = std::result::Result<T, E>;
