//! Text about a compile for the people using the bindings: facts for the module docs
//! ([`report_notes`]) and findings worth a build warning ([`findings`]).

use super::Bindings;
use crate::report::Report;

/// One-line facts from a compile report, for docs.
pub fn report_notes(report: &Report) -> Vec<String> {
    let m = &report.memory;
    let s = &report.sim;
    vec![
        format!(
            "Compiled by {} at {}: {} ONNX nodes → {} tasks; arena {} B (lower bound {} B, \
             without reuse {} B); weights {} B; blob {} B.",
            crate::PRODUCER,
            report.opt_level,
            report.nodes_before,
            report.tasks,
            m.arena_bytes,
            m.lower_bound_bytes,
            m.naive_bytes,
            m.weight_bytes,
            report.blob_bytes
        ),
        format!(
            "Predicted on `{}`: {:.3} µs per run, {} B of global-memory traffic, {} launch(es).",
            s.device, s.time_us, s.gm_bytes, s.launches
        ),
    ]
}

/// Notable facts about a compile worth a build warning: what a user would want to know
/// before shipping (no optimization, wasted memory, big embedded weights, launch overhead).
pub fn findings(report: &Report, b: &Bindings) -> Vec<String> {
    let mut f = Vec::new();
    let o = &b.options;
    let m = &report.memory;
    if o.opt_level == crate::OptLevel::O0 {
        f.push("compiled at O0: no graph optimizations (folding, fusion) ran".to_string());
    }
    if !o.memory_reuse {
        f.push(format!(
            "memory reuse is off: arena {} B where reuse needs about {} B",
            m.arena_bytes, m.lower_bound_bytes
        ));
    } else if m.arena_bytes > m.lower_bound_bytes + m.lower_bound_bytes / 4 + 4096 {
        f.push(format!(
            "the arena ({} B) is {:.0}% above the lower bound ({} B)",
            m.arena_bytes,
            (m.arena_bytes as f64 / m.lower_bound_bytes.max(1) as f64 - 1.0) * 100.0,
            m.lower_bound_bytes
        ));
    }
    if m.weight_bytes > 64 << 20 {
        f.push(format!(
            "{:.1} MiB of weights are embedded in the binary",
            m.weight_bytes as f64 / (1 << 20) as f64
        ));
    }
    if report.precision.clamped_values > 0 {
        f.push(format!(
            "{} weight values beyond fp16's range were clamped to ±65504",
            report.precision.clamped_values
        ));
    }
    if b.host_dispatch && report.tasks > 1 {
        f.push(format!(
            "host-dispatched launches: {} launches per run where sink mode needs 1",
            report.tasks
        ));
    }
    f
}
