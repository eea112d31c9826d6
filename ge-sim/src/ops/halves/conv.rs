//! Half Conv: slices of output channels (of whole groups when grouped) through the f32 conv.
//! An ungrouped conv also goes in bands of output rows (its first spatial axis): a band
//! widens only the input rows its windows read, as a conv of its own whose top and bottom
//! padding is the part of the original padding it touches, so scratch stays bounded however
//! large the input (a whole widened input was most of ResNet-50's fp16 arena). A grouped conv
//! widens each slice's own input channels whole. Bias, residual and the prologue's scale and
//! shift are widened with their slice.

use ge_runtime::format::{ConvParams, Shape, TensorMut, TensorRef};

use super::super::conv::{conv_workspace_bytes, run_conv_on};
use super::super::gemm::micro::MR;
use super::super::{KernelError, KernelResult, input, output};
use super::{carve, convert, f32_mut, f32_ref, narrow_at, total_bytes, widen_at, with_dim};
use crate::ops::WORKSPACE_LEVELS;
use crate::threads::Parallel;

/// Output elements per channel a band aims at: one packed GEMM panel (the f32 kernels pack
/// `K × band` of the input, 4 slots of it), a few output rows.
const BAND: usize = 128;
/// f32 elements the weights, outputs and residual of one slice aim at, largest first: the
/// slice budgets a conv can run with. Each slice is an f32 conv of its own that packs its
/// input band again, so larger slices are faster on small planes with large weights
/// (ResNet-50's 3×3 512 → 512 at 7×7 ran as 40 slices of 13 filters at 512 KiB; ResNet-50
/// force_fp16, 1 thread: 163 ms with 512 KiB slices everywhere, 104 ms with 2 MiB), and
/// smaller ones keep the arena down where activations peak. [`offered`] says which a conv
/// offers; the kernel takes the largest of those whose workspace fits the one it is given,
/// and the planner gives each conv the largest that fits under the arena's peak.
const SLICES: [usize; WORKSPACE_LEVELS] = [1 << 19, 1 << 17, 1 << 16, 1 << 15, 1 << 14, 1 << 13];
/// Fewest output channels a narrower slice may have (a 16-wide GEMM panel; fewer and the f32
/// kernel's tiles run mostly empty: ~3× slower on yolov8n's head convs at 5 filters).
const MIN_SLICE_CHANNELS: usize = 16;
/// A 2-D 1 × 1 conv with a stride above 1 and no padding reads only every `s`-th pixel: it is
/// the stride-1 conv of those pixels. Returns that conv's parameters, its input shape
/// (`[N, C, OH, OW]`) and the strides, so the half conv widens only the pixels it reads (a
/// quarter of the rows' elements at stride 2) and the f32 conv runs its plain pointwise path.
fn subsampled(p: &ConvParams, x: &Shape, y: &Shape) -> Option<(ConvParams, Shape, [usize; 2])> {
    let pointwise = p.rank() == 2 && x.rank() == 4 && y.rank() == 4 && p.kernel[..2] == [1, 1];
    let unpadded = p.pad_begin[..2] == [0, 0] && p.pad_end[..2] == [0, 0];
    let strides = [p.stride[0].max(1) as usize, p.stride[1].max(1) as usize];
    if !pointwise || !unpadded || strides == [1, 1] {
        return None;
    }
    let (oh, ow) = (y.dim(2), y.dim(3));
    // Every output pixel reads an input pixel (no output beyond the input).
    if oh == 0 || ow == 0 || (oh - 1) * strides[0] >= x.dim(2) || (ow - 1) * strides[1] >= x.dim(3)
    {
        return None;
    }
    let mut q = *p;
    q.stride[..2].copy_from_slice(&[1, 1]);
    Some((q, Shape::new(&[x.dim(0), x.dim(1), oh, ow])?, strides))
}

/// The conv the half kernel runs for `p` on `x` → `y`: a strided 1 × 1 conv as the stride-1
/// conv of the pixels it reads ([`subsampled`], with the strides it subsamples by), any
/// other as it is.
fn as_run(p: &ConvParams, x: &Shape, y: &Shape) -> (ConvParams, Shape, Option<[usize; 2]>) {
    match subsampled(p, x, y) {
        Some((q, xv, s)) => (q, xv, Some(s)),
        None => (*p, *x, None),
    }
}

/// Most a conv whose output plane is larger than [`SMALL_PLANE`] aims at (512 KiB): its
/// slices are already tall, and larger ones only add arena (yolov8n_320's 5.65 → 6.89 MB).
const SLICE_LARGE_PLANE: usize = 1 << 17;
/// Output elements per channel below which a conv's plane counts as small (28 × 28).
const SMALL_PLANE: usize = 784;

/// How a conv is sliced.
#[derive(Clone, Copy, Debug)]
struct Split {
    n: usize,
    c: usize,
    m: usize,
    grouped: bool,
    /// Weights per filter.
    k: usize,
    /// Output channels and input channels per unit (a filter, or a whole group).
    m_per: usize,
    c_per: usize,
    units: usize,
    /// Units per slice.
    chunk: usize,
    /// Input and output rows (first spatial axis), elements per input and output row.
    h: usize,
    oh: usize,
    irow: usize,
    orow: usize,
    /// Output rows per band (`oh` when not banded).
    band: usize,
    /// Stride, window extent and top padding along the rows.
    stride: usize,
    reach: usize,
    pad: usize,
}

/// One band: input rows `[lo, lo + rows)`, its own top and bottom padding, output rows
/// `[o0, o0 + out)`.
#[derive(Clone, Copy, Debug)]
struct Band {
    lo: usize,
    rows: usize,
    top: usize,
    bottom: usize,
    o0: usize,
    out: usize,
}

impl Split {
    /// The slicing of a conv whose slices aim at `budget` f32 elements (one of [`SLICES`];
    /// capped at [`SLICE_LARGE_PLANE`] on large planes).
    fn new(p: &ConvParams, x: &Shape, w: &Shape, y: &Shape, budget: usize) -> Option<Split> {
        let (n, c, m) = (x.dim(0), x.dim(1), y.dim(1));
        let g = p.group as usize;
        if g == 0 || x.rank() < 3 || w.rank() != x.rank() || y.rank() != x.rank() || w.dim(0) != m {
            return None;
        }
        if m == 0 || c % g != 0 || m % g != 0 || y.dim(0) != n {
            return None;
        }
        let (h, oh) = (x.dim(2), y.dim(2));
        if h == 0 || oh == 0 {
            return None;
        }
        let xp = x.dims()[2..].iter().product::<usize>();
        let yp = y.dims()[2..].iter().product::<usize>();
        let (irow, orow) = (xp / h, yp / oh);
        let k = w.numel() / m;
        let grouped = g > 1;
        let stride = (p.stride[0] as usize).max(1);
        let reach = (p.kernel[0] as usize)
            .saturating_sub(1)
            .saturating_mul((p.dilation[0] as usize).max(1))
            .saturating_add(1);
        let pad = p.pad_begin[0] as usize;
        // Every band must read at least one real row: no padding as wide as the window.
        let bandable = !grouped && pad < reach && (p.pad_end[0] as usize) < reach;
        let band = if bandable {
            (BAND / orow.max(1)).clamp(1, oh)
        } else {
            oh
        };
        let (m_per, c_per, units) = if grouped {
            (m / g, c / g, g)
        } else {
            (1, 0, m)
        };
        // Weights twice (the widened slice and the f32 kernel's packed panels), output and
        // residual.
        let per_unit = m_per
            .saturating_mul(
                k.saturating_mul(2)
                    .saturating_add(band.saturating_mul(orow).saturating_mul(2))
                    .saturating_add(1),
            )
            .saturating_add(c_per.saturating_mul(xp))
            .max(1);
        let budget = if yp <= SMALL_PLANE {
            budget
        } else {
            budget.min(SLICE_LARGE_PLANE)
        };
        let mut chunk = (budget / per_unit).clamp(1, units);
        if !grouped && chunk > MR && chunk < units {
            chunk -= chunk % MR; // whole register tiles
        }
        Some(Split {
            n,
            c,
            m,
            grouped,
            k,
            m_per,
            c_per,
            units,
            chunk,
            h,
            oh,
            irow,
            orow,
            band,
            stride,
            reach,
            pad,
        })
    }

    /// Input channels a slice of `u` units reads.
    fn chans(&self, u: usize) -> usize {
        if self.grouped { u * self.c_per } else { self.c }
    }

    /// The band of output rows from `o0`.
    fn band_at(&self, p: &ConvParams, o0: usize) -> Band {
        if self.band >= self.oh {
            return Band {
                lo: 0,
                rows: self.h,
                top: p.pad_begin[0] as usize,
                bottom: p.pad_end[0] as usize,
                o0: 0,
                out: self.oh,
            };
        }
        let out = self.band.min(self.oh - o0);
        // Padded-grid rows the band's windows span: [start, end).
        let start = o0 * self.stride;
        let end = (o0 + out - 1) * self.stride + self.reach;
        let lo = start.max(self.pad) - self.pad;
        let hi = (end.min(self.pad + self.h)).max(self.pad + lo) - self.pad;
        Band {
            lo,
            rows: hi - lo,
            top: self.pad.saturating_sub(start),
            bottom: end.saturating_sub(self.pad + self.h),
            o0,
            out,
        }
    }

    /// Most input rows a band reads.
    fn band_rows(&self) -> usize {
        if self.band >= self.oh {
            self.h
        } else {
            ((self.band - 1) * self.stride + self.reach).min(self.h)
        }
    }

    /// The f32 conv of a slice of `u` units on band `b`: its parameters and x, w, y shapes.
    fn slice(&self, p: &ConvParams, x: &Shape, w: &Shape, y: &Shape, u: usize, b: &Band) -> Sliced {
        let mut q = *p;
        q.group = if self.grouped { u as u32 } else { 1 };
        q.pad_begin[0] = b.top as u32;
        q.pad_end[0] = b.bottom as u32;
        let (mut xd, xr) = with_dim(x, 1, self.chans(u));
        (xd[0], xd[2]) = (1, b.rows);
        let (wd, wr) = with_dim(w, 0, u * self.m_per);
        let (mut yd, yr) = with_dim(y, 1, u * self.m_per);
        (yd[0], yd[2]) = (1, b.out);
        Sliced {
            p: q,
            x: Shape::new(&xd[..xr]),
            w: Shape::new(&wd[..wr]),
            y: Shape::new(&yd[..yr]),
        }
    }

    /// The f32 kernel's workspace for the largest slice: the most any band needs (bands
    /// differ at the borders only, by their padding and the last one's rows).
    fn inner_bytes(&self, p: &ConvParams, x: &Shape, w: &Shape, y: &Shape) -> usize {
        let last = (self.oh - 1) / self.band * self.band;
        [0, self.band.min(last), last]
            .iter()
            .map(|&o0| {
                let b = self.band_at(p, o0);
                self.slice(p, x, w, y, self.chunk, &b).inner_bytes()
            })
            .max()
            .unwrap_or(0)
    }

    /// Workspace bytes: the f32 kernel's, then the runs.
    fn total_bytes(
        &self,
        p: &ConvParams,
        x: &Shape,
        w: &Shape,
        y: &Shape,
        residual: bool,
        prologue: bool,
    ) -> usize {
        total_bytes(self.inner_bytes(p, x, w, y), &self.runs(residual, prologue))
    }

    /// f32 run lengths: x, w, bias, residual, y, prologue (scale then shift).
    fn runs(&self, residual: bool, prologue: bool) -> [usize; 6] {
        let mc = self.chunk * self.m_per;
        let ys = mc * self.band * self.orow;
        [
            self.chans(self.chunk) * self.band_rows() * self.irow,
            mc * self.k,
            mc,
            if residual { ys } else { 0 },
            ys,
            if prologue { 2 * self.c } else { 0 },
        ]
    }
}

struct Sliced {
    p: ConvParams,
    x: Option<Shape>,
    w: Option<Shape>,
    y: Option<Shape>,
}

impl Sliced {
    fn inner_bytes(&self) -> usize {
        match (self.x, self.w, self.y) {
            (Some(x), Some(w), Some(y)) => {
                conv_workspace_bytes(&self.p, false, &[Some(x), Some(w)], &[y])
            }
            _ => 0,
        }
    }
}

/// The slicings a conv offers, one per budget of [`SLICES`] (`None`: not offered), with
/// their workspace bytes; `p` and `x` as the kernel runs them (after [`subsampled`]). The
/// preferred (largest) one always; a narrower one only while it pays: when the slices'
/// own bytes (weights twice — widened, and packed by the f32 kernel —, outputs, residual)
/// were at least half the rest of the workspace (the widened input band and the f32
/// kernel's other scratch, which narrower slices do not shrink: halving the slices then
/// saves at least a sixth), and with at least [`MIN_SLICE_CHANNELS`] output channels a
/// slice. Past that, narrower slices cost host time (more f32 convs, each packing its input
/// band again: up to 12× on yolov8n's head convs) for little arena.
fn offered(
    p: &ConvParams,
    x: &Shape,
    w: &Shape,
    y: &Shape,
    residual: bool,
    prologue: bool,
) -> [Option<(Split, usize)>; WORKSPACE_LEVELS] {
    let mut out = [None; WORKSPACE_LEVELS];
    let mut pays = true;
    let mut last = usize::MAX;
    for (slot, &budget) in out.iter_mut().zip(&SLICES) {
        let Some(sp) = Split::new(p, x, w, y, budget) else {
            continue;
        };
        let bytes = sp.total_bytes(p, x, w, y, residual, prologue);
        let wide = sp.chunk * sp.m_per >= MIN_SLICE_CHANNELS || sp.chunk == sp.units;
        if last != usize::MAX && !(pays && wide && bytes < last) {
            continue;
        }
        // The slice's own bytes: its weights (widened, and packed by the f32 kernel), bias,
        // residual and output.
        let [_, wr, br, rr, yr, _] = sp.runs(residual, prologue);
        let own = (2 * wr + br + rr + yr) * 4;
        pays = 2 * own >= bytes.saturating_sub(own);
        last = bytes;
        *slot = Some((sp, bytes));
    }
    out
}

/// Workspace bytes a half conv can run with, largest (the preferred) first: the [`offered`]
/// slicings' (a level not offered repeats the one before); all 0 when the shapes do not
/// make a conv.
pub(super) fn workspace_levels(
    p: &ConvParams,
    ins: &[Option<Shape>],
    outs: &[Shape],
) -> [usize; WORKSPACE_LEVELS] {
    let (Some(Some(x)), Some(Some(w)), Some(y)) = (ins.first(), ins.get(1), outs.first()) else {
        return [0; WORKSPACE_LEVELS];
    };
    let present = |i: usize| ins.get(i).is_some_and(Option::is_some);
    let (p, x, _) = as_run(p, x, y);
    let mut levels = [0; WORKSPACE_LEVELS];
    let mut bytes = 0;
    for (level, o) in levels
        .iter_mut()
        .zip(offered(&p, &x, w, y, present(3), present(4)))
    {
        if let Some((_, b)) = o {
            bytes = b;
        }
        *level = bytes;
    }
    levels
}

fn bad(m: &'static str) -> KernelError {
    KernelError::BadParams(m)
}

/// Widens rows `[r0, r0 + rows)` of `channels` channels from channel `c0` of batch item `b`
/// of the `[N, C, H, row]`-viewed `t` into `dst`, channel after channel.
fn widen_rows(
    t: &TensorRef<'_>,
    (b, c0, channels, per_item): (usize, usize, usize, usize),
    (r0, rows, h, row): (usize, usize, usize, usize),
    dst: &mut [f32],
    fast: bool,
) -> KernelResult {
    let run = rows * row;
    for (i, d) in dst[..channels * run]
        .chunks_exact_mut(run.max(1))
        .enumerate()
    {
        widen_at(t, ((b * per_item + c0 + i) * h + r0) * row, d, fast)?;
    }
    Ok(())
}

/// [`widen_rows`] of the pixels a subsampling conv reads ([`subsampled`]): virtual rows
/// `[r0, r0 + rows)` of `row` pixels are source rows `r · s[0]` of `t` (`[N, C, H, W]`),
/// every `s[1]`-th pixel.
fn widen_subsampled_rows(
    t: &TensorRef<'_>,
    (b, c0, channels, per_item): (usize, usize, usize, usize),
    (r0, rows, row): (usize, usize, usize),
    s: [usize; 2],
    dst: &mut [f32],
    fast: bool,
) -> KernelResult {
    let (h, w) = (t.shape.dim(2), t.shape.dim(3));
    // Source pixels widened at a time, then picked.
    let mut buf = [0f32; 512];
    let per = (buf.len() / s[1]).max(1);
    for (i, d) in dst[..channels * rows * row]
        .chunks_exact_mut(row.max(1))
        .enumerate()
    {
        let (c, r) = (c0 + i / rows, r0 + i % rows);
        let start = ((b * per_item + c) * h + r * s[0]) * w;
        for (k, out) in d.chunks_mut(per).enumerate() {
            let first = k * per * s[1];
            let n = (out.len() - 1) * s[1] + 1;
            let src = buf.get_mut(..n).ok_or(bad("conv stride"))?;
            widen_at(t, start + first, src, fast)?;
            for (o, v) in out.iter_mut().zip(src.iter().step_by(s[1])) {
                *o = *v;
            }
        }
    }
    Ok(())
}

/// `Y = W ⋆ X + B (+ R)` and the fused activation, on 16-bit (or f32) operands into a 16-bit
/// output, slice by slice (and band by band) through the f32 conv.
pub(crate) fn run(
    p: &ConvParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    let xt = input(ins, 0, "conv input")?;
    let wt = input(ins, 1, "conv weights")?;
    let opt = |i: usize| ins.get(i).and_then(Option::as_ref);
    let (bias, residual, scale, shift) = (opt(2), opt(3), opt(4), opt(5));
    let yt = output(outs, 0, "conv output")?;
    let (xs, wsh, ysh) = (xt.shape, wt.shape, yt.shape);
    let (r, pro) = (residual.is_some(), scale.is_some());
    // A strided 1 × 1 conv runs as the stride-1 conv of the pixels it reads.
    let (q, xs, strides) = as_run(p, &xs, &ysh);
    let p = &q;
    // The largest offered slices the planned workspace has room for; else (a blob whose
    // planner offered other sizes) the largest of any budget that fits.
    let sp = offered(p, &xs, &wsh, &ysh, r, pro)
        .into_iter()
        .flatten()
        .find(|&(_, bytes)| bytes <= ws.len())
        .map(|(sp, _)| sp)
        .or_else(|| {
            SLICES
                .iter()
                .filter_map(|&budget| Split::new(p, &xs, &wsh, &ysh, budget))
                .find(|sp| sp.total_bytes(p, &xs, &wsh, &ysh, r, pro) <= ws.len())
        })
        .ok_or(bad("conv workspace smaller than its smallest slices"))?;
    let runs = sp.runs(r, pro);
    let (inner, [xw, ww, bw, rw, yw, pw]) = carve(ws, sp.inner_bytes(p, &xs, &wsh, &ysh), runs)?;
    let fast = convert::fast();
    let widen_x = |item: (usize, usize, usize, usize), rows, xw: &mut [f32]| match strides {
        Some(s) => {
            let (lo, n, _, row) = rows;
            widen_subsampled_rows(xt, item, (lo, n, row), s, xw, fast)
        }
        None => widen_rows(xt, item, rows, xw, fast),
    };
    if let (Some(s), Some(t)) = (scale, shift) {
        let (sw, tw) = pw.split_at_mut(sp.c);
        widen_at(s, 0, sw, fast)?;
        widen_at(t, 0, tw, fast)?;
    } else if scale.is_some() || shift.is_some() {
        return Err(bad("conv prologue needs both scale and shift"));
    }
    // The slice whose weights and bias are in `ww` / `bw` (reloaded only when it changes).
    let mut loaded = usize::MAX;
    for b in 0..sp.n {
        let mut o0 = 0;
        while o0 < sp.oh {
            let band = sp.band_at(p, o0);
            let rows = (band.lo, band.rows, sp.h, sp.irow);
            if !sp.grouped {
                widen_x((b, 0, sp.c, sp.c), rows, xw)?;
            }
            let mut u0 = 0;
            while u0 < sp.units {
                let u = sp.chunk.min(sp.units - u0);
                let (m0, mc) = (u0 * sp.m_per, u * sp.m_per);
                let cx = sp.chans(u) * band.rows * sp.irow;
                if sp.grouped {
                    widen_x((b, u0 * sp.c_per, sp.chans(u), sp.c), rows, xw)?;
                }
                if loaded != u0 {
                    widen_at(wt, m0 * sp.k, &mut ww[..mc * sp.k], fast)?;
                    if let Some(bt) = bias {
                        widen_at(bt, m0, &mut bw[..mc], fast)?;
                    }
                    loaded = u0;
                }
                let ys = mc * band.out * sp.orow;
                let out_rows = (band.o0, band.out, sp.oh, sp.orow);
                if let Some(r) = residual {
                    widen_rows(r, (b, m0, mc, sp.m), out_rows, rw, fast)?;
                }
                let s = sp.slice(p, &xs, &wsh, &ysh, u, &band);
                let (Some(xsl), Some(wsl), Some(ysl)) = (s.x, s.w, s.y) else {
                    return Err(bad("conv shapes"));
                };
                let (sw, tw) = pw.split_at(pw.len() / 2);
                let cs = [sp.c];
                let sub: [Option<TensorRef<'_>>; 6] = [
                    Some(f32_ref(&xw[..cx], xsl.dims())?),
                    Some(f32_ref(&ww[..mc * sp.k], wsl.dims())?),
                    bias.map(|_| f32_ref(&bw[..mc], &[mc])).transpose()?,
                    residual
                        .map(|_| f32_ref(&rw[..ys], ysl.dims()))
                        .transpose()?,
                    scale.map(|_| f32_ref(sw, &cs)).transpose()?,
                    shift.map(|_| f32_ref(tw, &cs)).transpose()?,
                ];
                let n_in = ins.len().min(sub.len());
                let mut y = [f32_mut(&mut yw[..ys], ysl.dims())?];
                run_conv_on(&s.p, &sub[..n_in], &mut y, inner, par)?;
                let run = band.out * sp.orow;
                for (i, row) in yw[..ys].chunks_exact(run.max(1)).enumerate() {
                    let at = ((b * sp.m + m0 + i) * sp.oh + band.o0) * sp.orow;
                    narrow_at(row, yt, at, fast)?;
                }
                u0 += u;
            }
            o0 += band.out;
        }
    }
    Ok(())
}
