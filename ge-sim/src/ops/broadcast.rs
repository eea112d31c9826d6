//! Numpy broadcasting without allocation: per-input strides aligned to the output's rank, and
//! an odometer that walks the output in row-major order while tracking each input's offset.
//! [`broadcast2`] and [`accumulate`] are the two-operand loops the binary, variadic and
//! in-place kernels share.

use ge_runtime::format::{MAX_RANK, Shape};

use super::KernelError;

/// Element strides of `input` as seen from an output of shape `out`: 0 on broadcast axes.
/// Errors if `input` cannot broadcast to `out`.
pub fn broadcast_strides(input: &Shape, out: &Shape) -> Result<[usize; MAX_RANK], KernelError> {
    let (ir, or) = (input.rank(), out.rank());
    if ir > or {
        return Err(KernelError::Shape(
            "input rank exceeds output rank in broadcast",
        ));
    }
    let own = input.strides();
    let mut s = [0usize; MAX_RANK];
    for (i, (&d, &own_stride)) in input.dims().iter().zip(&own).enumerate() {
        let o = or - ir + i;
        if d == out.dims()[o] {
            s[o] = if d == 1 { 0 } else { own_stride };
        } else if d == 1 {
            s[o] = 0;
        } else {
            return Err(KernelError::Shape("shapes do not broadcast"));
        }
    }
    Ok(s)
}

/// Walks an output shape in row-major order, yielding for each element the offsets of up to
/// `N` inputs. `N` is small (1 to 3), so the state is a few arrays on the stack.
pub struct Odometer<const N: usize> {
    dims: [usize; MAX_RANK],
    rank: usize,
    strides: [[usize; MAX_RANK]; N],
    index: [usize; MAX_RANK],
    offsets: [usize; N],
}

impl<const N: usize> Odometer<N> {
    /// Starts at element 0 of `out` with per-input `strides` (from [`broadcast_strides`]).
    /// Size-1 axes are dropped and neighbours every input walks as one are merged, so the
    /// inner rows are as long as possible (`[N, C, H, W] · [C, 1, 1]` has rows of `H·W`).
    pub fn new(out: &Shape, strides: [[usize; MAX_RANK]; N]) -> Self {
        let mut dims = [1usize; MAX_RANK];
        let mut merged = [[0usize; MAX_RANK]; N];
        let mut rank = 0;
        for (axis, &d) in out.dims().iter().enumerate() {
            if d == 1 {
                continue;
            }
            let joins = rank > 0 && (0..N).all(|k| merged[k][rank - 1] == strides[k][axis] * d);
            if !joins {
                rank += 1;
            }
            dims[rank - 1] = if joins { dims[rank - 1] * d } else { d };
            for k in 0..N {
                merged[k][rank - 1] = strides[k][axis];
            }
        }
        Odometer {
            dims,
            rank,
            strides: merged,
            index: [0; MAX_RANK],
            offsets: [0; N],
        }
    }

    /// Length of the innermost axis (1 for scalars).
    pub fn inner_len(&self) -> usize {
        if self.rank == 0 {
            1
        } else {
            self.dims[self.rank - 1]
        }
    }

    /// Innermost-axis stride of input `k` (0 when broadcast along it).
    pub fn inner_stride(&self, k: usize) -> usize {
        if self.rank == 0 {
            0
        } else {
            self.strides[k][self.rank - 1]
        }
    }

    /// Current offsets of the inputs at the start of the current inner row.
    pub fn offsets(&self) -> [usize; N] {
        self.offsets
    }

    /// Merges the two innermost axes into one row when each input either walks them as one
    /// or repeats the innermost axis's values along the other (a blocked tensor's 16
    /// channels against per-channel operands, which otherwise walk rows of 16): returns the
    /// repeated row's length and which inputs repeat it (their inner stride becomes 1,
    /// element `i` of a row at `i % period`), or `None` (nothing changed). O(N).
    pub fn merge_repeated_rows(&mut self) -> Option<(usize, [bool; N])> {
        if self.rank < 2 {
            return None;
        }
        let (outer, inner) = (self.rank - 2, self.rank - 1);
        let period = self.dims[inner];
        let mut repeats = [false; N];
        for (r, s) in repeats.iter_mut().zip(&self.strides) {
            let (a, b) = (s[outer], s[inner]);
            if a == 0 && b == 1 {
                *r = true;
            } else if a != b * period {
                return None;
            }
        }
        if !repeats.contains(&true) {
            return None;
        }
        self.dims[outer] *= period;
        for (s, &r) in self.strides.iter_mut().zip(&repeats) {
            s[outer] = if r { 1 } else { s[inner] };
        }
        self.rank -= 1;
        Some((period, repeats))
    }

    /// Advances to the start of the next inner row; false when the walk is done.
    pub fn next_row(&mut self) -> bool {
        if self.rank <= 1 {
            return false;
        }
        let mut axis = self.rank - 1;
        while axis > 0 {
            axis -= 1;
            self.index[axis] += 1;
            for k in 0..N {
                self.offsets[k] += self.strides[k][axis];
            }
            if self.index[axis] < self.dims[axis] {
                return true;
            }
            for k in 0..N {
                self.offsets[k] -= self.strides[k][axis] * self.dims[axis];
            }
            self.index[axis] = 0;
        }
        false
    }
}

/// Calls `row(out_start, offsets, inner_strides, len)` for each inner row of `out`, where
/// `offsets[k]` is input `k`'s element offset at the row start. Empty outputs call nothing.
pub fn for_each_row<const N: usize>(
    out: &Shape,
    inputs: [&Shape; N],
    mut row: impl FnMut(usize, [usize; N], [usize; N], usize),
) -> Result<(), KernelError> {
    let mut strides = [[0usize; MAX_RANK]; N];
    for k in 0..N {
        strides[k] = broadcast_strides(inputs[k], out)?;
    }
    if out.numel() == 0 {
        return Ok(());
    }
    let mut od = Odometer::new(out, strides);
    let len = od.inner_len();
    let mut inner = [0usize; N];
    for (k, s) in inner.iter_mut().enumerate() {
        *s = od.inner_stride(k);
    }
    let mut start = 0usize;
    loop {
        row(start, od.offsets(), inner, len);
        start += len;
        if !od.next_row() {
            break;
        }
    }
    Ok(())
}

pub(super) fn numel(s: &Shape) -> Result<usize, KernelError> {
    s.checked_numel()
        .ok_or(KernelError::Shape("element count overflows"))
}

pub(super) const OFFSET_ERR: KernelError = KernelError::Shape("broadcast offset out of range");

/// `out[i] = f(a[..], b[..])` with numpy broadcasting of `a` and `b` to `so`.
/// Fast paths for equal shapes and scalar operands; otherwise one inner row at a time.
pub fn broadcast2<A: Copy, B: Copy, O>(
    out: &mut [O],
    so: &Shape,
    a: &[A],
    sa: &Shape,
    b: &[B],
    sb: &Shape,
    f: impl Fn(A, B) -> O,
) -> Result<(), KernelError> {
    broadcast_strides(sa, so)?;
    broadcast_strides(sb, so)?;
    if a.len() != numel(sa)? || b.len() != numel(sb)? || out.len() != numel(so)? {
        return Err(KernelError::Shape("tensor data does not match its shape"));
    }
    let a_full = sa.dims() == so.dims();
    let b_full = sb.dims() == so.dims();
    match (a_full, b_full, a, b) {
        (true, true, _, _) => {
            for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                *o = f(x, y);
            }
            return Ok(());
        }
        (true, false, _, &[y]) => {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = f(x, y);
            }
            return Ok(());
        }
        (false, true, &[x], _) => {
            for (o, &y) in out.iter_mut().zip(b) {
                *o = f(x, y);
            }
            return Ok(());
        }
        _ => {}
    }
    let mut bad = false;
    for_each_row(so, [sa, sb], |start, [oa, ob], [ia, ib], len| {
        let Some(o) = out.get_mut(start..start + len) else {
            bad = true;
            return;
        };
        match (ia, ib) {
            (1, 1) => match (a.get(oa..oa + len), b.get(ob..ob + len)) {
                (Some(xa), Some(xb)) => {
                    for ((o, &x), &y) in o.iter_mut().zip(xa).zip(xb) {
                        *o = f(x, y);
                    }
                }
                _ => bad = true,
            },
            (0, 1) => match (a.get(oa), b.get(ob..ob + len)) {
                (Some(&x), Some(xb)) => {
                    for (o, &y) in o.iter_mut().zip(xb) {
                        *o = f(x, y);
                    }
                }
                _ => bad = true,
            },
            (1, 0) => match (a.get(oa..oa + len), b.get(ob)) {
                (Some(xa), Some(&y)) => {
                    for (o, &x) in o.iter_mut().zip(xa) {
                        *o = f(x, y);
                    }
                }
                _ => bad = true,
            },
            (0, 0) => match (a.get(oa), b.get(ob)) {
                (Some(&x), Some(&y)) => {
                    for o in o.iter_mut() {
                        *o = f(x, y);
                    }
                }
                _ => bad = true,
            },
            _ => bad = true,
        }
    })?;
    if bad { Err(OFFSET_ERR) } else { Ok(()) }
}

/// `out[i] = f(out[i], x[..])` with `x` broadcast to `out`'s shape `so`.
pub fn accumulate<T: Copy>(
    out: &mut [T],
    so: &Shape,
    x: &[T],
    sx: &Shape,
    f: impl Fn(T, T) -> T,
) -> Result<(), KernelError> {
    broadcast_strides(sx, so)?;
    if x.len() != numel(sx)? || out.len() != numel(so)? {
        return Err(KernelError::Shape("tensor data does not match its shape"));
    }
    if sx.dims() == so.dims() {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = f(*o, v);
        }
        return Ok(());
    }
    if let &[v] = x {
        for o in out.iter_mut() {
            *o = f(*o, v);
        }
        return Ok(());
    }
    let mut bad = false;
    for_each_row(so, [sx], |start, [ox], [ix], len| {
        let Some(o) = out.get_mut(start..start + len) else {
            bad = true;
            return;
        };
        if ix == 1 {
            match x.get(ox..ox + len) {
                Some(xs) => {
                    for (o, &v) in o.iter_mut().zip(xs) {
                        *o = f(*o, v);
                    }
                }
                None => bad = true,
            }
        } else {
            match x.get(ox) {
                Some(&v) => {
                    for o in o.iter_mut() {
                        *o = f(*o, v);
                    }
                }
                None => bad = true,
            }
        }
    })?;
    if bad { Err(OFFSET_ERR) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasts_row_and_column() {
        let out = Shape::new(&[2, 3]).unwrap();
        let a = Shape::new(&[2, 1]).unwrap();
        let b = Shape::new(&[3]).unwrap();
        let mut seen = [[0usize; 2]; 6];
        let mut n = 0;
        for_each_row(&out, [&a, &b], |start, offs, inner, len| {
            for i in 0..len {
                seen[start + i] = [offs[0] + i * inner[0], offs[1] + i * inner[1]];
                n += 1;
            }
        })
        .unwrap();
        assert_eq!(n, 6);
        assert_eq!(seen, [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]);
    }

    #[test]
    fn rejects_incompatible() {
        let out = Shape::new(&[2, 3]).unwrap();
        let a = Shape::new(&[2]).unwrap();
        assert!(broadcast_strides(&a, &out).is_err());
    }
}
