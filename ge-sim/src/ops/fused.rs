//! The vector unit's interpreter for autofused elementwise chains.
//!
//! The output is walked in inner rows (numpy broadcasting, see [`super::broadcast`]; axes
//! merged so rows are as long as possible) and each row in tiles of [`RUN_TILE`] elements:
//! inputs are loaded into registers (contiguous or broadcast), then every instruction runs
//! over the whole tile — a tight loop per instruction with the op matched outside it, built
//! for AVX2 when the CPU has it. Registers live on the stack (16 × 256 × 4 B = 16 KiB on the
//! host, 4 KiB in firmware: [`RUN_TILE`]); nothing is allocated.

use ge_runtime::format::{
    BinaryOp, BinaryParams, DType, FusedParams, MAX_FUSED_INSTRS, MAX_FUSED_REGS, MAX_RANK, Shape,
    TensorMut, TensorRef, UnaryOp, VInstr, VOP_BINARY,
};

use super::broadcast::{Odometer, broadcast_strides};
use super::cast::{f32_to_i8, f32_to_u8};
use super::unary::apply_unary_in_place;
use super::{KernelError, KernelResult, output};
use crate::arch::isa;

/// Elements per register tile of the device's vector unit (the compiler sizes programs by
/// it: registers × tile within the unified buffer).
pub const TILE: usize = 256;

/// Elements per tile this build's interpreter walks: the device's on the host, 64 in
/// firmware, whose stack holds the register file — 16 registers × 256 f32 = 16 KiB was most
/// of kws_int8's 21.7 KB stack on a Cortex-M4. Programs are elementwise: the same values
/// whatever the tile.
const RUN_TILE: usize = if cfg!(feature = "std") { TILE } else { 64 };

/// True for the unary ops a vector program may use (float in, float out).
pub fn fusable_unary(op: UnaryOp) -> bool {
    !matches!(op, UnaryOp::Not | UnaryOp::IsNaN | UnaryOp::IsInf)
}

/// True for the binary ops a vector program may use.
pub fn fusable_binary(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::Div
            | BinaryOp::Pow
            | BinaryOp::Max
            | BinaryOp::Min
            | BinaryOp::PRelu
    )
}

/// True for a binary op with its fused activation that a vector program can run: float
/// arithmetic (the autofusion candidates, and the binary ops with a half kernel).
pub fn fusable_binary_task(p: &BinaryParams) -> bool {
    BinaryOp::from_u32(p.op).is_some_and(fusable_binary)
        && (p.act.op == 0 || UnaryOp::from_u32(p.act.op).is_some_and(fusable_unary))
}

#[derive(Clone, Copy)]
enum Decoded {
    Unary(UnaryOp),
    Binary(BinaryOp),
}

fn decode(i: &VInstr, regs: usize) -> Result<Decoded, KernelError> {
    if i.dst as usize >= regs || i.a as usize >= regs || i.b as usize >= regs {
        return Err(KernelError::BadParams(
            "vector program register out of range",
        ));
    }
    if i.op >= VOP_BINARY {
        let op = BinaryOp::from_u32(u32::from(i.op - VOP_BINARY)).filter(|&o| fusable_binary(o));
        op.map(Decoded::Binary)
            .ok_or(KernelError::BadParams("vector program binary op"))
    } else {
        let op = UnaryOp::from_u32(u32::from(i.op)).filter(|&o| fusable_unary(o));
        op.map(Decoded::Unary)
            .ok_or(KernelError::BadParams("vector program unary op"))
    }
}

type Reg = [f32; RUN_TILE];

/// `d = f(a, b)` over the first `len` lanes of registers `dst`, `a`, `b`, whichever of them
/// alias (each case its own loop: no copies, and each vectorizes).
#[inline(always)]
fn bin(
    reg: &mut [Reg; MAX_FUSED_REGS],
    (dst, a, b): (usize, usize, usize),
    len: usize,
    f: impl Fn(f32, f32) -> f32,
) {
    if dst == a && dst == b {
        for v in &mut reg[dst][..len] {
            *v = f(*v, *v);
        }
    } else if dst == a || dst == b || a == b {
        let other = if dst == a { b } else { a };
        if let Ok([d, x]) = reg.get_disjoint_mut([dst, other]) {
            let it = d[..len].iter_mut().zip(&x[..len]);
            if dst == a {
                it.for_each(|(d, &x)| *d = f(*d, x));
            } else if dst == b {
                it.for_each(|(d, &x)| *d = f(x, *d));
            } else {
                it.for_each(|(d, &x)| *d = f(x, x));
            }
        }
    } else if let Ok([d, x, y]) = reg.get_disjoint_mut([dst, a, b]) {
        for ((d, &x), &y) in d[..len].iter_mut().zip(&x[..len]).zip(&y[..len]) {
            *d = f(x, y);
        }
    }
}

#[inline(always)]
fn nan_or(a: f32, b: f32, v: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        v
    }
}

#[inline(always)]
fn binary(op: BinaryOp, reg: &mut [Reg; MAX_FUSED_REGS], r: (usize, usize, usize), len: usize) {
    match op {
        BinaryOp::Add => bin(reg, r, len, |a, b| a + b),
        BinaryOp::Sub => bin(reg, r, len, |a, b| a - b),
        BinaryOp::Mul => bin(reg, r, len, |a, b| a * b),
        BinaryOp::Div => bin(reg, r, len, |a, b| a / b),
        BinaryOp::Pow => {
            // A constant small integer exponent (GELU's x³) is a product, not `powf`.
            let e = &reg[r.2][..len];
            let k = e[0];
            let uniform = e.iter().all(|&v| v == k);
            match k {
                1.0 if uniform => bin(reg, r, len, |a, _| a),
                2.0 if uniform => bin(reg, r, len, |a, _| a * a),
                3.0 if uniform => bin(reg, r, len, |a, _| a * a * a),
                _ => bin(reg, r, len, libm::powf),
            }
        }
        BinaryOp::Max => bin(reg, r, len, |a, b| nan_or(a, b, a.max(b))),
        BinaryOp::Min => bin(reg, r, len, |a, b| nan_or(a, b, a.min(b))),
        _ => bin(reg, r, len, |a, b| if a < 0.0 { a * b } else { a }),
    }
}

/// A program's input or output elements: float32, or the 8-bit integers a folded Cast
/// reads or writes.
#[derive(Clone, Copy)]
enum Lanes<F, I, U> {
    F32(F),
    I8(I),
    U8(U),
}

impl<F: AsRef<[f32]>, I: AsRef<[i8]>, U: AsRef<[u8]>> Lanes<F, I, U> {
    /// Elements, whichever the type (shared and mutable slices alike).
    fn len(&self) -> usize {
        match self {
            Lanes::F32(v) => v.as_ref().len(),
            Lanes::I8(v) => v.as_ref().len(),
            Lanes::U8(v) => v.as_ref().len(),
        }
    }
}

/// Fills a register tile from `src` read every `s` values (0: one value broadcast).
#[inline(always)]
fn load<T: Copy>(r: &mut [f32], src: &[T], s: usize, f: impl Fn(T) -> f32) {
    match s {
        0 => r.fill(f(src[0])),
        1 => r.iter_mut().zip(src).for_each(|(d, &v)| *d = f(v)),
        _ => r
            .iter_mut()
            .zip(src.iter().step_by(s))
            .for_each(|(d, &v)| *d = f(v)),
    }
}

/// Writes a register tile converted by `f`.
#[inline(always)]
fn store<T>(dst: &mut [T], res: &[f32], f: impl Fn(f32) -> T) {
    dst.iter_mut().zip(res).for_each(|(d, &v)| *d = f(v));
}

/// Runs a fused vector program.
pub fn run_fused(
    p: &FusedParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    run_program(p, ins, outs, false)
}

/// Runs a fused vector program whose register 0 is the output itself (registers 1.. from
/// `ins`): the epilogue of a task that wrote its result there first (`QConvFused`). Each
/// tile of register 0 is read before the program stores that tile, so one buffer serves.
pub fn run_fused_in_place(
    p: &FusedParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    run_program(p, ins, outs, true)
}

/// [`run_fused`], or [`run_fused_in_place`] when `in_place`.
fn run_program(
    p: &FusedParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    in_place: bool,
) -> KernelResult {
    let n_in = p.input_count as usize;
    let n_instr = p.instr_count as usize;
    let regs = MAX_FUSED_REGS;
    // Registers taken from `ins` start here (register 0 is the output when in place).
    let first = usize::from(in_place);
    if n_in == 0
        || n_in > regs
        || n_in != ins.len() + first
        || n_instr == 0
        || n_instr > MAX_FUSED_INSTRS
        || p.out as usize >= regs
    {
        return Err(KernelError::BadParams("vector program header"));
    }
    let mut program =
        [(Decoded::Unary(UnaryOp::Identity), 0f32, 0f32, (0, 0, 0)); MAX_FUSED_INSTRS];
    for (d, i) in program.iter_mut().zip(&p.instrs[..n_instr]) {
        *d = (
            decode(i, regs)?,
            i.alpha,
            i.beta,
            (i.dst as usize, i.a as usize, i.b as usize),
        );
    }
    let program = &program[..n_instr];
    let y = output(outs, 0, "fused output")?;
    let out_shape: Shape = y.shape;
    let mut yv = match y.dtype {
        DType::F32 => Lanes::F32(y.as_slice_mut::<f32>()?),
        DType::I8 => Lanes::I8(y.as_slice_mut::<i8>()?),
        DType::U8 => Lanes::U8(y.as_slice_mut::<u8>()?),
        _ => {
            return Err(KernelError::UnsupportedDType(
                "fused programs write float32, int8 or uint8",
            ));
        }
    };
    if yv.len() != out_shape.numel() {
        return Err(KernelError::Shape("fused output length"));
    }
    let mut data: [Lanes<&[f32], &[i8], &[u8]>; MAX_FUSED_REGS] = [Lanes::F32(&[]); MAX_FUSED_REGS];
    let mut strides = [[0usize; MAX_RANK]; MAX_FUSED_REGS];
    if in_place {
        strides[0] = broadcast_strides(&out_shape, &out_shape)?;
    }
    for (k, t) in ins.iter().enumerate() {
        let k = k + first;
        let t = t
            .as_ref()
            .ok_or(KernelError::MissingTensor("fused input"))?;
        data[k] = match t.dtype {
            DType::F32 => Lanes::F32(t.as_slice::<f32>()?),
            DType::I8 => Lanes::I8(t.as_slice::<i8>()?),
            DType::U8 => Lanes::U8(t.as_slice::<u8>()?),
            _ => {
                return Err(KernelError::UnsupportedDType(
                    "fused programs read float32, int8 or uint8",
                ));
            }
        };
        if data[k].len() != t.shape.numel() {
            return Err(KernelError::Shape("fused input length"));
        }
        strides[k] = broadcast_strides(&t.shape, &out_shape)?;
    }
    let total = yv.len();
    if total == 0 {
        return Ok(());
    }
    let mut od = Odometer::new(&out_shape, strides);
    // Rows shorter than a tile that per-channel operands repeat (blocked channels: 16 per
    // pixel) are walked two axes at a time, those operands' tiles filled with their row
    // over and over (rows of 16 ran 4× slower than the plain layout's per-plane rows).
    let mut period = 0;
    let mut repeats = [false; MAX_FUSED_REGS];
    if od.inner_len() < RUN_TILE
        && RUN_TILE.is_multiple_of(od.inner_len())
        && data[first..n_in].iter().all(|d| matches!(d, Lanes::F32(_)))
        && let Some((p, r)) = od.merge_repeated_rows()
    {
        (period, repeats) = (p, r);
    }
    let inner = od.inner_len();
    let mut reg = [[0f32; RUN_TILE]; MAX_FUSED_REGS];
    let out = p.out as usize;
    isa::with_simd(
        #[inline(always)]
        || -> Result<(), KernelError> {
            let mut row_start = 0usize;
            loop {
                let base = od.offsets();
                let mut col = 0;
                while col < inner {
                    let len = RUN_TILE.min(inner - col);
                    if in_place {
                        let at = row_start + col;
                        let bad = || KernelError::Shape("fused output index");
                        let r = &mut reg[0][..len];
                        match &yv {
                            Lanes::F32(y) => {
                                load(r, y.get(at..at + len).ok_or_else(bad)?, 1, |v| v)
                            }
                            Lanes::I8(y) => {
                                load(r, y.get(at..at + len).ok_or_else(bad)?, 1, f32::from)
                            }
                            Lanes::U8(y) => {
                                load(r, y.get(at..at + len).ok_or_else(bad)?, 1, f32::from)
                            }
                        }
                    }
                    for k in first..n_in {
                        let r = &mut reg[k][..len];
                        if repeats[k] {
                            // `col` is a multiple of the period (tiles are).
                            let bad = || KernelError::Shape("fused input index");
                            match data[k] {
                                Lanes::F32(d) => {
                                    let row = d.get(base[k]..base[k] + period).ok_or_else(bad)?;
                                    for c in r.chunks_mut(period) {
                                        c.copy_from_slice(&row[..c.len()]);
                                    }
                                }
                                // Only float32 inputs repeat (checked above).
                                _ => return Err(KernelError::BadParams("fused repeated row")),
                            }
                            continue;
                        }
                        let s = od.inner_stride(k);
                        let from = base[k] + col * s;
                        let span = from..from + (len - 1) * s + 1;
                        let bad = || KernelError::Shape("fused input index");
                        match data[k] {
                            Lanes::F32(d) => load(r, d.get(span).ok_or_else(bad)?, s, |v| v),
                            // Integer inputs (a DequantizeLinear's Cast folded in) widen
                            // exactly, as the Cast kernel's `as f32` does.
                            Lanes::I8(d) => load(r, d.get(span).ok_or_else(bad)?, s, f32::from),
                            Lanes::U8(d) => load(r, d.get(span).ok_or_else(bad)?, s, f32::from),
                        }
                    }
                    for &(op, alpha, beta, (dst, a, b)) in program {
                        match op {
                            Decoded::Unary(op) => {
                                if dst != a
                                    && let Ok([d, x]) = reg.get_disjoint_mut([dst, a])
                                {
                                    d[..len].copy_from_slice(&x[..len]);
                                }
                                apply_unary_in_place(op, alpha, beta, &mut reg[dst][..len]);
                            }
                            Decoded::Binary(op) => binary(op, &mut reg, (dst, a, b), len),
                        }
                    }
                    let at = row_start + col;
                    let bad = || KernelError::Shape("fused output index");
                    let res = &reg[out][..len];
                    match &mut yv {
                        Lanes::F32(y) => y
                            .get_mut(at..at + len)
                            .ok_or_else(bad)?
                            .copy_from_slice(res),
                        // A QuantizeLinear's final Cast folded in: the Cast kernel's
                        // conversion (truncating, saturating, NaN to 0).
                        Lanes::I8(y) => {
                            store(y.get_mut(at..at + len).ok_or_else(bad)?, res, f32_to_i8)
                        }
                        Lanes::U8(y) => {
                            store(y.get_mut(at..at + len).ok_or_else(bad)?, res, f32_to_u8)
                        }
                    }
                    col += len;
                }
                row_start += inner;
                if !od.next_row() {
                    return Ok(());
                }
            }
        },
    )?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;

    fn t(shape: &[usize], v: &[f32]) -> (Shape, Vec<u8>) {
        (
            Shape::new(shape).unwrap(),
            v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        )
    }

    /// The program `relu(x · s + b)` over inputs 0, 1, 2 (also the half kernels' test).
    pub(crate) fn scaled_sum_relu() -> FusedParams {
        let mut p: FusedParams = bytemuck::Zeroable::zeroed();
        p.input_count = 3;
        p.instr_count = 3;
        let bin = |op: BinaryOp, dst, a, b| VInstr {
            op: VOP_BINARY + op as u16,
            dst,
            a,
            b,
            ..Default::default()
        };
        p.instrs[0] = bin(BinaryOp::Mul, 3, 0, 1);
        p.instrs[1] = bin(BinaryOp::Add, 3, 3, 2);
        p.instrs[2] = VInstr {
            op: UnaryOp::Relu as u16,
            dst: 4,
            a: 3,
            ..Default::default()
        };
        p.out = 4;
        p
    }

    #[test]
    fn relu_of_scaled_sum_with_broadcast() {
        // y = relu(x * s + b), x [2,3], s [3], b [2,1]
        let (xs, xb) = t(&[2, 3], &[1.0, -2.0, 3.0, -4.0, 5.0, -6.0]);
        let (ss, sb) = t(&[3], &[2.0, 1.0, 0.5]);
        let (bs, bb) = t(&[2, 1], &[1.0, -1.0]);
        let p = scaled_sum_relu();
        let ins = [
            Some(TensorRef {
                dtype: DType::F32,
                shape: xs,
                data: &xb,
            }),
            Some(TensorRef {
                dtype: DType::F32,
                shape: ss,
                data: &sb,
            }),
            Some(TensorRef {
                dtype: DType::F32,
                shape: bs,
                data: &bb,
            }),
        ];
        let mut out = [0u8; 24];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: xs,
            data: &mut out,
        }];
        run_fused(&p, &ins, &mut outs).unwrap();
        let got: Vec<f32> = out
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        // row0: [2,-2,1.5]+1 = [3,-1,2.5] → [3,0,2.5]; row1: [-8,5,-3]-1 = [-9,4,-4] → [0,4,0]
        assert_eq!(got, [3.0, 0.0, 2.5, 0.0, 4.0, 0.0]);
    }

    #[test]
    fn per_channel_operands_of_blocked_channels_repeat_their_rows() {
        // Blocked `[N, C/16, H·W, 16]` against per-channel `[1 or N, C/16, 1, 16]`: rows of
        // 16 walked two axes at a time (40 pixels = 640 values per block: two whole tiles
        // and a part).
        let (n, blocks, px) = (2, 3, 40);
        let x: Vec<f32> = (0..n * blocks * px * 16)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        let sc: Vec<f32> = (0..blocks * 16).map(|i| 0.5 + i as f32 / 16.0).collect();
        let sh: Vec<f32> = (0..n * blocks * 16)
            .map(|i| (i as f32 - 40.0) / 3.0)
            .collect();
        let (xs, xb) = t(&[n, blocks, px, 16], &x);
        let (ss, sb) = t(&[1, blocks, 1, 16], &sc);
        let (bs, bb) = t(&[n, blocks, 1, 16], &sh);
        let tr = |shape, data| {
            Some(TensorRef {
                dtype: DType::F32,
                shape,
                data,
            })
        };
        let ins = [tr(xs, &xb[..]), tr(ss, &sb[..]), tr(bs, &bb[..])];
        let mut out = std::vec![0u8; x.len() * 4];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: xs,
            data: &mut out,
        }];
        run_fused(&scaled_sum_relu(), &ins, &mut outs).unwrap();
        for (i, c) in out.chunks(4).enumerate() {
            let (img, blk, l) = (i / (blocks * px * 16), i / (px * 16) % blocks, i % 16);
            let v = x[i] * sc[blk * 16 + l] + sh[(img * blocks + blk) * 16 + l];
            let want = v.max(0.0);
            assert_eq!(
                f32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                want,
                "element {i}"
            );
        }
    }

    #[test]
    fn rejects_bad_registers() {
        let mut p: FusedParams = bytemuck::Zeroable::zeroed();
        p.input_count = 1;
        p.instr_count = 1;
        p.instrs[0] = VInstr {
            op: UnaryOp::Relu as u16,
            dst: 99,
            a: 0,
            ..Default::default()
        };
        let (xs, xb) = t(&[2], &[1.0, 2.0]);
        let ins = [Some(TensorRef {
            dtype: DType::F32,
            shape: xs,
            data: &xb,
        })];
        let mut out = [0u8; 8];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: xs,
            data: &mut out,
        }];
        assert!(run_fused(&p, &ins, &mut outs).is_err());
    }
}
