//! Half Gemm: slices of output columns through the f32 Gemm. A is widened once; each slice
//! widens its columns of op(B) (rows of B when transposed), of C when C varies along the
//! columns (else all of C, which broadcasts), and of the fused residual.

use ge_runtime::format::{GemmParams, Shape, TensorMut, TensorRef};

use super::super::gemm::micro::NR;
use super::super::gemm::{gemm_workspace_bytes, run_gemm};
use super::super::{KernelError, KernelResult, input, output};
use super::{CAP, carve, convert, f32_mut, f32_ref, narrow_at, total_bytes, widen_at, with_dim};
use crate::threads::Parallel;

/// How a Gemm is sliced.
#[derive(Clone, Copy, Debug)]
struct Split {
    /// Y's columns and rows (leading axes folded); B's inner size.
    n: usize,
    rows: usize,
    k: usize,
    trans_b: bool,
    /// C's rows when it is sliced by column (its last dim is N), else `None`.
    c_rows: Option<usize>,
    /// Columns per slice.
    chunk: usize,
}

impl Split {
    fn new(p: &GemmParams, b: &Shape, c: Option<&Shape>, y: &Shape) -> Option<Split> {
        if b.rank() != 2 || y.rank() < 2 {
            return None;
        }
        let trans_b = p.b_transposed();
        let (k, n) = if trans_b {
            (b.dim(1), b.dim(0))
        } else {
            (b.dim(0), b.dim(1))
        };
        if n == 0 || y.dim(y.rank() - 1) != n {
            return None;
        }
        let rows = y.numel() / n;
        let c_rows = c
            .filter(|c| c.rank() > 0 && c.dim(c.rank() - 1) == n)
            .map(|c| c.numel() / n);
        let per_col = k
            .saturating_add(rows.saturating_mul(2))
            .saturating_add(c_rows.unwrap_or(0))
            .max(1);
        let mut chunk = (CAP / per_col).clamp(1, n);
        if chunk > NR && chunk < n {
            chunk -= chunk % NR; // whole register tiles
        }
        Some(Split {
            n,
            rows,
            k,
            trans_b,
            c_rows,
            chunk,
        })
    }

    /// B's shape for a slice of `nc` columns.
    fn b_dims(&self, nc: usize) -> [usize; 2] {
        if self.trans_b {
            [nc, self.k]
        } else {
            [self.k, nc]
        }
    }

    /// f32 run lengths: A, B, C, residual, Y.
    fn runs(&self, a: &Shape, c: Option<&Shape>, residual: bool) -> [usize; 5] {
        let nc = self.chunk;
        [
            a.numel(),
            self.k * nc,
            match (self.c_rows, c) {
                (Some(r), _) => r * nc,
                (None, Some(c)) => c.numel(),
                (None, None) => 0,
            },
            if residual { self.rows * nc } else { 0 },
            self.rows * nc,
        ]
    }
}

/// Workspace bytes of a half Gemm; 0 when the shapes do not make one.
pub(super) fn workspace(p: &GemmParams, ins: &[Option<Shape>], outs: &[Shape]) -> usize {
    let (Some(Some(a)), Some(Some(b)), Some(y)) = (ins.first(), ins.get(1), outs.first()) else {
        return 0;
    };
    let c = ins.get(2).copied().flatten();
    let Some(sp) = Split::new(p, b, c.as_ref(), y) else {
        return 0;
    };
    let (yd, yr) = with_dim(y, y.rank() - 1, sp.chunk);
    let (Some(bs), Some(ys)) = (Shape::new(&sp.b_dims(sp.chunk)), Shape::new(&yd[..yr])) else {
        return 0;
    };
    let inner = gemm_workspace_bytes(&[Some(*a), Some(bs)], &[ys]);
    let residual = ins.get(3).is_some_and(Option::is_some);
    total_bytes(inner, &sp.runs(a, c.as_ref(), residual))
}

/// Widens columns `j0..j0 + nc` of the `rows × n` row-major `t` into `dst` (`rows × nc`).
fn widen_cols(
    t: &TensorRef<'_>,
    rows: usize,
    n: usize,
    j0: usize,
    nc: usize,
    dst: &mut [f32],
    fast: bool,
) -> KernelResult {
    for (r, d) in dst[..rows * nc].chunks_exact_mut(nc.max(1)).enumerate() {
        widen_at(t, r * n + j0, d, fast)?;
    }
    Ok(())
}

/// `Y = alpha·op(A)·op(B) + beta·C (+ R)` and the fused activation on 16-bit (or f32)
/// operands into a 16-bit output, slice by slice through the f32 Gemm.
pub(crate) fn run(
    p: &GemmParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    let at = input(ins, 0, "gemm A")?;
    let bt = input(ins, 1, "gemm B")?;
    let opt = |i: usize| ins.get(i).and_then(Option::as_ref);
    let (ct, rt) = (opt(2), opt(3));
    let yt = output(outs, 0, "gemm output")?;
    let yshape = yt.shape;
    let cshape = ct.map(|c| c.shape);
    let sp = Split::new(p, &bt.shape, cshape.as_ref(), &yshape)
        .ok_or(KernelError::Shape("gemm operand shapes do not agree"))?;
    let (yd, yr) = with_dim(&yshape, yshape.rank() - 1, sp.chunk);
    let full_b = Shape::new(&sp.b_dims(sp.chunk)).ok_or(KernelError::Shape("gemm B"))?;
    let full_y = Shape::new(&yd[..yr]).ok_or(KernelError::Shape("gemm output"))?;
    let inner = gemm_workspace_bytes(&[Some(at.shape), Some(full_b)], &[full_y]);
    let runs = sp.runs(&at.shape, cshape.as_ref(), rt.is_some());
    let (inner, [aw, bw, cw, rw, yw]) = carve(ws, inner, runs)?;
    let fast = convert::fast();
    widen_at(at, 0, aw, fast)?;
    if let (Some(c), None) = (ct, sp.c_rows) {
        widen_at(c, 0, cw, fast)?;
    }
    let mut j0 = 0;
    while j0 < sp.n {
        let nc = sp.chunk.min(sp.n - j0);
        if sp.trans_b {
            widen_at(bt, j0 * sp.k, &mut bw[..nc * sp.k], fast)?;
        } else {
            widen_cols(bt, sp.k, sp.n, j0, nc, bw, fast)?;
        }
        let c_view = match (ct, sp.c_rows) {
            (Some(c), Some(r)) => {
                widen_cols(c, r, sp.n, j0, nc, cw, fast)?;
                let (cd, cr) = with_dim(&c.shape, c.shape.rank() - 1, nc);
                Some(f32_ref(&cw[..r * nc], &cd[..cr])?)
            }
            (Some(c), None) => Some(f32_ref(cw, c.shape.dims())?),
            (None, _) => None,
        };
        let (yd, yr) = with_dim(&yshape, yshape.rank() - 1, nc);
        let r_view = match rt {
            Some(r) => {
                widen_cols(r, sp.rows, sp.n, j0, nc, rw, fast)?;
                Some(f32_ref(&rw[..sp.rows * nc], &yd[..yr])?)
            }
            None => None,
        };
        let sub = [
            Some(f32_ref(aw, at.shape.dims())?),
            Some(f32_ref(&bw[..nc * sp.k], &sp.b_dims(nc))?),
            c_view,
            r_view,
        ];
        let n_in = ins.len().min(sub.len());
        let mut y = [f32_mut(&mut yw[..sp.rows * nc], &yd[..yr])?];
        run_gemm(p, &sub[..n_in], &mut y, inner, par)?;
        for (r, row) in yw[..sp.rows * nc].chunks_exact(nc).enumerate() {
            narrow_at(row, yt, r * sp.n + j0, fast)?;
        }
        j0 += nc;
    }
    Ok(())
}
