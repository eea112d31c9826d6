//! The MPS2 boards (AN386 Cortex-M4F, AN500 Cortex-M7) as QEMU models them, as a
//! [`firmware_common::Board`]: semihosting output and exit, and an instruction counter
//! built on SysTick.
//!
//! QEMU runs with `-icount shift=0`: each instruction advances virtual time by exactly 1 ns,
//! and SysTick (on the core clock) counts virtual time, so its ticks count instructions.
//! [`Mps2::take`] measures instructions per tick on a loop of known length instead of
//! assuming the board's clock.
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering};
use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::exception;
use cortex_m_semihosting::{debug, hio, hprintln};

pub use firmware_common::classify_main;

/// SysTick wraps since the counter started (one every 2^24 ticks).
static WRAPS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    WRAPS.fetch_add(1, Ordering::Relaxed);
}

const RELOAD: u32 = 0x00FF_FFFF;

/// The board: SysTick free-running from its reload value, counting wraps in its exception.
pub struct Mps2 {
    /// Owned so nothing else reprograms it.
    _syst: SYST,
    /// Instructions per SysTick tick, ×1024 (calibrated).
    per_tick_q10: u64,
}

impl Mps2 {
    /// Takes the core peripherals, starts SysTick on the core clock and calibrates it;
    /// exits the run if the peripherals were taken already.
    pub fn take() -> Mps2 {
        let Some(cp) = cortex_m::Peripherals::take() else {
            exit(false)
        };
        let mut syst = cp.SYST;
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(RELOAD);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
        // The current value reads 0 until the first reload loads it.
        while SYST::get_current() == 0 {}
        let mut board = Mps2 {
            _syst: syst,
            per_tick_q10: 1024,
        };
        board.calibrate();
        board
    }

    /// Ticks since start (wraps × 2^24 + the count down so far). Reads the wrap count on
    /// both sides of the current value so a wrap in between is not lost.
    fn ticks(&self) -> u64 {
        loop {
            let w0 = WRAPS.load(Ordering::Relaxed);
            let cur = SYST::get_current();
            let w1 = WRAPS.load(Ordering::Relaxed);
            if w0 == w1 {
                return u64::from(w0) * (u64::from(RELOAD) + 1) + u64::from(RELOAD - cur);
            }
        }
    }

    /// Times a loop of 2·N instructions (`subs` + `bne` per turn) to learn how many
    /// instructions one tick is (40 at the boards' 25 MHz under `-icount shift=0`).
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
}

impl firmware_common::Board for Mps2 {
    fn instructions(&mut self) -> u64 {
        (self.ticks() * self.per_tick_q10 + 512) / 1024
    }

    fn stack_pointer() -> usize {
        cortex_m::register::msp::read() as usize
    }

    fn write_str(&mut self, s: &str) {
        if let Ok(mut out) = hio::hstdout() {
            let _ = out.write_all(s.as_bytes());
        }
    }

    fn exit(&mut self, ok: bool) -> ! {
        exit(ok)
    }
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
