//! What ge's microcontroller examples share, over a [`Board`] each target implements
//! (`firmware-cortex-m`, `firmware-riscv`): run one model on every raw corpus sample and
//! print, per sample, the class, the instructions the inference took and the deepest stack
//! it used, in the one line format `tests/tests/firmware_qemu.rs` parses:
//! `<model> sample <i> class <c> instructions <n> stack <bytes>`.
#![no_std]

use core::fmt::{self, Write};

/// What a board gives the runner.
pub trait Board {
    /// Instructions retired since some fixed point (exact or calibrated).
    fn instructions(&mut self) -> u64;
    /// The current stack pointer.
    fn stack_pointer() -> usize;
    /// Writes text to the host (semihosting).
    fn write_str(&mut self, s: &str);
    /// Ends the run with a success or failure status.
    fn exit(&mut self, ok: bool) -> !;
}

/// [`Board::write_str`] as a `fmt::Write`.
struct Out<'b, B: Board>(&'b mut B);

impl<B: Board> Write for Out<'_, B> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write_str(s);
        Ok(())
    }
}

/// Prints one line to the host.
pub fn line<B: Board>(board: &mut B, args: fmt::Arguments<'_>) {
    let mut out = Out(board);
    let _ = out.write_fmt(args);
    let _ = out.write_str("\n");
}

const PAINT: u32 = 0xA5A5_A5A5;
/// Bytes below the caller's stack pointer that [`measure`] paints and watches.
pub const WATCH_BYTES: usize = 64 * 1024;
/// Room left unpainted below the stack pointer for `paint`'s own frame.
const MARGIN: usize = 512;

/// Runs `f` with the `WATCH_BYTES` below the stack pointer painted; returns its result, the
/// instructions it took (painting and scanning left out) and the deepest stack it reached
/// below that pointer (`WATCH_BYTES`: it may have gone further).
/// The board's RAM must hold `WATCH_BYTES` of free stack. The pointer is read here, inside
/// this function's frame (which holds whatever of `f` is inlined into it), so the paint
/// starts below every live frame.
#[inline(never)]
pub fn measure<B: Board, R>(board: &mut B, f: impl FnOnce() -> R) -> (R, u64, usize) {
    let sp = B::stack_pointer();
    let low = sp - WATCH_BYTES;
    paint(low, sp - MARGIN);
    let t0 = board.instructions();
    let r = f();
    let n = board.instructions() - t0;
    let mut a = low;
    // SAFETY: `low..sp - MARGIN` is stack below every live frame (f has returned).
    while a < sp - MARGIN && unsafe { core::ptr::read_volatile(a as *const u32) } == PAINT {
        a += 4;
    }
    (r, n, sp - a)
}

#[inline(never)]
fn paint(from: usize, to: usize) {
    let mut a = from;
    while a < to {
        // SAFETY: free stack below the caller's frame (the board reserves WATCH_BYTES);
        // `paint`'s own frame lies within MARGIN below the caller's stack pointer.
        unsafe { core::ptr::write_volatile(a as *mut u32, PAINT) };
        a += 4;
    }
}

/// The index of the largest value (the first one on ties).
pub fn argmax<T: PartialOrd + Copy>(v: &[T]) -> usize {
    (0..v.len()).fold(0, |b, k| if v[k] > v[b] { k } else { b })
}

/// Runs `classify` on each `sample_bytes`-sized chunk of `inputs`, reports each, and ends
/// the run (failing when there were no samples or one failed).
pub fn run_samples<B: Board>(
    board: &mut B,
    model: &str,
    inputs: &[u8],
    sample_bytes: usize,
    mut classify: impl FnMut(&[u8]) -> Result<usize, ge::Error>,
) -> ! {
    if inputs.is_empty() || !inputs.len().is_multiple_of(sample_bytes) {
        line(
            board,
            format_args!(
                "{model} error: {} input bytes, not whole samples of {sample_bytes}",
                inputs.len()
            ),
        );
        board.exit(false)
    }
    for (i, sample) in inputs.chunks_exact(sample_bytes).enumerate() {
        let (class, n, stack) = measure(board, || classify(sample));
        match class {
            Ok(c) => line(
                board,
                format_args!("{model} sample {i} class {c} instructions {n} stack {stack}"),
            ),
            Err(e) => {
                line(board, format_args!("{model} error {e:?}"));
                board.exit(false)
            }
        }
    }
    board.exit(true)
}

/// The entry of a binary that classifies every sample of `inputs` with one model
/// `ge_model!` generated as `module::Net`: a `.bss` arena, each sample's raw little-endian
/// bytes copied into `input`, the class the argmax of `output[0]`. `entry` is the runtime
/// crate's entry attribute, `board` an expression giving the [`Board`].
#[macro_export]
macro_rules! classify_main {
    (
        entry: $entry:meta, board: $board:expr,
        $name:literal, $module:ident::$net:ident,
        input: $input:ident, output: $output:ident,
        sample_bytes: $sample:expr, inputs: $bytes:expr $(,)?
    ) => {
        /// The corpus inputs, raw (a symbol of its own, so the tests can leave it out of
        /// the flash figure).
        static INPUTS: [u8; $bytes.len()] = *$bytes;

        static ARENA: $module::StaticArena = $module::StaticArena::new();

        #[$entry]
        fn main() -> ! {
            use $crate::Board as _;
            let mut board = $board;
            let Some(arena) = ARENA.take() else {
                board.exit(false)
            };
            let mut net = match $module::$net::new(arena) {
                Ok(net) => net,
                Err(e) => {
                    $crate::line(&mut board, format_args!("{} error {:?}", $name, e));
                    board.exit(false)
                }
            };
            $crate::run_samples(&mut board, $name, &INPUTS, $sample, |sample| {
                let mut inputs = $module::Inputs::zeroed();
                ge::bytes::of_mut(&mut inputs.$input).copy_from_slice(sample);
                let mut outputs = $module::Outputs::zeroed();
                net.run(&inputs, &mut outputs)?;
                Ok($crate::argmax(&outputs.$output[0]))
            })
        }
    };
}
