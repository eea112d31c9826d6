//! The op lists of the precision modes: the mixed-precision white/black lists (gray is
//! everything else), `--modify-mixlist FILE.json` edits to them, and the `--keep-dtype FILE`
//! list of nodes and op types kept in their original dtype. Names are checked against the
//! model's node names and the known op types; an unknown one is an error naming the closest.

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::{CompileError, Result};

/// Ops computed in the reduced dtype by `allow_mix_precision`: the cube ops, whose fp16
/// inputs accumulate in fp32.
pub const DEFAULT_WHITE: &[&str] = &["Conv", "ConvTranspose", "Gemm", "MatMul", "Attention"];

/// Ops kept in fp32 by `allow_mix_precision`: exponentials and logs, sums over many
/// elements (softmax, normalizations, reductions), and index or coordinate math whose
/// rounding moves results by whole elements.
pub const DEFAULT_BLACK: &[&str] = &[
    "Softmax",
    "LogSoftmax",
    "LayerNormalization",
    "LayerNorm",
    "GroupNormalization",
    "InstanceNormalization",
    "LRN",
    "ReduceMean",
    "ReduceSum",
    "ReduceSumSquare",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceProd",
    "Exp",
    "Log",
    "Pow",
    "Erf",
    "Range",
    "CumSum",
    "TopK",
    "NonMaxSuppression",
    "Resize",
    "Upsample",
    "GridSample",
    "RNN",
    "GRU",
    "LSTM",
];

/// Op types the compiler's fusion passes name their nodes by (besides ONNX's).
pub const FUSED_OP_TYPES: &[&str] = &["Attention", "LayerNorm", "Gelu"];

/// Class of an op under `allow_mix_precision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MixClass {
    /// Always in the reduced dtype.
    White,
    /// Never.
    Black,
    /// Follows its inputs.
    Gray,
}

/// The white and black lists in force (gray: every other op type).
#[derive(Clone, Debug)]
pub struct MixLists {
    white: BTreeSet<String>,
    black: BTreeSet<String>,
}

impl Default for MixLists {
    fn default() -> Self {
        MixLists {
            white: DEFAULT_WHITE.iter().map(|s| s.to_string()).collect(),
            black: DEFAULT_BLACK.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl MixLists {
    /// The class of a node made of ops `types` (one, or a fused node's members): black if
    /// any member is, else white if any is (gray members fused with a white op follow it),
    /// else gray.
    pub fn class<'a>(&self, mut types: impl Iterator<Item = &'a str> + Clone) -> MixClass {
        if types.clone().any(|t| self.black.contains(t)) {
            MixClass::Black
        } else if types.any(|t| self.white.contains(t)) {
            MixClass::White
        } else {
            MixClass::Gray
        }
    }

    /// Applies `--modify-mixlist`:
    /// `{"black-list": {"to-add": [], "to-remove": []}, "white-list": {…}, "gray-list": {…}}`.
    /// Adding to one list removes the op from the other; `gray-list` `to-add` removes it from
    /// both. O(entries · known).
    pub fn modify(&mut self, path: &Path, known: &[&str]) -> Result<()> {
        let bad =
            |m: String| CompileError::Option(format!("--modify-mixlist {}: {m}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|source| CompileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad("must be a JSON object".into()))?;
        for (list, edits) in obj {
            let edits = edits
                .as_object()
                .ok_or_else(|| bad(format!("'{list}' must be an object with to-add/to-remove")))?;
            for (action, names) in edits {
                let names = names
                    .as_array()
                    .ok_or_else(|| bad(format!("'{list}.{action}' must be a list of op types")))?;
                for n in names {
                    let n = n
                        .as_str()
                        .ok_or_else(|| bad(format!("'{list}.{action}' entries must be strings")))?;
                    if !known.contains(&n) {
                        return Err(bad(format!(
                            "unknown op type '{n}' in '{list}.{action}'{}",
                            crate::suggest::did_you_mean(n, known.iter().copied())
                        )));
                    }
                    self.edit(list, action, n).map_err(bad)?;
                }
            }
        }
        Ok(())
    }

    fn edit(&mut self, list: &str, action: &str, op: &str) -> std::result::Result<(), String> {
        let (this, other) = match list {
            "white-list" => (Some(&mut self.white), Some(&mut self.black)),
            "black-list" => (Some(&mut self.black), Some(&mut self.white)),
            "gray-list" => (None, None),
            _ => {
                return Err(format!(
                    "unknown list '{list}'{} (white-list, black-list or gray-list)",
                    crate::suggest::did_you_mean(list, ["white-list", "black-list", "gray-list"])
                ));
            }
        };
        match (action, this, other) {
            ("to-add", Some(this), Some(other)) => {
                other.remove(op);
                this.insert(op.to_string());
            }
            ("to-remove", Some(this), _) => {
                this.remove(op);
            }
            ("to-add", None, _) => {
                self.white.remove(op);
                self.black.remove(op);
            }
            ("to-remove", None, _) => {}
            _ => {
                return Err(format!(
                    "unknown action '{action}' in '{list}'{} (to-add or to-remove)",
                    crate::suggest::did_you_mean(action, ["to-add", "to-remove"])
                ));
            }
        }
        Ok(())
    }
}

/// Nodes and op types kept in their original dtype (`--keep-dtype FILE`): one entry per
/// line, `OpName:NAME` or `OpType:TYPE` (atc's spelling) or a bare name, looked up among the
/// model's node names and then the op types; `#` starts a comment.
#[derive(Clone, Debug, Default)]
pub struct KeepList {
    pub nodes: BTreeSet<String>,
    pub op_types: BTreeSet<String>,
}

impl KeepList {
    /// Reads `path`, checking names against `node_names` and `op_types`. O(lines · known)
    /// only for a misspelt line; O(lines · log) otherwise.
    pub fn load(path: &Path, node_names: &BTreeSet<&str>, op_types: &[&str]) -> Result<KeepList> {
        let text = std::fs::read_to_string(path).map_err(|source| CompileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut k = KeepList::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |what: &str, name: &str, known: &mut dyn Iterator<Item = &str>| {
                CompileError::Option(format!(
                    "--keep-dtype {}:{}: unknown {what} '{name}'{}",
                    path.display(),
                    i + 1,
                    crate::suggest::did_you_mean(name, known)
                ))
            };
            if let Some(name) = line.strip_prefix("OpName:") {
                let name = name.trim();
                if !node_names.contains(name) {
                    return Err(bad("node", name, &mut node_names.iter().copied()));
                }
                k.nodes.insert(name.to_string());
            } else if let Some(t) = line.strip_prefix("OpType:") {
                let t = t.trim();
                if !op_types.contains(&t) {
                    return Err(bad("op type", t, &mut op_types.iter().copied()));
                }
                k.op_types.insert(t.to_string());
            } else if node_names.contains(line) {
                k.nodes.insert(line.to_string());
            } else if op_types.contains(&line) {
                k.op_types.insert(line.to_string());
            } else {
                return Err(bad(
                    "node name or op type",
                    line,
                    &mut node_names.iter().copied().chain(op_types.iter().copied()),
                ));
            }
        }
        Ok(k)
    }

    /// True when nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.op_types.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ge-lists-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const KNOWN: &[&str] = &["Conv", "Softmax", "Relu", "Exp", "Add"];

    #[test]
    fn classes_follow_the_lists_and_their_edits() {
        let mut l = MixLists::default();
        assert_eq!(l.class(["Conv"].into_iter()), MixClass::White);
        assert_eq!(l.class(["Relu"].into_iter()), MixClass::Gray);
        assert_eq!(l.class(["Relu", "Exp"].into_iter()), MixClass::Black);
        assert_eq!(l.class(["Conv", "Relu"].into_iter()), MixClass::White);
        let p = file(
            "mix.json",
            r#"{"black-list": {"to-add": ["Relu"], "to-remove": ["Exp"]},
                "white-list": {"to-remove": ["Conv"]}}"#,
        );
        l.modify(&p, KNOWN).unwrap();
        assert_eq!(l.class(["Relu"].into_iter()), MixClass::Black);
        assert_eq!(l.class(["Exp"].into_iter()), MixClass::Gray);
        assert_eq!(l.class(["Conv"].into_iter()), MixClass::Gray);
    }

    #[test]
    fn unknown_names_name_the_closest() {
        let mut l = MixLists::default();
        let p = file("typo.json", r#"{"black-list": {"to-add": ["Sofmax"]}}"#);
        let e = l.modify(&p, KNOWN).unwrap_err().to_string();
        assert!(
            e.contains("'Sofmax'") && e.contains("did you mean 'Softmax'"),
            "{e}"
        );
        let p = file("list.json", r#"{"blak-list": {"to-add": ["Relu"]}}"#);
        let e = l.modify(&p, KNOWN).unwrap_err().to_string();
        assert!(e.contains("did you mean 'black-list'"), "{e}");
        let nodes: BTreeSet<&str> = ["conv1", "fc"].into_iter().collect();
        let p = file(
            "keep.txt",
            "# kept\nOpName:conv1\nOpType:Softmax\nRelu\nconv2\n",
        );
        let e = KeepList::load(&p, &nodes, KNOWN).unwrap_err().to_string();
        assert!(
            e.contains(":5:") && e.contains("did you mean 'conv1'"),
            "{e}"
        );
        let p = file("keep2.txt", "OpName:conv1\nOpType:Softmax\nRelu\nfc\n");
        let k = KeepList::load(&p, &nodes, KNOWN).unwrap();
        assert_eq!(k.nodes.len(), 2);
        assert_eq!(k.op_types.len(), 2);
    }
}
