//! Half Conv: slices of output channels (of whole groups when grouped) through the f32 conv.
//! An ungrouped conv widens its batch item's input once and shares it between the slices;
//! a grouped one widens each slice's own input channels. Bias, residual and the prologue's
//! scale and shift are widened with their slice.

use ge_runtime::format::{ConvParams, Shape, TensorMut, TensorRef};

use super::super::conv::{conv_workspace_bytes, run_conv_on};
use super::super::gemm::micro::MR;
use super::super::{KernelError, KernelResult, input, output};
use super::{CAP, carve, convert, f32_mut, f32_ref, narrow_at, total_bytes, widen_at, with_dim};
use crate::threads::Parallel;

/// How a conv is sliced.
#[derive(Clone, Copy, Debug)]
struct Split {
    n: usize,
    c: usize,
    m: usize,
    grouped: bool,
    /// Input and output plane sizes; weights per filter.
    xp: usize,
    yp: usize,
    k: usize,
    /// Output channels and input channels per unit (a filter, or a whole group).
    m_per: usize,
    c_per: usize,
    units: usize,
    /// Units per slice.
    chunk: usize,
}

impl Split {
    fn new(p: &ConvParams, x: &Shape, w: &Shape, y: &Shape) -> Option<Split> {
        let (n, c, m) = (x.dim(0), x.dim(1), y.dim(1));
        let g = p.group as usize;
        if g == 0 || x.rank() < 3 || w.rank() != x.rank() || y.rank() != x.rank() || w.dim(0) != m {
            return None;
        }
        if m == 0 || c % g != 0 || m % g != 0 || y.dim(0) != n {
            return None;
        }
        let xp = x.dims()[2..].iter().product::<usize>();
        let yp = y.dims()[2..].iter().product::<usize>();
        let k = w.numel() / m;
        let grouped = g > 1;
        let (m_per, c_per, units) = if grouped {
            (m / g, c / g, g)
        } else {
            (1, 0, m)
        };
        let per_unit = m_per
            .saturating_mul(k.saturating_add(yp.saturating_mul(2)).saturating_add(1))
            .saturating_add(c_per.saturating_mul(xp))
            .max(1);
        let mut chunk = (CAP / per_unit).clamp(1, units);
        if !grouped && chunk > MR && chunk < units {
            chunk -= chunk % MR; // whole register tiles
        }
        Some(Split {
            n,
            c,
            m,
            grouped,
            xp,
            yp,
            k,
            m_per,
            c_per,
            units,
            chunk,
        })
    }

    /// Input channels a slice of `u` units reads.
    fn chans(&self, u: usize) -> usize {
        if self.grouped { u * self.c_per } else { self.c }
    }

    /// The f32 conv of a slice of `u` units: its parameters and its x, w, y shapes.
    fn slice(&self, p: &ConvParams, x: &Shape, w: &Shape, y: &Shape, u: usize) -> Sliced {
        let mut q = *p;
        q.group = if self.grouped { u as u32 } else { 1 };
        let (mut xd, xr) = with_dim(x, 1, self.chans(u));
        xd[0] = 1;
        let (wd, wr) = with_dim(w, 0, u * self.m_per);
        let (mut yd, yr) = with_dim(y, 1, u * self.m_per);
        yd[0] = 1;
        Sliced {
            p: q,
            x: Shape::new(&xd[..xr]),
            w: Shape::new(&wd[..wr]),
            y: Shape::new(&yd[..yr]),
        }
    }

    /// f32 run lengths: x, w, bias, residual, y, prologue (scale then shift).
    fn runs(&self, residual: bool, prologue: bool) -> [usize; 6] {
        let mc = self.chunk * self.m_per;
        [
            self.chans(self.chunk) * self.xp,
            mc * self.k,
            mc,
            if residual { mc * self.yp } else { 0 },
            mc * self.yp,
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

/// Workspace bytes of a half conv; 0 when the shapes do not make a conv.
pub(super) fn workspace(p: &ConvParams, ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    let (Some(Some(x)), Some(Some(w)), Some(y)) = (ins.first(), ins.get(1), outs.first()) else {
        return 0;
    };
    let Some(sp) = Split::new(p, x, w, y) else {
        return 0;
    };
    let present = |i: usize| ins.get(i).is_some_and(Option::is_some);
    let inner = sp.slice(p, x, w, y, sp.chunk).inner_bytes();
    total_bytes(inner, &sp.runs(present(3), present(4)))
}

fn bad(m: &'static str) -> KernelError {
    KernelError::BadParams(m)
}

/// `Y = W ⋆ X + B (+ R)` and the fused activation, on 16-bit (or f32) operands into a 16-bit
/// output, slice by slice through the f32 conv.
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
    let sp = Split::new(p, &xt.shape, &wt.shape, &yt.shape).ok_or(bad("conv shapes"))?;
    let full = sp.slice(p, &xt.shape, &wt.shape, &yt.shape, sp.chunk);
    let runs = sp.runs(residual.is_some(), scale.is_some());
    let (inner, [xw, ww, bw, rw, yw, pw]) = carve(ws, full.inner_bytes(), runs)?;
    let fast = convert::fast();
    if let (Some(s), Some(t)) = (scale, shift) {
        let (sw, tw) = pw.split_at_mut(sp.c);
        widen_at(s, 0, sw, fast)?;
        widen_at(t, 0, tw, fast)?;
    } else if scale.is_some() || shift.is_some() {
        return Err(bad("conv prologue needs both scale and shift"));
    }
    for b in 0..sp.n {
        if !sp.grouped {
            widen_at(xt, b * sp.c * sp.xp, &mut xw[..sp.c * sp.xp], fast)?;
        }
        let mut u0 = 0;
        while u0 < sp.units {
            let u = sp.chunk.min(sp.units - u0);
            let (m0, mc) = (u0 * sp.m_per, u * sp.m_per);
            let cx = sp.chans(u) * sp.xp;
            if sp.grouped {
                widen_at(xt, (b * sp.c + u0 * sp.c_per) * sp.xp, &mut xw[..cx], fast)?;
            }
            widen_at(wt, m0 * sp.k, &mut ww[..mc * sp.k], fast)?;
            if let Some(bt) = bias {
                widen_at(bt, m0, &mut bw[..mc], fast)?;
            }
            let at = (b * sp.m + m0) * sp.yp;
            if let Some(r) = residual {
                widen_at(r, at, &mut rw[..mc * sp.yp], fast)?;
            }
            let s = sp.slice(p, &xt.shape, &wt.shape, &yt.shape, u);
            let (Some(xs), Some(wsh), Some(ys)) = (s.x, s.w, s.y) else {
                return Err(bad("conv shapes"));
            };
            let (sw, tw) = pw.split_at(pw.len() / 2);
            let cs = [sp.c];
            let sub: [Option<TensorRef<'_>>; 6] = [
                Some(f32_ref(&xw[..cx], xs.dims())?),
                Some(f32_ref(&ww[..mc * sp.k], wsh.dims())?),
                bias.map(|_| f32_ref(&bw[..mc], &[mc])).transpose()?,
                residual
                    .map(|_| f32_ref(&rw[..mc * sp.yp], ys.dims()))
                    .transpose()?,
                scale.map(|_| f32_ref(sw, &cs)).transpose()?,
                shift.map(|_| f32_ref(tw, &cs)).transpose()?,
            ];
            let n_in = ins.len().min(sub.len());
            let mut y = [f32_mut(&mut yw[..mc * sp.yp], ys.dims())?];
            run_conv_on(&s.p, &sub[..n_in], &mut y, inner, par)?;
            narrow_at(&yw[..mc * sp.yp], yt, at, fast)?;
            u0 += u;
        }
    }
    Ok(())
}
