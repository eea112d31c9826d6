//! The fusion switch file (`--fusion-switch FILE.json`), as atc has: turn named fusion
//! patterns on or off and bound the size of autofused kernels.
//!
//! ```json
//! { "disable": ["fuse_epilogue"], "enable": [], "autofusion": { "min_ops": 2, "max_ops": 16 } }
//! ```

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::{CompileError, Result};

/// Parsed switch settings; the default enables everything.
#[derive(Clone, Debug)]
pub struct FusionSwitch {
    disabled: BTreeSet<String>,
    /// Fewest ops an autofused kernel may hold.
    pub min_ops: usize,
    /// Most ops an autofused kernel may hold.
    pub max_ops: usize,
}

impl Default for FusionSwitch {
    fn default() -> Self {
        FusionSwitch {
            disabled: BTreeSet::new(),
            min_ops: 2,
            max_ops: 16,
        }
    }
}

impl FusionSwitch {
    /// True unless the file disabled `pattern`.
    pub fn enabled(&self, pattern: &str) -> bool {
        !self.disabled.contains(pattern)
    }

    /// Reads a switch file; unknown pattern names are errors listing the known ones.
    pub fn load(path: &Path, known: &[&str]) -> Result<FusionSwitch> {
        let text = std::fs::read_to_string(path).map_err(|source| CompileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let bad =
            |m: String| CompileError::Option(format!("fusion switch {}: {m}", path.display()));
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad("must be a JSON object".into()))?;
        let mut s = FusionSwitch::default();
        for (key, val) in obj {
            match key.as_str() {
                "disable" | "enable" => {
                    let names = val
                        .as_array()
                        .ok_or_else(|| bad(format!("'{key}' must be a list of pattern names")))?;
                    for n in names {
                        let n = n
                            .as_str()
                            .ok_or_else(|| bad(format!("'{key}' entries must be strings")))?;
                        if !known.contains(&n) {
                            return Err(bad(format!(
                                "unknown pattern '{n}' (known: {})",
                                known.join(", ")
                            )));
                        }
                        if key == "disable" {
                            s.disabled.insert(n.to_string());
                        } else {
                            s.disabled.remove(n);
                        }
                    }
                }
                "autofusion" => {
                    let a = val
                        .as_object()
                        .ok_or_else(|| bad("'autofusion' must be an object".into()))?;
                    for (k, v) in a {
                        let n = v.as_u64().ok_or_else(|| {
                            bad(format!("autofusion.{k} must be a non-negative integer"))
                        })? as usize;
                        match k.as_str() {
                            "min_ops" => s.min_ops = n.max(1),
                            "max_ops" => s.max_ops = n.max(1),
                            _ => {
                                return Err(bad(format!(
                                    "unknown autofusion key '{k}' (min_ops, max_ops)"
                                )));
                            }
                        }
                    }
                }
                _ => {
                    return Err(bad(format!(
                        "unknown key '{key}' (disable, enable, autofusion)"
                    )));
                }
            }
        }
        if s.min_ops > s.max_ops {
            return Err(bad("autofusion.min_ops exceeds max_ops".into()));
        }
        Ok(s)
    }
}
