//! The subcommands: [`dispatch`], the compile flags every compiling subcommand shares, and
//! the small ones (compile, ops, viz); run, check, bench and inspect have a file each.

use std::io::Write;
use std::path::Path;

use ge_build::check::Tolerance;
use ge_build::{CompileOptions, GearSpec, parse_input_shape_gears};
use ge_runtime::AlignedBlob;

use crate::cli::{Cli, Command, CompileFlags};
use crate::profile;

mod accuracy;
mod bench;
mod check;
mod inspect;
mod quantize;
mod run;

use bench::bench;
use check::check;
use inspect::inspect;
use run::{RunFlags, run};

type Res<T = ()> = Result<T, String>;

pub fn dispatch(cli: Cli) -> Res {
    host_isa()?;
    match cli.command {
        Command::Compile {
            model,
            output,
            flags,
            report,
            accuracy_report,
            calib,
            auto_mixed_precision,
            rtol,
        } => compile(
            &model,
            &output,
            &flags,
            report.as_deref(),
            &accuracy::AccuracyFlags {
                report: accuracy_report,
                calib,
                auto_mixed: auto_mixed_precision,
                rtol,
            },
        ),
        Command::Quantize {
            model,
            output,
            quant,
            flags,
        } => quantize::quantize(&model, &output, &quant, &flags),
        Command::Run {
            om,
            inputs,
            output_dir,
            profile,
            repeat,
            threads,
            trace,
            check_races,
            device,
        } => run(
            &om,
            &inputs,
            &output_dir,
            RunFlags {
                profile,
                repeat: repeat as usize,
                threads: threads as usize,
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
            check_races,
        } => check(
            case.as_deref(),
            suite.as_deref(),
            &flags,
            Tolerance { rtol, atol },
            check_races,
        ),
        Command::Bench {
            model,
            inputs,
            threads,
            iters,
            json,
            peak,
            flags,
        } => bench(&model, &inputs, threads, iters, (json, peak), &flags),
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

/// The host kernels' instruction set: `GE_ISA` when set (refused when unknown or missing on
/// this CPU, rather than silently running another path), else the widest this CPU has.
pub fn host_isa() -> Res<ge_sim::arch::isa::Isa> {
    use ge_sim::arch::isa::{self, Isa, IsaError};
    match isa::forced() {
        Ok(_) => Ok(isa::isa()),
        Err(IsaError::Unknown) => Err(format!(
            "GE_ISA must be one of {}; unset it to use the widest this CPU has ({})",
            Isa::ALL
                .iter()
                .map(|i| i.name())
                .collect::<Vec<_>>()
                .join(", "),
            Isa::detected().name()
        )),
        Err(IsaError::Unsupported(i)) => Err(format!(
            "GE_ISA={} but this CPU lacks it; the widest it has is {}",
            i.name(),
            Isa::detected().name()
        )),
    }
}

fn options(flags: &CompileFlags) -> Res<CompileOptions> {
    let mut o = CompileOptions::default();
    let err = |e: ge_build::CompileError| e.to_string();
    for s in &flags.input_shapes {
        let (name, dims) = parse_input_shape_gears(s).map_err(err)?;
        if let Some(fixed) = dims.iter().copied().collect::<Option<Vec<_>>>() {
            o.input_shapes.insert(name, fixed);
        } else {
            o.gear_inputs.insert(name, dims);
        }
    }
    for (spec, parse) in [
        (&flags.dynamic_batch, GearSpec::parse_batch as fn(&str) -> _),
        (&flags.dynamic_image_size, GearSpec::parse_image_size),
        (&flags.dynamic_dims, GearSpec::parse_dims),
    ] {
        if let Some(spec) = spec {
            ge_build::gears::set_gears(&mut o.gears, parse(spec).map_err(err)?).map_err(err)?;
        }
    }
    if !o.gear_inputs.is_empty() && o.gears.is_empty() {
        return Err("--input-shape with -1 dims needs gears (--dynamic-batch, \
                    --dynamic-image-size or --dynamic-dims)"
            .into());
    }
    o.gear_pad = flags.gear_pad.parse().map_err(err)?;
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
    o.io_dtype = match flags.io_dtype.as_str() {
        "model" => None,
        "fp16" => Some(ge_runtime::format::DType::F16),
        "bf16" => Some(ge_runtime::format::DType::Bf16),
        d => return Err(format!("--io-dtype '{d}' must be model, fp16 or bf16")),
    };
    for (flag, file, slot) in [
        ("--keep-dtype", &flags.keep_dtype, &mut o.keep_dtype),
        (
            "--modify-mixlist",
            &flags.modify_mixlist,
            &mut o.modify_mixlist,
        ),
    ] {
        if let Some(f) = file {
            if !f.is_file() {
                return Err(format!("{flag} {}: no such file", f.display()));
            }
            *slot = Some(f.clone());
        }
    }
    o.device = profile::resolve(&flags.device.device)?;
    o.memory_reuse = match flags.memory_reuse.as_str() {
        "on" => true,
        "off" => false,
        m => return Err(format!("--memory-reuse '{m}' must be on or off")),
    };
    o.blocked_channels =
        ge_build::BlockedChannels::parse(&flags.blocked_channels).ok_or_else(|| {
            format!(
                "--blocked-channels '{}' must be auto, on or off",
                flags.blocked_channels
            )
        })?;
    o.int8_rounding = ge_build::Int8Rounding::parse(&flags.int8_rounding).ok_or_else(|| {
        format!(
            "--int8-rounding '{}' must be onnx or tflite",
            flags.int8_rounding
        )
    })?;
    if let Some(f) = &flags.fusion_switch {
        if !f.is_file() {
            return Err(format!("--fusion-switch {}: no such file", f.display()));
        }
        o.fusion_switch = Some(f.clone());
    }
    for (name, v) in [
        ("--max-nodes", &flags.max_nodes),
        ("--max-tensor-bytes", &flags.max_tensor_bytes),
        ("--max-weight-bytes", &flags.max_weight_bytes),
        ("--max-arena-bytes", &flags.max_arena_bytes),
        ("--max-fold-bytes", &flags.max_fold_bytes),
    ] {
        if let Some(v) = v {
            o.limits
                .set(&name[2..], v)
                .map_err(|e| format!("{name}: {e}"))?;
        }
    }
    Ok(o)
}

/// `ge compile`, with the accuracy report and the auto-mixed search `accuracy` asks for.
fn compile(
    model: &Path,
    output: &Path,
    flags: &CompileFlags,
    report: Option<&Path>,
    accuracy: &accuracy::AccuracyFlags,
) -> Res {
    let mut opts = options(flags)?;
    if let Some(keep) = &accuracy.auto_mixed {
        accuracy::auto_mixed(model, &opts, accuracy.calib.as_deref(), accuracy.rtol, keep)?;
        opts.keep_dtype = Some(keep.clone());
    }
    let c = ge_build::compile_file(model, &opts).map_err(|e| e.to_string())?;
    if c.report.precision.clamped_values > 0 {
        eprintln!(
            "warning: {} weight values beyond fp16's range were clamped to ±65504",
            c.report.precision.clamped_values
        );
    }
    if let Some(file) = &accuracy.report {
        accuracy::accuracy_report(model, &c, &opts, accuracy.calib.as_deref(), file)?;
    }
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
    for (i, g) in r.gears.iter().enumerate() {
        eprintln!(
            "  gear {i}: {:?} → {:?}: arena {} B, {} tasks, sim {:.1} µs",
            g.inputs, g.outputs, g.arena_bytes, g.tasks, g.sim.time_us
        );
    }
    Ok(())
}

fn load_blob(path: &Path) -> Res<AlignedBlob> {
    AlignedBlob::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
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
        let op = if r.domain == "ai.onnx" {
            r.op.to_string()
        } else {
            format!("{}:{}", r.domain, r.op)
        };
        let _ = writeln!(
            out,
            "{:28} {:>2}-{:<2} {}",
            op,
            r.first_opset,
            r.last_opset,
            dts.join(",")
        );
    }
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
