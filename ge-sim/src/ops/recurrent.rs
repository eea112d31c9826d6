//! A whole RNN / GRU / LSTM layer as one task (`OpKind::Recurrent`): per direction, the
//! input projection of every time step is ONE GEMM (`X[T·B, in] · Wᵀ → [T·B, gates·H]`,
//! plus the biases that add straight onto it) into the workspace; then each step does only
//! the recurrent product `H[B, H] · Rᵀ` (a gemv for one batch entry) and the gate math on
//! the step's rows, the state kept in the workspace. The arithmetic is the unrolled
//! lowering's (`ge-build/src/onnx/ops/recurrent.rs`), op for op and in the same order: the
//! same GEMM paths ([`sgemm`]: a gemv for one row, the packed kernel for more), the same
//! activation functions ([`apply_unary_in_place`]), adds and products in the same operand
//! order; so results match the unrolled graph to fp32 rounding (bitwise where its MatMul
//! took the same path).
//!
//! Weights are read in either layout: ONNX's `[dirs, gates·H, in]` / `[dirs, gates·H, H]`
//! (runtime weights), or transposed at compile time to `[dirs, in, gates·H]` / `[dirs, H,
//! gates·H]` (`RecurrentParams::weights`), the layout whose rows the step's gemv streams.
//!
//! `sequence_lens` masks steps at or past a batch entry's length: its state is held and its
//! Y row zeroed (reverse directions thus start at the entry's last step). The input GEMM
//! splits between host threads by output tiles; the steps run on the calling thread. Either
//! way every value is computed by the same instructions whatever the thread count.

use ge_runtime::format::{
    DType, RECURRENT_BIDIRECTIONAL, RECURRENT_R_TRANSPOSED, RECURRENT_REVERSE,
    RECURRENT_W_TRANSPOSED, RecurrentAct, RecurrentActivation, RecurrentCell, RecurrentParams,
    Shape, TensorMut, TensorRef, UnaryOp,
};

use super::gemm::{sgemm, sgemm_on, sgemm_ws_len, ws_f32};
use super::unary::apply_unary_in_place;
use super::{KernelError, KernelResult, input};
use crate::arch::isa;
use crate::threads::Parallel;

/// Sizes of one layer.
#[derive(Clone, Copy, Debug)]
struct Dims {
    cell: RecurrentCell,
    /// Sequence length, batch, input size, hidden size.
    t: usize,
    b: usize,
    i: usize,
    h: usize,
    /// Gates (1, 3, 4) and directions (1, 2).
    g: usize,
    dirs: usize,
}

impl Dims {
    fn of(p: &RecurrentParams, x: Option<Shape>) -> Result<Dims, KernelError> {
        let cell = RecurrentCell::from_u32(p.cell).ok_or(KernelError::BadParams("cell"))?;
        let x = x.ok_or(KernelError::MissingTensor("X"))?;
        if x.rank() != 3 {
            return Err(KernelError::Shape("recurrent X must be 3-D"));
        }
        let (t, b) = if p.layout != 0 {
            (x.dim(1), x.dim(0))
        } else {
            (x.dim(0), x.dim(1))
        };
        let g: usize = match cell {
            RecurrentCell::Rnn => 1,
            RecurrentCell::Gru => 3,
            RecurrentCell::Lstm => 4,
        };
        let dirs = if p.direction == RECURRENT_BIDIRECTIONAL {
            2
        } else {
            1
        };
        let h = p.hidden as usize;
        // Bound every product the kernel forms (a crafted blob cannot overflow an index).
        let gh = g.checked_mul(h).ok_or(KernelError::Shape("hidden size"))?;
        [t, b, x.dim(2), gh, dirs]
            .iter()
            .try_fold(1usize, |a, &v| a.checked_mul(v.max(1)))
            .and_then(|n| n.checked_mul(64))
            .ok_or(KernelError::Shape("recurrent sizes overflow"))?;
        Ok(Dims {
            cell,
            t,
            b,
            i: x.dim(2),
            h,
            g,
            dirs,
        })
    }

    fn gh(&self) -> usize {
        self.g * self.h
    }

    /// Row of X (and of the projected gates) holding step `t` of batch entry `b`.
    fn x_row(&self, layout: bool, t: usize, b: usize) -> usize {
        if layout {
            b * self.t + t
        } else {
            t * self.b + b
        }
    }

    /// Offset (in H-rows) of direction `d`, entry `b` in Y_h / Y_c / initial states.
    fn state_row(&self, layout: bool, d: usize, b: usize) -> usize {
        if layout {
            b * self.dirs + d
        } else {
            d * self.b + b
        }
    }

    /// Offset (in H-rows) of step `t`, direction `d`, entry `b` in Y.
    fn y_row(&self, layout: bool, t: usize, d: usize, b: usize) -> usize {
        if layout {
            (b * self.t + t) * self.dirs + d
        } else {
            (t * self.dirs + d) * self.b + b
        }
    }
}

/// Workspace regions, in f32 elements, each starting 64-byte aligned. The projected gates
/// of every step, `[T·B, gates·H]`, come first.
#[derive(Clone, Copy, Debug)]
struct Layout {
    /// The step's recurrent products and gates, `[B, gates·H]`.
    rec: usize,
    /// `[B, H]`: GRU's `r ⊙ H`, LSTM's new cell state.
    tmp: usize,
    /// The hidden state `[B, H]` and LSTM's cell state.
    hs: usize,
    cs: usize,
    /// The input bias `[gates·H]` (W and R biases summed) and GRU's `Rbh` `[H]`.
    bias: usize,
    /// GEMM packing space.
    gemm: usize,
    gemm_len: usize,
    total: usize,
}

fn layout(d: &Dims) -> Layout {
    let up = |n: usize| n.next_multiple_of(16);
    let (gh, bh) = (d.gh(), d.b * d.h);
    let rec = up(d.t * d.b * gh);
    let tmp = rec + up(d.b * gh);
    let hs = tmp + up(bh);
    let cs = hs + up(bh);
    let bias = cs + up(bh);
    let gemm = bias + up(gh + d.h);
    let gemm_len = sgemm_ws_len(d.t * d.b, gh, d.i).max(sgemm_ws_len(d.b, gh, d.h));
    Layout {
        rec,
        tmp,
        hs,
        cs,
        bias,
        gemm,
        gemm_len,
        total: gemm + gemm_len,
    }
}

/// Scratch bytes of a layer: the projected gates of one direction's steps, the step's
/// products and states, and GEMM packing space; 0 for a malformed record.
pub fn recurrent_workspace_bytes(params: &[u8], ins: &[Option<Shape>], _: &[Shape]) -> usize {
    let Ok(p) = super::read_params::<RecurrentParams>(params) else {
        return 0;
    };
    match Dims::of(&p, ins.first().copied().flatten()) {
        Ok(d) => layout(&d).total.saturating_mul(4),
        Err(_) => 0,
    }
}

/// The f32 data of optional input `k`, which must hold exactly `len` values.
fn opt_f32<'a>(
    ins: &[Option<TensorRef<'a>>],
    k: usize,
    len: usize,
    what: &'static str,
) -> Result<Option<&'a [f32]>, KernelError> {
    match ins.get(k).and_then(Option::as_ref) {
        None => Ok(None),
        Some(t) => {
            let v = t.as_slice::<f32>()?;
            if v.len() != len {
                return Err(KernelError::Shape(what));
            }
            Ok(Some(v))
        }
    }
}

/// Applies a cell activation in place.
fn activate(a: &RecurrentActivation, v: &mut [f32]) -> KernelResult {
    let f = RecurrentAct::from_u32(a.func).ok_or(KernelError::BadParams("activation"))?;
    let (al, be) = (a.alpha, a.beta);
    let op = match f {
        RecurrentAct::Sigmoid => UnaryOp::Sigmoid,
        RecurrentAct::Tanh => UnaryOp::Tanh,
        RecurrentAct::Relu => UnaryOp::Relu,
        RecurrentAct::LeakyRelu => UnaryOp::LeakyRelu,
        RecurrentAct::ThresholdedRelu => UnaryOp::ThresholdedRelu,
        RecurrentAct::Elu => UnaryOp::Elu,
        RecurrentAct::HardSigmoid => UnaryOp::HardSigmoid,
        RecurrentAct::Softsign => UnaryOp::Softsign,
        RecurrentAct::Softplus => UnaryOp::Softplus,
        // As the unrolled graph: Mul then Add.
        RecurrentAct::Affine => {
            isa::with_simd(
                #[inline(always)]
                || v.iter_mut().for_each(|x| *x = *x * al + be),
            );
            return Ok(());
        }
        // Mul, Tanh, Mul.
        RecurrentAct::ScaledTanh => {
            isa::with_simd(
                #[inline(always)]
                || v.iter_mut().for_each(|x| *x *= be),
            );
            apply_unary_in_place(UnaryOp::Tanh, 0.0, 0.0, v);
            isa::with_simd(
                #[inline(always)]
                || v.iter_mut().for_each(|x| *x *= al),
            );
            return Ok(());
        }
    };
    apply_unary_in_place(op, al, be, v);
    Ok(())
}

/// `v = min(max(v, -c), c)` (Max then Min, as the unrolled graph) when clipping.
fn clip(p: &RecurrentParams, v: &mut [f32]) {
    if p.has_clip == 0 {
        return;
    }
    let (lo, hi) = (-p.clip, p.clip);
    isa::with_simd(
        #[inline(always)]
        || {
            for x in v.iter_mut() {
                let y = if *x < lo { lo } else { *x };
                *x = if y > hi { hi } else { y };
            }
        },
    )
}

/// `dst[j] = a[j] + dst[j]` (the unrolled graph's `Add(a, dst)`: addition commutes exactly).
fn add_into(a: &[f32], dst: &mut [f32]) {
    isa::with_simd(
        #[inline(always)]
        || {
            for (d, &x) in dst.iter_mut().zip(a) {
                *d += x;
            }
        },
    )
}

/// `dst[j] = dst[j] + p[j] · c[j]` (a peephole).
fn peephole(dst: &mut [f32], p: &[f32], c: &[f32]) {
    isa::with_simd(
        #[inline(always)]
        || {
            for ((d, &pv), &cv) in dst.iter_mut().zip(p).zip(c) {
                *d += pv * cv;
            }
        },
    )
}

/// `sequence_lens`, when given.
#[derive(Clone, Copy)]
enum Lens<'a> {
    All,
    I64(&'a [i64]),
    I32(&'a [i32]),
}

/// The weights of one direction as GEMM operands: W, R, and whether each is op(B)
/// transposed (ONNX layout) with its leading dimension.
struct DirWeights<'a> {
    w: &'a [f32],
    w_trans: bool,
    w_ld: usize,
    r: &'a [f32],
    r_trans: bool,
    r_ld: usize,
}

impl<'a> DirWeights<'a> {
    /// R restricted to gate columns `g0..` (for op(B) `[H, n]` starting at column g0·H).
    fn r_from(&self, col: usize) -> &'a [f32] {
        let off = if self.r_trans { col * self.r_ld } else { col };
        self.r.get(off..).unwrap_or(&[])
    }
}

/// Runs a recurrent layer. Inputs: X, W, R, B?, sequence_lens?, initial_h?, initial_c?, P?;
/// outputs Y, Y_h (, Y_c for LSTM).
pub fn run_recurrent(
    p: &RecurrentParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    let x = input(ins, 0, "X")?;
    let d = Dims::of(p, Some(x.shape))?;
    let lay = p.layout != 0;
    let (t_len, bsz, isz, h, gh, dirs) = (d.t, d.b, d.i, d.h, d.gh(), d.dirs);
    let lstm = d.cell == RecurrentCell::Lstm;
    let gru = d.cell == RecurrentCell::Gru;
    let lbr = p.linear_before_reset != 0;
    let xv = x.as_slice::<f32>()?;
    if xv.len() != t_len * bsz * isz {
        return Err(KernelError::Shape("recurrent X length"));
    }
    let w = input(ins, 1, "W")?.as_slice::<f32>()?;
    let r = input(ins, 2, "R")?.as_slice::<f32>()?;
    if w.len() != dirs * gh * isz || r.len() != dirs * gh * h {
        return Err(KernelError::Shape("recurrent W / R sizes"));
    }
    let bias = opt_f32(ins, 3, dirs * 2 * gh, "recurrent B size")?;
    // Per batch entry, its length (clamped to [0, T], as the unrolled masks `t < len`).
    let lens = match ins.get(4).and_then(Option::as_ref) {
        None => Lens::All,
        Some(s) if s.shape.numel() != bsz => {
            return Err(KernelError::Shape("sequence_lens size"));
        }
        Some(s) if s.dtype == DType::I64 => Lens::I64(s.as_slice::<i64>()?),
        Some(s) => Lens::I32(s.as_slice::<i32>()?),
    };
    let len_of = |b: usize| -> usize {
        let l = match lens {
            Lens::All => None,
            Lens::I64(v) => v.get(b).copied(),
            Lens::I32(v) => v.get(b).map(|&l| i64::from(l)),
        };
        l.map_or(t_len, |l| l.clamp(0, t_len as i64) as usize)
    };
    let init_h = opt_f32(ins, 5, dirs * bsz * h, "recurrent initial_h size")?;
    let init_c = if lstm {
        opt_f32(ins, 6, dirs * bsz * h, "recurrent initial_c size")?
    } else {
        None
    };
    let peep = if lstm {
        opt_f32(ins, 7, dirs * 3 * h, "recurrent P size")?
    } else {
        None
    };
    let want_outs = if lstm { 3 } else { 2 };
    if outs.len() != want_outs {
        return Err(KernelError::MissingTensor("recurrent outputs"));
    }
    let (y_out, rest) = outs.split_at_mut(1);
    let y = y_out[0].as_slice_mut::<f32>()?;
    if y.len() != t_len * dirs * bsz * h {
        return Err(KernelError::Shape("recurrent Y size"));
    }
    let (yh_out, yc_out) = rest.split_at_mut(1);
    let yh = yh_out[0].as_slice_mut::<f32>()?;
    let mut yc = match yc_out.first_mut() {
        Some(o) => Some(o.as_slice_mut::<f32>()?),
        None => None,
    };
    if yh.len() != dirs * bsz * h || yc.as_ref().is_some_and(|c| c.len() != dirs * bsz * h) {
        return Err(KernelError::Shape("recurrent Y_h / Y_c size"));
    }
    let acts = |dir: usize, k: usize| p.acts.get(dir * 3 + k).copied().unwrap_or_default();

    let l = layout(&d);
    let ws = ws_f32(ws, l.total)?;
    let (gx, rest) = ws.split_at_mut(l.rec);
    let (rec, rest) = rest.split_at_mut(l.tmp - l.rec);
    let (tmp, rest) = rest.split_at_mut(l.hs - l.tmp);
    let (hs, rest) = rest.split_at_mut(l.cs - l.hs);
    let (cs, rest) = rest.split_at_mut(l.bias - l.cs);
    let (bias_x, gemm_ws) = rest.split_at_mut(l.gemm - l.bias);
    let gemm_ws = &mut gemm_ws[..l.gemm_len];
    let (gx, rec) = (&mut gx[..t_len * bsz * gh], &mut rec[..bsz * gh]);
    let (tmp, hs, cs) = (&mut tmp[..bsz * h], &mut hs[..bsz * h], &mut cs[..bsz * h]);
    let (bias_x, rbh) = bias_x[..gh + h].split_at_mut(gh);

    for dir in 0..dirs {
        let reverse = p.direction == RECURRENT_REVERSE || dir == 1;
        let wt = p.weights & RECURRENT_W_TRANSPOSED != 0;
        let rt = p.weights & RECURRENT_R_TRANSPOSED != 0;
        let dw = DirWeights {
            w: &w[dir * gh * isz..(dir + 1) * gh * isz],
            w_trans: !wt,
            w_ld: if wt { gh } else { isz },
            r: &r[dir * gh * h..(dir + 1) * gh * h],
            r_trans: !rt,
            r_ld: if rt { gh } else { h },
        };
        // Input projection of every step: one GEMM, then the biases.
        sgemm_on(
            t_len * bsz,
            gh,
            isz,
            1.0,
            xv,
            isz,
            false,
            dw.w,
            dw.w_ld,
            dw.w_trans,
            false,
            gx,
            gh,
            gemm_ws,
            par,
        )?;
        let has_bias = bias.is_some();
        if let Some(bv) = bias {
            let bd = &bv[dir * 2 * gh..(dir + 1) * 2 * gh];
            let (wb, rb) = bd.split_at(gh);
            // W's and R's biases summed first (as the unrolled graph); GRU's recurrent h
            // bias applies after the recurrent product instead.
            let direct = if gru { 2 * h } else { gh };
            for j in 0..gh {
                bias_x[j] = if j < direct {
                    wb[j] + rb[j]
                } else {
                    wb[j] + 0.0
                };
            }
            if gru {
                rbh.copy_from_slice(&rb[2 * h..3 * h]);
            }
            let bx: &[f32] = bias_x;
            isa::with_simd(
                #[inline(always)]
                || {
                    for row in gx.chunks_exact_mut(gh) {
                        for (v, &bj) in row.iter_mut().zip(bx) {
                            *v += bj;
                        }
                    }
                },
            );
        }
        // Initial states.
        for b in 0..bsz {
            let s = d.state_row(lay, dir, b) * h;
            let dst = &mut hs[b * h..(b + 1) * h];
            match init_h {
                Some(v) => dst.copy_from_slice(&v[s..s + h]),
                None => dst.fill(0.0),
            }
            if lstm {
                let dst = &mut cs[b * h..(b + 1) * h];
                match init_c {
                    Some(v) => dst.copy_from_slice(&v[s..s + h]),
                    None => dst.fill(0.0),
                }
            }
        }
        let pd = peep.map(|pv| &pv[dir * 3 * h..(dir + 1) * 3 * h]);
        let (f_act, g_act, h_act) = (acts(dir, 0), acts(dir, 1), acts(dir, 2));
        for step in 0..t_len {
            let t = if reverse { t_len - 1 - step } else { step };
            // The recurrent product (GRU without linear_before_reset: z and r only).
            let n = if gru && !lbr { 2 * h } else { gh };
            sgemm(
                bsz, n, h, 1.0, hs, h, false, dw.r, dw.r_ld, dw.r_trans, false, rec, gh, gemm_ws,
            )?;
            match d.cell {
                RecurrentCell::Rnn => {
                    for b in 0..bsz {
                        let row = d.x_row(lay, t, b) * gh;
                        let rr = &mut rec[b * gh..(b + 1) * gh];
                        add_into(&gx[row..row + gh], rr);
                        clip(p, rr);
                        activate(&f_act, rr)?;
                    }
                }
                RecurrentCell::Gru => {
                    for b in 0..bsz {
                        let row = d.x_row(lay, t, b) * gh;
                        let rr = &mut rec[b * gh..(b + 1) * gh];
                        add_into(&gx[row..row + 2 * h], &mut rr[..2 * h]);
                        let (z, rest) = rr.split_at_mut(h);
                        let (rg, m) = rest.split_at_mut(h);
                        clip(p, z);
                        activate(&f_act, z)?;
                        clip(p, rg);
                        activate(&f_act, rg)?;
                        let hb = &hs[b * h..(b + 1) * h];
                        if lbr {
                            // r ⊙ (H·Rhᵀ + Rbh)
                            let rbh: &[f32] = rbh;
                            isa::with_simd(
                                #[inline(always)]
                                || {
                                    for j in 0..m.len() {
                                        let mj = if has_bias { m[j] + rbh[j] } else { m[j] };
                                        m[j] = rg[j] * mj;
                                    }
                                },
                            );
                        } else {
                            let tb = &mut tmp[b * h..(b + 1) * h];
                            isa::with_simd(
                                #[inline(always)]
                                || {
                                    for ((o, &a), &hv) in tb.iter_mut().zip(&*rg).zip(hb) {
                                        *o = a * hv;
                                    }
                                },
                            );
                        }
                    }
                    if !lbr {
                        // (r ⊙ H)·Rhᵀ (+ Rbh) into the h-gate columns.
                        let rh = dw.r_from(2 * h);
                        sgemm(
                            bsz,
                            h,
                            h,
                            1.0,
                            tmp,
                            h,
                            false,
                            rh,
                            dw.r_ld,
                            dw.r_trans,
                            false,
                            &mut rec[2 * h..],
                            gh,
                            gemm_ws,
                        )?;
                        if has_bias {
                            for b in 0..bsz {
                                add_into(rbh, &mut rec[b * gh + 2 * h..(b + 1) * gh]);
                            }
                        }
                    }
                    for b in 0..bsz {
                        let row = d.x_row(lay, t, b) * gh;
                        let rr = &mut rec[b * gh..(b + 1) * gh];
                        let (z, rest) = rr.split_at_mut(2 * h);
                        let (z, hh) = (&z[..h], rest);
                        // xh + term, clip, g.
                        add_into(&gx[row + 2 * h..row + gh], hh);
                        clip(p, hh);
                        activate(&g_act, hh)?;
                        // (1 − z) ⊙ hh + z ⊙ H, into hh.
                        let hb = &hs[b * h..(b + 1) * h];
                        isa::with_simd(
                            #[inline(always)]
                            || {
                                for ((o, &zj), &hv) in hh.iter_mut().zip(z).zip(hb) {
                                    *o = (1.0 - zj) * *o + zj * hv;
                                }
                            },
                        );
                    }
                }
                RecurrentCell::Lstm => {
                    for b in 0..bsz {
                        let row = d.x_row(lay, t, b) * gh;
                        let rr = &mut rec[b * gh..(b + 1) * gh];
                        add_into(&gx[row..row + gh], rr);
                        let (ig, rest) = rr.split_at_mut(h);
                        let (og, rest) = rest.split_at_mut(h);
                        let (fg, cg) = rest.split_at_mut(h);
                        let cp = &cs[b * h..(b + 1) * h];
                        if let Some(pv) = pd {
                            peephole(ig, &pv[..h], cp);
                        }
                        clip(p, ig);
                        activate(&f_act, ig)?;
                        if p.input_forget != 0 {
                            isa::with_simd(
                                #[inline(always)]
                                || {
                                    for (f, &i) in fg.iter_mut().zip(&*ig) {
                                        *f = 1.0 - i;
                                    }
                                },
                            );
                        } else {
                            if let Some(pv) = pd {
                                peephole(fg, &pv[2 * h..3 * h], cp);
                            }
                            clip(p, fg);
                            activate(&f_act, fg)?;
                        }
                        clip(p, cg);
                        activate(&g_act, cg)?;
                        // c = f ⊙ c_prev + i ⊙ g(c̃), into tmp.
                        let cn = &mut tmp[b * h..(b + 1) * h];
                        isa::with_simd(
                            #[inline(always)]
                            || {
                                for j in 0..cn.len() {
                                    cn[j] = fg[j] * cp[j] + ig[j] * cg[j];
                                }
                            },
                        );
                        if let Some(pv) = pd {
                            peephole(og, &pv[h..2 * h], cn);
                        }
                        clip(p, og);
                        activate(&f_act, og)?;
                        // H = o ⊙ h(c), into the c̃ gate's columns.
                        cg.copy_from_slice(cn);
                        activate(&h_act, cg)?;
                        isa::with_simd(
                            #[inline(always)]
                            || {
                                for (c, &o) in cg.iter_mut().zip(&*og) {
                                    *c *= o;
                                }
                            },
                        );
                    }
                }
            }
            // The new states (held past a batch entry's length) and Y.
            let new_col = gh - h;
            for b in 0..bsz {
                let yr = d.y_row(lay, t, dir, b) * h;
                let yt = &mut y[yr..yr + h];
                if t >= len_of(b) {
                    yt.fill(0.0);
                    continue;
                }
                let hn = &rec[b * gh + new_col..(b + 1) * gh];
                yt.copy_from_slice(hn);
                hs[b * h..(b + 1) * h].copy_from_slice(hn);
                if lstm {
                    cs[b * h..(b + 1) * h].copy_from_slice(&tmp[b * h..(b + 1) * h]);
                }
            }
        }
        for b in 0..bsz {
            let s = d.state_row(lay, dir, b) * h;
            yh[s..s + h].copy_from_slice(&hs[b * h..(b + 1) * h]);
            if let Some(c) = yc.as_deref_mut() {
                c[s..s + h].copy_from_slice(&cs[b * h..(b + 1) * h]);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::String;
    use std::vec;
    use std::vec::Vec;

    use ge_runtime::format::RECURRENT_FORWARD;

    use super::super::test_util::{Slots, t, tm};
    use super::*;
    use crate::arch::isa::{Isa, isa};
    use crate::threads::Serial;

    fn lcg(seed: &mut u32) -> f32 {
        *seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        (*seed >> 9) as f32 / (1u32 << 23) as f32 - 0.5
    }

    /// One layer configuration.
    #[derive(Clone)]
    struct Case {
        cell: RecurrentCell,
        t: usize,
        b: usize,
        i: usize,
        h: usize,
        direction: u32,
        layout: bool,
        lbr: bool,
        input_forget: bool,
        clip: Option<f32>,
        bias: bool,
        peep: bool,
        init: bool,
        lens: Option<Vec<i32>>,
        /// Weights handed transposed (as the compiler stores constant ones).
        transposed: bool,
        acts: [RecurrentActivation; 6],
    }

    fn act(func: RecurrentAct, alpha: f32, beta: f32) -> RecurrentActivation {
        RecurrentActivation {
            func: func as u32,
            alpha,
            beta,
        }
    }

    fn default_acts(cell: RecurrentCell) -> [RecurrentActivation; 6] {
        let (s, th) = (
            act(RecurrentAct::Sigmoid, 0.0, 0.0),
            act(RecurrentAct::Tanh, 0.0, 0.0),
        );
        let one = match cell {
            RecurrentCell::Rnn => [th, th, th],
            RecurrentCell::Gru => [s, th, th],
            RecurrentCell::Lstm => [s, th, th],
        };
        [one[0], one[1], one[2], one[0], one[1], one[2]]
    }

    /// The activation, written out from its definition with libm.
    fn reference_act(a: &RecurrentActivation, x: f32) -> f32 {
        let (al, be) = (a.alpha, a.beta);
        match RecurrentAct::from_u32(a.func).unwrap() {
            RecurrentAct::Sigmoid => 1.0 / (1.0 + libm::expf(-x)),
            RecurrentAct::Tanh => libm::tanhf(x),
            RecurrentAct::Relu => x.max(0.0),
            RecurrentAct::LeakyRelu => {
                if x < 0.0 {
                    al * x
                } else {
                    x
                }
            }
            RecurrentAct::ThresholdedRelu => {
                if x > al {
                    x
                } else {
                    0.0
                }
            }
            RecurrentAct::Elu => {
                if x < 0.0 {
                    al * (libm::expf(x) - 1.0)
                } else {
                    x
                }
            }
            RecurrentAct::HardSigmoid => (al * x + be).clamp(0.0, 1.0),
            RecurrentAct::Softsign => x / (1.0 + x.abs()),
            RecurrentAct::Softplus => libm::logf(1.0 + libm::expf(x)),
            RecurrentAct::Affine => al * x + be,
            RecurrentAct::ScaledTanh => al * libm::tanhf(be * x),
        }
    }

    struct Data {
        x: Vec<f32>,
        w: Vec<f32>,
        r: Vec<f32>,
        bias: Vec<f32>,
        init_h: Vec<f32>,
        init_c: Vec<f32>,
        peep: Vec<f32>,
    }

    fn gates(c: &Case) -> usize {
        match c.cell {
            RecurrentCell::Rnn => 1,
            RecurrentCell::Gru => 3,
            RecurrentCell::Lstm => 4,
        }
    }

    fn dirs(c: &Case) -> usize {
        if c.direction == RECURRENT_BIDIRECTIONAL {
            2
        } else {
            1
        }
    }

    fn data(c: &Case, seed: u32) -> Data {
        let mut s = seed;
        let (g, d) = (gates(c), dirs(c));
        let mut v =
            |n: usize, scale: f32| -> Vec<f32> { (0..n).map(|_| lcg(&mut s) * scale).collect() };
        Data {
            x: v(c.t * c.b * c.i, 2.0),
            w: v(d * g * c.h * c.i, 1.0),
            r: v(d * g * c.h * c.h, 1.0),
            bias: v(d * 2 * g * c.h, 1.0),
            init_h: v(d * c.b * c.h, 1.0),
            init_c: v(d * c.b * c.h, 1.0),
            peep: v(d * 3 * c.h, 1.0),
        }
    }

    /// A direct reading of the ONNX definitions: per step and batch entry, every gate
    /// unit's dot products, in f64.
    fn reference(c: &Case, dt: &Data) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let (g, nd, h, i_sz) = (gates(c), dirs(c), c.h, c.i);
        let mut y = vec![0.0f32; c.t * nd * c.b * h];
        let mut yh = vec![0.0f32; nd * c.b * h];
        let mut yc = vec![0.0f32; nd * c.b * h];
        let clip = |v: f32| match c.clip {
            Some(k) => v.clamp(-k, k),
            None => v,
        };
        let dot = |a: &[f32], b: &[f32]| -> f32 {
            a.iter()
                .zip(b)
                .map(|(&x, &y)| x as f64 * y as f64)
                .sum::<f64>() as f32
        };
        for d in 0..nd {
            let reverse = c.direction == RECURRENT_REVERSE || d == 1;
            let acts = &c.acts[d * 3..d * 3 + 3];
            let w = |j: usize| &dt.w[(d * g * h + j) * i_sz..(d * g * h + j + 1) * i_sz];
            let r = |j: usize| &dt.r[(d * g * h + j) * h..(d * g * h + j + 1) * h];
            let wb = |j: usize| {
                if c.bias {
                    dt.bias[d * 2 * g * h + j]
                } else {
                    0.0
                }
            };
            let rb = |j: usize| {
                if c.bias {
                    dt.bias[d * 2 * g * h + g * h + j]
                } else {
                    0.0
                }
            };
            for b in 0..c.b {
                let srow = if c.layout { b * nd + d } else { d * c.b + b };
                let mut hs: Vec<f32> = if c.init {
                    dt.init_h[srow * h..(srow + 1) * h].to_vec()
                } else {
                    vec![0.0; h]
                };
                let mut cs: Vec<f32> = if c.init {
                    dt.init_c[srow * h..(srow + 1) * h].to_vec()
                } else {
                    vec![0.0; h]
                };
                let len = c.lens.as_ref().map_or(c.t, |l| l[b] as usize);
                for step in 0..c.t {
                    let t = if reverse { c.t - 1 - step } else { step };
                    if t >= len {
                        continue;
                    }
                    let xrow = if c.layout { b * c.t + t } else { t * c.b + b };
                    let x = &dt.x[xrow * i_sz..(xrow + 1) * i_sz];
                    let pre = |j: usize, hv: &[f32]| dot(x, w(j)) + wb(j) + dot(hv, r(j)) + rb(j);
                    let p = |k: usize, j: usize| {
                        if c.peep {
                            dt.peep[d * 3 * h + k * h + j]
                        } else {
                            0.0
                        }
                    };
                    let (hn, cn): (Vec<f32>, Vec<f32>) = match c.cell {
                        RecurrentCell::Rnn => (
                            (0..h)
                                .map(|j| reference_act(&acts[0], clip(pre(j, &hs))))
                                .collect(),
                            cs.clone(),
                        ),
                        RecurrentCell::Gru => {
                            let z: Vec<f32> = (0..h)
                                .map(|j| reference_act(&acts[0], clip(pre(j, &hs))))
                                .collect();
                            let rg: Vec<f32> = (0..h)
                                .map(|j| reference_act(&acts[0], clip(pre(h + j, &hs))))
                                .collect();
                            let rh: Vec<f32> = rg.iter().zip(&hs).map(|(a, b)| a * b).collect();
                            let hh: Vec<f32> = (0..h)
                                .map(|j| {
                                    let k = 2 * h + j;
                                    let xpart = dot(x, w(k)) + wb(k);
                                    let rpart = if c.lbr {
                                        rg[j] * (dot(&hs, r(k)) + rb(k))
                                    } else {
                                        dot(&rh, r(k)) + rb(k)
                                    };
                                    reference_act(&acts[1], clip(xpart + rpart))
                                })
                                .collect();
                            (
                                (0..h)
                                    .map(|j| (1.0 - z[j]) * hh[j] + z[j] * hs[j])
                                    .collect(),
                                cs.clone(),
                            )
                        }
                        RecurrentCell::Lstm => {
                            let ig: Vec<f32> = (0..h)
                                .map(|j| {
                                    reference_act(&acts[0], clip(pre(j, &hs) + p(0, j) * cs[j]))
                                })
                                .collect();
                            let fg: Vec<f32> = (0..h)
                                .map(|j| {
                                    if c.input_forget {
                                        1.0 - ig[j]
                                    } else {
                                        reference_act(
                                            &acts[0],
                                            clip(pre(2 * h + j, &hs) + p(2, j) * cs[j]),
                                        )
                                    }
                                })
                                .collect();
                            let cc: Vec<f32> = (0..h)
                                .map(|j| reference_act(&acts[1], clip(pre(3 * h + j, &hs))))
                                .collect();
                            let cn: Vec<f32> =
                                (0..h).map(|j| fg[j] * cs[j] + ig[j] * cc[j]).collect();
                            let hn = (0..h)
                                .map(|j| {
                                    let o = reference_act(
                                        &acts[0],
                                        clip(pre(h + j, &hs) + p(1, j) * cn[j]),
                                    );
                                    o * reference_act(&acts[2], cn[j])
                                })
                                .collect();
                            (hn, cn)
                        }
                    };
                    let yrow = if c.layout {
                        (b * c.t + t) * nd + d
                    } else {
                        (t * nd + d) * c.b + b
                    };
                    y[yrow * h..(yrow + 1) * h].copy_from_slice(&hn);
                    hs = hn;
                    cs = cn;
                }
                yh[srow * h..(srow + 1) * h].copy_from_slice(&hs);
                yc[srow * h..(srow + 1) * h].copy_from_slice(&cs);
            }
        }
        (y, yh, yc)
    }

    /// `[d, r, c]` → `[d, c, r]`.
    fn transpose(v: &[f32], d: usize, r: usize, c: usize) -> Vec<f32> {
        let mut o = vec![0.0; v.len()];
        for k in 0..d {
            for i in 0..r {
                for j in 0..c {
                    o[k * r * c + j * r + i] = v[k * r * c + i * c + j];
                }
            }
        }
        o
    }

    fn params(c: &Case) -> RecurrentParams {
        RecurrentParams {
            cell: c.cell as u32,
            hidden: c.h as u32,
            direction: c.direction,
            layout: c.layout as u32,
            linear_before_reset: c.lbr as u32,
            input_forget: c.input_forget as u32,
            weights: if c.transposed {
                RECURRENT_W_TRANSPOSED | RECURRENT_R_TRANSPOSED
            } else {
                0
            },
            has_clip: c.clip.is_some() as u32,
            clip: c.clip.unwrap_or(0.0),
            reserved: 0,
            acts: c.acts,
        }
    }

    /// The kernel's outputs (Y, Y_h, Y_c) with `par`'s slots.
    fn run(c: &Case, dt: &Data, par: &dyn Parallel) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let (g, nd, h) = (gates(c), dirs(c), c.h);
        let p = params(c);
        let (w, r) = if c.transposed {
            (
                transpose(&dt.w, nd, g * h, c.i),
                transpose(&dt.r, nd, g * h, h),
            )
        } else {
            (dt.w.clone(), dt.r.clone())
        };
        let xs = if c.layout {
            [c.b, c.t, c.i]
        } else {
            [c.t, c.b, c.i]
        };
        let state = if c.layout { [c.b, nd, h] } else { [nd, c.b, h] };
        let lens = c.lens.clone().unwrap_or_default();
        let ins = [
            Some(t(&xs, &dt.x)),
            Some(t(&[nd, g * h, c.i], &w)),
            Some(t(&[nd, g * h, h], &r)),
            c.bias.then(|| t(&[nd, 2 * g * h], &dt.bias)),
            c.lens.as_ref().map(|_| t(&[c.b], &lens)),
            c.init.then(|| t(&state, &dt.init_h)),
            c.init.then(|| t(&state, &dt.init_c)),
            c.peep.then(|| t(&[nd, 3 * h], &dt.peep)),
        ];
        let n = if c.cell == RecurrentCell::Lstm { 8 } else { 6 };
        let ins = &ins[..n];
        let shapes: Vec<Option<Shape>> = ins.iter().map(|i| i.as_ref().map(|i| i.shape)).collect();
        let ws_len = recurrent_workspace_bytes(bytemuck::bytes_of(&p), &shapes, &[]);
        let mut ws = vec![0u64; ws_len.div_ceil(8)];
        let mut y = vec![f32::NAN; c.t * nd * c.b * h];
        let mut yh = vec![f32::NAN; nd * c.b * h];
        let mut yc = vec![f32::NAN; nd * c.b * h];
        let ys = if c.layout {
            [c.b, c.t, nd, h]
        } else {
            [c.t, nd, c.b, h]
        };
        {
            let mut outs = vec![tm(&ys, &mut y), tm(&state, &mut yh)];
            if c.cell == RecurrentCell::Lstm {
                outs.push(tm(&state, &mut yc));
            }
            run_recurrent(&p, ins, &mut outs, bytemuck::cast_slice_mut(&mut ws), par).unwrap();
        }
        (y, yh, yc)
    }

    fn cases() -> Vec<(String, Case)> {
        let base = Case {
            cell: RecurrentCell::Gru,
            t: 5,
            b: 3,
            i: 7,
            h: 5,
            direction: RECURRENT_BIDIRECTIONAL,
            layout: false,
            lbr: false,
            input_forget: false,
            clip: None,
            bias: true,
            peep: false,
            init: true,
            lens: None,
            transposed: true,
            acts: default_acts(RecurrentCell::Gru),
        };
        let mut out = Vec::new();
        for cell in [RecurrentCell::Rnn, RecurrentCell::Gru, RecurrentCell::Lstm] {
            for variant in 0..8 {
                let mut c = base.clone();
                c.cell = cell;
                c.acts = default_acts(cell);
                match variant {
                    0 => {}
                    1 => c.lbr = true,
                    2 => {
                        c.direction = RECURRENT_REVERSE;
                        c.layout = true;
                        c.transposed = false;
                    }
                    3 => {
                        c.lens = Some(vec![5, 2, 0]);
                        c.clip = Some(0.7);
                    }
                    4 => {
                        c.peep = true;
                        c.bias = false;
                        c.init = false;
                        c.direction = RECURRENT_FORWARD;
                    }
                    5 => {
                        c.input_forget = true;
                        c.peep = true;
                        c.b = 1;
                        c.h = 19;
                        c.t = 9;
                    }
                    6 => {
                        // Every other activation, with alpha / beta.
                        c.acts = [
                            act(RecurrentAct::HardSigmoid, 0.3, 0.4),
                            act(RecurrentAct::ScaledTanh, 0.9, 1.1),
                            act(RecurrentAct::Softsign, 0.0, 0.0),
                            act(RecurrentAct::LeakyRelu, 0.1, 0.0),
                            act(RecurrentAct::Affine, 0.5, 0.1),
                            act(RecurrentAct::Elu, 0.8, 0.0),
                        ];
                        if cell == RecurrentCell::Rnn {
                            c.acts[0] = act(RecurrentAct::Softplus, 0.0, 0.0);
                            c.acts[3] = act(RecurrentAct::ThresholdedRelu, 0.05, 0.0);
                        }
                        c.lens = Some(vec![3, 5, 1]);
                    }
                    _ => {
                        // A larger layer: the packed GEMM paths and several K blocks.
                        c.t = 13;
                        c.b = 6;
                        c.i = 300;
                        c.h = 37;
                        c.lbr = true;
                    }
                }
                out.push((std::format!("{cell:?} variant {variant}"), c));
            }
        }
        out
    }

    /// Every case on the ISA this process runs: close to the reference, and bitwise the same
    /// whatever the number of slots the input GEMM may split into.
    fn check_this_isa() {
        for (k, (name, c)) in cases().into_iter().enumerate() {
            let dt = data(&c, 17 + k as u32);
            let want = reference(&c, &dt);
            let got = run(&c, &dt, &Serial);
            let lstm = c.cell == RecurrentCell::Lstm;
            for (what, g, w) in [("Y", &got.0, &want.0), ("Y_h", &got.1, &want.1)]
                .into_iter()
                .chain(lstm.then_some(("Y_c", &got.2, &want.2)))
            {
                for (j, (a, b)) in g.iter().zip(w.iter()).enumerate() {
                    assert!(
                        (a - b).abs() <= 2e-5 * (1.0 + b.abs()),
                        "{} {name}: {what}[{j}] = {a}, reference {b}",
                        isa().name()
                    );
                }
            }
            for slots in [2, 3, 4] {
                let again = run(&c, &dt, &Slots(slots));
                assert!(
                    again
                        .0
                        .iter()
                        .zip(&got.0)
                        .all(|(a, b)| a.to_bits() == b.to_bits())
                        && again
                            .1
                            .iter()
                            .zip(&got.1)
                            .all(|(a, b)| a.to_bits() == b.to_bits())
                        && again
                            .2
                            .iter()
                            .zip(&got.2)
                            .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{name}: {slots} slots differ from one"
                );
            }
        }
    }

    /// Run by [`every_isa_matches_the_reference`] in a child process with `GE_ISA` set.
    #[test]
    #[ignore = "run per ISA by every_isa_matches_the_reference"]
    fn one_isa() {
        let want = std::env::var("GE_ISA").unwrap_or_default();
        assert_eq!(isa().name(), want, "GE_ISA was not applied");
        check_this_isa();
    }

    /// The layer kernel against the reference on every ISA this CPU has (each in its own
    /// process: the ISA is chosen once per process), skipping the others with a reason.
    #[test]
    fn every_isa_matches_the_reference() {
        let exe = std::env::current_exe().unwrap();
        for &i in Isa::ALL {
            if !i.supported() {
                std::println!("skipping {}: this CPU lacks it", i.name());
                continue;
            }
            let out = std::process::Command::new(&exe)
                .args([
                    "ops::recurrent::tests::one_isa",
                    "--exact",
                    "--ignored",
                    "--test-threads=1",
                ])
                .env("GE_ISA", i.name())
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && text.contains("1 passed"),
                "GE_ISA={}: {}{}",
                i.name(),
                text,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// Malformed records and mismatched shapes are errors, never panics.
    #[test]
    fn malformed_is_an_error() {
        let (_, c) = cases().remove(9);
        let dt = data(&c, 1);
        let xs = [c.t, c.b, c.i];
        let ins = [
            Some(t(&xs, &dt.x)),
            Some(t(&[2, 15, 7], &dt.w)),
            Some(t(&[2, 15, 5], &dt.r)),
        ];
        let mut y = vec![0.0f32; c.t * 2 * c.b * c.h];
        let mut yh = vec![0.0f32; 2 * c.b * c.h];
        let mut ws = vec![0u64; 1 << 14];
        for bad in 0..5 {
            let mut p = params(&c);
            match bad {
                0 => p.cell = 9,
                1 => p.hidden = 6,
                2 => p.acts[0].func = 99,
                3 => p.hidden = u32::MAX,
                _ => p.direction = RECURRENT_FORWARD,
            }
            let mut outs = vec![tm(&[c.t, 2, c.b, c.h], &mut y), tm(&[2, c.b, c.h], &mut yh)];
            let r = run_recurrent(
                &p,
                &ins,
                &mut outs,
                bytemuck::cast_slice_mut(&mut ws),
                &Serial,
            );
            assert!(r.is_err(), "case {bad} ran");
        }
        // Too little workspace.
        let p = params(&c);
        let mut outs = vec![tm(&[c.t, 2, c.b, c.h], &mut y), tm(&[2, c.b, c.h], &mut yh)];
        let r = run_recurrent(&p, &ins, &mut outs, &mut [0u8; 64], &Serial);
        assert!(r.is_err());
    }
}
