//! Device profiles named in `ge_model!` / `Builder` options: a built-in name (`edge`,
//! `datacenter`, `tiny`, `cortex-m`) or a JSON file whose fields override a base profile, e.g.
//! `{"base": "edge", "name": "edge4", "cores": 4}` (the same format as `ge --device FILE`).

use std::path::{Path, PathBuf};

use ge_sim::Profile;

use crate::error::{CompileError, Result};

/// A resolved device: the profile and, for a profile file, the file it came from (so
/// callers can track it for rebuilds).
#[derive(Clone, Debug)]
pub struct DeviceSpec {
    pub profile: Profile,
    pub file: Option<PathBuf>,
}

fn opt(msg: String) -> CompileError {
    CompileError::Option(msg)
}

/// Resolves `spec`; a relative file path is taken from `base_dir`.
pub fn resolve_device(spec: &str, base_dir: &Path) -> Result<DeviceSpec> {
    if let Some(p) = Profile::builtin(spec) {
        return Ok(DeviceSpec {
            profile: p,
            file: None,
        });
    }
    let path = base_dir.join(spec);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        opt(format!(
            "device '{spec}' is neither edge, datacenter, tiny, cortex-m nor a readable profile file: {e}"
        ))
    })?;
    let profile = parse_profile(&text, spec)?;
    Ok(DeviceSpec {
        profile,
        file: Some(path),
    })
}

/// Parses a profile file's text (`label` names it in errors and is the default name).
pub fn parse_profile(text: &str, label: &str) -> Result<Profile> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| opt(format!("{label}: not JSON: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| opt(format!("{label}: a profile is a JSON object")))?;
    let base = obj.get("base").and_then(|b| b.as_str()).unwrap_or("edge");
    let mut p = Profile::builtin(base)
        .ok_or_else(|| opt(format!("{label}: unknown base profile '{base}'")))?;
    let name = obj.get("name").and_then(|n| n.as_str()).unwrap_or(label);
    p.name = Box::leak(name.to_string().into_boxed_str());
    for (k, val) in obj {
        if matches!(k.as_str(), "name" | "base") {
            continue;
        }
        if k == "bf16" {
            p.bf16 = val
                .as_bool()
                .ok_or_else(|| opt(format!("{label}: 'bf16' must be true or false")))?;
            continue;
        }
        let n = val
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| opt(format!("{label}: '{k}' must be a non-negative integer")))?;
        let field = match k.as_str() {
            "rate_period_cycles" => &mut p.rate_period_cycles,
            "cores" => &mut p.cores,
            "clock_mhz" => &mut p.clock_mhz,
            "cube_macs_per_cycle" => &mut p.cube_macs_per_cycle,
            "fp32_cube_divisor" => &mut p.fp32_cube_divisor,
            "int8_cube_multiplier" => &mut p.int8_cube_multiplier,
            "vector_ops_per_cycle" => &mut p.vector_ops_per_cycle,
            "fp16_vector_ops_per_cycle" => &mut p.fp16_vector_ops_per_cycle,
            "gm_bytes_per_cycle" => &mut p.gm_bytes_per_cycle,
            "task_overhead_cycles" => &mut p.task_overhead_cycles,
            "launch_overhead_ns" => &mut p.launch_overhead_ns,
            "unified_buffer_bytes" => &mut p.unified_buffer_bytes,
            "l1_bytes" => &mut p.l1_bytes,
            "l0ab_bytes" => &mut p.l0ab_bytes,
            "l0c_bytes" => &mut p.l0c_bytes,
            _ => return Err(opt(format!("{label}: unknown profile field '{k}'"))),
        };
        *field = n;
    }
    if p.cores == 0 || p.clock_mhz == 0 || p.rate_period_cycles == 0 {
        return Err(opt(format!(
            "{label}: cores, clock_mhz and rate_period_cycles must be positive"
        )));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_and_file() {
        let d = resolve_device("tiny", Path::new(".")).unwrap();
        assert_eq!(d.profile, Profile::TINY);
        let p = parse_profile(r#"{"base": "edge", "name": "edge4", "cores": 4}"#, "x").unwrap();
        assert_eq!((p.name, p.cores, p.clock_mhz), ("edge4", 4, 1000));
        assert!(parse_profile(r#"{"cores": 0}"#, "x").is_err());
        assert!(parse_profile(r#"{"rate_period_cycles": 0}"#, "x").is_err());
        let m = resolve_device("cortex-m", Path::new(".")).unwrap();
        assert_eq!(m.profile, Profile::CORTEX_M);
        let p = parse_profile(r#"{"base": "cortex-m", "clock_mhz": 480}"#, "x").unwrap();
        assert_eq!((p.rate_period_cycles, p.clock_mhz), (1000, 480));
        assert!(parse_profile(r#"{"bogus": 1}"#, "x").is_err());
        let p = parse_profile(r#"{"base": "edge", "bf16": false}"#, "x").unwrap();
        assert!(!p.bf16 && Profile::EDGE.bf16 && !Profile::TINY.bf16);
        assert!(parse_profile(r#"{"bf16": 1}"#, "x").is_err());
        assert!(resolve_device("no-such.json", Path::new("/nonexistent")).is_err());
    }
}
