//! Device profiles from the command line: a built-in name or a JSON file whose fields
//! override the `edge` profile's.

use ge_sim::{Profile, SimDevice};

use crate::cli::DeviceFlags;

/// Resolves `--device`.
pub fn resolve(name: &str) -> Result<Profile, String> {
    if let Some(p) = Profile::builtin(name) {
        return Ok(p);
    }
    let text = std::fs::read_to_string(name).map_err(|e| {
        format!(
            "--device '{name}' is neither edge, datacenter, tiny nor a readable profile file: {e}"
        )
    })?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{name}: not JSON: {e}"))?;
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{name}: a profile is a JSON object"))?;
    let base = obj.get("base").and_then(|b| b.as_str()).unwrap_or("edge");
    let mut p =
        Profile::builtin(base).ok_or_else(|| format!("{name}: unknown base profile '{base}'"))?;
    let label: &'static str = Box::leak(
        obj.get("name")
            .and_then(|n| n.as_str())
            .unwrap_or(name)
            .to_string()
            .into_boxed_str(),
    );
    p.name = label;
    for (k, val) in obj {
        if matches!(k.as_str(), "name" | "base") {
            continue;
        }
        let n = val
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("{name}: '{k}' must be a non-negative integer"))?;
        let field = match k.as_str() {
            "cores" => &mut p.cores,
            "clock_mhz" => &mut p.clock_mhz,
            "cube_macs_per_cycle" => &mut p.cube_macs_per_cycle,
            "fp32_cube_divisor" => &mut p.fp32_cube_divisor,
            "vector_ops_per_cycle" => &mut p.vector_ops_per_cycle,
            "gm_bytes_per_cycle" => &mut p.gm_bytes_per_cycle,
            "task_overhead_cycles" => &mut p.task_overhead_cycles,
            "launch_overhead_ns" => &mut p.launch_overhead_ns,
            "unified_buffer_bytes" => &mut p.unified_buffer_bytes,
            "l1_bytes" => &mut p.l1_bytes,
            "l0ab_bytes" => &mut p.l0ab_bytes,
            "l0c_bytes" => &mut p.l0c_bytes,
            _ => return Err(format!("{name}: unknown profile field '{k}'")),
        };
        *field = n;
    }
    if p.cores == 0 || p.clock_mhz == 0 {
        return Err(format!("{name}: cores and clock_mhz must be positive"));
    }
    Ok(p)
}

/// The simulated device the flags describe.
pub fn device(flags: &DeviceFlags) -> Result<SimDevice, String> {
    let mut d = SimDevice::new(resolve(&flags.device)?);
    if let Some(c) = flags.cores {
        if c == 0 {
            return Err("--cores must be at least 1".into());
        }
        d.max_cores = c;
    }
    if flags.host_dispatch {
        d.mode = ge_sim::LaunchMode::HostDispatched;
    }
    Ok(d)
}
