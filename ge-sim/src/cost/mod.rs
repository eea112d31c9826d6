//! The analytic cost model: cycles of one task from its work and its global-memory traffic.
//!
//! For a task split over `c` cores (rates per cycle; a profile whose rates are per
//! `rate_period_cycles` cycles — a microcontroller's — has its work multiplied by that):
//! - cube cycles   = ⌈cube_macs / (cube_macs_per_cycle / fp32_cube_divisor × c)⌉, without
//!   the divisor when the task's operands are fp16/bf16 ([`Work::half`]: the cube's native
//!   rate), + ⌈int8_cube_macs / (cube_macs_per_cycle × int8_cube_multiplier × c)⌉
//! - vector cycles = ⌈vector_ops / (vector_ops_per_cycle × c)⌉ (`fp16_vector_ops_per_cycle`
//!   for a half task)
//! - memory cycles = ⌈gm_bytes / (gm_bytes_per_cycle × c / total cores)⌉ (a task holding c
//!   of the cores gets that share of the bandwidth)
//! - task cycles   = max(cube + vector, memory) + task_overhead_cycles
//!
//! `max` models double buffering: loads of the next tile overlap compute on the current one,
//! so a task is bound by whichever is slower. Global-memory bytes are every input read once
//! and every output written once, at their stored element size (a selecting task — Gather,
//! Slice — reads of its input 0 at most the bytes it writes: the rows it picks, not the
//! whole table), plus what a cube task must read again when neither of its operands fits in
//! L1 ([`restream_bytes`]).

use ge_runtime::format::{
    ConvParams, FusedParams, GemmParams, LrnParams, PoolParams, QConvFusedParams, QConvParams,
    QGemmParams, RECURRENT_BIDIRECTIONAL, RecurrentCell, RecurrentParams, Shape, TopKParams,
};

use crate::profile::Profile;
use ge_runtime::format::read_params;

/// Work a task does, for the cost model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Multiply-accumulates suited to the cube (matrix) unit.
    pub cube_macs: u64,
    /// Cube multiply-accumulates on int8 operands (charged at the profile's int8 rate).
    pub int8_cube_macs: u64,
    /// Elementwise operations on the vector unit.
    pub vector_ops: u64,
    /// Global-memory bytes moved beyond reading each input and writing each output once
    /// (which the device charges every task): operands a kernel streams again, spills.
    pub extra_gm_bytes: u64,
    /// The task computes on 16-bit floats (its input 0 or output 0 is fp16/bf16): charged at
    /// the fp16 cube and vector rates. Set by the device from the tensor table, not by the
    /// per-kind estimators (which see shapes only).
    pub half: bool,
    /// The task reads only the elements of input 0 its output selects (Gather, Slice): that
    /// input is charged at most the output's bytes.
    pub selects: bool,
}

/// What one task costs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskCost {
    pub cycles: u64,
    pub compute_cycles: u64,
    pub memory_cycles: u64,
    pub gm_bytes: u64,
}

/// Cores a task can keep busy: one per output tile of half a unified buffer (the other half
/// holds the next tile: double buffering).
pub fn useful_cores(p: &Profile, out_bytes: u64) -> u32 {
    let tile = u64::from(p.unified_buffer_bytes / 2).max(1);
    u32::try_from(out_bytes.div_ceil(tile).max(1)).unwrap_or(u32::MAX)
}

/// Cycles and traffic of a task with `work` moving `gm_bytes`, split over `cores` of the
/// device's `total_cores` (it gets that share of the global-memory bandwidth).
pub fn task_cost(p: &Profile, work: Work, gm_bytes: u64, cores: u32, total_cores: u32) -> TaskCost {
    let c = u64::from(cores.max(1));
    // Rates are per `rate_period_cycles` cycles: work and bytes are scaled up by it.
    let period = u64::from(p.rate_period_cycles.max(1));
    let work = Work {
        cube_macs: work.cube_macs.saturating_mul(period),
        int8_cube_macs: work.int8_cube_macs.saturating_mul(period),
        vector_ops: work.vector_ops.saturating_mul(period),
        ..work
    };
    let share = u64::from(p.gm_bytes_per_cycle).max(1) * c;
    let total = u64::from(total_cores.max(cores).max(1));
    let (divisor, vector) = if work.half {
        (1, p.fp16_vector_ops_per_cycle)
    } else {
        (p.fp32_cube_divisor.max(1), p.vector_ops_per_cycle)
    };
    let cube_rate = (u64::from(p.cube_macs_per_cycle) / u64::from(divisor)).max(1) * c;
    let vec_rate = u64::from(vector).max(1) * c;
    let int8_rate = u64::from(p.cube_macs_per_cycle)
        .saturating_mul(u64::from(p.int8_cube_multiplier))
        .max(1)
        * c;
    let compute = work
        .cube_macs
        .div_ceil(cube_rate)
        .saturating_add(work.int8_cube_macs.div_ceil(int8_rate))
        .saturating_add(work.vector_ops.div_ceil(vec_rate));
    // bandwidth × cores / total_cores, kept in integers: bytes × total / (bw × cores).
    let memory = gm_bytes
        .saturating_mul(period)
        .saturating_mul(total)
        .div_ceil(share);
    TaskCost {
        cycles: compute
            .max(memory)
            .saturating_add(u64::from(p.task_overhead_cycles)),
        compute_cycles: compute,
        memory_cycles: memory,
        gm_bytes,
    }
}

/// Bytes a cube task reads from global memory a second (third, …) time because neither
/// operand fits on chip: `a` and `b` are its two matrix operands' stored bytes (input 0 —
/// activations — and input 1 — weights, or the second activation of a MatMul). The cube
/// reads both from L1; with half of each of the task's `cores` L1s holding a resident
/// operand (the other half double-buffers the streamed one), an operand that fits is loaded
/// once and the other streams past it once. When neither fits, the task goes through the
/// smaller number of passes: `b` in chunks that fit, `a` streamed once per chunk (or the
/// other way round), so one operand is read `⌈other / L1⌉` times. Because the test is on
/// bytes, fp16 and int8 operands fit where fp32 ones do not: on the edge profile ResNet-50's
/// stage-3 1 × 1 convs re-read their input in fp32, not in fp16. O(1).
pub fn restream_bytes(p: &Profile, cores: u32, a: u64, b: u64) -> u64 {
    let l1 = (u64::from(p.l1_bytes / 2) * u64::from(cores.max(1))).max(1);
    if a <= l1 || b <= l1 {
        return 0;
    }
    let again = |x: u64, chunks_of: u64| x.saturating_mul(chunks_of.div_ceil(l1) - 1);
    again(a, b).min(again(b, a))
}

/// Converts cycles at the profile's clock to nanoseconds.
pub fn cycles_to_ns(p: &Profile, cycles: u64) -> u64 {
    cycles.saturating_mul(1000) / u64::from(p.clock_mhz.max(1))
}

// The per-kind estimators. Saturating throughout: shapes of a crafted (validated) blob may
// be absurd, and a malformed parameter record reads as all zeros.

/// Elements of all outputs.
fn out_elems(outs: &[Shape]) -> u64 {
    outs.iter()
        .fold(0u64, |a, s| a.saturating_add(s.numel() as u64))
}

/// Elements of input 0 (0 when absent).
fn first_in(ins: &[Option<Shape>]) -> u64 {
    ins.first()
        .copied()
        .flatten()
        .map_or(0, |s| s.numel() as u64)
}

/// Dim `i` of an optional input shape (1 when absent).
fn dim(s: Option<&Option<Shape>>, i: usize) -> u64 {
    s.copied().flatten().map_or(1, |s| s.dim(i) as u64)
}

/// The product of the first `spatial` kernel extents.
fn window(kernel: &[u32; 3], spatial: u32) -> u64 {
    kernel
        .iter()
        .take(spatial as usize)
        .fold(1u64, |a, &k| a.saturating_mul(u64::from(k)))
}

fn vector(ops: u64) -> Work {
    Work {
        cube_macs: 0,
        vector_ops: ops,
        ..Work::default()
    }
}

/// One vector op per output element: elementwise maps and data movement.
pub fn per_output(_: &[u8], _: &[Option<Shape>], outs: &[Shape]) -> Work {
    vector(out_elems(outs))
}

/// One vector op per output element, reading only the elements of input 0 it selects
/// (Gather, GatherElements, GatherNd, Slice: an embedding lookup reads its rows, not the
/// table).
pub fn selection(_: &[u8], _: &[Option<Shape>], outs: &[Shape]) -> Work {
    Work {
        selects: true,
        ..vector(out_elems(outs))
    }
}

/// One vector op per output element per input (Sum/Max/Min/Mean over N inputs).
pub fn per_output_per_input(_: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> Work {
    vector(out_elems(outs).saturating_mul(ins.len() as u64))
}

/// One vector op per element of input 0 (reductions, global pooling).
pub fn per_input(_: &[u8], ins: &[Option<Shape>], _: &[Shape]) -> Work {
    vector(first_in(ins))
}

/// Four vector ops per element of input 0 (softmax, instance norm).
pub fn four_per_input(_: &[u8], ins: &[Option<Shape>], _: &[Shape]) -> Work {
    vector(first_in(ins).saturating_mul(4))
}

/// LRN: per element of input 0 a square, an add per channel of its window (`size`
/// channels, clipped to the tensor's) and four ops to finish. O(1).
pub fn lrn(params: &[u8], ins: &[Option<Shape>], _: &[Shape]) -> Work {
    let p: LrnParams = read_params(params).unwrap_or(bytemuck::Zeroable::zeroed());
    let channels = ins
        .first()
        .copied()
        .flatten()
        .and_then(|s| s.dims().get(1).copied())
        .unwrap_or(1);
    let window = (p.size as usize).clamp(1, channels.max(1)) as u64;
    vector(first_in(ins).saturating_mul(window.saturating_mul(2).saturating_add(4)))
}

/// Six vector ops per element of input 0 (layer norm).
pub fn six_per_input(_: &[u8], ins: &[Option<Shape>], _: &[Shape]) -> Work {
    vector(first_in(ins).saturating_mul(6))
}

/// A vector op per element of input 0 and per output element (scans, scatters).
pub fn input_and_output(_: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> Work {
    vector(first_in(ins).saturating_add(out_elems(outs)))
}

/// Conv: each output element sums C/g × window inputs on the cube.
pub fn conv(params: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> Work {
    let p: ConvParams = read_params(params).unwrap_or(bytemuck::Zeroable::zeroed());
    let out = out_elems(outs);
    Work {
        cube_macs: out
            .saturating_mul(dim(ins.get(1), 1))
            .saturating_mul(window(&p.kernel, p.rank() as u32)),
        vector_ops: out,
        ..Work::default()
    }
}

/// ConvTranspose: each input element scatters into M/g × window outputs on the cube.
pub fn conv_transpose(params: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> Work {
    let p: ConvParams = read_params(params).unwrap_or(bytemuck::Zeroable::zeroed());
    Work {
        cube_macs: first_in(ins)
            .saturating_mul(dim(ins.get(1), 1))
            .saturating_mul(window(&p.kernel, p.rank() as u32)),
        vector_ops: out_elems(outs),
        ..Work::default()
    }
}

/// Matrix products: output elements × the inner dimension `k` on the cube.
fn matrix(k: usize, outs: &[Shape]) -> Work {
    let out = out_elems(outs);
    Work {
        cube_macs: out.saturating_mul(k as u64),
        vector_ops: out,
        ..Work::default()
    }
}

/// Gemm: `k` is A's column count, or its row count when A is transposed.
pub fn gemm(params: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> Work {
    let p: GemmParams = read_params(params).unwrap_or(bytemuck::Zeroable::zeroed());
    let a = ins.first().copied().flatten().unwrap_or_default();
    let k = if p.trans_a != 0 {
        a.dim(0)
    } else {
        a.dim(a.rank().saturating_sub(1))
    };
    matrix(k, outs)
}

/// GemmW8: a Gemm, plus one vector op per weight for its dequantization (`float(w)·s`).
pub fn gemm_w8(params: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> Work {
    let w = gemm(params, ins, outs);
    let weights = ins
        .get(1)
        .copied()
        .flatten()
        .map_or(0, |b| b.numel() as u64);
    Work {
        vector_ops: w.vector_ops.saturating_add(weights),
        ..w
    }
}

/// QGemm: `k` MACs per output element on the int8 cube, one vector op each for the
/// requantizing epilogue.
pub fn qgemm(params: &[u8], _: &[Option<Shape>], outs: &[Shape]) -> Work {
    let p: QGemmParams = read_params(params).unwrap_or(bytemuck::Zeroable::zeroed());
    let out = out_elems(outs);
    Work {
        int8_cube_macs: out.saturating_mul(u64::from(p.k)),
        vector_ops: out,
        ..Work::default()
    }
}

/// QConv: `C/group·kh·kw` MACs per output element on the int8 cube, one vector op each
/// for the requantizing epilogue (the im2col gather is charged as the input read).
pub fn qconv(params: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> Work {
    let p: QConvParams = read_params(params).unwrap_or(bytemuck::Zeroable::zeroed());
    let c = dim(ins.first(), 1) / u64::from(p.group.max(1));
    let k = c
        .saturating_mul(u64::from(p.kernel[0]))
        .saturating_mul(u64::from(p.kernel[1]));
    let out = out_elems(outs);
    Work {
        int8_cube_macs: out.saturating_mul(k),
        vector_ops: out,
        ..Work::default()
    }
}

/// QConvFused: the QConv's work, then one vector op per output element per instruction of
/// its program.
pub fn qconv_fused(params: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> Work {
    let p: QConvFusedParams = read_params(params).unwrap_or(bytemuck::Zeroable::zeroed());
    let conv = qconv(bytemuck::bytes_of(&p.conv), ins, outs);
    let program = out_elems(outs).saturating_mul(u64::from(p.program.instr_count.max(1)));
    Work {
        vector_ops: conv.vector_ops.saturating_add(program),
        ..conv
    }
}

/// MatMul: `k` is A's last dimension.
pub fn matmul(_: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> Work {
    let a = ins.first().copied().flatten().unwrap_or_default();
    matrix(a.dim(a.rank().saturating_sub(1)), outs)
}

/// Windowed pooling: one vector op per output element per window tap.
pub fn pool(params: &[u8], _: &[Option<Shape>], outs: &[Shape]) -> Work {
    let p: PoolParams = read_params(params).unwrap_or(bytemuck::Zeroable::zeroed());
    vector(out_elems(outs).saturating_mul(window(&p.kernel, p.rank() as u32)))
}

/// A fused vector program: one vector op per output element per instruction.
pub fn fused(params: &[u8], _: &[Option<Shape>], outs: &[Shape]) -> Work {
    let p: FusedParams = read_params(params).unwrap_or(bytemuck::Zeroable::zeroed());
    vector(out_elems(outs).saturating_mul(u64::from(p.instr_count.max(1))))
}

/// Attention: Q [.., S, D] · Kt [.., D, T] then · V [.., T, E] on the cube, the softmax
/// on the vector unit.
pub fn attention(_: &[u8], ins: &[Option<Shape>], outs: &[Shape]) -> Work {
    let k = ins.get(1).copied().flatten().unwrap_or_default();
    let d = k.dim(k.rank().saturating_sub(2)) as u64;
    let t = k.dim(k.rank().saturating_sub(1)) as u64;
    let e = outs
        .first()
        .map_or(1, |o| o.dim(o.rank().saturating_sub(1)) as u64)
        .max(1);
    let rows = out_elems(outs) / e;
    Work {
        cube_macs: rows.saturating_mul(t).saturating_mul(d.saturating_add(e)),
        vector_ops: rows.saturating_mul(t).saturating_mul(4),
        ..Work::default()
    }
}

/// A recurrent layer (RNN / GRU / LSTM), per direction: the input projection
/// `T·B × in × gates·H` and the recurrent products `T·B × H × gates·H` on the cube; on the
/// vector unit, the bias add and the gate math the unrolled graph does per hidden unit and
/// step (adds, products, clips and activations at [`crate::ops::unary::op_cost`]'s
/// rates: RNN 6, GRU 21, LSTM 30 operations). Traffic beyond the task's inputs and outputs:
/// the projected gates written and read back, and R read again every step after the first
/// (a layer's R rarely fits on chip; the unrolled graph's per-step tasks read it too).
pub fn recurrent(params: &[u8], ins: &[Option<Shape>], _: &[Shape]) -> Work {
    let p: RecurrentParams = read_params(params).unwrap_or(bytemuck::Zeroable::zeroed());
    let x = ins.first().copied().flatten().unwrap_or_default();
    let (g, per_unit) = match RecurrentCell::from_u32(p.cell) {
        Some(RecurrentCell::Rnn) => (1u64, 6u64),
        Some(RecurrentCell::Gru) => (3, 21),
        Some(RecurrentCell::Lstm) => (4, 30),
        None => return Work::default(),
    };
    let dirs: u64 = if p.direction == RECURRENT_BIDIRECTIONAL {
        2
    } else {
        1
    };
    let h = u64::from(p.hidden);
    let rows = (x.dim(0) as u64).saturating_mul(x.dim(1) as u64);
    let input = x.dim(2) as u64;
    let gh = g.saturating_mul(h);
    let per_dir_macs = rows
        .saturating_mul(gh)
        .saturating_mul(input.saturating_add(h));
    let per_dir_ops = rows
        .saturating_mul(gh)
        .saturating_add(rows.saturating_mul(h).saturating_mul(per_unit));
    let steps = x.dim(if p.layout != 0 { 1 } else { 0 }) as u64;
    let per_dir_bytes = rows.saturating_mul(gh).saturating_mul(8).saturating_add(
        steps
            .saturating_sub(1)
            .saturating_mul(gh.saturating_mul(h).saturating_mul(4)),
    );
    Work {
        cube_macs: dirs.saturating_mul(per_dir_macs),
        vector_ops: dirs.saturating_mul(per_dir_ops),
        extra_gm_bytes: dirs.saturating_mul(per_dir_bytes),
        ..Work::default()
    }
}

/// TopK: `k` passes over input 0.
pub fn top_k(params: &[u8], ins: &[Option<Shape>], _: &[Shape]) -> Work {
    let p: TopKParams = read_params(params).unwrap_or(bytemuck::Zeroable::zeroed());
    vector(first_in(ins).saturating_mul(u64::from(p.k.max(1))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_bound_task_costs_its_traffic() {
        let p = Profile::EDGE;
        let c = task_cost(
            &p,
            Work {
                cube_macs: 0,
                vector_ops: 100,
                ..Work::default()
            },
            26_000,
            2,
            2,
        );
        assert_eq!(c.memory_cycles, 1000);
        assert_eq!(c.compute_cycles, 1);
        assert_eq!(c.cycles, 1000 + 200);
    }

    /// The cortex-m profile's rates are per 1,000 cycles: 0.5 int8 MAC, 0.25 fp32 MAC and
    /// 0.04 requantization a cycle, 4 bytes a cycle.
    #[test]
    fn microcontroller_rates_are_per_thousand_cycles() {
        let p = Profile::CORTEX_M;
        let work = Work {
            int8_cube_macs: 1_000,
            cube_macs: 1_000,
            vector_ops: 10,
            ..Work::default()
        };
        let c = task_cost(&p, work, 400, 1, 1);
        assert_eq!(c.compute_cycles, 2_000 + 4_000 + 250);
        assert_eq!(c.memory_cycles, 100);
        assert_eq!(c.cycles, 6_250 + 200);
    }

    #[test]
    fn a_task_on_half_the_cores_gets_half_the_bandwidth() {
        let p = Profile::EDGE;
        let c = task_cost(&p, Work::default(), 26_000, 1, 2);
        assert_eq!(c.memory_cycles, 2000);
    }

    #[test]
    fn compute_bound_task_scales_with_cores() {
        let p = Profile::EDGE;
        let one = task_cost(
            &p,
            Work {
                cube_macs: 1 << 30,
                vector_ops: 0,
                ..Work::default()
            },
            0,
            1,
            2,
        );
        let two = task_cost(
            &p,
            Work {
                cube_macs: 1 << 30,
                vector_ops: 0,
                ..Work::default()
            },
            0,
            2,
            2,
        );
        assert_eq!(one.compute_cycles, 2 * two.compute_cycles);
    }

    #[test]
    fn half_tasks_run_at_the_fp16_rates() {
        let p = Profile::EDGE;
        let work = Work {
            cube_macs: 1 << 30,
            vector_ops: 1 << 20,
            ..Work::default()
        };
        let f32 = task_cost(&p, work, 0, 2, 2);
        let f16 = task_cost(&p, Work { half: true, ..work }, 0, 2, 2);
        let cube = |d: u64| (1u64 << 30).div_ceil(u64::from(p.cube_macs_per_cycle) / d * 2);
        let vector = |r: u32| (1u64 << 20).div_ceil(u64::from(r) * 2);
        assert_eq!(
            f32.compute_cycles,
            cube(u64::from(p.fp32_cube_divisor)) + vector(p.vector_ops_per_cycle)
        );
        assert_eq!(
            f16.compute_cycles,
            cube(1) + vector(p.fp16_vector_ops_per_cycle)
        );
    }

    #[test]
    fn an_operand_that_fits_on_chip_is_read_once() {
        let p = Profile::EDGE;
        let l1 = u64::from(p.l1_bytes / 2); // one core's resident half
        // Either operand fitting keeps both at one read.
        assert_eq!(restream_bytes(&p, 1, l1, 100 * l1), 0);
        assert_eq!(restream_bytes(&p, 1, 100 * l1, l1), 0);
        // Two cores hold twice as much.
        assert_eq!(restream_bytes(&p, 2, 2 * l1, 3 * l1), 0);
        // Neither fits: the cheaper order of passes. `b` in 3 chunks reads `a` twice more
        // (2 × 2·l1 + 1); `a` in 3 chunks reads `b` twice more (2 × 2.5·l1): the first wins.
        let (a, b) = (2 * l1 + 1, 5 * l1 / 2);
        assert_eq!(restream_bytes(&p, 1, a, b), 2 * a);
        assert_eq!(restream_bytes(&p, 1, b, a), 2 * a);
        // Halving both operands' bytes (fp32 → fp16) can remove the re-read altogether.
        assert_eq!(restream_bytes(&p, 1, a / 2, b / 2), 0);
    }

    #[test]
    fn small_outputs_keep_one_core_busy() {
        let p = Profile::EDGE;
        assert_eq!(useful_cores(&p, 1000), 1);
        assert_eq!(useful_cores(&p, u64::from(p.unified_buffer_bytes) * 2), 4);
    }
}
