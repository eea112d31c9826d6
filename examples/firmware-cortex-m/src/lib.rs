//! What the firmware binaries share on an MPS2 board under QEMU: semihosting output and
//! exit, an instruction counter built on SysTick, and a painted-stack high-water mark.
//!
//! QEMU runs with `-icount shift=0`: each instruction advances virtual time by exactly 1 ns,
//! and SysTick (on the core clock) counts virtual time, so its ticks count instructions.
//! [`Counter::calibrate`] measures instructions per tick on a loop of known length instead
//! of assuming the board's clock.
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering};
use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::exception;
use cortex_m_semihosting::{debug, hprintln};

/// SysTick wraps since the counter started (one every 2^24 ticks).
static WRAPS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    WRAPS.fetch_add(1, Ordering::Relaxed);
}

const RELOAD: u32 = 0x00FF_FFFF;

/// SysTick free-running from its reload value, counting wraps in its exception.
pub struct Counter {
    /// Owned so nothing else reprograms it.
    _syst: SYST,
    /// Instructions per SysTick tick, ×1024 (from [`Counter::calibrate`]).
    per_tick_q10: u64,
}

impl Counter {
    /// Starts SysTick on the core clock.
    pub fn start(mut syst: SYST) -> Counter {
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(RELOAD);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
        // The current value reads 0 until the first reload loads it.
        while SYST::get_current() == 0 {}
        let mut c = Counter {
            _syst: syst,
            per_tick_q10: 1024,
        };
        c.calibrate();
        c
    }

    /// Ticks since start (wraps × 2^24 + the count down so far). Reads the wrap count on
    /// both sides of the current value so a wrap in between is not lost.
    pub fn ticks(&mut self) -> u64 {
        loop {
            let w0 = WRAPS.load(Ordering::Relaxed);
            let cur = SYST::get_current();
            let w1 = WRAPS.load(Ordering::Relaxed);
            if w0 == w1 {
                return u64::from(w0) * (u64::from(RELOAD) + 1) + u64::from(RELOAD - cur);
            }
        }
    }

    /// Times a loop of 2·N + small instructions (`subs` + `bne` per turn) to learn how many
    /// instructions one tick is.
    fn calibrate(&mut self) {
        const TURNS: u32 = 4_000_000;
        let t0 = self.ticks();
        // SAFETY: a countdown in one register, which is declared clobbered; no memory.
        unsafe {
            core::arch::asm!(
                "2:",
                "subs {n}, #1",
                "bne 2b",
                n = inout(reg) TURNS => _,
                options(nomem, nostack),
            );
        }
        let ticks = (self.ticks() - t0).max(1);
        self.per_tick_q10 = (2 * u64::from(TURNS) * 1024 + ticks / 2) / ticks;
    }

    /// Instructions `f` executes (to within one tick's worth).
    pub fn instructions<R>(&mut self, f: impl FnOnce() -> R) -> (R, u64) {
        let t0 = self.ticks();
        let r = f();
        let ticks = self.ticks() - t0;
        (r, (ticks * self.per_tick_q10 + 512) / 1024)
    }

    /// Instructions per tick, ×1024.
    pub fn per_tick_q10(&self) -> u64 {
        self.per_tick_q10
    }
}

const PAINT: u32 = 0xA5A5_A5A5;
/// Bytes below the caller's stack pointer that [`deepest_stack`] paints and watches.
pub const WATCH_BYTES: usize = 64 * 1024;
/// Room left unpainted below the stack pointer for `paint`'s own frame.
const MARGIN: usize = 512;

/// Runs `f` with the `WATCH_BYTES` below the current stack pointer painted and returns its
/// result with the deepest stack it reached, in bytes below the stack pointer at the call
/// (`WATCH_BYTES` means it may have gone further).
#[inline(never)]
pub fn deepest_stack<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let sp = cortex_m::register::msp::read() as usize;
    let low = sp - WATCH_BYTES;
    paint(low, sp - MARGIN);
    let r = f();
    let mut a = low;
    // SAFETY: `low..sp` is stack memory below every live frame (f has returned).
    while a < sp - MARGIN && unsafe { core::ptr::read_volatile(a as *const u32) } == PAINT {
        a += 4;
    }
    (r, sp - a)
}

#[inline(never)]
fn paint(from: usize, to: usize) {
    let mut a = from;
    while a < to {
        // SAFETY: free stack below the caller's frame and above RAM's start (WATCH_BYTES of
        // a 4 MiB RAM); `paint`'s own frame lies within MARGIN below the caller's SP.
        unsafe { core::ptr::write_volatile(a as *mut u32, PAINT) };
        a += 4;
    }
}

/// The index of the largest value (the first one on ties).
pub fn argmax<T: PartialOrd + Copy>(v: &[T]) -> usize {
    (0..v.len()).fold(0, |b, k| if v[k] > v[b] { k } else { b })
}

/// Prints one result line the host-side test parses:
/// `<model> sample <i> class <c> instructions <n> stack <bytes>`.
pub fn report(model: &str, sample: usize, class: usize, instructions: u64, stack: usize) {
    hprintln!(
        "{} sample {} class {} instructions {} stack {}",
        model,
        sample,
        class,
        instructions,
        stack
    );
}

/// Prints the error and exits QEMU with a failure status.
pub fn fail(model: &str, e: ge::Error) -> ! {
    hprintln!("{} error {:?}", model, e);
    exit(false)
}

/// Ends the QEMU run (semihosting `SYS_EXIT`), with status 0 on success.
pub fn exit(ok: bool) -> ! {
    debug::exit(if ok {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hprintln!("panic: {}", info);
    exit(false)
}

/// Runs `classify` on each `sample_bytes`-sized chunk of `inputs` and reports each class,
/// the instructions the inference took and the deepest stack it used; exits QEMU after
/// the last (with a failure status when there were none or one failed).
pub fn run_samples(
    syst: SYST,
    model: &str,
    inputs: &[u8],
    sample_bytes: usize,
    mut classify: impl FnMut(&[u8]) -> Result<usize, ge::Error>,
) -> ! {
    let mut counter = Counter::start(syst);
    hprintln!(
        "{} instructions_per_tick_q10 {}",
        model,
        counter.per_tick_q10()
    );
    if inputs.is_empty() || !inputs.len().is_multiple_of(sample_bytes) {
        hprintln!(
            "{} error: {} input bytes, not a whole number of samples of {}",
            model,
            inputs.len(),
            sample_bytes
        );
        exit(false)
    }
    for (i, sample) in inputs.chunks_exact(sample_bytes).enumerate() {
        let ((class, instructions), stack) =
            deepest_stack(|| counter.instructions(|| classify(sample)));
        match class {
            Ok(c) => report(model, i, c, instructions, stack),
            Err(e) => fail(model, e),
        }
    }
    exit(true)
}

/// The `#[entry]` of a binary that classifies every sample of `inputs` with one model
/// `ge_model!` generated as `module::Net`: a `.bss` arena, the input copied from the raw
/// little-endian sample bytes into `input`, the class the argmax of `output[0]`.
#[macro_export]
macro_rules! classify_main {
    (
        $name:literal, $module:ident::$net:ident,
        input: $input:ident, output: $output:ident,
        sample_bytes: $sample:expr, inputs: $bytes:expr $(,)?
    ) => {
        /// The corpus inputs, raw (a symbol of its own, so the tests can leave it out of
        /// the flash figure).
        static INPUTS: [u8; $bytes.len()] = *$bytes;

        static ARENA: $module::StaticArena = $module::StaticArena::new();

        #[cortex_m_rt::entry]
        fn main() -> ! {
            use firmware_cortex_m as board;
            let Some(cp) = cortex_m::Peripherals::take() else {
                board::exit(false)
            };
            let Some(arena) = ARENA.take() else {
                board::exit(false)
            };
            let mut net = $module::$net::new(arena).unwrap_or_else(|e| board::fail($name, e));
            board::run_samples(cp.SYST, $name, &INPUTS, $sample, |sample| {
                let mut inputs = $module::Inputs::zeroed();
                ge::bytes::of_mut(&mut inputs.$input).copy_from_slice(sample);
                let mut outputs = $module::Outputs::zeroed();
                net.run(&inputs, &mut outputs)?;
                Ok(board::argmax(&outputs.$output[0]))
            })
        }
    };
}
