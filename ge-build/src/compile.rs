//! The compile pipeline: parse → import (typed IR, shapes, constant folding of shape logic)
//! → passes → plan → emit `.om`, with a report of every stage.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use crate::error::{CompileError, Result};
use crate::ir::Graph;
use crate::onnx::{ImportOptions, decode_model, import_model};
use crate::options::CompileOptions;
use crate::passes::precision::PrecisionConfig;
use crate::report::{MemoryStat, Report, SimStat};

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

/// Compiles model bytes; `model_dir` resolves external data.
pub fn compile_bytes(
    bytes: &[u8],
    model_dir: Option<&Path>,
    opts: &CompileOptions,
) -> Result<Compiled> {
    let start = Instant::now();
    let t = Instant::now();
    let model = decode_model(bytes)?;
    let precision = {
        let names: BTreeSet<&str> = model
            .graph
            .iter()
            .flat_map(|g| g.node.iter().map(|n| n.name()))
            .filter(|n| !n.is_empty())
            .collect();
        PrecisionConfig::from_options(opts, &names)?
    };
    let parse = ms(t);
    let t = Instant::now();
    let nodes_before = model.graph.as_ref().map_or(0, |g| g.node.len());
    let all_nodes = model.graph.as_ref().map_or(0, count_nodes);
    if all_nodes > opts.limits.max_nodes {
        return Err(CompileError::Model(format!(
            "the model has {all_nodes} nodes (subgraphs included), over the limit of {} \
             (raise --max-nodes / max_nodes)",
            opts.limits.max_nodes
        )));
    }
    let graph = import_model(
        &model,
        model_dir,
        &ImportOptions {
            input_shapes: opts.input_shapes.clone(),
            input_values: opts.input_values.clone(),
            max_tensor_bytes: Some(opts.limits.max_tensor_bytes),
        },
    )?;
    let import = ms(t);
    let t = Instant::now();
    let mut graph = graph;
    precision.mark_kept(&mut graph);
    let switch = match &opts.fusion_switch {
        Some(p) => crate::passes::FusionSwitch::load(p, &crate::passes::fusion_pattern_names())?,
        None => crate::passes::FusionSwitch::default(),
    };
    let mut passes = crate::passes::run_passes(&mut graph, opts.opt_level, &switch, &opts.device)?;
    let t_precision = Instant::now();
    let precision_stat = crate::passes::precision::lower(&mut graph, &precision)?;
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
    let emitted = crate::om::emit(&graph, &plan, PRODUCER)?;
    let plan_ms = ms(t);
    for (what, needed, limit, flag) in [
        (
            "arena",
            plan.memory.arena_bytes as u64,
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
    let sim = predict(&emitted.blob, opts)?;
    let report = Report {
        model: graph.name.clone(),
        opset: graph.opset,
        opt_level: format!("{:?}", opts.opt_level),
        nodes_before,
        nodes_after: graph.node_count(),
        tasks: emitted.tasks,
        streams: emitted.streams,
        events: emitted.events,
        passes,
        memory: MemoryStat {
            arena_bytes: plan.memory.arena_bytes as u64,
            lower_bound_bytes: plan.memory.lower_bound_bytes as u64,
            naive_bytes: plan.memory.naive_bytes as u64,
            topo_order_peak_bytes: plan.schedule.topo_peak_bytes as u64,
            chosen_order_peak_bytes: plan.schedule.chosen_peak_bytes as u64,
            order_peak_lower_bound_bytes: plan.schedule.peak_lower_bound_bytes as u64,
            weight_bytes: emitted.weight_bytes as u64,
        },
        compile_millis: crate::report::CompileMillis {
            total: ms(start),
            parse,
            import,
            passes: passes_ms,
            plan_and_emit: plan_ms,
        },
        sim,
        blob_bytes: emitted.blob.len(),
        precision: precision_stat,
    };
    Ok(Compiled {
        blob: emitted.blob,
        report,
        graph,
    })
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

/// Predicts one run's device figures from the blob with the cost model (no kernels run).
fn predict(blob: &[u8], opts: &CompileOptions) -> Result<SimStat> {
    let aligned = ge_runtime::AlignedBlob::from_bytes(blob);
    let model =
        ge_runtime::Model::from_bytes_with_limits(aligned.as_bytes(), &opts.limits.runtime())
            .map_err(|e| {
                CompileError::Model(format!(
                    "internal error: the emitted blob does not validate: {e}"
                ))
            })?;
    let dev = ge_sim::SimDevice::new(opts.device);
    let r = dev.predict(&model);
    Ok(SimStat {
        device: opts.device.name.to_string(),
        time_us: r.time_ns as f64 / 1000.0,
        gm_bytes: r.gm_bytes,
        launches: r.launches,
        tasks: r.tasks,
        cube_macs: r.cube_macs,
        vector_ops: r.vector_ops,
    })
}
