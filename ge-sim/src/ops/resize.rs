//! Resize: nearest, linear and cubic resampling with ONNX coordinate modes.
//!
//! Follows `onnx.reference` (opset 19): per axis, an output index maps to an input coordinate
//! with the coordinate transform (using the axis scale, and `scale · in` as the output width),
//! then to 1 (nearest), 2 (linear) or 4 (cubic) taps with weights; out-of-range taps clamp to the
//! edge (or, with `exclude_outside`, get weight 0 and the rest are renormalized). An axis with
//! scale 1, equal sizes and (for `tf_crop_and_resize`) the full ROI is the identity. The N-d
//! result is the separable product of the per-axis taps. With `tf_crop_and_resize`, a coordinate
//! outside `[0, in − 1]` on any axis yields `extrapolation_value`.
//!
//! Nearest works on any dtype (byte copies); linear and cubic on f32. The ROI is read as
//! `roi[axis]` (start) and `roi[MAX_RANK + axis]` (end), normalized coordinates.

use ge_runtime::format::{
    CoordTransform, DType, MAX_RANK, NearestMode, ResizeMode, ResizeParams, Shape, TensorMut,
    TensorRef,
};

use super::copy::checked_len;
use super::pad::fill_bytes;
use super::{KernelError, KernelResult, input, output};

#[derive(Clone, Copy)]
struct Cfg {
    mode: ResizeMode,
    coord: CoordTransform,
    nearest: NearestMode,
    cubic_a: f64,
    exclude_outside: bool,
}

#[derive(Clone, Copy, Default)]
struct AxisMap {
    inp: usize,
    out: usize,
    scale: f64,
    roi: (f64, f64),
    identity: bool,
}

/// Input taps of one output index along one axis.
#[derive(Clone, Copy, Default)]
struct Taps {
    n: usize,
    idx: [usize; 4],
    w: [f64; 4],
    extrap: bool,
}

/// True when the resize leaves axis `a` (extent `inp` in, `out` out) as it is: scale 1,
/// the same extent, and (tf_crop_and_resize) the whole of it as region of interest. The
/// compiler asks it too (which resizes run on blocked channels).
pub fn leaves_axis(p: &ResizeParams, a: usize, inp: usize, out: usize) -> bool {
    if a >= MAX_RANK {
        return false;
    }
    let full_roi = p.coord != CoordTransform::TfCropAndResize as u32
        || (approx_eq(p.roi[a] as f64, 0.0) && approx_eq(p.roi[MAX_RANK + a] as f64, 1.0));
    approx_eq(p.scales[a] as f64, 1.0) && inp == out && full_roi
}

fn approx_eq(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

impl AxisMap {
    /// Input coordinate of output index `o`, and whether it is extrapolated.
    fn x_ori(&self, o: usize, coord: CoordTransform) -> (f64, bool) {
        let (inp, out_int) = (self.inp as f64, self.out as f64);
        let out_w = self.scale * inp;
        let y = o as f64;
        let x = match coord {
            CoordTransform::HalfPixel => (y + 0.5) / self.scale - 0.5,
            CoordTransform::HalfPixelSymmetric => {
                let adjustment = out_int / out_w;
                let offset = inp / 2.0 * (1.0 - adjustment);
                offset + (y + 0.5) / self.scale - 0.5
            }
            CoordTransform::PytorchHalfPixel => {
                if approx_eq(out_w, 1.0) {
                    -0.5
                } else {
                    (y + 0.5) / self.scale - 0.5
                }
            }
            CoordTransform::AlignCorners => {
                if approx_eq(out_w, 1.0) {
                    0.0
                } else {
                    y * (inp - 1.0) / (out_w - 1.0)
                }
            }
            CoordTransform::Asymmetric => y / self.scale,
            CoordTransform::TfCropAndResize => {
                let (s, e) = self.roi;
                let x = if approx_eq(out_w, 1.0) {
                    (e - s) * (inp - 1.0) / 2.0
                } else {
                    y * (e - s) * (inp - 1.0) / (out_w - 1.0)
                };
                let x = x + s * (inp - 1.0);
                return (x, !(0.0..=inp - 1.0).contains(&x));
            }
        };
        (x, false)
    }

    fn clamp(&self, i: i64) -> usize {
        i.clamp(0, self.inp as i64 - 1) as usize
    }

    fn taps(&self, o: usize, cfg: &Cfg) -> Taps {
        let mut t = Taps::default();
        if self.identity {
            t.n = 1;
            t.idx[0] = o;
            t.w[0] = 1.0;
            return t;
        }
        let (x, extrap) = self.x_ori(o, cfg.coord);
        if extrap {
            t.extrap = true;
            return t;
        }
        let fl = libm::floor(x);
        let xi = fl as i64;
        let integer = x == fl;
        let r = x - fl;
        match cfg.mode {
            ResizeMode::Nearest => {
                let up = !integer
                    && match cfg.nearest {
                        NearestMode::RoundPreferFloor => r > 0.5,
                        NearestMode::RoundPreferCeil => r >= 0.5,
                        NearestMode::Floor => false,
                        NearestMode::Ceil => true,
                    };
                t.n = 1;
                t.idx[0] = self.clamp(xi + up as i64);
                t.w[0] = 1.0;
            }
            ResizeMode::Linear => {
                if integer {
                    t.n = 1;
                    t.idx[0] = self.clamp(xi);
                    t.w[0] = 1.0;
                } else {
                    t.n = 2;
                    t.idx = [self.clamp(xi), self.clamp(xi + 1), 0, 0];
                    t.w = [1.0 - r, r, 0.0, 0.0];
                }
            }
            ResizeMode::Cubic => {
                // ratio in (0, 1]: an integer coordinate uses ratio 1 with the window one left
                let (start, r) = if integer { (xi - 2, 1.0) } else { (xi - 1, r) };
                let a = cfg.cubic_a;
                let q = 1.0 - r;
                let mut w = [
                    ((a * (r + 1.0) - 5.0 * a) * (r + 1.0) + 8.0 * a) * (r + 1.0) - 4.0 * a,
                    ((a + 2.0) * r - (a + 3.0)) * r * r + 1.0,
                    ((a + 2.0) * q - (a + 3.0)) * q * q + 1.0,
                    ((a * (q + 1.0) - 5.0 * a) * (q + 1.0) + 8.0 * a) * (q + 1.0) - 4.0 * a,
                ];
                if cfg.exclude_outside {
                    for (j, wj) in w.iter_mut().enumerate() {
                        let i = start + j as i64;
                        if i < 0 || i >= self.inp as i64 {
                            *wj = 0.0;
                        }
                    }
                    let s: f64 = w.iter().sum();
                    let s = if s == 0.0 { 1.0 } else { s };
                    w.iter_mut().for_each(|v| *v /= s);
                }
                t.n = 4;
                for j in 0..4 {
                    t.idx[j] = self.clamp(start + j as i64);
                }
                t.w = w;
            }
        }
        t
    }
}

/// Source rows, interpolated along the last axis, that a linear/cubic resize keeps in its
/// workspace: the output rows that read a source row (four at a 2× upsample) interpolate it
/// once instead of each again.
const ROW_CACHE: usize = 4;

/// Workspace bytes of a resize: the row cache of a linear or cubic one (none for nearest).
pub fn resize_workspace_bytes(params: &[u8], outs: &[Shape]) -> usize {
    match (super::read_params::<ResizeParams>(params), outs.first()) {
        (Ok(p), Some(y)) if p.mode != ResizeMode::Nearest as u32 && y.rank() > 0 => ROW_CACHE
            .saturating_mul(y.dim(y.rank() - 1))
            .saturating_mul(4),
        _ => 0,
    }
}

/// Resize per `p` from the input to the output's shape (any rank; every axis may resample),
/// without a row cache.
pub fn run_resize(
    p: &ResizeParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    run_resize_with(p, ins, outs, &mut [])
}

/// [`run_resize`] with `ws` ([`resize_workspace_bytes`]) as its row cache; a shorter `ws`
/// runs without one. The values are the same either way (the same operations in the same
/// order).
pub fn run_resize_with(
    p: &ResizeParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let x = input(ins, 0, "resize input")?;
    let y = output(outs, 0, "resize output")?;
    let mode = ResizeMode::from_u32(p.mode).ok_or(KernelError::BadParams("unknown resize mode"))?;
    let coord = CoordTransform::from_u32(p.coord)
        .ok_or(KernelError::BadParams("unknown coordinate transform"))?;
    let nearest = if mode == ResizeMode::Nearest {
        NearestMode::from_u32(p.nearest).ok_or(KernelError::BadParams("unknown nearest mode"))?
    } else {
        NearestMode::RoundPreferFloor
    };
    let cfg = Cfg {
        mode,
        coord,
        nearest,
        cubic_a: p.cubic_coeff as f64,
        exclude_outside: p.exclude_outside != 0,
    };
    if x.dtype != y.dtype {
        return Err(KernelError::Shape("resize changes the dtype"));
    }
    let rank = x.shape.rank();
    if y.shape.rank() != rank {
        return Err(KernelError::Shape("resize changes the rank"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    let total = checked_len(&y.shape, y.dtype, y.data.len())?;
    if mode != ResizeMode::Nearest && x.dtype != DType::F32 {
        return Err(KernelError::UnsupportedDType(
            "linear/cubic resize is float32 only",
        ));
    }
    if rank == 0 {
        y.data.copy_from_slice(x.data);
        return Ok(());
    }
    let mut axes = [AxisMap::default(); MAX_RANK];
    for (a, axis) in axes.iter_mut().enumerate().take(rank) {
        let (inp, out) = (x.shape.dims()[a], y.shape.dims()[a]);
        let scale = p.scales[a] as f64;
        let roi = (p.roi[a] as f64, p.roi[MAX_RANK + a] as f64);
        let identity = leaves_axis(p, a, inp, out);
        if out > 0 && inp == 0 {
            return Err(KernelError::Shape(
                "resize of an empty axis to a non-empty one",
            ));
        }
        let usable = scale.is_finite() && scale > 0.0;
        if !identity && !usable {
            return Err(KernelError::BadParams("resize scale must be positive"));
        }
        *axis = AxisMap {
            inp,
            out,
            scale,
            roi,
            identity,
        };
    }
    if total == 0 {
        return Ok(());
    }
    let axes = &axes[..rank];
    let strides = x.shape.strides();
    if mode == ResizeMode::Nearest {
        nearest_any(x, y, axes, &strides, &cfg, p.extrapolation)?;
        return Ok(());
    }
    let xs = x.as_slice::<f32>()?;
    let ys = y.as_slice_mut::<f32>()?;
    let out = axes[rank - 1].out;
    let cache: &mut [f32] = match bytemuck::try_cast_slice_mut::<u8, f32>(ws) {
        Ok(c) if c.len() >= ROW_CACHE * out => &mut c[..ROW_CACHE * out],
        _ => &mut [],
    };
    interpolate(xs, ys, axes, &strides, &cfg, p.extrapolation, cache);
    Ok(())
}

/// Advances a row-major odometer over `axes[..n]`.
fn advance(index: &mut [usize; MAX_RANK], axes: &[AxisMap], n: usize) {
    let mut a = n;
    while a > 0 {
        a -= 1;
        index[a] += 1;
        if index[a] < axes[a].out {
            return;
        }
        index[a] = 0;
    }
}

/// Inner-axis columns whose taps are computed once per call (on the stack) instead of once per
/// row; columns past this are computed on the fly.
const CACHE: usize = 512;

/// Compact taps for the cache.
#[derive(Clone, Copy, Default)]
struct CTaps {
    n: u8,
    extrap: bool,
    idx: [u32; 4],
    w: [f32; 4],
}

impl CTaps {
    fn from(t: &Taps) -> CTaps {
        let mut c = CTaps {
            n: t.n as u8,
            extrap: t.extrap,
            ..CTaps::default()
        };
        for j in 0..t.n {
            c.idx[j] = t.idx[j] as u32;
            c.w[j] = t.w[j] as f32;
        }
        c
    }
}

/// The inner axis's taps, cached for the first [`CACHE`] columns.
struct InnerTaps<'a> {
    axis: AxisMap,
    cfg: &'a Cfg,
    cache: [CTaps; CACHE],
    cached: usize,
}

impl<'a> InnerTaps<'a> {
    fn new(axis: AxisMap, cfg: &'a Cfg) -> Self {
        let mut it = InnerTaps {
            axis,
            cfg,
            cache: [CTaps::default(); CACHE],
            cached: 0,
        };
        // indices fit u32 when the input axis does
        if axis.inp <= u32::MAX as usize {
            it.cached = axis.out.min(CACHE);
            for o in 0..it.cached {
                it.cache[o] = CTaps::from(&axis.taps(o, cfg));
            }
        }
        it
    }

    #[inline]
    fn get(&self, o: usize) -> CTaps {
        if o < self.cached {
            self.cache[o]
        } else {
            CTaps::from(&self.axis.taps(o, self.cfg))
        }
    }
}

fn nearest_any(
    x: &TensorRef<'_>,
    y: &mut TensorMut<'_>,
    axes: &[AxisMap],
    strides: &[usize; MAX_RANK],
    cfg: &Cfg,
    extrap: f32,
) -> Result<(), KernelError> {
    match x.dtype.size() {
        1 => nearest_fixed::<1>(x, y, axes, strides, cfg, extrap),
        2 => nearest_fixed::<2>(x, y, axes, strides, cfg, extrap),
        4 => nearest_fixed::<4>(x, y, axes, strides, cfg, extrap),
        _ => nearest_fixed::<8>(x, y, axes, strides, cfg, extrap),
    }
}

fn nearest_fixed<const ES: usize>(
    x: &TensorRef<'_>,
    y: &mut TensorMut<'_>,
    axes: &[AxisMap],
    strides: &[usize; MAX_RANK],
    cfg: &Cfg,
    extrap: f32,
) -> Result<(), KernelError> {
    if x.dtype.size() != ES {
        return Err(KernelError::UnsupportedDType("resize element size"));
    }
    let mut fill = [0u8; ES];
    fill.copy_from_slice(&fill_bytes(extrap as f64, x.dtype)[..ES]);
    let (src, _) = x.data.as_chunks::<ES>();
    let (dst, _) = y.data.as_chunks_mut::<ES>();
    let last = axes.len() - 1;
    let inner = InnerTaps::new(axes[last], cfg);
    let out = inner.axis.out;
    if out == 0 {
        return Ok(());
    }
    // A row with no extrapolated column gathers through a plain index table.
    let mut table = [0u32; CACHE];
    let gather = out <= inner.cached && {
        let mut inside = true;
        for (o, t) in table.iter_mut().enumerate().take(out) {
            let c = inner.get(o);
            inside &= !c.extrap;
            *t = c.idx[0];
        }
        inside
    };
    // The row axis (the last outer one) moves every row: its offsets come from a table
    // (`u32::MAX`: extrapolated); the axes above it only when it wraps. A blocked tensor
    // viewed as `[N, C/16, H, W, 16]` has rows of 16 values, where a coordinate transform
    // per axis per row cost more than the copy.
    let row_axis = last.checked_sub(1);
    let mut row_offsets = [u32::MAX; CACHE];
    let tabled = row_axis.is_some_and(|a| {
        let fits =
            axes[a].out <= CACHE && (axes[a].inp.saturating_mul(strides[a])) < u32::MAX as usize;
        if fits {
            for (o, off) in row_offsets.iter_mut().enumerate().take(axes[a].out) {
                let t = axes[a].taps(o, cfg);
                if !t.extrap {
                    *off = (t.idx[0] * strides[a]) as u32;
                }
            }
        }
        fits
    });
    let mut index = [0usize; MAX_RANK];
    // Offset of the axes above the row axis (`None`: extrapolated).
    let mut upper: Option<usize> = Some(0);
    // The source row of the row before: an upsampled row repeats it (a 2× nearest resize
    // copies every other row instead of gathering it again).
    let mut prev: Option<usize> = None;
    for r in 0..dst.len() / out {
        let (done, rest) = dst.split_at_mut(r * out);
        let row = &mut rest[..out];
        let base = match row_axis {
            None => Some(0),
            Some(ra) => {
                // Every row's index starts at 0 on the row axis, the first row's too.
                if index[ra] == 0 {
                    upper = Some(0);
                    for a in 0..ra {
                        let t = axes[a].taps(index[a], cfg);
                        upper = upper
                            .filter(|_| !t.extrap)
                            .map(|b| b + t.idx[0] * strides[a]);
                    }
                }
                let own = if tabled {
                    let off = row_offsets[index[ra]];
                    (off != u32::MAX).then_some(off as usize)
                } else {
                    let t = axes[ra].taps(index[ra], cfg);
                    (!t.extrap).then_some(t.idx[0] * strides[ra])
                };
                upper.zip(own).map(|(u, o)| u + o)
            }
        };
        advance(&mut index, axes, last);
        let Some(b) = base else {
            row.fill(fill);
            prev = None;
            continue;
        };
        if prev == Some(b) {
            row.copy_from_slice(&done[(r - 1) * out..]);
            continue;
        }
        prev = Some(b);
        if inner.axis.identity {
            row.copy_from_slice(&src[b..b + out]);
            continue;
        }
        let srow = &src[b..b + inner.axis.inp];
        if gather {
            for (e, &i) in row.iter_mut().zip(&table[..out]) {
                *e = srow[i as usize];
            }
            continue;
        }
        for (o, e) in row.iter_mut().enumerate() {
            let t = inner.get(o);
            *e = if t.extrap {
                fill
            } else {
                srow[t.idx[0] as usize]
            };
        }
    }
    Ok(())
}

/// Linear / cubic: each output row is the weighted sum, over the tap combinations of the
/// outer axes, of the inner axis interpolated along the selected input rows.
/// Linear/cubic interpolation: per output row, the weighted sum over the outer axes' taps of
/// source rows interpolated along the last axis. `cache` (empty, or [`ROW_CACHE`] rows of
/// the output's last axis) keeps interpolated source rows by offset, round robin.
fn interpolate(
    x: &[f32],
    y: &mut [f32],
    axes: &[AxisMap],
    strides: &[usize; MAX_RANK],
    cfg: &Cfg,
    extrap: f32,
    cache: &mut [f32],
) {
    let last = axes.len() - 1;
    let inner = InnerTaps::new(axes[last], cfg);
    let (inp, identity) = (inner.axis.inp, inner.axis.identity);
    let out = inner.axis.out;
    let mut keys = [usize::MAX; ROW_CACHE];
    let mut next = 0usize;
    let mut index = [0usize; MAX_RANK];
    for row in y.chunks_exact_mut(inner.axis.out) {
        let mut taps = [Taps::default(); MAX_RANK];
        let mut extrapolated = false;
        for a in 0..last {
            taps[a] = axes[a].taps(index[a], cfg);
            extrapolated |= taps[a].extrap;
        }
        advance(&mut index, axes, last);
        if extrapolated {
            row.fill(extrap);
            continue;
        }
        row.fill(0.0);
        // odometer over the tap combinations of the outer axes
        let mut pick = [0usize; MAX_RANK];
        loop {
            let mut off = 0usize;
            let mut w = 1.0f64;
            for a in 0..last {
                off += taps[a].idx[pick[a]] * strides[a];
                w *= taps[a].w[pick[a]];
            }
            let src = &x[off..off + inp];
            let wf = w as f32;
            // The source row along the last axis: as it is, interpolated (cached), or
            // interpolated here (no cache).
            let horizontal = |o: usize| {
                let t = inner.get(o);
                let mut v = 0.0f32;
                for j in 0..t.n as usize {
                    v += t.w[j] * src[t.idx[j] as usize];
                }
                v
            };
            if identity {
                for (d, s) in row.iter_mut().zip(src) {
                    *d += wf * *s;
                }
            } else if cache.is_empty() {
                for (o, d) in row.iter_mut().enumerate() {
                    *d += wf * horizontal(o);
                }
            } else {
                let slot = match keys.iter().position(|&k| k == off) {
                    Some(s) => s,
                    None => {
                        let s = next;
                        next = (next + 1) % ROW_CACHE;
                        keys[s] = off;
                        for (o, v) in cache[s * out..(s + 1) * out].iter_mut().enumerate() {
                            *v = horizontal(o);
                        }
                        s
                    }
                };
                for (d, v) in row.iter_mut().zip(&cache[slot * out..(slot + 1) * out]) {
                    *d += wf * *v;
                }
            }
            let mut a = last;
            let mut done = true;
            while a > 0 {
                a -= 1;
                pick[a] += 1;
                if pick[a] < taps[a].n {
                    done = false;
                    break;
                }
                pick[a] = 0;
            }
            if done {
                break;
            }
        }
        if !identity && cfg.coord == CoordTransform::TfCropAndResize {
            for (o, d) in row.iter_mut().enumerate() {
                if inner.get(o).extrap {
                    *d = extrap;
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::excessive_precision)]
mod tests {
    extern crate std;
    use super::*;
    use ge_runtime::format::Shape;
    use std::vec::Vec;

    #[allow(clippy::too_many_arguments)]
    fn resize(
        x: &[f32],
        xd: &[usize],
        yd: &[usize],
        scales: &[f32],
        mode: ResizeMode,
        coord: CoordTransform,
        nearest: NearestMode,
        a: f32,
        excl: bool,
        roi: &[f32],
        extrap: f32,
    ) -> Vec<f32> {
        let mut p = ResizeParams {
            mode: mode as u32,
            coord: coord as u32,
            nearest: nearest as u32,
            exclude_outside: excl as u32,
            cubic_coeff: a,
            extrapolation: extrap,
            scales: [1.0; MAX_RANK],
            roi: [0.0; 2 * MAX_RANK],
        };
        p.scales[..scales.len()].copy_from_slice(scales);
        let r = xd.len();
        for i in 0..r {
            p.roi[MAX_RANK + i] = 1.0;
        }
        if !roi.is_empty() {
            p.roi[..r].copy_from_slice(&roi[..r]);
            p.roi[MAX_RANK..MAX_RANK + r].copy_from_slice(&roi[r..]);
        }
        let mut y = std::vec![0.0f32; yd.iter().product()];
        let ins = [Some(TensorRef {
            dtype: DType::F32,
            shape: Shape::new(xd).unwrap(),
            data: bytemuck::cast_slice(x),
        })];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(yd).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_resize(&p, &ins, &mut outs).unwrap();
        // With the row cache: bitwise the same values.
        let mut cached = std::vec![0.0f32; y.len()];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(yd).unwrap(),
            data: bytemuck::cast_slice_mut(&mut cached),
        }];
        let pb = bytemuck::bytes_of(&p);
        let bytes = resize_workspace_bytes(pb, &[Shape::new(yd).unwrap()]);
        let mut ws = std::vec![0u32; bytes / 4];
        run_resize_with(&p, &ins, &mut outs, bytemuck::cast_slice_mut(&mut ws)).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&cached),
            bits(&y),
            "{mode:?} {coord:?} {xd:?} → {yd:?}"
        );
        y
    }

    fn close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
                "\n got {a:?}\nwant {b:?}"
            );
        }
    }

    const X4: [f32; 16] = [
        1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12., 13., 14., 15., 16.,
    ];
    use CoordTransform as C;
    use NearestMode as N;
    use ResizeMode as M;

    fn lin(x: &[f32], xd: &[usize], yd: &[usize], sc: &[f32], coord: C) -> Vec<f32> {
        resize(
            x,
            xd,
            yd,
            sc,
            M::Linear,
            coord,
            N::RoundPreferFloor,
            -0.75,
            false,
            &[],
            0.0,
        )
    }

    // Expected values below are from onnx.reference (opset 19), cross-checked with onnxruntime.

    #[test]
    fn linear_modes() {
        let x2 = [1.0f32, 2., 3., 4.];
        close(
            &lin(
                &X4,
                &[1, 1, 4, 4],
                &[1, 1, 2, 2],
                &[1., 1., 0.6, 0.6],
                C::HalfPixel,
            ),
            &[2.6666665, 4.333333, 9.333333, 10.999999],
        );
        close(
            &lin(
                &x2,
                &[1, 1, 2, 2],
                &[1, 1, 4, 4],
                &[1., 1., 2., 2.],
                C::AlignCorners,
            ),
            &[
                1.0, 1.3333334, 1.6666666, 2.0, 1.6666666, 2.0, 2.3333333, 2.6666667, 2.3333333,
                2.6666667, 3.0, 3.3333333, 3.0, 3.3333333, 3.6666667, 4.0,
            ],
        );
        close(
            &lin(
                &x2,
                &[1, 1, 2, 2],
                &[1, 1, 4, 4],
                &[1., 1., 2., 2.],
                C::HalfPixel,
            ),
            &[
                1.0, 1.25, 1.75, 2.0, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3.0, 3.25, 3.75,
                4.0,
            ],
        );
        close(
            &lin(
                &X4,
                &[1, 1, 4, 4],
                &[1, 1, 3, 1],
                &[1., 1., 0.75, 0.25],
                C::PytorchHalfPixel,
            ),
            &[1.6666666, 7.0, 12.333333],
        );
        close(
            &lin(
                &X4,
                &[1, 1, 4, 4],
                &[1, 1, 2, 2],
                &[1., 1., 0.6, 0.55],
                C::HalfPixelSymmetric,
            ),
            &[4.257576, 6.0757575, 10.924242, 12.742424],
        );
        // a non-spatial axis (channels) resampled
        let x: Vec<f32> = (0..12).map(|v| v as f32).collect();
        close(
            &lin(
                &x,
                &[1, 3, 2, 2],
                &[1, 6, 2, 2],
                &[1., 2., 1., 1.],
                C::Asymmetric,
            ),
            &[
                0., 1., 2., 3., 2., 3., 4., 5., 4., 5., 6., 7., 6., 7., 8., 9., 8., 9., 10., 11.,
                8., 9., 10., 11.,
            ],
        );
    }

    #[test]
    fn trilinear() {
        let x: Vec<f32> = (0..8).map(|v| (v as f32).powf(1.5)).collect();
        let want = [
            0.0, 0.1, 0.5, 0.9, 1.0, 0.70710677, 0.8412999, 1.3780725, 1.914845, 2.0490382,
            2.1213202, 2.3238997, 3.1342175, 3.944535, 4.1471148, 2.828427, 3.0651996, 4.01229,
            4.95938, 5.1961527, 4.0, 4.209017, 5.045085, 5.881153, 6.09017, 5.1906705, 5.4248214,
            6.361425, 7.298028, 7.532179, 7.572012, 7.8564305, 8.994104, 10.131778, 10.416197,
            8.762683, 9.072235, 10.310444, 11.548653, 11.858206, 8.0, 8.318034, 9.59017, 10.862306,
            11.18034, 9.674234, 10.008343, 11.344777, 12.681211, 13.01532, 13.022704, 13.388962,
            14.853992, 16.319021, 16.685278, 14.696939, 15.07927, 16.608599, 18.137926, 18.520258,
        ];
        close(
            &lin(
                &x,
                &[1, 1, 2, 2, 2],
                &[1, 1, 3, 4, 5],
                &[1., 1., 1.5, 2., 2.5],
                C::HalfPixel,
            ),
            &want,
        );
    }

    #[test]
    fn cubic_modes() {
        let cub = |yd: &[usize], sc: &[f32], coord, a, excl| {
            resize(
                &X4,
                &[1, 1, 4, 4],
                yd,
                sc,
                M::Cubic,
                coord,
                N::RoundPreferFloor,
                a,
                excl,
                &[],
                0.0,
            )
        };
        close(
            &cub(
                &[1, 1, 3, 3],
                &[1., 1., 0.8, 0.8],
                C::HalfPixel,
                -0.75,
                false,
            ),
            &[
                1.4711914, 2.78125, 4.0825195, 6.7114258, 8.021484, 9.322754, 11.916504,
                13.2265625, 14.527831,
            ],
        );
        let up = cub(
            &[1, 1, 8, 8],
            &[1., 1., 2., 2.],
            C::Asymmetric,
            -0.75,
            false,
        );
        close(
            &up[..16],
            &[
                1.0, 1.40625, 2.0, 2.5, 3.0, 3.59375, 4.0, 4.09375, 2.625, 3.03125, 3.625, 4.125,
                4.625, 5.21875, 5.625, 5.71875,
            ],
        );
        close(
            &up[56..],
            &[
                13.375, 13.78125, 14.375, 14.875, 15.375, 15.96875, 16.375, 16.46875,
            ],
        );
        let ex = cub(&[1, 1, 8, 8], &[1., 1., 2., 2.], C::HalfPixel, -0.5, true);
        close(
            &ex[..8],
            &[
                0.5588235, 0.81494206, 1.3569825, 1.8970588, 2.3970587, 2.9371352, 3.4791756,
                3.735294,
            ],
        );
        close(
            &ex[24..32],
            &[
                5.9117646, 6.1678834, 6.7099237, 7.25, 7.75, 8.290076, 8.832117, 9.088235,
            ],
        );
        close(
            &ex[56..],
            &[
                13.264706, 13.520824, 14.062865, 14.602942, 15.102942, 15.643018, 16.185059,
                16.441177,
            ],
        );
        let x = [0.0f32, 1., 4., 9., 16., 25.];
        close(
            &resize(
                &x,
                &[1, 6],
                &[1, 9],
                &[1., 1.5],
                M::Cubic,
                C::AlignCorners,
                N::RoundPreferFloor,
                -0.75,
                false,
                &[],
                0.0,
            ),
            &[
                0.0,
                0.31005859375,
                1.609375,
                3.337890625,
                6.125,
                9.998046875,
                13.640625,
                20.01220703125,
                25.0,
            ],
        );
    }

    #[test]
    fn nearest_modes() {
        let x2 = [1.0f32, 2., 3., 4.];
        let near = |x: &[f32], xd: &[usize], yd: &[usize], sc: &[f32], coord, nm| {
            resize(x, xd, yd, sc, M::Nearest, coord, nm, -0.75, false, &[], 0.0)
        };
        close(
            &near(
                &x2,
                &[1, 1, 2, 2],
                &[1, 1, 4, 6],
                &[1., 1., 2., 3.],
                C::HalfPixel,
                N::RoundPreferFloor,
            ),
            &[
                1., 1., 1., 2., 2., 2., 1., 1., 1., 2., 2., 2., 3., 3., 3., 4., 4., 4., 3., 3., 3.,
                4., 4., 4.,
            ],
        );
        close(
            &near(
                &X4,
                &[1, 1, 4, 4],
                &[1, 1, 2, 2],
                &[1., 1., 0.6, 0.6],
                C::Asymmetric,
                N::Ceil,
            ),
            &[1., 3., 9., 11.],
        );
        let y = near(
            &X4,
            &[1, 1, 4, 4],
            &[1, 1, 7, 6],
            &[1., 1., 1.75, 1.5],
            C::AlignCorners,
            N::RoundPreferCeil,
        );
        close(&y[..12], &[1., 2., 2., 3., 3., 4., 5., 6., 6., 7., 7., 8.]);
        close(&y[36..], &[13., 14., 14., 15., 15., 16.]);
        // nearest on int64 data
        let xi = [1i64, 2, 3, 4];
        let mut yi = [0i64; 8];
        let mut p = ResizeParams {
            mode: M::Nearest as u32,
            coord: C::Asymmetric as u32,
            nearest: N::Floor as u32,
            exclude_outside: 0,
            cubic_coeff: -0.75,
            extrapolation: 0.0,
            scales: [1.0; MAX_RANK],
            roi: [0.0; 2 * MAX_RANK],
        };
        p.scales[1] = 2.0;
        let ins = [Some(TensorRef {
            dtype: DType::I64,
            shape: Shape::new(&[2, 2]).unwrap(),
            data: bytemuck::cast_slice(&xi),
        })];
        let mut outs = [TensorMut {
            dtype: DType::I64,
            shape: Shape::new(&[2, 4]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut yi),
        }];
        run_resize(&p, &ins, &mut outs).unwrap();
        assert_eq!(yi, [1, 1, 2, 2, 3, 3, 4, 4]);
        // linear on int64 is refused
        p.mode = M::Linear as u32;
        let mut outs = [TensorMut {
            dtype: DType::I64,
            shape: Shape::new(&[2, 4]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut yi),
        }];
        assert!(run_resize(&p, &ins, &mut outs).is_err());
    }

    #[test]
    fn tf_crop_and_resize() {
        let roi = [0., 0., 0.4, 0.6, 1., 1., 0.6, 0.8];
        let tf = |roi: &[f32], ex| {
            resize(
                &X4,
                &[1, 1, 4, 4],
                &[1, 1, 3, 3],
                &[1., 1., 0.75, 0.75],
                M::Linear,
                C::TfCropAndResize,
                N::RoundPreferFloor,
                -0.75,
                false,
                roi,
                ex,
            )
        };
        close(
            &tf(&roi, 0.0),
            &[7.6, 7.9, 8.2, 8.8, 9.1, 9.4, 10.0, 10.3, 10.6],
        );
        let roi = [0., 0., 0.4, 0.6, 1., 1., 1.2, 1.7];
        close(
            &tf(&roi, 10.0),
            &[7.6, 10.0, 10.0, 12.4, 10.0, 10.0, 10.0, 10.0, 10.0],
        );
    }

    /// Random descriptions must give a result or an error, never a panic.
    #[test]
    fn malformed_never_panics() {
        let mut seed = 9u32;
        let mut r = |n: u32| {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            ((seed >> 8) % n.max(1)) as usize
        };
        let mut oks = 0;
        for _ in 0..3000 {
            let rank = r(4) + usize::from(r(8) != 0);
            let xd: Vec<usize> = (0..rank).map(|_| r(5)).collect();
            let yd: Vec<usize> = if r(8) == 0 {
                (0..rank).map(|_| r(5)).collect()
            } else {
                xd.iter().map(|&d| d * (1 + r(3)) / (1 + r(2))).collect()
            };
            let mut p = ResizeParams {
                mode: r(4) as u32,
                coord: r(7) as u32,
                nearest: r(5) as u32,
                exclude_outside: r(2) as u32,
                cubic_coeff: -0.75,
                extrapolation: 3.0,
                scales: [1.0; MAX_RANK],
                roi: [0.0; 2 * MAX_RANK],
            };
            for a in 0..rank {
                p.scales[a] = if r(6) == 0 {
                    [0.0, -1.0, f32::NAN, f32::INFINITY, 0.5][r(5)]
                } else if xd[a] > 0 {
                    yd[a] as f32 / xd[a] as f32
                } else {
                    1.0
                };
                p.roi[a] = r(5) as f32 * 0.4 - 0.4;
                p.roi[MAX_RANK + a] = r(5) as f32 * 0.4;
            }
            let dt = [DType::F32, DType::I64, DType::U8][r(3)];
            let (xs, ys) = (Shape::new(&xd).unwrap(), Shape::new(&yd).unwrap());
            let xb = std::vec![0u64; xs.numel()];
            let mut yb = std::vec![0u64; ys.numel()];
            let xbytes: &[u8] = bytemuck::cast_slice(&xb);
            let ybytes: &mut [u8] = bytemuck::cast_slice_mut(&mut yb);
            let ins = [Some(TensorRef {
                dtype: dt,
                shape: xs,
                data: &xbytes[..xs.numel() * dt.size()],
            })];
            let mut outs = [TensorMut {
                dtype: dt,
                shape: ys,
                data: &mut ybytes[..ys.numel() * dt.size()],
            }];
            oks += usize::from(run_resize(&p, &ins, &mut outs).is_ok());
        }
        assert!(oks > 500, "only {oks} well-formed cases ran");
    }
}
