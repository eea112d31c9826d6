//! Graph passes and the pass manager.
//!
//! Each pass is its own type in its own file. The manager runs them in a fixed order, each
//! only at or above its opt level (O0: none; O1: cleanups; O2: + folding into weights and
//! pattern fusion + autofusion; O3: + aggressive), honouring the fusion switch file, and
//! records whether each changed the graph and how long it took. Every pass is near-linear in
//! graph size (stated per pass).

/// The `name`/`level`/`is_fusion` trio of a [`Pass`] impl:
/// `pass_info!("fold_pad", O2, fusion);` (omit `fusion` for passes the switch file cannot
/// turn off).
macro_rules! pass_info {
    ($name:literal, $level:ident) => {
        fn name(&self) -> &'static str {
            $name
        }
        fn level(&self) -> $crate::options::OptLevel {
            $crate::options::OptLevel::$level
        }
    };
    ($name:literal, $level:ident, fusion) => {
        pass_info!($name, $level);
        fn is_fusion(&self) -> bool {
            true
        }
    };
}

mod algebraic;
mod autofusion;
mod batch_row_gemms;
mod blocked_layout;
mod cast_round_trip;
mod cse;
mod dead_code;
mod fold_affine;
mod fold_batch_norm;
mod fold_pad;
mod fuse_attention;
mod fuse_epilogue;
mod fuse_gelu;
mod fuse_layer_norm;
mod fuse_prologue;
mod fuse_qconv_epilogue;
mod fuse_residual;
mod fuse_silu;
mod fusion_switch;
mod matmul_add_to_gemm;
mod pack_weights;
mod pattern;
pub mod precision;
pub(crate) mod qdq;
mod remove_identities;

use std::time::Instant;

pub use blocked_layout::BlockedLayout;
pub use fusion_switch::FusionSwitch;
pub use pack_weights::PackWeights;

use crate::error::{CompileError, Result};
use crate::ir::Graph;
use crate::options::OptLevel;
use crate::report::PassStat;

/// What a pass sees besides the graph.
pub struct PassContext<'a> {
    pub level: OptLevel,
    /// The device planned for (fusion respects its on-chip buffer sizes).
    pub device: &'a ge_sim::Profile,
    pub switch: &'a FusionSwitch,
}

/// A graph transformation.
pub trait Pass {
    /// Name in reports and in the fusion switch file.
    fn name(&self) -> &'static str;
    /// Lowest opt level that runs it.
    fn level(&self) -> OptLevel;
    /// True for fusion patterns the switch file may turn off.
    fn is_fusion(&self) -> bool {
        false
    }
    /// Runs once; returns whether the graph changed.
    fn run(&self, g: &mut Graph, cx: &PassContext<'_>) -> Result<bool>;
}

/// The pipeline, in order.
pub fn pipeline() -> Vec<Box<dyn Pass>> {
    vec![
        Box::new(remove_identities::RemoveIdentities),
        Box::new(algebraic::Algebraic),
        Box::new(cse::CommonSubexpressions),
        Box::new(dead_code::DeadCode),
        Box::new(fold_batch_norm::FoldBatchNorm),
        Box::new(fold_affine::FoldAffine),
        Box::new(fold_pad::FoldPad),
        Box::new(matmul_add_to_gemm::MatMulAddToGemm),
        Box::new(batch_row_gemms::BatchRowGemms),
        Box::new(fuse_gelu::FuseGelu),
        Box::new(fuse_silu::FuseSilu),
        Box::new(fuse_layer_norm::FuseLayerNorm),
        Box::new(fuse_attention::FuseAttention),
        Box::new(fuse_epilogue::FuseEpilogue),
        Box::new(fuse_residual::FuseResidual),
        Box::new(fuse_prologue::FusePrologue),
        Box::new(cast_round_trip::CastRoundTrip),
        Box::new(dead_code::DeadCode),
        Box::new(autofusion::AutoFusion),
        Box::new(fuse_qconv_epilogue::FuseQConvEpilogue),
        Box::new(dead_code::DeadCode),
    ]
}

/// Names of the passes a fusion switch file may name.
pub fn fusion_pattern_names() -> Vec<&'static str> {
    pipeline()
        .iter()
        .filter(|p| p.is_fusion())
        .map(|p| p.name())
        .collect()
}

/// Runs the pipeline at `level`, verifying the IR after each pass when
/// [`verify_each_pass`](crate::ir::verify::verify_each_pass). O(passes × (V + E)).
pub fn run_passes(
    g: &mut Graph,
    level: OptLevel,
    switch: &FusionSwitch,
    device: &ge_sim::Profile,
) -> Result<Vec<PassStat>> {
    let cx = PassContext {
        level,
        device,
        switch,
    };
    let mut stats = Vec::new();
    let verify = crate::ir::verify::verify_each_pass();
    if verify {
        g.verify()
            .map_err(|e| CompileError::Model(format!("after import: {e}")))?;
    }
    for p in pipeline() {
        if level < p.level() || (p.is_fusion() && !switch.enabled(p.name())) {
            continue;
        }
        stats.push(run_one(g, p.as_ref(), &cx)?);
    }
    Ok(stats)
}

/// Runs `pass` once, verifying the IR after it when asked; its stat.
fn run_one(g: &mut Graph, pass: &dyn Pass, cx: &PassContext<'_>) -> Result<PassStat> {
    let t = Instant::now();
    let changed = pass.run(g, cx)?;
    if crate::ir::verify::verify_each_pass() {
        g.verify().map_err(|e| {
            CompileError::Model(format!(
                "internal error: pass '{}' broke the IR: {e}",
                pass.name()
            ))
        })?;
    }
    Ok(PassStat {
        name: pass.name().to_string(),
        changed,
        millis: t.elapsed().as_secs_f64() * 1000.0,
    })
}

/// Runs one pass outside the pipeline (after the precision pass), as [`run_passes`] would:
/// only at or above its level, verified when asked, with its stat. O(the pass).
pub fn run_late(
    g: &mut Graph,
    pass: &dyn Pass,
    level: OptLevel,
    switch: &FusionSwitch,
    device: &ge_sim::Profile,
) -> Result<Option<PassStat>> {
    if level < pass.level() {
        return Ok(None);
    }
    let cx = PassContext {
        level,
        device,
        switch,
    };
    run_one(g, pass, &cx).map(Some)
}

#[cfg(test)]
mod tests {
    /// Each pass lives in the file named after it (`fold_pad` in `passes/fold_pad.rs`).
    #[test]
    fn every_pass_file_is_named_after_its_pass() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/passes");
        for p in super::pipeline() {
            assert!(
                dir.join(format!("{}.rs", p.name())).is_file(),
                "pass '{}' is not in passes/{}.rs",
                p.name(),
                p.name()
            );
        }
    }
}
