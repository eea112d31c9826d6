//! Corruption sweep over a compiled model: every single-byte change and every truncation of
//! the header, the section table and the tensor and task tables, plus seeded random flips in
//! the rest of the blob.
//!
//! Each mutant is checked twice:
//! - as is: the checksums must reject it (any single-byte change or truncation is an error);
//! - with the checksums recomputed (`ge_tests::fuzz::fix_checksums`), so the mutated tables
//!   reach `Model::from_bytes`'s validator: it must then either refuse the blob or give a
//!   model that `Session::new` + `run` (sink and host-dispatched) handle without panicking,
//!   reading and writing only inside their buffers (bounds are checked; Miri and the fuzzers
//!   cover the unsafe views), in bounded time.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ge_build::{CompileOptions, compile_bytes};
use ge_runtime::format::{Header, SectionEntry, SectionKind};
use ge_runtime::{AlignedBlob, Model, header_len};
use ge_tests::fuzz::{OmOutcome, Rng, branchy_model, fix_checksums, load_and_run};

fn model() -> Vec<u8> {
    compile_bytes(&branchy_model(), None, &CompileOptions::default())
        .expect("compiles")
        .blob
}

fn sections(blob: &[u8]) -> BTreeMap<u32, (usize, usize)> {
    let hl = header_len();
    let h: Header = bytemuck::pod_read_unaligned(&blob[..hl]);
    let n = h.section_count as usize;
    let es = std::mem::size_of::<SectionEntry>();
    (0..n)
        .map(|i| {
            let e: SectionEntry =
                bytemuck::pod_read_unaligned(&blob[hl + i * es..hl + (i + 1) * es]);
            (e.kind, (e.offset as usize, e.len as usize))
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    mutants: u64,
    by_outcome: BTreeMap<OmOutcome, u64>,
    slowest: Duration,
    failures: Vec<String>,
}

impl Tally {
    /// One mutant: unfixed it must fail to load; fixed it must load-and-run safely.
    fn check(&mut self, what: &str, mutant: &mut [u8], original_len: usize) {
        self.mutants += 1;
        if mutant.len() != original_len || mutant.len() >= header_len() {
            let a = AlignedBlob::from_bytes(mutant);
            if Model::from_bytes(a.as_bytes()).is_ok() {
                self.failures
                    .push(format!("{what}: loaded without recomputing the checksums"));
            }
        }
        fix_checksums(mutant, true);
        let t = Instant::now();
        match std::panic::catch_unwind(|| load_and_run(mutant)) {
            Ok(o) => *self.by_outcome.entry(o).or_default() += 1,
            Err(_) => self.failures.push(format!("{what}: panicked")),
        }
        let dt = t.elapsed();
        self.slowest = self.slowest.max(dt);
        if dt > Duration::from_secs(2) {
            self.failures.push(format!("{what}: took {dt:?}"));
        }
    }
}

#[test]
fn corruption_sweep() {
    let blob = model();
    let secs = sections(&blob);
    let hl = header_len();
    let table_end = hl + secs.len() * std::mem::size_of::<SectionEntry>();
    let (t_off, t_len) = secs[&(SectionKind::Tensors as u32)];
    let (k_off, k_len) = secs[&(SectionKind::Tasks as u32)];
    assert_eq!(
        load_and_run(&blob),
        OmOutcome::Ran,
        "the unmutated model must run"
    );
    let n_tasks = k_len / std::mem::size_of::<ge_runtime::format::TaskDesc>();
    let events = secs.get(&(SectionKind::Events as u32)).map_or(0, |e| e.1);
    eprintln!(
        "blob {} bytes: header+table {table_end}, tensors {t_len} at {t_off}, tasks {k_len} ({n_tasks}) at {k_off}, events {events} bytes",
        blob.len()
    );
    assert!(
        events > 0,
        "the sweep model should have cross-stream events"
    );

    // Every single-byte change of the header, section table, tensor and task tables.
    let ranges = [
        (0, table_end),
        (t_off, t_off + t_len),
        (k_off, k_off + k_len),
    ];
    let mut tally = Tally::default();
    let start = Instant::now();
    let mut m = blob.clone();
    for &(lo, hi) in &ranges {
        for i in lo..hi {
            let orig = blob[i];
            for v in 0..=255u8 {
                if v == orig {
                    continue;
                }
                m.clear();
                m.extend_from_slice(&blob);
                m[i] = v;
                tally.check(&format!("byte {i} = {v:#04x}"), &mut m, blob.len());
            }
        }
    }
    let single = tally.mutants;
    // Every truncation up to the end of the task table (and of the rest, coarser).
    let last = t_off.max(k_off) + t_len.max(k_len);
    let cuts = (0..last).chain((last..blob.len()).step_by(7));
    for cut in cuts {
        m.clear();
        m.extend_from_slice(&blob[..cut]);
        tally.check(&format!("truncated to {cut}"), &mut m, blob.len());
    }
    let truncations = tally.mutants - single;
    // Random flips elsewhere (meta, strings, io, task io, params, weights, events).
    let mut rng = Rng::new(0xc0ffee);
    for _ in 0..20_000 {
        m.clear();
        m.extend_from_slice(&blob);
        let flips = 1 + rng.below(4);
        let mut at = Vec::new();
        for _ in 0..flips {
            let i = table_end + rng.below(blob.len() - table_end);
            m[i] ^= 1 << rng.below(8);
            at.push(i);
        }
        if m != blob {
            tally.check(&format!("flips at {at:?}"), &mut m, blob.len());
        }
    }
    let random = tally.mutants - single - truncations;
    eprintln!(
        "corruption sweep: {} mutants ({single} single-byte, {truncations} truncations, {random} random flips) in {:.1} s; outcomes {:?}; slowest {:?}",
        tally.mutants,
        start.elapsed().as_secs_f64(),
        tally.by_outcome,
        tally.slowest
    );
    assert!(
        tally.failures.is_empty(),
        "{} failures, first ones:\n{}",
        tally.failures.len(),
        tally.failures[..tally.failures.len().min(20)].join("\n")
    );
    // The validator, not only the checksums, must have been exercised both ways.
    assert!(
        tally
            .by_outcome
            .get(&OmOutcome::LoadError)
            .copied()
            .unwrap_or(0)
            > 1000
    );
    assert!(tally.by_outcome.get(&OmOutcome::Ran).copied().unwrap_or(0) > 1000);
}
