//! Device profiles: the numbers the cost model charges with. They model a Da Vinci-like part
//! and are named by us, not any vendor's spec (see the crate docs for the sources of scale).

/// How tasks reach the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchMode {
    /// The whole task list sits on the device: one launch per run.
    Sink,
    /// The host dispatches every task: one launch (and its overhead) per task.
    HostDispatched,
}

/// A simulated device's resources and speeds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    /// Profile name (`edge`, `datacenter`, `tiny`, or a custom one).
    pub name: &'static str,
    /// AI cores.
    pub cores: u32,
    /// Core clock in MHz.
    pub clock_mhz: u32,
    /// Cube MACs per cycle per core at fp16 (16×16×16 = 4,096).
    pub cube_macs_per_cycle: u32,
    /// fp32 matmul runs at this fraction (divisor) of the fp16 cube rate.
    pub fp32_cube_divisor: u32,
    /// int8 matmul runs at this multiple of the fp16 cube rate (a Da Vinci cube does twice
    /// as many int8 MACs as fp16 ones).
    pub int8_cube_multiplier: u32,
    /// Vector-unit fp32 element operations per cycle per core.
    pub vector_ops_per_cycle: u32,
    /// Vector-unit fp16/bf16 element operations per cycle per core: the same registers hold
    /// twice the lanes (2× the fp32 rate on Da Vinci).
    pub fp16_vector_ops_per_cycle: u32,
    /// The cube and vector unit compute bf16 (as fast as fp16); without it the bf16
    /// `--precision` modes are refused at compile time.
    pub bf16: bool,
    /// Global-memory bandwidth in bytes per core-clock cycle (whole device).
    pub gm_bytes_per_cycle: u32,
    /// Cycles the device spends starting one task from its on-device queue (sink mode).
    pub task_overhead_cycles: u32,
    /// Nanoseconds the host spends on one launch.
    pub launch_overhead_ns: u32,
    /// Unified buffer bytes per core.
    pub unified_buffer_bytes: u32,
    /// L1 bytes per core.
    pub l1_bytes: u32,
    /// L0A / L0B bytes per core (each).
    pub l0ab_bytes: u32,
    /// L0C bytes per core.
    pub l0c_bytes: u32,
}

impl Profile {
    /// The default: a 2-core edge part at 1 GHz with LPDDR at 25.6 GB/s.
    pub const EDGE: Profile = Profile {
        name: "edge",
        cores: 2,
        clock_mhz: 1000,
        cube_macs_per_cycle: 4096,
        fp32_cube_divisor: 4,
        int8_cube_multiplier: 2,
        vector_ops_per_cycle: 64,
        fp16_vector_ops_per_cycle: 128,
        bf16: true,
        gm_bytes_per_cycle: 26,
        task_overhead_cycles: 200,
        launch_overhead_ns: 5_000,
        unified_buffer_bytes: 192 * 1024,
        l1_bytes: 512 * 1024,
        l0ab_bytes: 64 * 1024,
        l0c_bytes: 128 * 1024,
    };

    /// A 32-core data-centre part at 1.5 GHz with HBM at ~1.2 TB/s.
    pub const DATACENTER: Profile = Profile {
        name: "datacenter",
        cores: 32,
        clock_mhz: 1500,
        cube_macs_per_cycle: 4096,
        fp32_cube_divisor: 4,
        int8_cube_multiplier: 2,
        vector_ops_per_cycle: 64,
        fp16_vector_ops_per_cycle: 128,
        bf16: true,
        gm_bytes_per_cycle: 800,
        task_overhead_cycles: 200,
        launch_overhead_ns: 5_000,
        unified_buffer_bytes: 256 * 1024,
        l1_bytes: 1024 * 1024,
        l0ab_bytes: 64 * 1024,
        l0c_bytes: 256 * 1024,
    };

    /// A 1-core microcontroller-class part at 500 MHz with small buffers and 4 GB/s memory;
    /// its cube takes fp16 and int8, not bf16.
    pub const TINY: Profile = Profile {
        name: "tiny",
        cores: 1,
        clock_mhz: 500,
        cube_macs_per_cycle: 1024,
        fp32_cube_divisor: 4,
        int8_cube_multiplier: 2,
        vector_ops_per_cycle: 16,
        fp16_vector_ops_per_cycle: 32,
        bf16: false,
        gm_bytes_per_cycle: 8,
        task_overhead_cycles: 100,
        launch_overhead_ns: 10_000,
        unified_buffer_bytes: 64 * 1024,
        l1_bytes: 128 * 1024,
        l0ab_bytes: 16 * 1024,
        l0c_bytes: 32 * 1024,
    };

    /// A built-in profile by name.
    pub fn builtin(name: &str) -> Option<Profile> {
        match name {
            "edge" => Some(Profile::EDGE),
            "datacenter" => Some(Profile::DATACENTER),
            "tiny" => Some(Profile::TINY),
            _ => None,
        }
    }
}

impl Default for Profile {
    fn default() -> Self {
        Profile::EDGE
    }
}
