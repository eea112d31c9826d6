//! The race checker: proves that no two tasks unordered by stream order and events touch
//! overlapping arena bytes where either writes.
//!
//! Happens-before comes from vector clocks (one counter per stream) built from the task
//! table's streams and the event table. For each task, only the earlier tasks of other
//! streams not yet known to it are candidates, so the check is near-linear for real plans:
//! O(T · S + Σ concurrent pairs × tensors per task).

use std::vec;
use std::vec::Vec;

use ge_runtime::Model;
use ge_runtime::format::{Location, NO_TENSOR, TaskDesc};

/// Two concurrent tasks whose arena bytes overlap with a write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Race {
    pub first: u32,
    pub second: u32,
    /// Overlapping arena byte range.
    pub bytes: (u64, u64),
}

/// What the checker looked at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RaceStats {
    pub tasks: usize,
    pub streams: usize,
    pub concurrent_pairs: usize,
}

/// Arena byte ranges a task reads and writes.
type Ranges = (Vec<(u64, u64)>, Vec<(u64, u64)>);

fn arena_ranges(model: &Model<'_>, t: &TaskDesc) -> Ranges {
    let tensors = model.tensors();
    let range = |id: u32| {
        tensors
            .get(id as usize)
            .filter(|d| d.location == Location::Arena as u8 && d.bytes > 0)
            .map(|d| (d.offset, d.offset + d.bytes))
    };
    let reads = model
        .task_inputs(t)
        .iter()
        .filter(|&&id| id != NO_TENSOR)
        .filter_map(|&id| range(id))
        .collect();
    let mut writes: Vec<(u64, u64)> = model
        .task_outputs(t)
        .iter()
        .filter_map(|&id| range(id))
        .collect();
    if t.workspace != NO_TENSOR {
        writes.extend(range(t.workspace));
    }
    (reads, writes)
}

fn overlap(a: (u64, u64), b: (u64, u64)) -> Option<(u64, u64)> {
    let (s, e) = (a.0.max(b.0), a.1.min(b.1));
    (s < e).then_some((s, e))
}

/// Checks `model`'s schedule; the first race found is the error.
pub fn check_races(model: &Model<'_>) -> Result<RaceStats, Race> {
    let tasks = model.tasks();
    let streams = model.stream_count().max(1);
    let events = model.events();
    let mut pos = Vec::with_capacity(tasks.len());
    let mut on_stream: Vec<Vec<usize>> = vec![Vec::new(); streams];
    let mut vc: Vec<Vec<u32>> = Vec::with_capacity(tasks.len());
    let mut next_event = 0;
    let mut stats = RaceStats {
        tasks: tasks.len(),
        streams,
        concurrent_pairs: 0,
    };
    let ranges: Vec<_> = tasks.iter().map(|t| arena_ranges(model, t)).collect();
    for (j, t) in tasks.iter().enumerate() {
        let s = (t.stream as usize).min(streams - 1);
        let mut clock = on_stream[s]
            .last()
            .map_or_else(|| vec![0u32; streams], |&p| vc[p].clone());
        while let Some(e) = events.get(next_event) {
            if e.wait as usize > j {
                break;
            }
            if e.wait as usize == j
                && let Some(rc) = vc.get(e.record as usize)
            {
                for (d, &c) in clock.iter_mut().zip(rc) {
                    *d = (*d).max(c);
                }
            }
            next_event += 1;
        }
        pos.push(on_stream[s].len());
        clock[s] = on_stream[s].len() as u32 + 1;
        // Earlier tasks on other streams that `j` does not know about run concurrently with it.
        let (reads_j, writes_j) = &ranges[j];
        for (s2, list) in on_stream.iter().enumerate() {
            if s2 == s {
                continue;
            }
            for &i in &list[(clock[s2] as usize).min(list.len())..] {
                stats.concurrent_pairs += 1;
                let (reads_i, writes_i) = &ranges[i];
                for &w in writes_i {
                    for &o in writes_j.iter().chain(reads_j) {
                        if let Some(b) = overlap(w, o) {
                            return Err(Race {
                                first: i as u32,
                                second: j as u32,
                                bytes: b,
                            });
                        }
                    }
                }
                for &w in writes_j {
                    for &o in reads_i {
                        if let Some(b) = overlap(w, o) {
                            return Err(Race {
                                first: i as u32,
                                second: j as u32,
                                bytes: b,
                            });
                        }
                    }
                }
            }
        }
        on_stream[s].push(j);
        vc.push(clock);
    }
    Ok(stats)
}
