//! `ge inspect`: the header, sections, I/O and (optionally) task list of a `.om` file.

use std::io::Write;
use std::path::Path;

use ge_runtime::Model;
use ge_runtime::format::SectionKind;

use super::{Res, load_blob};

pub(super) fn inspect(path: &Path, list_tasks: bool) -> Res {
    let blob = load_blob(path)?;
    let bytes = blob.as_bytes();
    let model = Model::from_bytes(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = std::io::stdout().lock();
    let m = model.meta();
    let _ = writeln!(
        out,
        "{}: .om v{}, {} bytes",
        path.display(),
        model.version(),
        bytes.len()
    );
    let _ = writeln!(
        out,
        "model: {}  producer: {}  opset: {}  precision: {}",
        model.name(),
        model.str(m.producer),
        m.opset,
        ge_build::Precision::from_code(m.precision).map_or("unknown", |p| p.name())
    );
    let _ = writeln!(
        out,
        "arena: {} bytes  weights: {} bytes  streams: {}",
        m.arena_bytes,
        model.weights().len(),
        m.stream_count
    );
    let hl = ge_runtime::header_len();
    let entries: &[ge_runtime::format::SectionEntry] =
        bytemuck::try_cast_slice(&bytes[hl..hl + m_sections(bytes) * 24])
            .map_err(|_| "bad section table")?;
    let _ = writeln!(out, "sections:");
    for e in entries {
        let name = SectionKind::ALL
            .iter()
            .find(|k| **k as u32 == e.kind)
            .map_or("?", |k| k.name());
        let _ = writeln!(
            out,
            "  {name:<8} offset {:>10}  len {:>10}",
            e.offset, e.len
        );
    }
    for i in 0..model.input_count() {
        if let Some(io) = model.input(i) {
            let _ = writeln!(
                out,
                "input  {i}: {} {} {:?}",
                io.name,
                io.dtype.name(),
                io.shape.dims()
            );
        }
    }
    for i in 0..model.output_count() {
        if let Some(io) = model.output(i) {
            let _ = writeln!(
                out,
                "output {i}: {} {} {:?}",
                io.name,
                io.dtype.name(),
                io.shape.dims()
            );
        }
    }
    if model.gear_count() > 0 {
        gears(&mut out, &model)?;
    }
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for t in model.tasks() {
        *counts.entry(model.task_op(t).name()).or_default() += 1;
    }
    let _ = writeln!(
        out,
        "tasks: {} ({})",
        model.tasks().len(),
        counts
            .iter()
            .map(|(k, v)| format!("{k}×{v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut kernels: Vec<_> = model.kernels().collect();
    kernels.sort_unstable();
    kernels.dedup();
    let _ = writeln!(
        out,
        "kernels: {} ({})",
        kernels.len(),
        kernels
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if list_tasks {
        let tensors = model.tensors();
        let show = |id: u32| match tensors.get(id as usize) {
            Some(t) if t.location == ge_runtime::format::Location::Arena as u8 => {
                format!("#{id}@{}+{}", t.offset, t.bytes)
            }
            Some(t) => format!(
                "#{id}({})",
                ["arena", "weight", "input"]
                    .get(t.location as usize)
                    .unwrap_or(&"?")
            ),
            None => "-".to_string(),
        };
        for (i, t) in model.tasks().iter().enumerate() {
            let ins: Vec<String> = model.task_inputs(t).iter().map(|&id| show(id)).collect();
            let outs: Vec<String> = model.task_outputs(t).iter().map(|&id| show(id)).collect();
            let ws = if t.workspace == ge_runtime::format::NO_TENSOR {
                String::new()
            } else {
                format!(" ws {}", show(t.workspace))
            };
            let _ = writeln!(
                out,
                "task {i:>4} s{} {:<12} {:<24} in [{}] out [{}]{ws}",
                t.stream,
                model.task_op(t).name(),
                model.str(t.name),
                ins.join(" "),
                outs.join(" ")
            );
        }
        for e in model.events() {
            let _ = writeln!(out, "event: task {} → task {}", e.record, e.wait);
        }
    }
    Ok(())
}

/// One line per gear: input and output shapes, the gear's arena, tasks and simulated time
/// (the cost model on the default device).
fn gears(out: &mut impl Write, model: &Model<'_>) -> Res {
    let m = model.meta();
    let pad = match m.gear_flags {
        f if f & ge_runtime::format::GEAR_PAD_ANY != 0 => "any gear dim (zeros at the end)",
        f if f & ge_runtime::format::GEAR_PAD_BATCH != 0 => "batch (dim 0)",
        _ => "none (exact gear shapes only)",
    };
    let _ = writeln!(
        out,
        "gears: {} (run pads: {pad}; arena {} bytes = largest plan + staging)",
        model.gear_count(),
        m.arena_bytes
    );
    let dev = ge_sim::SimDevice::new(ge_sim::Profile::EDGE);
    for i in 0..model.gear_count() {
        let g = model.gear(i).map_err(|e| e.to_string())?;
        let shapes = |io: Option<ge_runtime::IoInfo<'_>>| io.map(|io| io.shape.dims().to_vec());
        let ins: Vec<_> = (0..g.input_count())
            .filter_map(|k| shapes(g.input(k)))
            .collect();
        let outs: Vec<_> = (0..g.output_count())
            .filter_map(|k| shapes(g.output(k)))
            .collect();
        let _ = writeln!(
            out,
            "  gear {i}: in {ins:?} out {outs:?}  arena {} bytes  tasks {}  streams {}  sim {:.1} µs ({})",
            g.arena_bytes(),
            g.tasks().len(),
            g.stream_count(),
            dev.predict(&g).time_ns as f64 / 1000.0,
            ge_sim::Profile::EDGE.name
        );
    }
    Ok(())
}

fn m_sections(bytes: &[u8]) -> usize {
    let h: ge_runtime::format::Header =
        bytemuck::pod_read_unaligned(&bytes[..ge_runtime::header_len()]);
    h.section_count as usize
}
