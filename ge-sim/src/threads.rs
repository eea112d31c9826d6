//! Host parallelism for the kernels: the sim's cores on host threads.
//!
//! A kernel that splits its work asks a [`Parallel`] executor to run `slots` closures
//! `f(0) .. f(slots − 1)`; slot `i` always does the same part of the work with the same
//! instructions whichever host thread runs it, so results are bitwise independent of the
//! thread count. [`Serial`] runs the slots in order on the calling thread (the `no_std`
//! build). With the `std` feature, [`ThreadPool`] keeps persistent worker threads (created
//! once, never per run) and dispatches without allocating.

/// Runs the slots of a split kernel.
pub trait Parallel: Sync {
    /// How many slots are worth running concurrently (1 = serial).
    fn threads(&self) -> usize;
    /// Runs `f(i)` for every `i < slots`, possibly concurrently; returns when all are done.
    fn run(&self, slots: usize, f: &(dyn Fn(usize) + Sync));
}

/// Runs every slot on the calling thread, in order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Serial;

impl Parallel for Serial {
    fn threads(&self) -> usize {
        1
    }
    fn run(&self, slots: usize, f: &(dyn Fn(usize) + Sync)) {
        for i in 0..slots {
            f(i);
        }
    }
}

/// The executor a device runs its kernels on: serial, or a shared thread pool.
#[derive(Clone, Copy, Default)]
pub struct Host(Option<&'static (dyn Parallel + 'static)>);

impl Host {
    /// The calling thread only.
    pub const SERIAL: Host = Host(None);

    /// Runs kernels on `pool` (e.g. [`ThreadPool::shared`]).
    pub fn on(pool: &'static dyn Parallel) -> Host {
        Host(Some(pool))
    }

    /// The executor.
    pub fn get(&self) -> &dyn Parallel {
        match self.0 {
            Some(p) => p,
            None => &Serial,
        }
    }

    /// Host threads kernels may use.
    pub fn threads(&self) -> usize {
        self.get().threads()
    }
}

impl core::fmt::Debug for Host {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Host({} threads)", self.threads())
    }
}

#[cfg(feature = "std")]
pub use pool::ThreadPool;

#[cfg(feature = "std")]
mod pool {
    use super::Parallel;
    use std::boxed::Box;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
    use std::vec::Vec;

    /// The closure of the current job, its lifetime erased: it is only called for a slot
    /// claimed under the lock while the job is current, and the submitter waits until every
    /// slot has finished before returning (so before the closure goes out of scope).
    #[derive(Clone, Copy)]
    struct JobFn(*const (dyn Fn(usize) + Sync));
    // SAFETY: the pointee is `Sync` and outlives every use (see `JobFn`).
    unsafe impl Send for JobFn {}

    struct State {
        generation: u64,
        job: Option<JobFn>,
        slots: usize,
        next: usize,
        done: usize,
        panicked: bool,
        shutdown: bool,
    }

    struct Shared {
        state: Mutex<State>,
        /// Workers wait here for a new generation.
        work: Condvar,
        /// The submitter waits here for `done == slots`.
        finished: Condvar,
        /// Mirror of `state.generation` for spinning without the lock.
        generation: AtomicU64,
        /// Whether workers should spin a little before sleeping (a job just ran).
        hot: AtomicBool,
    }

    fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
        m.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A persistent pool of `threads − 1` worker threads plus the calling thread.
    pub struct ThreadPool {
        shared: Arc<Shared>,
        /// Threads asked for (the key of [`ThreadPool::shared`]) and actually running.
        requested: usize,
        threads: usize,
        /// Serializes submitters (the pool runs one job at a time).
        submit: Mutex<()>,
        workers: Vec<std::thread::JoinHandle<()>>,
    }

    impl core::fmt::Debug for ThreadPool {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "ThreadPool({} threads)", self.threads)
        }
    }

    const SPIN: u32 = 2_000;

    impl ThreadPool {
        /// A pool running jobs on the caller plus `threads − 1` new threads (`threads ≥ 1`).
        pub fn new(threads: usize) -> ThreadPool {
            let threads = threads.max(1);
            let shared = Arc::new(Shared {
                state: Mutex::new(State {
                    generation: 0,
                    job: None,
                    slots: 0,
                    next: 0,
                    done: 0,
                    panicked: false,
                    shutdown: false,
                }),
                work: Condvar::new(),
                finished: Condvar::new(),
                generation: AtomicU64::new(0),
                hot: AtomicBool::new(false),
            });
            // If the OS refuses a thread, the pool runs with the workers it got (no panic).
            let workers: Vec<std::thread::JoinHandle<()>> = (1..threads)
                .map_while(|i| {
                    let s = Arc::clone(&shared);
                    std::thread::Builder::new()
                        .name(std::format!("ge-sim-{i}"))
                        .spawn(move || worker(&s))
                        .ok()
                })
                .collect();
            ThreadPool {
                shared,
                requested: threads,
                threads: workers.len() + 1,
                submit: Mutex::new(()),
                workers,
            }
        }

        /// A process-wide pool of `threads` threads, created on first use and kept for the
        /// life of the process (one per distinct thread count).
        pub fn shared(threads: usize) -> &'static ThreadPool {
            static POOLS: Mutex<Vec<&'static ThreadPool>> = Mutex::new(Vec::new());
            let threads = threads.max(1);
            let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(p) = pools.iter().find(|p| p.requested == threads) {
                return p;
            }
            let p: &'static ThreadPool = Box::leak(Box::new(ThreadPool::new(threads)));
            pools.push(p);
            p
        }
    }

    impl Drop for ThreadPool {
        fn drop(&mut self) {
            lock(&self.shared.state).shutdown = true;
            self.shared.generation.fetch_add(1, Ordering::Release);
            self.shared.work.notify_all();
            for w in self.workers.drain(..) {
                let _ = w.join();
            }
        }
    }

    /// Claims and runs slots of generation `generation` until none are left.
    fn help(shared: &Shared, generation: u64) {
        loop {
            let (f, i) = {
                let mut st = lock(&shared.state);
                if st.generation != generation || st.next >= st.slots {
                    return;
                }
                let Some(f) = st.job else { return };
                let i = st.next;
                st.next += 1;
                (f, i)
            };
            // SAFETY: see `JobFn`: the slot was claimed while its job is current, and the
            // submitter does not return before `done` counts this slot.
            let f = unsafe { &*f.0 };
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(i))).is_ok();
            let mut st = lock(&shared.state);
            st.done += 1;
            st.panicked |= !ok;
            if st.done == st.slots {
                shared.finished.notify_all();
            }
        }
    }

    fn worker(shared: &Shared) {
        let mut seen = 0u64;
        loop {
            // Spin briefly (jobs come in bursts, one per kernel), then sleep.
            let mut spins = 0;
            while shared.hot.load(Ordering::Relaxed)
                && shared.generation.load(Ordering::Acquire) == seen
                && spins < SPIN
            {
                std::hint::spin_loop();
                spins += 1;
            }
            let generation = {
                let mut st = lock(&shared.state);
                while st.generation == seen && !st.shutdown {
                    st = shared.work.wait(st).unwrap_or_else(PoisonError::into_inner);
                }
                if st.shutdown {
                    return;
                }
                st.generation
            };
            seen = generation;
            help(shared, generation);
        }
    }

    impl Parallel for ThreadPool {
        fn threads(&self) -> usize {
            self.threads
        }

        fn run(&self, slots: usize, f: &(dyn Fn(usize) + Sync)) {
            if slots <= 1 || self.threads == 1 {
                for i in 0..slots {
                    f(i);
                }
                return;
            }
            let _one = self.submit.lock().unwrap_or_else(PoisonError::into_inner);
            let sh = &*self.shared;
            let job: *const (dyn Fn(usize) + Sync + '_) = f;
            // SAFETY: only the lifetime is erased (same pointer and vtable); workers call `job`
            // only while this job is current, and we wait below until every slot is done,
            // before `f` goes out of scope.
            let job = JobFn(unsafe {
                core::mem::transmute::<
                    *const (dyn Fn(usize) + Sync + '_),
                    *const (dyn Fn(usize) + Sync + 'static),
                >(job)
            });
            let generation = {
                let mut st = lock(&sh.state);
                st.generation += 1;
                st.job = Some(job);
                st.slots = slots;
                st.next = 0;
                st.done = 0;
                st.panicked = false;
                st.generation
            };
            sh.hot.store(true, Ordering::Relaxed);
            sh.generation.store(generation, Ordering::Release);
            sh.work.notify_all();
            help(sh, generation);
            let mut spins = 0;
            let panicked = loop {
                let st = lock(&sh.state);
                if st.done == st.slots {
                    break st.panicked;
                }
                if spins < SPIN {
                    drop(st);
                    spins += 64;
                    for _ in 0..64 {
                        std::hint::spin_loop();
                    }
                    continue;
                }
                let st = sh
                    .finished
                    .wait_while(st, |st| st.done < st.slots)
                    .unwrap_or_else(PoisonError::into_inner);
                break st.panicked;
            };
            lock(&sh.state).job = None;
            assert!(!panicked, "a ge-sim kernel slot panicked");
        }
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    extern crate std;
    use super::*;
    use core::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn pool_runs_every_slot_once() {
        let pool = ThreadPool::new(3);
        for slots in [0usize, 1, 2, 3, 7, 64] {
            let hits: std::vec::Vec<AtomicUsize> =
                (0..slots).map(|_| AtomicUsize::new(0)).collect();
            for _ in 0..50 {
                pool.run(slots, &|i| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                });
            }
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 50));
        }
        let shared = ThreadPool::shared(2);
        assert!(core::ptr::eq(shared, ThreadPool::shared(2)));
        assert_eq!(Host::on(shared).threads(), 2);
        assert_eq!(Host::SERIAL.threads(), 1);
    }
}
