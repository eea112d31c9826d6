//! `ge check`: compile and run ONNX test cases (one folder, or a suite of them) against
//! their expected outputs.

use std::io::Write;
use std::path::Path;

use ge_build::check::{Outcome, Tolerance, check_case_isolated_with, reason_group, suite_cases};

use super::{Res, options};
use crate::cli::CompileFlags;

pub(super) fn check(
    case: Option<&Path>,
    suite: Option<&Path>,
    flags: &CompileFlags,
    tol: Tolerance,
    races: bool,
) -> Res {
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
        let outcome = check_case_isolated_with(c, &opts, tol, races);
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
