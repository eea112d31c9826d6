//! The Pool and GlobalPool tasks: operands, dtype dispatch (f32, int8 max), the blocked
//! layout and the small-plane global pools.

use super::*;

/// The pool kind, input, output and window geometry of a windowed pooling task.
pub(super) type Prepared<'x, 'y, 'i, 'o> = (
    PoolKind,
    &'x TensorRef<'i>,
    &'y mut TensorMut<'o>,
    [Axis; 3],
);

pub(super) fn prepare<'x, 'y, 'i, 'o>(
    p: &PoolParams,
    ins: &'x [Option<TensorRef<'i>>],
    outs: &'y mut [TensorMut<'o>],
) -> Result<Prepared<'x, 'y, 'i, 'o>, KernelError> {
    let kind = pool_kind(p)?;
    let xt = input(ins, 0, "pool input")?;
    let yt = output(outs, 0, "pool output")?;
    let ax = geometry(p, &xt.shape, &yt.shape)?;
    if xt.dtype != yt.dtype {
        return Err(KernelError::Shape("pool changes the dtype"));
    }
    Ok((kind, xt, yt, ax))
}

pub(super) const POOL_DTYPES: KernelError =
    KernelError::UnsupportedDType("pooling is float32 (max and average pooling also int8/uint8)");

/// Windowed pooling over 1 to 3 spatial axes: f32, and Max and Average also on int8 / uint8.
pub fn run_pool(
    p: &PoolParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    match ins.first().and_then(Option::as_ref).map(|x| x.dtype) {
        Some(DType::U8 | DType::I8) => run_pool_int(p, ins, outs),
        _ => run_pool_f32(p, ins, outs),
    }
}

/// The GlobalPool of int8 / uint8 input (its params' window the whole plane): the average of
/// each plane of values read as `(f32(x) − zero_point) ·
/// scale` (inputs 1 and 2, f32 scalars) into f32: the values a dequantizing task would write,
/// folded in memory order as [`fold_planes`] folds them, so the same floats — without the
/// f32 copy of the input (onnxruntime's QLinearAveragePool over a classifier's feature map).
/// A GlobalPool task, so that a firmware's windowed f32 pools link none of it. O(input).
pub fn run_pool_dequantized(
    p: &PoolParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let kind = pool_kind(p)?;
    let xt = input(ins, 0, "pool input")?;
    let yt = output(outs, 0, "pool output")?;
    let ax = geometry(p, &xt.shape, &yt.shape)?;
    let (Some(plane), PoolKind::Average, DType::F32) = (whole_plane(&ax), kind, yt.dtype) else {
        return Err(KernelError::BadParams(
            "a dequantizing pool averages whole planes into float32",
        ));
    };
    if blocked(p, ChannelLayout::Blocked)? {
        return Err(POOL_DTYPES);
    }
    let scalar = |i: usize, what: &'static str| -> Result<f32, KernelError> {
        match input(ins, i, what)?.as_slice::<f32>()? {
            [v] => Ok(*v),
            _ => Err(KernelError::Shape("pool: scale and zero point are scalars")),
        }
    };
    let (scale, zp) = (scalar(1, "pool x_scale")?, scalar(2, "pool x_zero_point")?);
    let y = f32_out(yt)?;
    match xt.dtype {
        DType::I8 => average_dequantized(xt.as_slice::<i8>()?, y, plane, scale, zp, true),
        DType::U8 => average_dequantized(xt.as_slice::<u8>()?, y, plane, scale, zp, false),
        _ => return Err(POOL_DTYPES),
    }
    Ok(())
}

/// `y[p]` = the mean of plane `p` of `(f32(x) − zp) · scale`, summed in memory order.
/// Eight planes at a time, each its own sum in its own order (the same roundings): eight
/// independent add chains instead of one (the chain's latency was all of its time); on x86
/// eight planes a vector ([`crate::arch::x86::avx2::plane_sums`]: the per-value loads,
/// conversions and products took 5.6 µs of kws's 64 × 125 pool).
fn average_dequantized<T: Copy + Into<f32> + bytemuck::Pod>(
    x: &[T],
    y: &mut [f32],
    plane: usize,
    scale: f32,
    zp: f32,
    signed: bool,
) {
    const P: usize = 8;
    if plane == 0 {
        return;
    }
    let whole = (x.len() / plane).min(y.len()) / P * P;
    for (xs, os) in x
        .chunks_exact(plane * P)
        .zip(y[..whole].chunks_exact_mut(P))
    {
        let mut a = [0.0f32; P];
        let from = crate::arch::kernels::plane_sums8(
            bytemuck::cast_slice(xs),
            signed,
            plane,
            zp,
            scale,
            &mut a,
        );
        for i in from..plane {
            for (c, s) in a.iter_mut().enumerate() {
                *s += (xs[c * plane + i].into() - zp) * scale;
            }
        }
        for (o, s) in os.iter_mut().zip(a) {
            *o = s / plane as f32;
        }
    }
    let (x, y) = (&x[whole * plane..], &mut y[whole..]);
    for (xs, o) in x.chunks_exact(plane).zip(y) {
        let mut a = 0.0f32;
        for &v in xs {
            a += (v.into() - zp) * scale;
        }
        *o = a / plane as f32;
    }
}

/// [`run_pool`] on int8 / uint8: Max, and Average (without padding counted) in TFLite's
/// integer rule ([`average_int`], `--int8-rounding tflite`).
pub fn run_pool_int(
    p: &PoolParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let (kind, xt, yt, ax) = prepare(p, ins, outs)?;
    if blocked(p, ChannelLayout::Blocked)? {
        return Err(POOL_DTYPES);
    }
    let average = kind == PoolKind::Average && p.count_include_pad == 0;
    match (xt.dtype, kind) {
        (DType::U8, PoolKind::Max) => max_int::<u8>(xt, yt, &ax, u8::MIN),
        (DType::I8, PoolKind::Max) => max_int::<i8>(xt, yt, &ax, i8::MIN),
        (DType::U8, _) if average => average_int::<u8>(xt, yt, &ax, |v| v.clamp(0, 255) as u8),
        (DType::I8, _) if average => average_int::<i8>(xt, yt, &ax, |v| v.clamp(-128, 127) as i8),
        _ => Err(POOL_DTYPES),
    }
}

/// [`run_pool`] on f32 only, so that a binary pooling f32 alone links no integer code.
pub fn run_pool_f32(
    p: &PoolParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let (kind, xt, yt, ax) = prepare(p, ins, outs)?;
    if xt.dtype != DType::F32 {
        return Err(POOL_DTYPES);
    }
    let x = f32_in(xt)?;
    let y = f32_out(yt)?;
    if blocked(p, ChannelLayout::Blocked)? {
        #[cfg(feature = "std")]
        return isa::with_simd(
            #[inline(always)]
            || blocked::pool(x, y, &ax, kind, p.count_include_pad != 0),
        );
    }
    isa::with_simd(
        #[inline(always)]
        || match kind {
            PoolKind::Max => {
                let step = max_step;
                if cfg!(feature = "std")
                    && let Some(plane) = whole_plane(&ax)
                {
                    max_of_planes(x, y, plane);
                    return;
                }
                if cfg!(feature = "std") && max_small_planes(x, y, &ax, step) {
                    return;
                }
                if crate::arch::kernels::max_pool_2d(x, y, &ax) {
                    return;
                }
                fold_windows(x, y, &ax, f32::NEG_INFINITY, step, separable(step), max_fin)
            }
            PoolKind::Average => {
                let include_pad = p.count_include_pad != 0;
                let fin = |a: f32, n: usize, padded: usize| {
                    let n = if include_pad { padded } else { n };
                    if n == 0 { 0.0 } else { a / n as f32 }
                };
                // Whole planes keep `fold_windows`' interleaved fold (the same sums).
                if whole_plane(&ax).is_none()
                    && crate::arch::kernels::avg_pool_2d(x, y, &ax, include_pad)
                {
                    return;
                }
                fold_windows(x, y, &ax, 0.0, |a, v| a + v, NOT_SEPARABLE, fin)
            }
            PoolKind::Lp => {
                let e = p.p;
                fold_windows(
                    x,
                    y,
                    &ax,
                    0.0,
                    |a, v| a + lp_term(v, e),
                    NOT_SEPARABLE,
                    |a, _, _| lp_root(a, e),
                )
            }
        },
    );
    Ok(())
}

/// f32 of the padded plane [`max_small_planes`] takes (and of its flat outputs).
pub(super) const SMALL_PLANE: usize = 2048;
/// Flat outputs per chunk of [`max_small_planes`].
pub(super) const SMALL_CHUNK: usize = 16;

/// Max pooling of small 2-D planes at stride 1 (YOLO's SPPF: three 5 × 5 pools on a 10 × 10
/// plane, where rows are too short for the separable path and every window but the centre
/// 6 × 6 would take the per-tap border loop). Each plane is copied with −∞ padding into a
/// stack buffer of pitch `pw`; output `(o1, o2)` is then the max over taps of
/// `padded[o1·pw + o2 + t1·pw + t2]`, a 1-D pool over the flat index taken 16 lanes at a
/// time (the `pw − ow` columns past each row are computed and dropped). −∞ never wins a
/// max, so the values are those of skipping the padding; taps run in the same order.
/// `false` (nothing written) when the pool is not of that shape. O(planes · padded plane ·
/// taps).
#[inline(always)]
pub(super) fn max_small_planes(
    x: &[f32],
    y: &mut [f32],
    ax: &[Axis; 3],
    step: impl Fn(f32, f32) -> f32,
) -> bool {
    let [a0, a1, a2] = ax;
    let plain = |a: &Axis| {
        a.s == 1
            && a.d == 1
            && a.k >= 1
            && a.pb < a.k
            && a.pe < a.k
            && a.inp + a.pb + a.pe + 1 == a.out + a.k
    };
    if (a0.inp, a0.out, a0.k) != (1, 1, 1) || !plain(a1) || !plain(a2) {
        return false;
    }
    let (ph, pw) = (a1.inp + a1.pb + a1.pe, a2.inp + a2.pb + a2.pe);
    let flat_len = (a1.out * pw).next_multiple_of(SMALL_CHUNK);
    // The last chunk reads its taps up to `pw + SMALL_CHUNK` past the grid.
    let reach = (a1.k - 1) * pw + a2.k - 1;
    if ph * pw + SMALL_CHUNK + pw > SMALL_PLANE || flat_len + reach > SMALL_PLANE {
        return false;
    }
    let (xp, yp) = (a1.inp * a2.inp, a1.out * a2.out);
    if xp == 0 || yp == 0 {
        return false;
    }
    let mut offs = [0usize; 64];
    let taps = a1.k * a2.k;
    if taps > offs.len() {
        return false;
    }
    for (t, off) in offs.iter_mut().enumerate().take(taps) {
        *off = (t / a2.k) * pw + t % a2.k;
    }
    let offs = &offs[..taps];
    let mut buf = [f32::NEG_INFINITY; SMALL_PLANE];
    let mut flat = [0f32; SMALL_PLANE];
    for (xpl, ypl) in x.chunks_exact(xp).zip(y.chunks_exact_mut(yp)) {
        for (r, xrow) in xpl.chunks_exact(a2.inp).enumerate() {
            buf[(r + a1.pb) * pw + a2.pb..][..a2.inp].copy_from_slice(xrow);
        }
        for (q, out) in flat[..flat_len].chunks_exact_mut(SMALL_CHUNK).enumerate() {
            let mut acc = [f32::NEG_INFINITY; SMALL_CHUNK];
            for &off in offs {
                let at = q * SMALL_CHUNK + off;
                let v: &[f32; SMALL_CHUNK] = buf[at..at + SMALL_CHUNK]
                    .try_into()
                    .unwrap_or_else(|_| unreachable!());
                for (a, &v) in acc.iter_mut().zip(v) {
                    *a = step(*a, v);
                }
            }
            out.copy_from_slice(&acc);
        }
        for (o1, yrow) in ypl.chunks_exact_mut(a2.out).enumerate() {
            yrow.copy_from_slice(&flat[o1 * pw..][..a2.out]);
        }
    }
    true
}

/// Global pooling: one value per (batch, channel) over all spatial axes.
pub fn run_global_pool(
    p: &PoolParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let kind = pool_kind(p)?;
    let xt = input(ins, 0, "global pool input")?;
    if matches!(xt.dtype, DType::I8 | DType::U8) {
        return match outs.first().map(|y| y.dtype) {
            Some(DType::F32) => run_pool_dequantized(p, ins, outs),
            _ => run_pool_int(p, ins, outs),
        };
    }
    let x = f32_in(xt)?;
    let xs = xt.shape;
    let yt = output(outs, 0, "global pool output")?;
    let ys = yt.shape;
    let y = f32_out(yt)?;
    if xs.rank() < 2
        || ys.rank() != xs.rank()
        || xs.dims()[..2] != ys.dims()[..2]
        || ys.dims()[2..].iter().any(|&d| d != 1)
    {
        return Err(KernelError::Shape(
            "global pool output must be [N, C, 1, ...]",
        ));
    }
    let plane = xs.dims()[2..].iter().product::<usize>();
    if blocked(p, ChannelLayout::BlockedToPlain)? {
        #[cfg(feature = "std")]
        return isa::with_simd(
            #[inline(always)]
            || blocked::global(x, y, plane, kind),
        );
    }
    if plane == 0 {
        y.fill(0.0);
        return Ok(());
    }
    let planes = y.iter_mut().zip(x.chunks_exact(plane));
    match kind {
        // Planes interleaved: as one dependent chain per plane, Magika's 512 × 508 global
        // max ran 10× onnxruntime's time.
        PoolKind::Max => max_of_planes(x, y, plane),
        PoolKind::Average => {
            planes.for_each(|(v, xpl)| *v = vmath::sum_by(xpl, |v| v) / plane as f32)
        }
        PoolKind::Lp => planes
            .for_each(|(v, xpl)| *v = lp_root(xpl.iter().map(|&v| lp_term(v, p.p)).sum(), p.p)),
    }
    Ok(())
}
