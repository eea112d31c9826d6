//! The subcommands.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use ge_build::check::{Outcome, Tolerance, check_case_isolated, reason_group, suite_cases};
use ge_build::run::Runner;
use ge_build::tensor::{TensorData, read_tensor_file, write_npy};
use ge_build::{CompileOptions, parse_input_shape};
use ge_runtime::format::{DType, SectionKind};
use ge_runtime::{AlignedBlob, Model};
use ge_sim::{Observer, TaskRecord};

use crate::cli::{Cli, Command, CompileFlags};
use crate::profile;

type Res<T = ()> = Result<T, String>;

pub fn dispatch(cli: Cli) -> Res {
    match cli.command {
        Command::Compile {
            model,
            output,
            flags,
            report,
        } => compile(&model, &output, &flags, report.as_deref()),
        Command::Run {
            om,
            inputs,
            output_dir,
            profile,
            trace,
            check_races,
            device,
        } => run(
            &om,
            &inputs,
            &output_dir,
            RunFlags {
                profile,
                trace,
                check_races,
            },
            &device,
        ),
        Command::Check {
            case,
            suite,
            flags,
            rtol,
            atol,
        } => check(
            case.as_deref(),
            suite.as_deref(),
            &flags,
            Tolerance { rtol, atol },
        ),
        Command::Bench {
            model,
            threads,
            iters,
            json,
            flags,
        } => bench(&model, threads, iters, json, &flags),
        Command::Inspect { om, tasks } => inspect(&om, tasks),
        Command::Ops { markdown } => {
            ops(markdown);
            Ok(())
        }
        Command::Viz {
            model,
            stage,
            output,
            flags,
        } => viz(&model, &stage, &output, &flags),
    }
}

fn options(flags: &CompileFlags) -> Res<CompileOptions> {
    let mut o = CompileOptions::default();
    for s in &flags.input_shapes {
        let (name, dims) = parse_input_shape(s).map_err(|e| e.to_string())?;
        o.input_shapes.insert(name, dims);
    }
    o.unsafe_linear_memory_plan = flags.unsafe_linear_memory_plan;
    if let Some(n) = flags.streams {
        if n == 0 {
            return Err("--streams must be at least 1".into());
        }
        o.max_streams = Some(n);
    }
    o.opt_level = flags
        .opt_level
        .parse()
        .map_err(|e: ge_build::CompileError| e.to_string())?;
    o.precision = flags
        .precision
        .parse()
        .map_err(|e: ge_build::CompileError| e.to_string())?;
    o.device = profile::resolve(&flags.device.device)?;
    o.memory_reuse = match flags.memory_reuse.as_str() {
        "on" => true,
        "off" => false,
        m => return Err(format!("--memory-reuse '{m}' must be on or off")),
    };
    if let Some(f) = &flags.fusion_switch {
        if !f.is_file() {
            return Err(format!("--fusion-switch {}: no such file", f.display()));
        }
        o.fusion_switch = Some(f.clone());
    }
    Ok(o)
}

fn compile(model: &Path, output: &Path, flags: &CompileFlags, report: Option<&Path>) -> Res {
    let opts = options(flags)?;
    let c = ge_build::compile_file(model, &opts).map_err(|e| e.to_string())?;
    std::fs::write(output, &c.blob)
        .map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    if let Some(r) = report {
        let text = serde_json::to_string_pretty(&c.report).map_err(|e| e.to_string())?;
        std::fs::write(r, text).map_err(|e| format!("cannot write {}: {e}", r.display()))?;
    }
    let r = &c.report;
    eprintln!(
        "compiled {} → {} ({} bytes): {} nodes → {} tasks, arena {} B (lower bound {} B), {:.1} ms",
        model.display(),
        output.display(),
        c.blob.len(),
        r.nodes_before,
        r.tasks,
        r.memory.arena_bytes,
        r.memory.lower_bound_bytes,
        r.compile_millis.total
    );
    Ok(())
}

fn load_blob(path: &Path) -> Res<AlignedBlob> {
    AlignedBlob::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Collects task records as the device runs: printed as a profile table, written as a trace.
struct Recorder {
    print: bool,
    rows: Vec<(String, String, TaskRecord)>,
}

impl Observer for Recorder {
    fn task(&mut self, model: &Model<'_>, task: &ge_runtime::format::TaskDesc, r: &TaskRecord) {
        let (op, name) = (
            model.task_op(task).name().to_string(),
            model.str(task.name).to_string(),
        );
        if self.print {
            println!(
                "{:>5} {:<14} {:<32} {:>6} {:>5} {:>12} {:>12} {:>14}",
                r.index,
                op,
                truncate(&name, 32),
                r.stream,
                r.cores,
                r.start_cycle,
                r.cost.cycles,
                r.cost.gm_bytes
            );
        }
        self.rows.push((op, name, *r));
    }
}

/// `ge run` switches.
pub struct RunFlags {
    pub profile: bool,
    pub trace: Option<std::path::PathBuf>,
    pub check_races: bool,
}

/// A Chrome/Perfetto trace: one track per stream (process 1) and per core (process 2).
fn write_trace(path: &Path, rows: &[(String, String, TaskRecord)], clock_mhz: u32) -> Res {
    let us = |c: u64| c as f64 / f64::from(clock_mhz.max(1));
    let mut events = Vec::new();
    for (pid, label) in [(1, "streams"), (2, "cores")] {
        events.push(serde_json::json!({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": label}}));
    }
    for (op, name, r) in rows {
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

fn sanitize(name: &str) -> String {
    name.replace(['/', ':'], "_")
}

fn run(
    om: &Path,
    inputs: &[String],
    out_dir: &Path,
    flags: RunFlags,
    dev: &crate::cli::DeviceFlags,
) -> Res {
    let mut runner = Runner::new(load_blob(om)?).map_err(|e| format!("{}: {e}", om.display()))?;
    let model = runner.model().map_err(|e| e.to_string())?;
    if flags.check_races {
        let stats = ge_sim::race::check_races(&model).map_err(|r| {
            let name = |i: u32| model.tasks().get(i as usize).map_or(String::new(), |t| format!("{} '{}'", model.task_op(t).name(), model.str(t.name)));
            format!(
                "race: task {} ({}) and task {} ({}) run unordered and touch arena bytes {}..{} with a write",
                r.first,
                name(r.first),
                r.second,
                name(r.second),
                r.bytes.0,
                r.bytes.1
            )
        })?;
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
    let device = profile::device(dev)?;
    let clock = device.profile.clock_mhz;
    if flags.profile {
        println!(
            "{:>5} {:<14} {:<32} {:>6} {:>5} {:>12} {:>12} {:>14}",
            "task", "op", "name", "stream", "cores", "start", "cycles", "gm_bytes"
        );
    }
    let mut recorder = Recorder {
        print: flags.profile,
        rows: Vec::new(),
    };
    let (outs, rep) = runner
        .run(&ins, device.with_observer(&mut recorder))
        .map_err(|e| e.to_string())?;
    std::fs::create_dir_all(out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    for (name, t) in names.iter().zip(&outs) {
        let p = out_dir.join(format!("{}.npy", sanitize(name)));
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
        println!("{line}")
    } else {
        eprintln!("{line}")
    }
    Ok(())
}

/// `ge ops`: the supported-operator table (plain, or the Markdown of docs/OPERATORS.md).
fn ops(markdown: bool) {
    let mut out = std::io::stdout().lock();
    if markdown {
        let _ = write!(out, "{}", ge_build::onnx::table::markdown());
        return;
    }
    for r in ge_build::onnx::table::table() {
        let dts: Vec<&str> = r.dtypes.iter().map(|d| d.name()).collect();
        let _ = writeln!(
            out,
            "{:28} {:>2}-{:<2} {}",
            r.op,
            r.first_opset,
            r.last_opset,
            dts.join(",")
        );
    }
}

fn check(case: Option<&Path>, suite: Option<&Path>, flags: &CompileFlags, tol: Tolerance) -> Res {
    let opts = options(flags)?;
    let cases = match (case, suite) {
        (Some(c), None) => vec![c.to_path_buf()],
        (None, Some(s)) => {
            let v = suite_cases(s);
            if v.is_empty() {
                return Err(format!(
                    "{}: no case folders (with model.onnx) found",
                    s.display()
                ));
            }
            v
        }
        _ => return Err("give either CASE_DIR or --suite DIR".into()),
    };
    let (mut pass, mut fail, mut skip, mut pinned) = (0, 0, 0, 0);
    let mut groups: std::collections::BTreeMap<String, usize> = Default::default();
    let mut out = std::io::stdout().lock();
    for c in &cases {
        let name = c.file_name().map_or_else(
            || c.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let outcome = check_case_isolated(c, &opts, tol);
        if let Some(g) = reason_group(&outcome) {
            *groups.entry(g).or_default() += 1;
        }
        let line = match outcome {
            Outcome::Pass => {
                pass += 1;
                format!("PASS {name}")
            }
            Outcome::PassPinned(inputs) => {
                pass += 1;
                pinned += 1;
                format!(
                    "PASS {name} (run-time inputs pinned to the test data: {})",
                    inputs.join(", ")
                )
            }
            Outcome::Fail(r) => {
                fail += 1;
                format!("FAIL {name}: {}", r.replace('\n', " "))
            }
            Outcome::Unsupported(r) => {
                skip += 1;
                format!("UNSUPPORTED {name}: {}", r.replace('\n', " "))
            }
        };
        let _ = writeln!(out, "{line}");
    }
    if cases.len() > 1 && !groups.is_empty() {
        let mut by_count: Vec<(&String, &usize)> = groups.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let _ = writeln!(out, "not passing, by reason:");
        for (reason, n) in by_count {
            let _ = writeln!(out, "{n:6}  {reason}");
        }
    }
    if pinned > 0 {
        let _ = writeln!(
            out,
            "{pinned} of the passes pinned run-time inputs (shape tensors fed as inputs) to the test data's values"
        );
    }
    let _ = writeln!(out, "{pass} passed, {fail} failed, {skip} skipped");
    if fail > 0 {
        Err(format!("{fail} case(s) failed"))
    } else {
        Ok(())
    }
}

/// Deterministic pseudo-random inputs (xorshift; floats ~ uniform[-1, 1)).
pub fn random_input(dtype: DType, dims: &[usize], seed: u64) -> TensorData {
    let n: usize = dims.iter().product();
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let bytes: Vec<u8> = match dtype {
        DType::F32 => (0..n)
            .flat_map(|_| ((next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0).to_le_bytes())
            .collect(),
        DType::F64 => (0..n)
            .flat_map(|_| ((next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0).to_le_bytes())
            .collect(),
        DType::I64 => (0..n)
            .flat_map(|_| ((next() % 4) as i64).to_le_bytes())
            .collect(),
        DType::I32 => (0..n)
            .flat_map(|_| ((next() % 4) as i32).to_le_bytes())
            .collect(),
        DType::Bool => (0..n).map(|_| (next() & 1) as u8).collect(),
        d => vec![0u8; n * d.size()],
    };
    TensorData {
        dtype,
        dims: dims.to_vec(),
        bytes,
    }
}

fn bench(path: &Path, threads: usize, iters: usize, json: bool, flags: &CompileFlags) -> Res {
    if threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    if iters == 0 {
        return Err("--iters must be at least 1".into());
    }
    let blob = if path.extension().is_some_and(|e| e == "onnx") {
        let opts = options(flags)?;
        let c = ge_build::compile_file(path, &opts).map_err(|e| e.to_string())?;
        AlignedBlob::from_bytes(&c.blob)
    } else {
        load_blob(path)?
    };
    // What an application does: validate the blob once, bind one session (arena and
    // buffers allocated up front), then time `Session::run` alone.
    let model = Model::from_bytes(blob.as_bytes()).map_err(|e| e.to_string())?;
    let ins: Vec<TensorData> = (0..model.input_count())
        .filter_map(|i| model.input(i))
        .enumerate()
        .map(|(i, io)| random_input(io.dtype, io.shape.dims(), 42 + i as u64))
        .collect();
    let mut device = profile::device(&flags.device)?;
    if threads > 1 {
        device.host = ge_sim::threads::Host::on(ge_sim::threads::ThreadPool::shared(threads));
    }
    let mut arena = vec![0u8; model.arena_bytes_unaligned()];
    let mut session =
        ge_runtime::Session::new(&model, &mut arena, device).map_err(|e| e.to_string())?;
    let in_bufs: Vec<&[u8]> = ins.iter().map(|t| t.bytes.as_slice()).collect();
    let mut outs: Vec<Vec<u8>> = (0..model.output_count())
        .filter_map(|i| model.output(i))
        .map(|o| vec![0u8; o.bytes()])
        .collect();
    let mut out_bufs: Vec<&mut [u8]> = outs.iter_mut().map(|b| b.as_mut_slice()).collect();
    let rep = session
        .run(&in_bufs, &mut out_bufs)
        .map_err(|e| e.to_string())?;
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        session
            .run(&in_bufs, &mut out_bufs)
            .map_err(|e| e.to_string())?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let median = if iters % 2 == 1 {
        times[iters / 2]
    } else {
        (times[iters / 2 - 1] + times[iters / 2]) / 2.0
    };
    let mean = times.iter().sum::<f64>() / iters as f64;
    let sim_us = rep.time_ns as f64 / 1000.0;
    if json {
        let v = serde_json::json!({
            "model": path.display().to_string(),
            "median_ms": median, "min_ms": times[0], "mean_ms": mean,
            "iters": iters, "threads": threads, "sim_time_us": sim_us,
            "sim_gm_bytes": rep.gm_bytes, "sim_launches": rep.launches,
        });
        println!("{v}");
    } else {
        println!(
            "{}: median {median:.3} ms, min {:.3} ms over {iters} runs ({threads} thread); simulated {sim_us:.1} us",
            path.display(),
            times[0]
        );
    }
    Ok(())
}

fn inspect(path: &Path, list_tasks: bool) -> Res {
    let blob = load_blob(path)?;
    let bytes = blob.as_bytes();
    let model = Model::from_bytes(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = std::io::stdout().lock();
    let m = model.meta();
    let _ = writeln!(
        out,
        "{}: .om v{}, {} bytes",
        path.display(),
        ge_runtime::format::FORMAT_VERSION,
        bytes.len()
    );
    let _ = writeln!(
        out,
        "model: {}  producer: {}  opset: {}",
        model.name(),
        model.str(m.producer),
        m.opset
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

fn m_sections(bytes: &[u8]) -> usize {
    let h: ge_runtime::format::Header =
        bytemuck::pod_read_unaligned(&bytes[..ge_runtime::header_len()]);
    h.section_count as usize
}

fn viz(model: &Path, stage: &str, output: &Path, flags: &CompileFlags) -> Res {
    let mut opts = options(flags)?;
    match stage {
        "before" => opts.opt_level = ge_build::OptLevel::O0,
        "after" => {}
        s => return Err(format!("--stage '{s}' must be before or after")),
    }
    let c = ge_build::compile_file(model, &opts).map_err(|e| e.to_string())?;
    let text = match output.extension().and_then(|e| e.to_str()) {
        Some("svg") => ge_build::viz::to_svg(&c.graph),
        Some("dot") => ge_build::viz::to_dot(&c.graph),
        _ => {
            return Err(format!(
                "{}: the output must end in .svg or .dot",
                output.display()
            ));
        }
    };
    std::fs::write(output, text).map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    eprintln!(
        "{} nodes drawn to {}",
        c.graph.node_count(),
        output.display()
    );
    Ok(())
}
