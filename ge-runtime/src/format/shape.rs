//! Fixed-capacity static shapes: no heap, copyable, at most [`MAX_RANK`] dimensions.

/// The largest rank a tensor may have in a compiled model.
pub const MAX_RANK: usize = 8;

/// A static tensor shape of rank ≤ [`MAX_RANK`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Shape {
    rank: u8,
    dims: [usize; MAX_RANK],
}

impl Shape {
    /// A shape from dimensions; `None` if the rank exceeds [`MAX_RANK`].
    pub fn new(dims: &[usize]) -> Option<Shape> {
        if dims.len() > MAX_RANK {
            return None;
        }
        let mut s = Shape {
            rank: dims.len() as u8,
            dims: [0; MAX_RANK],
        };
        s.dims[..dims.len()].copy_from_slice(dims);
        Some(s)
    }

    /// The scalar shape `[]`.
    pub const fn scalar() -> Shape {
        Shape {
            rank: 0,
            dims: [0; MAX_RANK],
        }
    }

    /// Dimensions, outermost first.
    pub fn dims(&self) -> &[usize] {
        &self.dims[..self.rank as usize]
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.rank as usize
    }

    /// Number of elements, or `None` on overflow.
    pub fn checked_numel(&self) -> Option<usize> {
        self.dims()
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
    }

    /// Number of elements (saturating; shapes in a validated model never overflow).
    pub fn numel(&self) -> usize {
        self.checked_numel().unwrap_or(usize::MAX)
    }

    /// Dimension `i`, or 1 when `i` is out of range.
    pub fn dim(&self, i: usize) -> usize {
        if i < self.rank() { self.dims[i] } else { 1 }
    }

    /// Row-major (C order) element strides.
    pub fn strides(&self) -> [usize; MAX_RANK] {
        let mut s = [0usize; MAX_RANK];
        let mut acc = 1usize;
        for i in (0..self.rank()).rev() {
            s[i] = acc;
            acc = acc.saturating_mul(self.dims[i]);
        }
        s
    }
}

impl core::fmt::Debug for Shape {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.dims()).finish()
    }
}
