//! Device profiles from the command line: a built-in name or a JSON file whose fields
//! override a base profile's.

use std::path::Path;

use ge_sim::{Profile, SimDevice};

use crate::cli::DeviceFlags;

/// Resolves `--device`: a built-in profile name or a JSON profile file (relative to the
/// current directory), parsed by the same code the `ge_model!` macro uses.
pub fn resolve(name: &str) -> Result<Profile, String> {
    ge_build::codegen::resolve_device(name, Path::new("."))
        .map(|d| d.profile)
        .map_err(|e| e.to_string())
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

/// `d` running its kernels on `threads` host threads (the shared persistent pool); one
/// thread is the calling thread alone.
pub fn on_threads(mut d: SimDevice, threads: usize) -> SimDevice {
    if threads > 1 {
        d.host = ge_sim::threads::Host::on(ge_sim::threads::ThreadPool::shared(threads));
    }
    d
}
