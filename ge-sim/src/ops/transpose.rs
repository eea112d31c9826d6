//! Axis permutation (dtype-agnostic, by element size), plus the strided-copy engine shared by
//! Transpose, Slice, Expand and Tile: the output is walked in row-major order while the source
//! offset advances by per-axis (possibly zero or negative) element strides.

use ge_runtime::format::{MAX_RANK, TensorMut, TensorRef, TransposeParams};

use super::copy::checked_len;
use super::{KernelError, KernelResult, input, output};

/// Most axes [`strided_copy`] accepts (Tile views a rank-8 tensor as 16 axes).
pub const MAX_AXES: usize = 2 * MAX_RANK;

/// Fills `dst` (row-major over `dims`, elements of `esize` bytes) with
/// `dst[i] = src[base + Σ i_d * strides[d]]` (offsets in elements). Every source offset is
/// checked to lie inside `src` before anything is copied. Returns the element count.
pub fn strided_copy(
    dst: &mut [u8],
    src: &[u8],
    esize: usize,
    dims: &[usize],
    strides: &[isize],
    base: isize,
) -> Result<usize, KernelError> {
    if dims.len() != strides.len() || dims.len() > MAX_AXES || esize == 0 {
        return Err(KernelError::Shape("strided copy: bad axis description"));
    }
    let numel = dims
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or(KernelError::Shape("element count overflows"))?;
    if numel.checked_mul(esize) != Some(dst.len()) {
        return Err(KernelError::Shape(
            "output byte length does not match its shape",
        ));
    }
    if numel == 0 {
        return Ok(0);
    }
    let src_elems = (src.len() / esize) as i128;
    // Range of source offsets touched.
    let (mut lo, mut hi) = (base as i128, base as i128);
    for (&d, &s) in dims.iter().zip(strides) {
        let span = (d as i128 - 1) * s as i128;
        if span < 0 {
            lo += span;
        } else {
            hi += span;
        }
    }
    if lo < 0 || hi >= src_elems {
        return Err(KernelError::Shape("source index out of range"));
    }
    // Coalesce: drop unit axes, merge an axis into its outer neighbour when contiguous.
    let mut cd = [0usize; MAX_AXES];
    let mut cs = [0isize; MAX_AXES];
    let mut n = 0usize;
    for (&d, &s) in dims.iter().zip(strides) {
        if d == 1 {
            continue;
        }
        if n > 0 && cs[n - 1] == s * d as isize {
            // previous (outer) axis steps exactly over this one: merge
            cd[n - 1] *= d;
            cs[n - 1] = s;
        } else {
            cd[n] = d;
            cs[n] = s;
            n += 1;
        }
    }
    if n == 0 {
        let o = base as usize * esize;
        dst.copy_from_slice(&src[o..o + esize]);
        return Ok(numel);
    }
    // Interleaved channels to planes ([N][C] → [C][N], C ≤ 4: an NHWC image's first
    // transpose): one pass over the source, C output rows (by rows, a strided copy each ran
    // at 2 ns a byte).
    if n == 2 && cs[0] == 1 && cs[1] == cd[0] as isize {
        let pass: Option<Pass> = match (esize, cd[0]) {
            (1, 2) => Some(deinterleave::<1, 2>),
            (1, 3) => Some(deinterleave::<1, 3>),
            (1, 4) => Some(deinterleave::<1, 4>),
            (4, 2) => Some(deinterleave::<4, 2>),
            (4, 3) => Some(deinterleave::<4, 3>),
            (4, 4) => Some(deinterleave::<4, 4>),
            _ => None,
        };
        if let Some(pass) = pass {
            let o = base as usize * esize;
            pass(dst, &src[o..o + numel * esize]);
            return Ok(numel);
        }
    }
    let len = cd[n - 1];
    let inner_stride = cs[n - 1];
    // A real transpose (the output's inner axis strided in the source, another axis contiguous
    // there): copy in square tiles so both sides stay in cache.
    if inner_stride != 1
        && len >= TILE
        && matches!(esize, 1 | 2 | 4 | 8)
        && let Some(q) = (0..n - 1).rev().find(|&q| cs[q] == 1 && cd[q] >= TILE)
    {
        tiled(dst, src, esize, &cd[..n], &cs[..n], base, q);
        return Ok(numel);
    }
    let row_bytes = len * esize;
    let outer = n - 1;
    let mut index = [0usize; MAX_AXES];
    let mut off = base;
    for row in dst.chunks_exact_mut(row_bytes) {
        copy_run(row, src, esize, off, inner_stride, len);
        // advance the odometer over the outer axes
        let mut a = outer;
        while a > 0 {
            a -= 1;
            index[a] += 1;
            off += cs[a];
            if index[a] < cd[a] {
                break;
            }
            off -= cs[a] * cd[a] as isize;
            index[a] = 0;
        }
    }
    Ok(numel)
}

/// A whole-tensor copy pass: `(dst, src)`.
type Pass = fn(&mut [u8], &[u8]);

/// `dst[c·N + i] = src[i·C + c]` for elements of `ES` bytes (`N = len / C`).
fn deinterleave<const ES: usize, const C: usize>(dst: &mut [u8], src: &[u8]) {
    let (d, _) = dst.as_chunks_mut::<ES>();
    let (s, _) = src.as_chunks::<ES>();
    let n = s.len() / C;
    let mut rows = d[..n * C].chunks_exact_mut(n.max(1));
    let mut rows: [&mut [[u8; ES]]; C] = core::array::from_fn(|_| rows.next().unwrap_or_default());
    for (i, px) in s.chunks_exact(C).enumerate() {
        for (row, v) in rows.iter_mut().zip(px) {
            row[i] = *v;
        }
    }
}

/// Tile edge of the blocked transpose.
const TILE: usize = 16;

/// Blocked copy for coalesced `dims`/`strides` where axis `q` is contiguous in the source
/// and the last axis is not: an odometer over the other axes, and `TILE × TILE` tiles over
/// (`q`, last).
fn tiled(
    dst: &mut [u8],
    src: &[u8],
    esize: usize,
    dims: &[usize],
    strides: &[isize],
    base: isize,
    q: usize,
) {
    let n = dims.len();
    let (rows, cols) = (dims[q], dims[n - 1]);
    let col_stride = strides[n - 1];
    // row-major output strides
    let mut ostr = [0usize; MAX_AXES];
    let mut acc = 1usize;
    for a in (0..n).rev() {
        ostr[a] = acc;
        acc *= dims[a];
    }
    let row_stride = ostr[q];
    // the other axes
    let mut od = [1usize; MAX_AXES];
    let mut os = [0isize; MAX_AXES];
    let mut oo = [0usize; MAX_AXES];
    let mut m = 0;
    for a in 0..n - 1 {
        if a != q {
            od[m] = dims[a];
            os[m] = strides[a];
            oo[m] = ostr[a];
            m += 1;
        }
    }
    let mut index = [0usize; MAX_AXES];
    let (mut s_off, mut d_off) = (base, 0usize);
    loop {
        match esize {
            1 => tile_fixed::<1>(dst, src, d_off, s_off, rows, cols, row_stride, col_stride),
            2 => tile_fixed::<2>(dst, src, d_off, s_off, rows, cols, row_stride, col_stride),
            4 => tile_fixed::<4>(dst, src, d_off, s_off, rows, cols, row_stride, col_stride),
            _ => tile_fixed::<8>(dst, src, d_off, s_off, rows, cols, row_stride, col_stride),
        }
        let mut a = m;
        loop {
            if a == 0 {
                return;
            }
            a -= 1;
            index[a] += 1;
            s_off += os[a];
            d_off += oo[a];
            if index[a] < od[a] {
                break;
            }
            s_off -= os[a] * od[a] as isize;
            d_off -= oo[a] * od[a];
            index[a] = 0;
        }
    }
}

/// `dst[d0 + i·row_stride + j] = src[s0 + i + j·col_stride]` for `i < rows`, `j < cols`, in
/// tiles (offsets in elements of `ES` bytes).
#[allow(clippy::too_many_arguments)]
fn tile_fixed<const ES: usize>(
    dst: &mut [u8],
    src: &[u8],
    d0: usize,
    s0: isize,
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: isize,
) {
    let (d, _) = dst.as_chunks_mut::<ES>();
    let (sc, _) = src.as_chunks::<ES>();
    for i0 in (0..rows).step_by(TILE) {
        let i1 = (i0 + TILE).min(rows);
        for j0 in (0..cols).step_by(TILE) {
            let j1 = (j0 + TILE).min(cols);
            for i in i0..i1 {
                let drow = &mut d[d0 + i * row_stride + j0..d0 + i * row_stride + j1];
                let mut s = s0 + i as isize + j0 as isize * col_stride;
                for e in drow {
                    *e = sc[s as usize];
                    s += col_stride;
                }
            }
        }
    }
}

/// Copies `len` elements starting at element `start` of `src` with element stride `stride`.
fn copy_run(dst: &mut [u8], src: &[u8], esize: usize, start: isize, stride: isize, len: usize) {
    let s0 = start as usize * esize;
    if stride == 1 {
        dst.copy_from_slice(&src[s0..s0 + len * esize]);
        return;
    }
    match esize {
        1 => run_fixed::<1>(dst, src, start, stride),
        2 => run_fixed::<2>(dst, src, start, stride),
        4 => run_fixed::<4>(dst, src, start, stride),
        8 => run_fixed::<8>(dst, src, start, stride),
        _ => {
            for (i, d) in dst.chunks_exact_mut(esize).enumerate() {
                let s = (start + i as isize * stride) as usize * esize;
                d.copy_from_slice(&src[s..s + esize]);
            }
        }
    }
}

fn run_fixed<const ES: usize>(dst: &mut [u8], src: &[u8], start: isize, stride: isize) {
    let (chunks, _) = dst.as_chunks_mut::<ES>();
    if stride == 0 {
        let s = start as usize * ES;
        let mut v = [0u8; ES];
        v.copy_from_slice(&src[s..s + ES]);
        chunks.fill(v);
        return;
    }
    if stride > 0 {
        // Positive strides walk the source as chunks (no index arithmetic or bounds check
        // per element: a 96 × 96 × 3 NHWC → NCHW input ran at 2 ns a byte).
        let (sc, _) = src.as_chunks::<ES>();
        for (d, v) in chunks
            .iter_mut()
            .zip(sc[start as usize..].iter().step_by(stride as usize))
        {
            *d = *v;
        }
        return;
    }
    let mut s = start;
    for d in chunks {
        let o = s as usize * ES;
        d.copy_from_slice(&src[o..o + ES]);
        s += stride;
    }
}

/// Transpose: output axis `i` is input axis `perm[i]`.
pub fn run_transpose(
    p: &TransposeParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "transpose input")?;
    let y = output(outs, 0, "transpose output")?;
    if x.dtype != y.dtype {
        return Err(KernelError::Shape("transpose changes the dtype"));
    }
    let rank = x.shape.rank();
    if y.shape.rank() != rank {
        return Err(KernelError::Shape("transpose changes the rank"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    let in_strides = x.shape.strides();
    let mut seen = [false; MAX_RANK];
    let mut strides = [0isize; MAX_RANK];
    for (i, stride) in strides.iter_mut().enumerate().take(rank) {
        let a = p.perm[i] as usize;
        if a >= rank || seen[a] {
            return Err(KernelError::BadParams(
                "transpose perm is not a permutation",
            ));
        }
        seen[a] = true;
        if y.shape.dims()[i] != x.shape.dims()[a] {
            return Err(KernelError::Shape(
                "transpose output shape does not match perm",
            ));
        }
        *stride = in_strides[a] as isize;
    }
    strided_copy(
        y.data,
        x.data,
        x.dtype.size(),
        y.shape.dims(),
        &strides[..rank],
        0,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use ge_runtime::format::{DType, Shape};
    use std::vec::Vec;

    /// Interleaved channels to planes (the deinterleaving pass) against the definition, for
    /// 1–5 channels (1 and 5 take the general path), bytes, halves and floats.
    #[test]
    fn channels_to_planes_match_the_definition() {
        for c in 1..=5usize {
            for esize in [1usize, 2, 4] {
                let n = 37;
                let src: Vec<u8> = (0..n * c * esize).map(|i| (i * 7 + 3) as u8).collect();
                let mut dst = std::vec![0u8; src.len()];
                let dims = [c, n];
                let strides = [1isize, c as isize];
                assert_eq!(
                    strided_copy(&mut dst, &src, esize, &dims, &strides, 0).unwrap(),
                    n * c
                );
                for ch in 0..c {
                    for i in 0..n {
                        let (d, s) = ((ch * n + i) * esize, (i * c + ch) * esize);
                        assert_eq!(dst[d..d + esize], src[s..s + esize], "c {c} es {esize}");
                    }
                }
            }
        }
    }

    fn perm(p: &[u32]) -> TransposeParams {
        let mut t = TransposeParams {
            perm: [0; MAX_RANK],
        };
        t.perm[..p.len()].copy_from_slice(p);
        t
    }

    fn transpose_i32(
        x: &[i32],
        xd: &[usize],
        p: &[u32],
        yd: &[usize],
    ) -> Result<Vec<i32>, KernelError> {
        let n: usize = yd.iter().product();
        let mut y = std::vec![0i32; n];
        let xs = [Some(TensorRef {
            dtype: DType::I32,
            shape: Shape::new(xd).unwrap(),
            data: bytemuck::cast_slice(x),
        })];
        let mut ys = [TensorMut {
            dtype: DType::I32,
            shape: Shape::new(yd).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_transpose(&perm(p), &xs, &mut ys)?;
        Ok(y)
    }

    #[test]
    fn transpose_2d_and_4d() {
        let x: Vec<i32> = (0..6).collect();
        assert_eq!(
            transpose_i32(&x, &[2, 3], &[1, 0], &[3, 2]).unwrap(),
            [0, 3, 1, 4, 2, 5]
        );
        // NCHW -> NHWC vs a naive loop
        let (n, c, h, w) = (2, 3, 4, 5);
        let x: Vec<i32> = (0..(n * c * h * w) as i32).collect();
        let y = transpose_i32(&x, &[n, c, h, w], &[0, 2, 3, 1], &[n, h, w, c]).unwrap();
        for a in 0..n {
            for b in 0..h {
                for d in 0..w {
                    for e in 0..c {
                        assert_eq!(
                            y[((a * h + b) * w + d) * c + e],
                            x[((a * c + e) * h + b) * w + d]
                        );
                    }
                }
            }
        }
        // keeps the inner axis: [2,3,4] perm [1,0,2]
        let x: Vec<i32> = (0..24).collect();
        let y = transpose_i32(&x, &[2, 3, 4], &[1, 0, 2], &[3, 2, 4]).unwrap();
        assert_eq!(&y[..8], &[0, 1, 2, 3, 12, 13, 14, 15]);
    }

    /// Naive transpose reference on indices.
    fn naive(xd: &[usize], p: &[u32]) -> Vec<usize> {
        let r = xd.len();
        let yd: Vec<usize> = p.iter().map(|&a| xd[a as usize]).collect();
        let n: usize = xd.iter().product();
        let mut xs = std::vec![1usize; r];
        for a in (0..r.saturating_sub(1)).rev() {
            xs[a] = xs[a + 1] * xd[a + 1];
        }
        (0..n)
            .map(|mut i| {
                let mut off = 0;
                for a in (0..r).rev() {
                    off += (i % yd[a]) * xs[p[a] as usize];
                    i /= yd[a];
                }
                off
            })
            .collect()
    }

    #[test]
    fn transpose_tiled_paths() {
        for (xd, p) in [
            (std::vec![3usize, 37, 18], std::vec![0u32, 2, 1]),
            (std::vec![2, 20, 33], std::vec![2, 0, 1]),
            (std::vec![17, 16], std::vec![1, 0]),
        ] {
            let yd: Vec<usize> = p.iter().map(|&a| xd[a as usize]).collect();
            let n: usize = xd.iter().product();
            let want = naive(&xd, &p);
            let x: Vec<i32> = (0..n as i32).collect();
            let y = transpose_i32(&x, &xd, &p, &yd).unwrap();
            assert!(y.iter().zip(&want).all(|(&a, &b)| a as usize == b));
            let x: Vec<u8> = (0..n).map(|v| (v % 251) as u8).collect();
            let mut y = std::vec![0u8; n];
            let ins = [Some(TensorRef {
                dtype: DType::U8,
                shape: Shape::new(&xd).unwrap(),
                data: &x,
            })];
            let mut ys = [TensorMut {
                dtype: DType::U8,
                shape: Shape::new(&yd).unwrap(),
                data: &mut y,
            }];
            run_transpose(&perm(&p), &ins, &mut ys).unwrap();
            assert!(y.iter().zip(&want).all(|(&a, &b)| a as usize == b % 251));
            let x: Vec<i64> = (0..n as i64).collect();
            let mut y = std::vec![0i64; n];
            let ins = [Some(TensorRef {
                dtype: DType::I64,
                shape: Shape::new(&xd).unwrap(),
                data: bytemuck::cast_slice(&x),
            })];
            let mut ys = [TensorMut {
                dtype: DType::I64,
                shape: Shape::new(&yd).unwrap(),
                data: bytemuck::cast_slice_mut(&mut y),
            }];
            run_transpose(&perm(&p), &ins, &mut ys).unwrap();
            assert!(y.iter().zip(&want).all(|(&a, &b)| a as usize == b));
        }
    }

    #[test]
    fn transpose_other_sizes() {
        let x: Vec<u8> = (0..6).collect();
        let mut y = [0u8; 6];
        let xs = [Some(TensorRef {
            dtype: DType::U8,
            shape: Shape::new(&[2, 3]).unwrap(),
            data: &x,
        })];
        let mut ys = [TensorMut {
            dtype: DType::U8,
            shape: Shape::new(&[3, 2]).unwrap(),
            data: &mut y,
        }];
        run_transpose(&perm(&[1, 0]), &xs, &mut ys).unwrap();
        assert_eq!(y, [0, 3, 1, 4, 2, 5]);
        let x: Vec<i64> = (0..6).collect();
        let mut y = [0i64; 6];
        let xs = [Some(TensorRef {
            dtype: DType::I64,
            shape: Shape::new(&[2, 3]).unwrap(),
            data: bytemuck::cast_slice(&x),
        })];
        let mut ys = [TensorMut {
            dtype: DType::I64,
            shape: Shape::new(&[3, 2]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_transpose(&perm(&[1, 0]), &xs, &mut ys).unwrap();
        assert_eq!(y, [0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn transpose_rejects_bad_perm_and_shape() {
        let x: Vec<i32> = (0..6).collect();
        assert!(transpose_i32(&x, &[2, 3], &[0, 0], &[2, 2]).is_err());
        assert!(transpose_i32(&x, &[2, 3], &[1, 2], &[3, 2]).is_err());
        assert!(transpose_i32(&x, &[2, 3], &[1, 0], &[2, 3]).is_err());
        assert!(transpose_i32(&x[..5], &[2, 3], &[1, 0], &[3, 2]).is_err());
    }

    #[test]
    fn strided_copy_bounds() {
        let src = [1u8, 2, 3, 4];
        let mut dst = [0u8; 3];
        assert!(strided_copy(&mut dst, &src, 1, &[3], &[2], 0).is_err());
        assert_eq!(strided_copy(&mut dst, &src, 1, &[3], &[-1], 3).unwrap(), 3);
        assert_eq!(dst, [4, 3, 2]);
        assert!(strided_copy(&mut dst, &src, 1, &[3], &[-1], 1).is_err());
    }
}
