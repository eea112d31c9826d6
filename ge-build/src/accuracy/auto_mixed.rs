//! `--auto-mixed-precision --rtol R`: the smallest set of nodes that must stay in fp32 for
//! every output of a reduced-precision compile to stay within `R` of the fp32 compile
//! ([`normalized_error`] on the given inputs), written as a `--keep-dtype` file.
//!
//! Nodes are ranked by the error they add ([`op_deviations`]); QuickXplain then finds a
//! passing subset that prefers the top of the ranking, and each kept node is tried once more
//! without, so the set is 1-minimal: no single node can leave it. O(K · log(V / K) + K)
//! compile-and-run rounds for a keep set of K nodes out of V, each linear in the model.

use std::path::{Path, PathBuf};

use super::probe::{normalized_error, op_deviations, run_converted};
use crate::error::{CompileError, Result};
use crate::options::CompileOptions;
use crate::tensor::TensorData;

/// What the search found.
#[derive(Clone, Debug)]
pub struct AutoMixed {
    /// Nodes kept in fp32 (keep-dtype names), most error-adding first.
    pub keep: Vec<String>,
    /// The largest output error with nothing kept, and with `keep`.
    pub error_without: f64,
    pub error_with: f64,
    /// Compile-and-run rounds the search took.
    pub rounds: usize,
    /// The keep-dtype file to write: the user's list, then `keep`.
    pub file: String,
}

/// The keep-dtype file text: `base` (the user's own list, if any) and one `OpName:` line per
/// kept node.
pub fn keep_file_text(base: &str, keep: &[String], rtol: f64) -> String {
    let mut s = format!("# --auto-mixed-precision --rtol {rtol}: nodes that stay in fp32\n{base}");
    if !s.ends_with('\n') {
        s.push('\n');
    }
    for k in keep {
        s.push_str(&format!("OpName:{k}\n"));
    }
    s
}

/// Scratch keep-dtype files, removed when dropped.
struct Scratch {
    dir: PathBuf,
    n: usize,
}

impl Scratch {
    fn new() -> Result<Scratch> {
        let dir = std::env::temp_dir().join(format!(
            "ge-auto-mixed-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).map_err(|source| CompileError::Io {
            path: dir.clone(),
            source,
        })?;
        Ok(Scratch { dir, n: 0 })
    }

    fn write(&mut self, text: &str) -> Result<PathBuf> {
        self.n += 1;
        let p = self.dir.join(format!("keep{}.txt", self.n));
        std::fs::write(&p, text).map_err(|source| CompileError::Io {
            path: p.clone(),
            source,
        })?;
        Ok(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One compile-and-run per trial keep set, against the fp32 outputs.
struct Trials<'a> {
    model_bytes: &'a [u8],
    model_dir: Option<&'a Path>,
    opts: &'a CompileOptions,
    inputs: &'a [TensorData],
    want: Vec<TensorData>,
    base: String,
    rtol: f64,
    scratch: Scratch,
    rounds: usize,
}

impl Trials<'_> {
    /// The largest output error with `keep` (and the user's list) in fp32.
    fn error(&mut self, keep: &[String]) -> Result<f64> {
        self.rounds += 1;
        let file = self
            .scratch
            .write(&keep_file_text(&self.base, keep, self.rtol))?;
        let o = CompileOptions {
            keep_dtype: Some(file),
            ..self.opts.clone()
        };
        let c = crate::compile_bytes(self.model_bytes, self.model_dir, &o)?;
        let got = run_converted(&c.blob, self.inputs, &o)?;
        Ok(got
            .iter()
            .zip(&self.want)
            .map(|(g, w)| normalized_error(g, w))
            .fold(0f64, f64::max))
    }

    fn passes(&mut self, keep: &[String]) -> Result<bool> {
        Ok(self.error(keep)? <= self.rtol)
    }

    /// QuickXplain (Junker 2004): given that `base ∪ cands` passes, a subset `M` of `cands`
    /// such that `base ∪ M` passes, preferring earlier candidates; `grew` says whether
    /// `base` gained nodes since it was last tried. O(|M| · log(|cands| / |M|)) trials.
    fn quick_xplain(
        &mut self,
        base: &[String],
        grew: bool,
        cands: &[String],
    ) -> Result<Vec<String>> {
        if grew && self.passes(base)? {
            return Ok(Vec::new());
        }
        if cands.len() <= 1 {
            return Ok(cands.to_vec());
        }
        let (first, second) = cands.split_at(cands.len() / 2);
        let with_first = [base, first].concat();
        let m2 = self.quick_xplain(&with_first, !first.is_empty(), second)?;
        let with_m2 = [base, &m2].concat();
        let m1 = self.quick_xplain(&with_m2, !m2.is_empty(), first)?;
        Ok([m1, m2].concat())
    }
}

/// Searches the keep set for `opts` (a reduced `--precision`; its `--keep-dtype` file, if any,
/// stays in every trial) on `inputs`, against `fp32_blob` (the model compiled with
/// [`fp32_options`]).
pub fn search(
    model_bytes: &[u8],
    model_dir: Option<&Path>,
    opts: &CompileOptions,
    fp32_blob: &[u8],
    inputs: &[TensorData],
    rtol: f64,
) -> Result<AutoMixed> {
    if opts.precision.low_dtype().is_none() {
        return Err(CompileError::Option(format!(
            "--auto-mixed-precision needs a reduced --precision (force_fp16, allow_mix_precision, \
             …), not {}",
            opts.precision.name()
        )));
    }
    if !(rtol.is_finite() && rtol > 0.0) {
        return Err(CompileError::Option(format!(
            "--rtol must be a positive number, not {rtol}"
        )));
    }
    let base = match &opts.keep_dtype {
        Some(p) => std::fs::read_to_string(p).map_err(|source| CompileError::Io {
            path: p.clone(),
            source,
        })?,
        None => String::new(),
    };
    let mut t = Trials {
        want: run_converted(fp32_blob, inputs, opts)?,
        model_bytes,
        model_dir,
        opts,
        inputs,
        base,
        rtol,
        scratch: Scratch::new()?,
        rounds: 0,
    };
    let error_without = t.error(&[])?;
    if error_without <= rtol {
        return Ok(AutoMixed {
            file: keep_file_text(&t.base, &[], rtol),
            keep: Vec::new(),
            error_without,
            error_with: error_without,
            rounds: t.rounds,
        });
    }
    let mut ranking: Vec<String> = Vec::new();
    for d in op_deviations(model_bytes, model_dir, opts, inputs)? {
        if !ranking.contains(&d.node) {
            ranking.push(d.node);
        }
    }
    let all = t.error(&ranking)?;
    if all > rtol {
        return Err(CompileError::Option(format!(
            "--auto-mixed-precision: even with all {} nodes kept in fp32 the outputs are {all:.3e} \
             from fp32's (--rtol {rtol}); the difference comes from the graph inputs/outputs \
             or the op lists, not from a node: raise --rtol or use --precision force_fp32",
            ranking.len()
        )));
    }
    let mut keep = t.quick_xplain(&[], false, &ranking)?;
    // QuickXplain's answer is minimal when the error only falls as nodes are kept; rounding
    // is not that regular, so each node is tried once more without.
    for i in (0..keep.len()).rev() {
        if keep.len() > 1 {
            let mut without = keep.clone();
            without.remove(i);
            if t.passes(&without)? {
                keep = without;
            }
        }
    }
    let error_with = t.error(&keep)?;
    Ok(AutoMixed {
        file: keep_file_text(&t.base, &keep, rtol),
        keep,
        error_without,
        error_with,
        rounds: t.rounds,
    })
}
