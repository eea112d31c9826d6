//! `ge run`: execute a compiled `.om` on the simulated device, write the outputs as `.npy`,
//! optionally print a per-task profile, write a Perfetto trace or check for races.

use std::io::Write;
use std::path::Path;

use ge_build::run::Runner;
use ge_build::tensor::{read_tensor_file, write_npy};
use ge_runtime::Model;
use ge_sim::{Observer, TaskRecord};

use super::{Res, load_blob};
use crate::profile;

/// Collects task records as the device runs: printed as a profile table, written as a trace.
/// Host time is the wall time of each task's kernel, the fastest over the repeats.
struct Recorder {
    rows: Vec<Row>,
    started: Option<std::time::Instant>,
}

/// One task of the profile.
struct Row {
    op: String,
    name: String,
    dtype: &'static str,
    record: TaskRecord,
    host_ns: u128,
}

impl Observer for Recorder {
    fn before_task(&mut self, _index: usize) {
        self.started = Some(std::time::Instant::now());
    }

    fn task(&mut self, model: &Model<'_>, task: &ge_runtime::format::TaskDesc, r: &TaskRecord) {
        let host_ns = self.started.take().map_or(0, |t| t.elapsed().as_nanos());
        // A repeat run meets the tasks the first one recorded, in the same order.
        if let Some(row) = self.rows.get_mut(r.index as usize) {
            row.host_ns = row.host_ns.min(host_ns);
            return;
        }
        self.rows.push(Row {
            op: model.task_op(task).name().to_string(),
            name: model.str(task.name).to_string(),
            // The kernel's element type: the task's precision.
            dtype: model
                .task_kernel(task)
                .and_then(|k| k.dtype())
                .map_or("-", |d| d.name()),
            record: *r,
            host_ns,
        });
    }
}

/// The per-task table of `ge run --profile`.
/// Errors writing stdout (a closed pipe: `ge run --profile | head`) end the table quietly,
/// as the other subcommands' output does.
fn print_profile(rows: &[Row]) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{:>5} {:<14} {:<32} {:<8} {:>6} {:>5} {:>12} {:>12} {:>14} {:>10}",
        "task", "op", "name", "dtype", "stream", "cores", "start", "cycles", "gm_bytes", "host_us"
    );
    for row in rows {
        let r = &row.record;
        let _ = writeln!(
            out,
            "{:>5} {:<14} {:<32} {:<8} {:>6} {:>5} {:>12} {:>12} {:>14} {:>10.1}",
            r.index,
            row.op,
            truncate(&row.name, 32),
            row.dtype,
            r.stream,
            r.cores,
            r.start_cycle,
            r.cost.cycles,
            r.cost.gm_bytes,
            row.host_ns as f64 / 1e3
        );
    }
}

/// `ge run` switches.
pub struct RunFlags {
    pub profile: bool,
    /// Runs of the model (the profile's host times are the fastest of them).
    pub repeat: usize,
    /// Host threads the kernels split over.
    pub threads: usize,
    pub trace: Option<std::path::PathBuf>,
    pub check_races: bool,
}

/// A Chrome/Perfetto trace: one track per stream (process 1) and per core (process 2).
fn write_trace(path: &Path, rows: &[Row], clock_mhz: u32) -> Res {
    let us = |c: u64| c as f64 / f64::from(clock_mhz.max(1));
    let mut events = Vec::new();
    for (pid, label) in [(1, "streams"), (2, "cores")] {
        events.push(serde_json::json!({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": label}}));
    }
    for Row {
        op,
        name,
        record: r,
        ..
    } in rows
    {
        let args = serde_json::json!({"task": r.index, "op": op, "cycles": r.cost.cycles, "gm_bytes": r.cost.gm_bytes, "cores": r.cores});
        let ev = |pid: u32, tid: u64| serde_json::json!({"name": format!("{op} {name}"), "ph": "X", "pid": pid, "tid": tid, "ts": us(r.start_cycle), "dur": us(r.end_cycle - r.start_cycle), "args": args});
        events.push(ev(1, u64::from(r.stream)));
        for c in 0..64u64 {
            if r.core_mask & (1 << c) != 0 {
                events.push(ev(2, c));
            }
        }
    }
    let text =
        serde_json::to_string(&serde_json::json!({"traceEvents": events, "displayTimeUnit": "ns"}))
            .map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(['…']).collect()
    }
}

pub(super) fn run(
    om: &Path,
    inputs: &[String],
    out_dir: &Path,
    flags: RunFlags,
    dev: &crate::cli::DeviceFlags,
) -> Res {
    let mut runner = Runner::new(load_blob(om)?).map_err(|e| format!("{}: {e}", om.display()))?;
    let model = runner.model().map_err(|e| e.to_string())?;
    if flags.check_races {
        let stats = runner.check_races()?;
        eprintln!(
            "race check: {} tasks on {} streams, {} concurrent pairs, no races",
            stats.tasks, stats.streams, stats.concurrent_pairs
        );
    }
    let mut by_name = std::collections::HashMap::new();
    for spec in inputs {
        let (name, file) = spec
            .split_once('=')
            .ok_or_else(|| format!("--input '{spec}' must be NAME=FILE"))?;
        let t = read_tensor_file(Path::new(file)).map_err(|e| format!("{file}: {e}"))?;
        by_name.insert(name.to_string(), t);
    }
    let mut ins = Vec::new();
    for i in 0..model.input_count() {
        let info = model.input(i).ok_or("missing input")?;
        let t = by_name.remove(info.name).ok_or_else(|| {
            format!(
                "input '{}' is not given (--input {}=FILE.npy)",
                info.name, info.name
            )
        })?;
        ins.push(t);
    }
    if let Some(extra) = by_name.keys().next() {
        return Err(format!("the model has no input named '{extra}'"));
    }
    let names: Vec<String> = (0..model.output_count())
        .filter_map(|i| model.output(i))
        .map(|o| o.name.to_string())
        .collect();
    let device = profile::on_threads(profile::device(dev)?, flags.threads);
    let clock = device.profile.clock_mhz;
    let mut recorder = Recorder {
        rows: Vec::new(),
        started: None,
    };
    let (mut outs, mut rep) = runner
        .run(&ins, device.with_observer(&mut recorder))
        .map_err(|e| e.to_string())?;
    for _ in 1..flags.repeat {
        (outs, rep) = runner
            .run(
                &ins,
                profile::on_threads(profile::device(dev)?, flags.threads)
                    .with_observer(&mut recorder),
            )
            .map_err(|e| e.to_string())?;
    }
    if flags.profile {
        print_profile(&recorder.rows);
    }
    std::fs::create_dir_all(out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    for (name, t) in names.iter().zip(&outs) {
        let p = out_dir.join(format!("{}.npy", ge_build::tensor::file_stem(name)));
        write_npy(&p, t).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if let Some(path) = &flags.trace {
        write_trace(path, &recorder.rows, clock)?;
    }
    let line = format!(
        "simulated: {:.1} us, {} cycles, {} GM bytes, {} launches, {} tasks",
        rep.time_ns as f64 / 1000.0,
        rep.cycles,
        rep.gm_bytes,
        rep.launches,
        rep.tasks
    );
    if flags.profile {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = writeln!(out, "host kernels: {}", super::host_isa()?.name());
    } else {
        eprintln!("{line}")
    }
    Ok(())
}
