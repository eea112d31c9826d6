//! The compile pipeline: parse → import (typed IR, shapes, constant folding of shape logic)
//! → passes → plan → emit `.om`, with a report of every stage.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use crate::error::{CompileError, Result};
use crate::ir::Graph;
use crate::onnx::{ImportOptions, decode_model, import_model};
use crate::options::CompileOptions;
use crate::passes::precision::PrecisionConfig;
use crate::report::{GearStat, MemoryStat, Report, SimStat};

/// A compiled model.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub blob: Vec<u8>,
    pub report: Report,
    /// The optimized graph (for codegen and inspection).
    pub graph: Graph,
}

/// Producer string written into blobs.
pub const PRODUCER: &str = concat!("ge ", env!("CARGO_PKG_VERSION"));

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// Compiles the `.onnx` file at `path`.
pub fn compile_file(path: &Path, opts: &CompileOptions) -> Result<Compiled> {
    let bytes = std::fs::read(path).map_err(|source| CompileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    compile_bytes(&bytes, path.parent(), opts)
}

/// Compiles model bytes; `model_dir` resolves external data. With gears
/// (`opts.gears`), the whole pipeline (import, passes, plan) runs once per gear and one
/// blob holds every plan.
pub fn compile_bytes(
    bytes: &[u8],
    model_dir: Option<&Path>,
    opts: &CompileOptions,
) -> Result<Compiled> {
    if let Some(q) = &opts.quantize {
        let plain = CompileOptions {
            quantize: None,
            ..opts.clone()
        };
        let quantized = crate::quantize::quantize(bytes, model_dir, &q.calib, &q.options, &plain)?;
        return compile_bytes(&quantized.onnx, model_dir, &plain);
    }
    let start = Instant::now();
    let t = Instant::now();
    let model = decode_model(bytes)?;
    let precision = {
        let names: BTreeSet<&str> = model
            .graph
            .iter()
            .flat_map(|g| g.node.iter().map(crate::accuracy::probe::keep_name))
            .filter(|n| !n.is_empty())
            .collect();
        PrecisionConfig::from_options(opts, &names)?
    };
    let parse = ms(t);
    let nodes_before = model.graph.as_ref().map_or(0, |g| g.node.len());
    let all_nodes = model.graph.as_ref().map_or(0, count_nodes);
    if all_nodes > opts.limits.max_nodes {
        return Err(CompileError::Model(format!(
            "the model has {all_nodes} nodes (subgraphs included), over the limit of {} \
             (raise --max-nodes / max_nodes)",
            opts.limits.max_nodes
        )));
    }
    let switch = match &opts.fusion_switch {
        Some(p) => crate::passes::FusionSwitch::load(p, &crate::passes::fusion_pattern_names())?,
        None => crate::passes::FusionSwitch::default(),
    };
    let (gear_shapes, overrides) = match (&opts.gears, &model.graph) {
        (crate::gears::GearSpec::None, _) | (_, None) => {
            (vec![opts.input_shapes.clone()], Default::default())
        }
        (_, Some(gp)) => {
            let r = crate::gears::resolve(gp, opts)?;
            (r.shapes, r.overrides)
        }
    };
    let gears = !opts.gears.is_empty();
    let mut stages = Vec::with_capacity(gear_shapes.len());
    for (k, shapes) in gear_shapes.iter().enumerate() {
        let s = optimize(
            &model, model_dir, opts, &switch, &precision, shapes, &overrides,
        );
        stages.push(s.map_err(|e| if gears { gear_error(k, shapes, e) } else { e })?);
    }
    let t = Instant::now();
    let refs: Vec<(&Graph, &crate::plan::Plan)> =
        stages.iter().map(|s| (&s.graph, &s.plan)).collect();
    let flags = gears.then(|| crate::gears::gear_flags(opts));
    let emitted = crate::om::emit_gears(&refs, flags, opts.precision.code(), PRODUCER)?;
    let emit_ms = ms(t);
    let plan_arena = stages
        .iter()
        .map(|s| s.plan.memory.arena_bytes)
        .max()
        .unwrap_or(0) as u64;
    for (what, needed, limit, flag) in [
        (
            "arena",
            plan_arena + emitted.staging_bytes,
            opts.limits.max_arena_bytes,
            "max-arena-bytes",
        ),
        (
            "weights",
            emitted.weight_bytes as u64,
            opts.limits.max_weight_bytes,
            "max-weight-bytes",
        ),
    ] {
        if needed > limit {
            return Err(CompileError::Model(format!(
                "the model needs {needed} bytes of {what}, over the limit of {limit} bytes \
                 (raise --{flag})"
            )));
        }
    }
    let sims = predict(&emitted.blob, opts)?;
    let gear_stats = if gears {
        stages
            .iter()
            .zip(&sims)
            .zip(&gear_shapes)
            .map(|((s, sim), shapes)| GearStat::new(s, sim.clone(), shapes))
            .collect()
    } else {
        Vec::new()
    };
    let Some(top) = stages.pop() else {
        return Err(CompileError::Model(
            "internal error: no gear compiled".into(),
        ));
    };
    let (plan, graph) = (&top.plan, top.graph);
    let report = Report {
        model: graph.name.clone(),
        opset: graph.opset,
        opt_level: format!("{:?}", opts.opt_level),
        nodes_before,
        nodes_after: graph.node_count(),
        tasks: emitted.tasks,
        streams: emitted.streams,
        events: emitted.events,
        passes: top.passes,
        memory: MemoryStat {
            arena_bytes: plan_arena,
            lower_bound_bytes: plan.memory.lower_bound_bytes as u64,
            naive_bytes: plan.memory.naive_bytes as u64,
            topo_order_peak_bytes: plan.schedule.topo_peak_bytes as u64,
            chosen_order_peak_bytes: plan.schedule.chosen_peak_bytes as u64,
            order_peak_lower_bound_bytes: plan.schedule.peak_lower_bound_bytes as u64,
            weight_bytes: emitted.weight_bytes as u64,
            gear_staging_bytes: emitted.staging_bytes,
        },
        compile_millis: crate::report::CompileMillis {
            total: ms(start),
            parse,
            import: top.import_ms,
            passes: top.passes_ms,
            plan_and_emit: top.plan_ms + emit_ms,
        },
        sim: sims.into_iter().last().unwrap_or_default(),
        blob_bytes: emitted.blob.len(),
        gears: gear_stats,
        precision: top.precision,
        dtypes: crate::report::DtypeStat::of_blob(&emitted.blob, opts.int8_rounding),
    };
    Ok(Compiled {
        blob: emitted.blob,
        report,
        graph,
    })
}

/// One shape's import, passes and plan.
struct Stage {
    graph: Graph,
    plan: crate::plan::Plan,
    passes: Vec<crate::report::PassStat>,
    precision: crate::report::PrecisionStat,
    import_ms: f64,
    passes_ms: f64,
    plan_ms: f64,
}

/// Imports `model` with `input_shapes`, optimizes and plans it.
fn optimize(
    model: &crate::onnx::proto::ModelProto,
    model_dir: Option<&Path>,
    opts: &CompileOptions,
    switch: &crate::passes::FusionSwitch,
    precision: &PrecisionConfig,
    input_shapes: &BTreeMap<String, Vec<usize>>,
    overrides: &BTreeSet<(String, usize)>,
) -> Result<Stage> {
    let t = Instant::now();
    let mut graph = import_model(
        model,
        model_dir,
        &ImportOptions {
            input_shapes: input_shapes.clone(),
            input_values: opts.input_values.clone(),
            max_tensor_bytes: Some(opts.limits.max_tensor_bytes),
            max_fold_bytes: Some(opts.limits.max_fold_bytes),
            overrides: overrides.clone(),
            int8_rounding: opts.int8_rounding,
        },
    )?;
    let import_ms = ms(t);
    let t = Instant::now();
    precision.mark_kept(&mut graph);
    let mut passes = crate::passes::run_passes(&mut graph, opts.opt_level, switch, &opts.device)?;
    let t_precision = Instant::now();
    let precision_stat = crate::passes::precision::lower(&mut graph, precision)?;
    if crate::ir::verify::verify_each_pass() {
        graph.verify().map_err(|e| {
            CompileError::Model(format!(
                "internal error: pass 'precision' broke the IR: {e}"
            ))
        })?;
    }
    passes.push(crate::report::PassStat {
        name: "precision".into(),
        changed: precision_stat.lowered_nodes + precision_stat.casts > 0,
        millis: ms(t_precision),
    });
    if opts.blocked_channels.enabled() {
        passes.extend(crate::passes::run_late(
            &mut graph,
            &crate::passes::BlockedLayout {
                only_if_profitable: opts.blocked_channels == crate::BlockedChannels::Auto,
            },
            opts.opt_level,
            switch,
            &opts.device,
        )?);
    }
    // Last: every pass before it reads weights in ONNX order.
    passes.extend(crate::passes::run_late(
        &mut graph,
        &crate::passes::PackWeights,
        opts.opt_level,
        switch,
        &opts.device,
    )?);
    let passes_ms = ms(t);
    let t = Instant::now();
    let plan = crate::plan::plan(
        &graph,
        &crate::plan::PlanOptions {
            reuse: opts.memory_reuse,
            max_streams: opts
                .max_streams
                .unwrap_or_else(|| (opts.device.cores as usize).clamp(1, 4)),
            ignore_stream_concurrency: opts.unsafe_linear_memory_plan,
        },
    );
    Ok(Stage {
        graph,
        plan,
        passes,
        precision: precision_stat,
        import_ms,
        passes_ms,
        plan_ms: ms(t),
    })
}

/// Names the gear a compile error happened in; a Reshape that fails only at some gears
/// most likely hard-codes the batch (or another gear dim) in its shape constant.
fn gear_error(gear: usize, shapes: &BTreeMap<String, Vec<usize>>, e: CompileError) -> CompileError {
    let hint = match &e {
        CompileError::Node { op_type, .. } | CompileError::Unsupported { op_type, .. }
            if op_type == "Reshape" =>
        {
            " (this Reshape's shape constant fixes a dim the gears change, most likely the \
             batch the model was exported with; ge does not rewrite such constants: export the \
             model with -1 or 0 at that dim, or compile without gears)"
                .to_string()
        }
        _ => String::new(),
    };
    CompileError::Gear {
        gear,
        shapes: shapes
            .iter()
            .map(|(n, s)| format!("{n} {s:?}"))
            .collect::<Vec<_>>()
            .join(", "),
        source: Box::new(e),
        hint,
    }
}

impl GearStat {
    fn new(s: &Stage, sim: SimStat, shapes: &BTreeMap<String, Vec<usize>>) -> GearStat {
        GearStat {
            inputs: shapes
                .iter()
                .filter(|(n, _)| s.graph.inputs.iter().any(|&v| &s.graph.value(v).name == *n))
                .map(|(n, d)| (n.clone(), d.clone()))
                .collect(),
            outputs: s
                .graph
                .outputs
                .iter()
                .map(|&v| s.graph.value(v).shape.clone())
                .collect(),
            arena_bytes: s.plan.memory.arena_bytes as u64,
            tasks: sim.tasks as usize,
            streams: s.plan.streams.stream_count,
            sim,
        }
    }
}

/// Nodes of `g` and of every subgraph in its attributes (If/Loop/Scan bodies): linear in
/// the model's size.
fn count_nodes(g: &crate::onnx::proto::GraphProto) -> usize {
    g.node
        .iter()
        .map(|n| {
            1 + n
                .attribute
                .iter()
                .map(|a| {
                    a.g.as_ref().map_or(0, count_nodes)
                        + a.graphs.iter().map(count_nodes).sum::<usize>()
                })
                .sum::<usize>()
        })
        .sum()
}

/// Predicts one run's device figures from the blob with the cost model (no kernels run):
/// one per gear (the model itself when it has none), smallest first.
fn predict(blob: &[u8], opts: &CompileOptions) -> Result<Vec<SimStat>> {
    let aligned = ge_runtime::AlignedBlob::from_bytes(blob);
    let model =
        ge_runtime::Model::from_bytes_with_limits(aligned.as_bytes(), &opts.limits.runtime())
            .map_err(|e| {
                CompileError::Model(format!(
                    "internal error: the emitted blob does not validate: {e}"
                ))
            })?;
    let dev = ge_sim::SimDevice::new(opts.device);
    let internal = |e: ge_runtime::Error| CompileError::Model(format!("internal error: {e}"));
    let views = match model.gear_count() {
        0 => vec![model],
        n => (0..n)
            .map(|i| model.gear(i))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(internal)?,
    };
    Ok(views
        .iter()
        .map(|m| {
            let r = dev.predict(m);
            SimStat {
                device: opts.device.name.to_string(),
                time_us: r.time_ns as f64 / 1000.0,
                gm_bytes: r.gm_bytes,
                launches: r.launches,
                tasks: r.tasks,
                cube_macs: r.cube_macs,
                vector_ops: r.vector_ops,
            }
        })
        .collect())
}
