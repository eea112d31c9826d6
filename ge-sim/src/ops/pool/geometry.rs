//! A pooling window's geometry: per-axis extents, strides, dilations and pads normalized to
//! three spatial axes, and the kind and layout a task asks for.

use super::*;

/// Per-axis window geometry.
#[derive(Clone, Copy, Default)]
pub(crate) struct Axis {
    pub(crate) inp: usize,
    pub(crate) out: usize,
    pub(crate) k: usize,
    pub(crate) s: usize,
    pub(crate) d: usize,
    pub(crate) pb: usize,
    pub(crate) pe: usize,
}

impl Axis {
    /// Taps `t` of window `o` inside the input: `[lo, hi)`, and the count of taps inside the
    /// padded extent.
    pub(crate) fn taps(&self, o: usize) -> (usize, usize, usize) {
        let start = (o * self.s) as i64 - self.pb as i64;
        let d = self.d as i64;
        let k = self.k as i64;
        if cfg!(feature = "std") && d == 1 {
            // Undilated windows (nearly all): the same counts without the three divisions
            // (~100 cycles a call, once per output row and border output). Host builds
            // only: firmware keeps the one general form (its flash budget).
            let inside = |limit: i64| (limit - start).clamp(0, k);
            let lo = (-start).clamp(0, k) as usize;
            let hi = inside(self.inp as i64) as usize;
            let padded = inside(self.inp as i64 + self.pe as i64) as usize;
            return (lo, hi.max(lo), padded);
        }
        // first t with start + t·d >= 0
        let lo = if start >= 0 { 0 } else { (-start + d - 1) / d };
        // taps with start + t·d < limit
        let below = |limit: i64| {
            if limit <= start {
                0
            } else {
                ((limit - start + d - 1) / d).min(k)
            }
        };
        let hi = below(self.inp as i64);
        let padded = below(self.inp as i64 + self.pe as i64);
        let lo = lo.min(k) as usize;
        (lo, (hi as usize).max(lo), padded as usize)
    }

    /// The interior outputs `[lo, hi)`: windows whose first tap is at or after 0 and last
    /// tap before `inp`.
    pub(crate) fn interior(&self) -> (usize, usize) {
        let span = (self.k - 1) * self.d;
        let lo = self.pb.div_ceil(self.s).min(self.out);
        let hi = if self.inp + self.pb > span {
            ((self.inp + self.pb - span - 1) / self.s + 1).min(self.out)
        } else {
            0
        };
        (lo, hi.max(lo))
    }

    pub(crate) fn index(&self, o: usize, t: usize) -> usize {
        o * self.s + t * self.d - self.pb
    }
}

/// Whether the pool reads blocked channels; an error for a layout this build cannot run
/// (firmware runs plain layouts only: the compiler blocks for host builds).
/// `blocked` is the one blocked layout the pool kind takes (windowed: `Blocked`; global:
/// `BlockedToPlain`).
pub(super) fn blocked(p: &PoolParams, blocked: ChannelLayout) -> Result<bool, KernelError> {
    if !cfg!(feature = "std") {
        // Firmware's flash budget: its blobs are compiled with the binary, plain.
        return Ok(false);
    }
    match p.channel_layout() {
        Some(ChannelLayout::Plain) => Ok(false),
        Some(l) if l == blocked && cfg!(feature = "std") => Ok(true),
        _ => Err(KernelError::BadParams("pool: unsupported channel layout")),
    }
}

pub(super) fn pool_kind(p: &PoolParams) -> Result<PoolKind, KernelError> {
    let kind = PoolKind::from_u32(p.kind).ok_or(KernelError::BadParams("unknown pool kind"))?;
    if kind == PoolKind::Lp && !(p.p.is_finite() && p.p > 0.0) {
        return Err(KernelError::BadParams("Lp pool exponent must be positive"));
    }
    Ok(kind)
}

/// Validates the window parameters against the shapes; returns the axes normalized to 3.
pub(super) fn geometry(p: &PoolParams, xs: &Shape, ys: &Shape) -> Result<[Axis; 3], KernelError> {
    let sp = p.rank();
    if !(1..=3).contains(&sp) {
        return Err(KernelError::BadParams(
            "pool spatial rank must be 1, 2 or 3",
        ));
    }
    if xs.rank() != sp + 2 || ys.rank() != sp + 2 || xs.dims()[..2] != ys.dims()[..2] {
        return Err(KernelError::Shape("pool input/output shapes disagree"));
    }
    let unit = Axis {
        inp: 1,
        out: 1,
        k: 1,
        s: 1,
        d: 1,
        pb: 0,
        pe: 0,
    };
    let mut ax = [unit; 3];
    for i in 0..sp {
        let a = Axis {
            inp: xs.dims()[2 + i],
            out: ys.dims()[2 + i],
            k: p.kernel[i] as usize,
            s: p.stride[i] as usize,
            d: p.dilation[i] as usize,
            pb: p.pad_begin[i] as usize,
            pe: p.pad_end[i] as usize,
        };
        if a.k == 0 || a.s == 0 || a.d == 0 {
            return Err(KernelError::BadParams(
                "pool kernel, stride and dilation must be positive",
            ));
        }
        // The output size must be the floor- or ceil-mode size.
        let total = a.inp as u128 + a.pb as u128 + a.pe as u128;
        let span = a.d as u128 * (a.k as u128 - 1) + 1;
        if total < span {
            return Err(KernelError::Shape(
                "pool window larger than the padded input",
            ));
        }
        let floor = (total - span) / a.s as u128 + 1;
        let mut ceil = (total - span).div_ceil(a.s as u128) + 1;
        if (ceil - 1) * a.s as u128 >= a.inp as u128 + a.pb as u128 {
            ceil -= 1;
        }
        let o = a.out as u128;
        if o != floor && o != ceil {
            return Err(KernelError::Shape(
                "pool output size does not match the parameters",
            ));
        }
        ax[3 - sp + i] = a;
    }
    Ok(ax)
}
