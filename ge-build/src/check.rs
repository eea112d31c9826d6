//! Conformance checking of ONNX backend-test cases (`model.onnx` + `test_data_set_*/`):
//! compile with the case's input shapes, run every data set on the simulated device and
//! compare with the expected outputs.

use std::path::{Path, PathBuf};

use ge_runtime::format::DType;

use crate::error::CompileError;
use crate::options::CompileOptions;
use crate::run::Runner;
use crate::tensor::{TensorData, read_tensor_pb};

/// Comparison tolerances: `|got - want| <= atol + rtol * |want|`.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            rtol: 1e-3,
            atol: 1e-4,
        }
    }
}

/// Outcome of one case.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Pass,
    /// Passed with these graph inputs pinned to the test data's values at compile time
    /// (inputs that must be constants for static shapes: axes, pads, sizes fed as inputs).
    PassPinned(Vec<String>),
    Fail(String),
    Unsupported(String),
}

/// The data sets of a case dir, sorted.
pub fn data_sets(case: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(case)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.is_dir()
                        && p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("test_data_set_"))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Reads `prefix_0.pb`, `prefix_1.pb`, … from a data set dir.
pub fn read_numbered(dir: &Path, prefix: &str) -> Result<Vec<TensorData>, String> {
    let mut out = Vec::new();
    for i in 0.. {
        let p = dir.join(format!("{prefix}_{i}.pb"));
        if !p.exists() {
            break;
        }
        out.push(read_tensor_pb(&p).map_err(|e| format!("{}: {e}", p.display()))?);
    }
    Ok(out)
}

/// Compares one output; `Err` says where it differs.
pub fn compare(got: &TensorData, want: &TensorData, tol: Tolerance) -> Result<(), String> {
    if got.dims != want.dims {
        return Err(format!("shape {:?}, expected {:?}", got.dims, want.dims));
    }
    if got.dtype != want.dtype {
        return Err(format!(
            "dtype {}, expected {}",
            got.dtype.name(),
            want.dtype.name()
        ));
    }
    let float = matches!(
        want.dtype,
        DType::F32 | DType::F64 | DType::F16 | DType::Bf16
    );
    let (g, w) = (got.to_f64_vec()?, want.to_f64_vec()?);
    let mut worst: Option<(usize, f64, f64)> = None;
    let mut bad = 0usize;
    for (i, (&a, &b)) in g.iter().zip(&w).enumerate() {
        let ok = if float {
            (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol.atol + tol.rtol * b.abs()
        } else {
            a == b
        };
        if !ok {
            bad += 1;
            if worst.is_none_or(|(_, x, y)| (a - b).abs() > (x - y).abs()) {
                worst = Some((i, a, b));
            }
        }
    }
    match worst {
        None => Ok(()),
        Some((i, a, b)) => Err(format!(
            "{bad} of {} elements differ; worst at {i}: got {a}, expected {b}",
            w.len()
        )),
    }
}

/// Graph inputs whose values the input `slot` of node `node_name` depends on, following
/// producers backwards (but not through `Shape`/`Size`, whose outputs depend only on shapes).
fn graph_inputs_behind(
    g: &crate::onnx::proto::GraphProto,
    node_name: &str,
    slot: usize,
    inputs: &[&str],
) -> Vec<String> {
    let node = g.node.iter().find(|n| {
        n.name() == node_name
            || (n.name().is_empty() && n.output.first().map(String::as_str) == Some(node_name))
    });
    let Some(start) = node.and_then(|n| n.input.get(slot)) else {
        return Vec::new();
    };
    let producer = crate::quantize::graph::producers(g);
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![start.as_str()];
    let mut found = Vec::new();
    while let Some(v) = stack.pop() {
        if v.is_empty() || !seen.insert(v) {
            continue;
        }
        if inputs.contains(&v) {
            found.push(v.to_string());
        } else if let Some(&p) = producer.get(v) {
            let n = &g.node[p];
            if !matches!(n.op_type(), "Shape" | "Size") {
                stack.extend(n.input.iter().map(String::as_str));
            }
        }
    }
    found
}

/// The `N` of "input N (" in a "must be a constant" reason.
fn const_slot(reason: &str) -> Option<usize> {
    if !reason.contains("must be a constant") {
        return None;
    }
    let rest = &reason[reason.find("input ")? + 6..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Runs one case dir with `opts` (input shapes are taken from the first data set). Graph
/// inputs that the compiler needs as constants (shape tensors such as axes, pads or sizes
/// fed as inputs) are frozen to the data set's values, like symbolic dims are fixed from its
/// shapes; a data set with other values for them gets its own compile.
pub fn check_case(case: &Path, opts: &CompileOptions, tol: Tolerance) -> Outcome {
    check_case_with(case, opts, tol, false)
}

/// [`check_case`], and with `races` every compiled schedule is also proven race-free
/// (`ge check --check-races`): a race is a failure naming the two tasks.
pub fn check_case_with(case: &Path, opts: &CompileOptions, tol: Tolerance, races: bool) -> Outcome {
    let model_path = case.join("model.onnx");
    let sets = data_sets(case);
    let Some(first) = sets.first() else {
        return Outcome::Fail("no test_data_set_* directory".into());
    };
    let inputs = match read_numbered(first, "input") {
        Ok(i) => i,
        Err(e) => return Outcome::Unsupported(format!("inputs: {e}")),
    };
    let bytes = match std::fs::read(&model_path) {
        Ok(b) => b,
        Err(e) => return Outcome::Fail(format!("{}: {e}", model_path.display())),
    };
    let mut opts = opts.clone();
    let model = crate::onnx::decode_model(&bytes).ok();
    let graph = model.as_ref().and_then(|m| m.graph.as_ref());
    let mut input_names: Vec<&str> = Vec::new();
    if let Some(g) = graph {
        let inits: std::collections::HashSet<&str> =
            g.initializer.iter().map(|t| t.name()).collect();
        input_names = g
            .input
            .iter()
            .map(|i| i.name())
            .filter(|n| !inits.contains(n))
            .collect();
        for (name, t) in input_names.iter().zip(&inputs) {
            opts.input_shapes.insert(name.to_string(), t.dims.clone());
        }
    }
    // Which graph inputs must be frozen: compile, and on "input N must be a constant" freeze
    // the graph inputs behind it and retry.
    let mut frozen: Vec<usize> = Vec::new();
    let freeze = |opts: &mut CompileOptions, frozen: &[usize], values: &[TensorData]| {
        opts.input_values.clear();
        for &i in frozen {
            if let (Some(name), Some(v)) = (input_names.get(i), values.get(i)) {
                opts.input_values.insert(name.to_string(), v.clone());
                opts.input_shapes.remove(*name);
            }
        }
    };
    let classify = |e: CompileError| match e {
        e @ (CompileError::Unsupported { .. } | CompileError::Input { .. }) => {
            Outcome::Unsupported(e.to_string())
        }
        e => Outcome::Fail(format!("compile: {e}")),
    };
    let load = |blob: &[u8]| {
        let r = Runner::new(ge_runtime::AlignedBlob::from_bytes(blob))
            .map_err(|e| Outcome::Fail(format!("load: {e}")))?;
        if races {
            r.check_races().map_err(Outcome::Fail)?;
        }
        Ok(r)
    };
    let compile = |opts: &CompileOptions| -> Result<Runner, Outcome> {
        let c = crate::compile_bytes(&bytes, Some(case), opts).map_err(classify)?;
        load(&c.blob)
    };
    let mut runner = loop {
        let e = match crate::compile_bytes(&bytes, Some(case), &opts) {
            Ok(c) => match load(&c.blob) {
                Ok(r) => break r,
                Err(o) => return o,
            },
            Err(e) => e,
        };
        let new: Vec<usize> = match (&e, graph) {
            (CompileError::Unsupported { node, reason, .. }, Some(g)) => match const_slot(reason) {
                Some(slot) => graph_inputs_behind(g, node, slot, &input_names)
                    .iter()
                    .filter_map(|n| input_names.iter().position(|m| m == n))
                    .filter(|i| !frozen.contains(i))
                    .collect(),
                None => Vec::new(),
            },
            _ => Vec::new(),
        };
        if new.is_empty() || frozen.len() > 16 {
            return classify(e);
        }
        frozen.extend(new);
        freeze(&mut opts, &frozen, &inputs);
    };
    for set in &sets {
        let (ins, want) = match (read_numbered(set, "input"), read_numbered(set, "output")) {
            (Ok(i), Ok(o)) => (i, o),
            (Err(e), _) | (_, Err(e)) => return Outcome::Unsupported(format!("test data: {e}")),
        };
        if frozen.iter().any(|&i| ins.get(i) != inputs.get(i)) {
            freeze(&mut opts, &frozen, &ins);
            runner = match compile(&opts) {
                Ok(r) => r,
                Err(o) => return o,
            };
        }
        let ins: Vec<TensorData> = ins
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !frozen.contains(i))
            .map(|(_, t)| t)
            .collect();
        let got = match runner.run(&ins, ge_sim::SimDevice::new(opts.device)) {
            Ok((g, _)) => g,
            Err(e) => return Outcome::Fail(format!("run: {e}")),
        };
        if got.len() != want.len() {
            return Outcome::Fail(format!("{} outputs, expected {}", got.len(), want.len()));
        }
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            if let Err(e) = compare(g, w, tol) {
                return Outcome::Fail(format!(
                    "output {i} of {}: {e}",
                    set.file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
                ));
            }
        }
    }
    if frozen.is_empty() {
        Outcome::Pass
    } else {
        Outcome::PassPinned(
            frozen
                .iter()
                .filter_map(|&i| input_names.get(i).map(|n| n.to_string()))
                .collect(),
        )
    }
}

impl Outcome {
    /// True for both kinds of pass.
    pub fn passed(&self) -> bool {
        matches!(self, Outcome::Pass | Outcome::PassPinned(_))
    }
}

/// Case dirs under `suite` (any dir holding a `model.onnx`), sorted.
pub fn suite_cases(suite: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(suite)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.join("model.onnx").is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Runs a case, turning a panic into a failure so one case cannot stop a suite.
pub fn check_case_isolated(case: &Path, opts: &CompileOptions, tol: Tolerance) -> Outcome {
    check_case_isolated_with(case, opts, tol, false)
}

/// [`check_case_isolated`] with [`check_case_with`]'s race check.
pub fn check_case_isolated_with(
    case: &Path,
    opts: &CompileOptions,
    tol: Tolerance,
    races: bool,
) -> Outcome {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check_case_with(case, opts, tol, races)
    }))
    .unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
        Outcome::Fail(format!("panic: {}", msg.unwrap_or_default()))
    })
}

/// A short reason shared by similar non-passing outcomes (for `ge check --suite`'s summary
/// by reason): the op type and the reason without node names, opsets, paths or values.
/// `None` for a pass.
pub fn reason_group(o: &Outcome) -> Option<String> {
    fn cut(s: &str, n: usize) -> String {
        let s = s.split(';').next().unwrap_or(s).trim();
        match s.char_indices().nth(n) {
            Some((i, _)) => format!("{}…", &s[..i]),
            None => s.to_string(),
        }
    }
    /// `node 'N' (OP, opset K)<sep>REASON` → (OP, REASON).
    fn node_reason<'a>(r: &'a str, sep: &str) -> Option<(&'a str, &'a str)> {
        let r = r.strip_prefix("node '")?;
        let open = r.find("' (")?;
        let rest = &r[open + 3..];
        let op = &rest[..rest.find(", opset ")?];
        let close = rest.find(')')?;
        let reason = rest[close + 1..].strip_prefix(sep)?;
        Some((op, reason))
    }
    match o {
        Outcome::Pass | Outcome::PassPinned(_) => None,
        Outcome::Unsupported(r) => Some(
            if let Some((op, why)) = node_reason(r, " is not supported: ") {
                format!("UNSUPPORTED {op}: {}", cut(why, 90))
            } else if r.starts_with("inputs: ") || r.starts_with("test data: ") {
                let why = r.rsplit_once("': ").map_or(r.as_str(), |(_, w)| w);
                format!("UNSUPPORTED test data: {}", cut(why, 90))
            } else if let Some(rest) = r.strip_prefix("input '") {
                let why = rest.split_once("': ").map_or(rest, |(_, w)| w);
                format!("UNSUPPORTED graph input: {}", cut(why, 90))
            } else {
                format!("UNSUPPORTED {}", cut(r, 90))
            },
        ),
        Outcome::Fail(r) => Some(if let Some(c) = r.strip_prefix("compile: ") {
            match node_reason(c, ": ") {
                Some((op, why)) => format!("FAIL compile {op}: {}", cut(why, 90)),
                None => format!("FAIL compile: {}", cut(c, 90)),
            }
        } else if let Some(run) = r.strip_prefix("run: task ") {
            let kind = run
                .split_once(" (")
                .and_then(|(_, k)| k.split_once(')'))
                .map_or("?", |(k, _)| k);
            let why = run.split_once("failed: ").map_or(run, |(_, w)| w);
            format!("FAIL run {kind}: {}", cut(why, 90))
        } else if r.starts_with("output ") && r.contains("elements differ") {
            "FAIL wrong values (beyond rtol 1e-3 / atol 1e-4)".to_string()
        } else if r.starts_with("output ") {
            "FAIL wrong output shape or dtype".to_string()
        } else if r.starts_with("panic") {
            "FAIL panic".to_string()
        } else {
            format!("FAIL {}", cut(r, 90))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_group_without_names_or_opsets() {
        let a = Outcome::Unsupported(
            "node 'a' (Foo, opset 13) is not supported: no importer for this op type; see docs"
                .into(),
        );
        let b = Outcome::Unsupported(
            "node 'b' (Foo, opset 21) is not supported: no importer for this op type".into(),
        );
        assert_eq!(reason_group(&a), reason_group(&b));
        assert_eq!(
            reason_group(&a).unwrap(),
            "UNSUPPORTED Foo: no importer for this op type"
        );
        let f = Outcome::Fail("run: task 3 (Binary) failed: unsupported dtype: x".into());
        assert_eq!(
            reason_group(&f).unwrap(),
            "FAIL run Binary: unsupported dtype: x"
        );
        let w = Outcome::Fail("output 0 of test_data_set_0: 3 of 4 elements differ".into());
        assert!(reason_group(&w).unwrap().starts_with("FAIL wrong values"));
        assert_eq!(reason_group(&Outcome::Pass), None);
    }
}
