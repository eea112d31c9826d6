//! The device timeline: when each task starts and ends on which cores.
//!
//! A task starts when (a) its stream's previous task has ended, (b) every event it waits on
//! has been recorded (the recording task ended), and (c) the cores it needs are free. It needs
//! as many cores as it has output tiles (half a unified buffer each, for double buffering), at
//! most the device's (or `--cores`). It takes the cores that free up first. Its cost comes
//! from [`crate::cost::task_cost`] with that core count; global-memory bandwidth is shared in
//! proportion to the cores a task holds. Host-dispatched mode adds a launch overhead before
//! every task; sink mode one before the first.
//!
//! No allocation: end times of recent tasks sit in a ring of [`END_RING`] entries; an event
//! recorded longer ago than that uses its stream's latest end instead (never earlier than the
//! truth, so the timeline stays conservative).

use ge_runtime::Model;
use ge_runtime::format::{DType, TaskDesc, TensorDesc};

use super::{LaunchMode, Observer, Profile, RunReport, SimDevice, TaskRecord};
use crate::cost::Work;
use crate::cost::{cycles_to_ns, restream_bytes, task_cost, useful_cores};

/// Most cores and streams the timeline tracks.
pub const MAX_CORES: usize = 64;
pub const MAX_STREAMS: usize = 64;
/// Task end times remembered for events.
/// 2 KiB: the timeline lives on the stack of a run (firmware bounds it to 16 KiB).
pub const END_RING: usize = 256;

pub(super) struct Timeline<'m> {
    events: &'m [ge_runtime::format::EventDesc],
    next_event: usize,
    rep: RunReport,
    launch_cycles: u64,
    host_clock: u64,
    cores: usize,
    core_free: [u64; MAX_CORES],
    stream_ready: [u64; MAX_STREAMS],
    ends: [u64; END_RING],
    end: u64,
}

impl<'m> Timeline<'m> {
    pub(super) fn start<O: Observer>(dev: &SimDevice<O>, model: &Model<'m>) -> Timeline<'m> {
        let p = &dev.profile;
        let launch_cycles = u64::from(p.launch_overhead_ns) * u64::from(p.clock_mhz) / 1000;
        let mut t = Timeline {
            events: model.events(),
            next_event: 0,
            rep: RunReport::default(),
            launch_cycles,
            host_clock: 0,
            cores: (dev.cores() as usize).clamp(1, MAX_CORES),
            core_free: [0; MAX_CORES],
            stream_ready: [0; MAX_STREAMS],
            ends: [0; END_RING],
            end: 0,
        };
        if dev.mode == LaunchMode::Sink {
            t.rep.launches = 1;
            t.host_clock = launch_cycles;
        }
        t
    }

    /// Charges task `i` doing `work` and returns its record.
    pub(super) fn charge<O: Observer>(
        &mut self,
        dev: &SimDevice<O>,
        model: &Model<'_>,
        i: usize,
        task: &TaskDesc,
        work: Work,
    ) -> TaskRecord {
        if dev.mode == LaunchMode::HostDispatched {
            self.rep.launches = self.rep.launches.saturating_add(1);
            self.host_clock = self.host_clock.saturating_add(self.launch_cycles);
        }
        let s = (task.stream as usize).min(MAX_STREAMS - 1);
        let mut ready = self.stream_ready[s].max(self.host_clock);
        // Events this task waits on (the table is in wait order).
        while let Some(e) = self.events.get(self.next_event) {
            if (e.wait as usize) > i {
                break;
            }
            if e.wait as usize == i {
                let r = e.record as usize;
                let recorded = if i - r <= END_RING {
                    self.ends[r % END_RING]
                } else {
                    let rs = model
                        .tasks()
                        .get(r)
                        .map_or(0, |t| t.stream as usize)
                        .min(MAX_STREAMS - 1);
                    self.stream_ready[rs]
                };
                ready = ready.max(recorded);
            }
            self.next_event += 1;
        }
        // A cube task's output tiles are its 32-bit accumulators (L0C: f32, or i32 for the
        // int8 cube) whatever it stores, so an fp16 or int8 conv splits over as many cores
        // as an fp32 one.
        let half = |d: u8| d == DType::F16 as u8 || d == DType::Bf16 as u8;
        let byte = |d: u8| d == DType::I8 as u8 || d == DType::U8 as u8;
        let tile_bytes = |t: &TensorDesc| {
            if work.cube_macs > 0 && half(t.dtype) {
                t.bytes.saturating_mul(2)
            } else if work.int8_cube_macs > 0 && byte(t.dtype) {
                t.bytes.saturating_mul(4)
            } else {
                t.bytes
            }
        };
        let out_bytes: u64 = model
            .task_outputs(task)
            .iter()
            .filter_map(|&id| model.tensors().get(id as usize))
            .fold(0u64, |a, t| a.saturating_add(tile_bytes(t)));
        let k = useful_cores(&dev.profile, out_bytes).clamp(1, self.cores as u32) as usize;
        // The k cores that free up first.
        let mut picked = [0usize; MAX_CORES];
        let mut order: [usize; MAX_CORES] = core::array::from_fn(|c| c);
        // Insertion sort (keys are unique): a few cores, and no general sort routine (~4 KiB
        // of code) linked into firmware.
        let key = |c: usize| (self.core_free[c], c);
        for i in 1..self.cores {
            let mut j = i;
            while j > 0 && key(order[j - 1]) > key(order[j]) {
                order.swap(j - 1, j);
                j -= 1;
            }
        }
        picked[..k].copy_from_slice(&order[..k]);
        let start = picked[..k]
            .iter()
            .map(|&c| self.core_free[c])
            .max()
            .unwrap_or(0)
            .max(ready);
        let mut traffic =
            super::task_traffic(model, task, work.selects).saturating_add(work.extra_gm_bytes);
        if work.cube_macs > 0 || work.int8_cube_macs > 0 {
            let operand = |i: usize| {
                let id = model.task_inputs(task).get(i).copied();
                id.and_then(|id| model.tensors().get(id as usize))
                    .map_or(0, |t| t.bytes)
            };
            let again = restream_bytes(&dev.profile, k as u32, operand(0), operand(1));
            traffic = traffic.saturating_add(again);
        }
        let cost = task_cost(&dev.profile, work, traffic, k as u32, self.cores as u32);
        let end = start.saturating_add(cost.cycles);
        for &c in &picked[..k] {
            self.core_free[c] = end;
        }
        self.stream_ready[s] = end;
        self.ends[i % END_RING] = end;
        self.end = self.end.max(end);
        self.rep.tasks += 1;
        self.rep.gm_bytes = self.rep.gm_bytes.saturating_add(traffic);
        self.rep.cube_macs = self
            .rep
            .cube_macs
            .saturating_add(work.cube_macs)
            .saturating_add(work.int8_cube_macs);
        self.rep.vector_ops = self.rep.vector_ops.saturating_add(work.vector_ops);
        TaskRecord {
            index: i as u32,
            stream: task.stream,
            first_core: picked[..k].iter().copied().min().unwrap_or(0) as u32,
            cores: k as u32,
            core_mask: picked[..k].iter().fold(0u64, |m, &c| m | (1u64 << c)),
            start_cycle: start,
            end_cycle: end,
            work,
            cost,
        }
    }

    pub(super) fn finish(mut self, p: &Profile) -> RunReport {
        let total = self.end.max(self.host_clock);
        self.rep.cycles = total;
        self.rep.time_ns = cycles_to_ns(p, total);
        self.rep
    }
}
