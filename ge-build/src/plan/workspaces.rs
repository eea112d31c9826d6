//! Elastic workspaces: a kernel that can run with less scratch than it prefers (the half
//! conv, on narrower slices of output channels) gets, at its step, the most of its sizes
//! that fits under the arena's peak with every such kernel at its least. The arena is then
//! what the activations (and fixed workspaces) need at their peak plus the least scratch of
//! the kernels there, and kernels away from the peak keep their fast, large slices: ResNet-50
//! force_fp16's arena 5.06 → 3.87 MB (fp32: 7.23 MB) at the same host time, yolov8n_320's
//! 6.85 → 4.45 MB. Kernels take the largest of their sizes that fits what they are given, so
//! a blob planned either way runs. O(B + Σ lifetime) in the buffers, as the placement's lower
//! bound.

use ge_sim::target::WORKSPACE_LEVELS;

use super::liveness::Lifetimes;
use super::memory::{aligned, live_bytes};

/// Sizes every elastic workspace of `lt` (planned at its preferred size) to the largest of
/// its sizes that keeps the live bytes of its steps within the peak they reach with every
/// elastic workspace at its least.
pub fn fit_workspaces(lt: &mut Lifetimes, steps: usize) {
    if lt.elastic.is_empty() {
        return;
    }
    let steps = steps.max(1);
    let least = |levels: &[usize; WORKSPACE_LEVELS]| levels[WORKSPACE_LEVELS - 1];
    for (b, levels) in &lt.elastic {
        lt.buffers[*b].bytes = least(levels);
    }
    let mut live = live_bytes(&lt.buffers, steps);
    let peak = live.iter().copied().max().unwrap_or(0);
    for (b, levels) in &lt.elastic {
        let buf = lt.buffers[*b];
        let span = buf.first.min(steps - 1)..=buf.last.min(steps - 1);
        let here = live[span.clone()].iter().copied().max().unwrap_or(0);
        let room = peak - here;
        let floor = aligned(least(levels));
        let Some(&size) = levels.iter().find(|&&l| aligned(l) - floor <= room) else {
            continue;
        };
        for v in &mut live[span] {
            *v += aligned(size) - floor;
        }
        lt.buffers[*b].bytes = size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Buffer;

    fn buffer(bytes: usize, first: usize, last: usize) -> Buffer {
        Buffer { bytes, first, last }
    }

    #[test]
    fn workspaces_grow_into_the_room_below_the_peak() {
        // Activations: 1,000 B live over steps 0–1 (the peak), 100 B over steps 2–3.
        let mut lt = Lifetimes {
            buffers: vec![
                buffer(1024, 0, 1),
                buffer(128, 2, 3),
                buffer(4096, 1, 1), // elastic at the peak
                buffer(4096, 3, 3), // elastic beside small activations
                buffer(256, 2, 2),  // fixed
            ],
            elastic: vec![
                (2, [4096, 2048, 2048, 512, 64, 64]),
                (3, [4096, 2048, 2048, 512, 64, 64]),
            ],
            ..Lifetimes::default()
        };
        fit_workspaces(&mut lt, 4);
        // Peak with the least sizes: step 1, 1,024 + 64.
        assert_eq!(lt.buffers[2].bytes, 64, "at the peak: its least");
        assert_eq!(
            lt.buffers[3].bytes, 512,
            "room 1,088 − 192 = 896: 512 fits, 2,048 not"
        );
        assert_eq!(lt.buffers[4].bytes, 256, "fixed sizes stay");
        let live = live_bytes(&lt.buffers, 4);
        assert_eq!(live.iter().max(), Some(&1088));
    }
}
