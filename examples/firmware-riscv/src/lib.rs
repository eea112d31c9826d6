//! QEMU's RISC-V `virt` board as a [`firmware_common::Board`]: semihosting output and exit,
//! and `minstret` (instructions retired, exact under `-icount shift=0`) as the counter.
#![no_std]

use riscv_semihosting::{debug, hio, hprintln};

pub use firmware_common::classify_main;

/// The board (nothing to own: the counter is a CSR).
pub struct Virt;

impl firmware_common::Board for Virt {
    fn instructions(&mut self) -> u64 {
        // `minstreth:minstret`, re-read when the low half wrapped in between.
        loop {
            let (hi, lo, hi2): (u32, u32, u32);
            // SAFETY: reads machine-mode counters; riscv-rt runs the program in M-mode.
            unsafe {
                core::arch::asm!(
                    "csrr {0}, minstreth",
                    "csrr {1}, minstret",
                    "csrr {2}, minstreth",
                    out(reg) hi,
                    out(reg) lo,
                    out(reg) hi2,
                    options(nomem, nostack),
                );
            }
            if hi == hi2 {
                return (u64::from(hi) << 32) | u64::from(lo);
            }
        }
    }

    fn stack_pointer() -> usize {
        let sp: usize;
        // SAFETY: copies the stack pointer.
        unsafe { core::arch::asm!("mv {0}, sp", out(reg) sp, options(nomem, nostack)) };
        sp
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
    #[allow(clippy::empty_loop)]
    loop {}
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hprintln!("panic: {}", info);
    exit(false)
}
