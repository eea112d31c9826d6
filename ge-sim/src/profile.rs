//! Device profiles: the numbers the cost model charges with. `edge`, `datacenter` and `tiny`
//! model a Da Vinci-like part and are named by us, not any vendor's spec (see the crate docs
//! for the sources of scale); `cortex-m` is a Cortex-M4F microcontroller running int8
//! kernels of CMSIS-NN's kind, calibrated from their instruction timings
//! (`docs/research/cortex-m-cycles.md`; its error against MLPerf Tiny's measured latencies is
//! in `docs/TINY.md`).

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
    /// Profile name (`edge`, `datacenter`, `tiny`, `cortex-m`, or a custom one).
    pub name: &'static str,
    /// The compute and memory rates below (`*_per_cycle`) are per this many cycles: 1 for
    /// the NPU profiles; a microcontroller does less than one MAC per cycle, so its rates
    /// are given per 1,000 cycles.
    pub rate_period_cycles: u32,
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
        rate_period_cycles: 1,
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
        rate_period_cycles: 1,
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
        rate_period_cycles: 1,
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

    /// A Cortex-M4F-class microcontroller at 120 MHz (the MLPerf Tiny board NUCLEO-L4R5ZI)
    /// running CMSIS-NN-class int8 kernels, weights read from flash (5 wait states): rates
    /// per 1,000 cycles. The int8 rate, 0.5 MAC a cycle, averages what the kernels' inner loops
    /// cost per MAC (SMLAD on sign-extended pairs and the flash reads: 1×1 conv 1.9 cycles,
    /// k×k 1.75, first conv 2.2, depthwise 3.7, fully connected 2.6; over kws's and vww's mix
    /// 2.1); fp32 0.25 MAC a cycle (VFMA takes 3 cycles; loads); one requantization and store
    /// per output element, 25 cycles (a vector op); 200 cycles to start a task (a compiled task
    /// list, no interpreter); 4 bytes a cycle of SRAM. Sizes: 640 KiB of SRAM as "L1" (every
    /// operand is resident: nothing is streamed twice), 64 KiB of unified buffer (bounds the
    /// fused programs' registers). Derivations: `docs/research/cortex-m-cycles.md`.
    pub const CORTEX_M: Profile = Profile {
        name: "cortex-m",
        rate_period_cycles: 1000,
        cores: 1,
        clock_mhz: 120,
        cube_macs_per_cycle: 500,
        fp32_cube_divisor: 2,
        int8_cube_multiplier: 1,
        vector_ops_per_cycle: 40,
        fp16_vector_ops_per_cycle: 40,
        bf16: false,
        gm_bytes_per_cycle: 4000,
        task_overhead_cycles: 200,
        launch_overhead_ns: 1_000,
        unified_buffer_bytes: 64 * 1024,
        l1_bytes: 640 * 1024,
        l0ab_bytes: 16 * 1024,
        l0c_bytes: 32 * 1024,
    };

    /// A built-in profile by name.
    pub fn builtin(name: &str) -> Option<Profile> {
        match name {
            "edge" => Some(Profile::EDGE),
            "datacenter" => Some(Profile::DATACENTER),
            "tiny" => Some(Profile::TINY),
            "cortex-m" => Some(Profile::CORTEX_M),
            _ => None,
        }
    }
}

impl Default for Profile {
    fn default() -> Self {
        Profile::EDGE
    }
}
