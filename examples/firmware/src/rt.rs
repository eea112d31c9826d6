//! The bare runtime the firmware binaries share: abort on panic, argument parsing, writing
//! a number to stdout, and running a function on a painted stack to measure its depth — all
//! without `std`, the heap or `core::fmt`.

use core::panic::PanicInfo;

#[link(name = "c")]
unsafe extern "C" {
    fn abort() -> !;
    fn write(fd: i32, buf: *const u8, len: usize) -> isize;
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    // SAFETY: abort has no preconditions.
    unsafe { abort() }
}

/// Referenced by the precompiled `core` (built with unwinding); never called because this
/// binary is built with `panic = "abort"`.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}

/// Argument `i` of the C `main`, without its NUL.
///
/// # Safety
/// `argv` must hold `argc` valid NUL-terminated strings, as the C runtime passes them.
pub unsafe fn arg<'a>(argc: i32, argv: *const *const u8, i: usize) -> Option<&'a [u8]> {
    if i >= usize::try_from(argc).ok()? {
        return None;
    }
    // SAFETY: i < argc (the caller's contract).
    let s = unsafe { *argv.add(i) };
    let mut n = 0;
    // SAFETY: within the NUL-terminated string.
    while unsafe { *s.add(n) } != 0 {
        n += 1;
    }
    // SAFETY: the n bytes before the NUL.
    Some(unsafe { core::slice::from_raw_parts(s, n) })
}

/// A non-negative decimal number.
pub fn parse_index(s: &[u8]) -> Option<usize> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0usize, |n, &c| match c {
        b'0'..=b'9' => n.checked_mul(10)?.checked_add(usize::from(c - b'0')),
        _ => None,
    })
}

/// Writes `label`, a space, `n` in decimal and a newline to stdout.
pub fn print_number(label: &[u8], n: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut v = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for part in [label, b" ", &buf[i..], b"\n"] {
        // SAFETY: `part` is a valid buffer of that length.
        unsafe { write(1, part.as_ptr(), part.len()) };
    }
}

/// Bytes of the stack [`on_painted_stack`] runs on.
pub const STACK_BYTES: usize = 64 * 1024;
const PAINT: u8 = 0xA5;

#[repr(C, align(64))]
struct Stack(core::cell::UnsafeCell<[u8; STACK_BYTES]>);

// SAFETY: only `on_painted_stack` touches it, and it is not reentrant (single-threaded
// firmware; the `BUSY` flag refuses a nested call).
unsafe impl Sync for Stack {}

static STACK: Stack = Stack(core::cell::UnsafeCell::new([0; STACK_BYTES]));
static BUSY: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Runs `f` on a static stack painted with a pattern and returns the deepest byte it used
/// (the stack grows down, so the lowest byte no longer holding the pattern). `None` on a
/// nested call or a target without the stack switch.
pub fn on_painted_stack(f: &mut dyn FnMut()) -> Option<usize> {
    if BUSY.swap(true, core::sync::atomic::Ordering::Acquire) {
        return None;
    }
    let base = STACK.0.get().cast::<u8>();
    // SAFETY: the stack is ours alone (BUSY) and nothing else points into it.
    unsafe { core::ptr::write_bytes(base, PAINT, STACK_BYTES) };
    let used = run_on(base, f).then(|| {
        // SAFETY: as above; `f` has returned, so the stack is not in use.
        let stack = unsafe { &*STACK.0.get() };
        STACK_BYTES - stack.iter().position(|&b| b != PAINT).unwrap_or(STACK_BYTES)
    });
    BUSY.store(false, core::sync::atomic::Ordering::Release);
    used
}

extern "C" fn trampoline(f: *mut &mut dyn FnMut()) {
    // SAFETY: `run_on` passes a pointer to its live `&mut dyn FnMut()`.
    unsafe { (*f)() }
}

/// Calls `f` with the stack pointer at the top of the `STACK_BYTES` at `base`.
#[cfg(target_arch = "x86_64")]
fn run_on(base: *mut u8, mut f: &mut dyn FnMut()) -> bool {
    // SAFETY: `base + STACK_BYTES` is the 64-byte aligned top of a buffer nobody else uses;
    // the old stack pointer is kept in r12, which the C ABI makes `trampoline` preserve,
    // and every other register the call may change is declared clobbered.
    unsafe {
        let top = base.add(STACK_BYTES);
        core::arch::asm!(
            "mov r12, rsp",
            "mov rsp, {top}",
            "call {tramp}",
            "mov rsp, r12",
            top = in(reg) top,
            tramp = sym trampoline,
            in("rdi") &raw mut f,
            out("r12") _,
            clobber_abi("C"),
        );
    }
    true
}

#[cfg(not(target_arch = "x86_64"))]
fn run_on(_: *mut u8, _: &mut dyn FnMut()) -> bool {
    false
}
