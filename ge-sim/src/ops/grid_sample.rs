//! GridSample: X [N, C, d…] read at the normalized coordinates of grid [N, o…, k]
//! (k = rank − 2, innermost axis first) into Y [N, C, o…], following `onnx.reference`
//! (opset 22). Per axis a coordinate is denormalized (align_corners or not), rounded half to
//! even for nearest, then, when outside the border, clamped (border) or reflected
//! (reflection); nearest reads 1 tap, linear 2, cubic 4 (Keys, a = −0.75), each tap index
//! going through the same padding rule (zeros: outside reads 0). The N-d result is the
//! separable product of the per-axis taps. f32 and f64; the compiler widens halves.

use ge_runtime::format::{
    DType, Element, GridPadding, GridSampleParams, MAX_RANK, ResizeMode, TensorMut, TensorRef,
};

use super::copy::checked_len;
use super::real::Real;
use super::{KernelError, KernelResult, input, output};

const SPATIAL: usize = MAX_RANK - 2;

/// One input spatial axis: its length and the border coordinates.
#[derive(Clone, Copy, Default)]
struct Axis {
    len: usize,
    lo: f64,
    hi: f64,
}

#[derive(Clone, Copy)]
struct Cfg {
    mode: ResizeMode,
    padding: GridPadding,
    align: bool,
}

/// Reflects `x` by the nearer border until it lies in `[lo, hi]`.
fn reflect(x: f64, lo: f64, hi: f64) -> f64 {
    let range = hi - lo;
    if range <= 0.0 {
        return lo;
    }
    let (dx, from_lo) = if x < lo {
        (lo - x, true)
    } else if x > hi {
        (x - hi, false)
    } else {
        return x;
    };
    let n = libm::trunc(dx / range);
    let r = dx - n * range;
    if (n % 2.0 == 0.0) == from_lo {
        lo + r
    } else {
        hi - r
    }
}

/// The input index a tap at `i` reads, or None (zeros padding outside the input).
fn tap_index(i: f64, ax: &Axis, padding: GridPadding) -> Option<usize> {
    let last = ax.len as f64 - 1.0;
    let i = match padding {
        GridPadding::Zeros => {
            if !(0.0..=last).contains(&i) {
                return None;
            }
            i
        }
        GridPadding::Border => i.clamp(0.0, last),
        GridPadding::Reflection => libm::trunc(reflect(i, ax.lo, ax.hi)).clamp(0.0, last),
    };
    Some(i as usize)
}

fn cubic_coeffs(x: f64) -> [f64; 4] {
    const A: f64 = -0.75;
    let x = x.abs();
    let (x1, x2, x3) = (x + 1.0, 1.0 - x, 2.0 - x);
    [
        ((A * x1 - 5.0 * A) * x1 + 8.0 * A) * x1 - 4.0 * A,
        ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0,
        ((A + 2.0) * x2 - (A + 3.0)) * x2 * x2 + 1.0,
        ((A * x3 - 5.0 * A) * x3 + 8.0 * A) * x3 - 4.0 * A,
    ]
}

/// Per-axis taps: (input index or None, weight), `count` of them.
#[derive(Clone, Copy, Default)]
struct Taps {
    at: [(Option<usize>, f64); 4],
    count: usize,
}

/// The taps of one axis for normalized coordinate `g`, rounded to `T` as the reference
/// computes coordinates in the input's precision.
fn axis_taps<T: Real>(g: f64, ax: &Axis, cfg: &Cfg) -> Taps {
    let len = ax.len as f64;
    let denorm = if cfg.align {
        (g + 1.0) / 2.0 * (len - 1.0)
    } else {
        ((g + 1.0) * len - 1.0) / 2.0
    };
    let mut v = T::of(denorm).wide();
    if cfg.mode == ResizeMode::Nearest {
        v = T::of(v).round_even().wide();
    }
    if v < ax.lo || v > ax.hi {
        match cfg.padding {
            GridPadding::Border => v = v.clamp(0.0, len - 1.0),
            GridPadding::Reflection => v = reflect(v, ax.lo, ax.hi),
            GridPadding::Zeros => {}
        }
    }
    let mut t = Taps::default();
    let base = libm::floor(v);
    let frac = v - base;
    let taps: &[(f64, f64)] = match cfg.mode {
        ResizeMode::Nearest => &[(libm::trunc(v), 1.0)],
        ResizeMode::Linear => &[(base, 1.0 - frac), (base + 1.0, frac)],
        ResizeMode::Cubic => {
            let c = cubic_coeffs(frac);
            &[
                (base - 1.0, c[0]),
                (base, c[1]),
                (base + 1.0, c[2]),
                (base + 2.0, c[3]),
            ]
        }
    };
    for (slot, &(i, w)) in t.at.iter_mut().zip(taps) {
        *slot = (tap_index(i, ax, cfg.padding), w);
    }
    t.count = taps.len();
    t
}

fn sample<T: Real + Element>(
    cfg: &Cfg,
    x: &TensorRef<'_>,
    grid: &TensorRef<'_>,
    y: &mut TensorMut<'_>,
) -> Result<(), KernelError> {
    let xd = x.shape.dims();
    let k = xd.len() - 2;
    let (n, c) = (xd[0], xd[1]);
    let mut axes = [Axis::default(); SPATIAL];
    for (a, ax) in axes.iter_mut().enumerate().take(k) {
        let len = xd[2 + a];
        let (lo, hi) = if cfg.align {
            (0.0, len as f64 - 1.0)
        } else {
            (-0.5, len as f64 - 0.5)
        };
        *ax = Axis { len, lo, hi };
    }
    let strides = x.shape.strides();
    let outs: usize = y.shape.dims()[2..].iter().product();
    let xs = x.as_slice::<T>()?;
    let gs = grid.as_slice::<T>()?;
    let ys = y.as_slice_mut::<T>()?;
    for b in 0..n {
        for o in 0..outs {
            let g = &gs[(b * outs + o) * k..][..k];
            let mut taps = [Taps::default(); SPATIAL];
            for a in 0..k {
                taps[a] = axis_taps::<T>(g[k - 1 - a].wide(), &axes[a], cfg);
            }
            let combos: usize = taps[..k].iter().map(|t| t.count).product();
            for ch in 0..c {
                let plane = b * strides[0] + ch * strides[1];
                let mut sum = 0.0f64;
                'combo: for combo in 0..combos {
                    let (mut rest, mut w, mut at) = (combo, 1.0f64, plane);
                    for a in (0..k).rev() {
                        let t = &taps[a];
                        let (idx, wt) = t.at[rest % t.count];
                        rest /= t.count;
                        let Some(idx) = idx else { continue 'combo };
                        w *= wt;
                        at += idx * strides[2 + a];
                    }
                    sum += w * xs[at].wide();
                }
                ys[(b * c + ch) * outs + o] = T::of(sum);
            }
        }
    }
    Ok(())
}

/// GridSample per `p`: inputs X and grid, output Y.
pub fn run_grid_sample(
    p: &GridSampleParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "grid sample input")?;
    let grid = input(ins, 1, "grid sample grid")?;
    let y = output(outs, 0, "grid sample output")?;
    let cfg = Cfg {
        mode: ResizeMode::from_u32(p.mode).ok_or(KernelError::BadParams("unknown sample mode"))?,
        padding: GridPadding::from_u32(p.padding)
            .ok_or(KernelError::BadParams("unknown padding mode"))?,
        align: p.align_corners != 0,
    };
    let (xd, gd, yd) = (x.shape.dims(), grid.shape.dims(), y.shape.dims());
    let r = xd.len();
    let shapes_ok = (3..=MAX_RANK).contains(&r)
        && gd.len() == r
        && yd.len() == r
        && gd[0] == xd[0]
        && gd[r - 1] == r - 2
        && yd[0] == xd[0]
        && yd[1] == xd[1]
        && yd[2..] == gd[1..r - 1];
    if !shapes_ok {
        return Err(KernelError::Shape(
            "grid sample wants X [N, C, d…], grid [N, o…, rank − 2], Y [N, C, o…]",
        ));
    }
    if x.dtype != grid.dtype || x.dtype != y.dtype {
        return Err(KernelError::Shape("grid sample operands differ in dtype"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    checked_len(&grid.shape, grid.dtype, grid.data.len())?;
    checked_len(&y.shape, y.dtype, y.data.len())?;
    if y.data.is_empty() {
        return Ok(());
    }
    if xd[2..].contains(&0) {
        return Err(KernelError::Shape("grid sample of an empty input"));
    }
    match x.dtype {
        DType::F32 => sample::<f32>(&cfg, x, grid, y)?,
        DType::F64 => sample::<f64>(&cfg, x, grid, y)?,
        _ => {
            return Err(KernelError::UnsupportedDType(
                "grid sample is float32/float64 only",
            ));
        }
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{t, tm};
    use super::*;

    fn params(mode: ResizeMode, padding: GridPadding, align: bool) -> GridSampleParams {
        GridSampleParams {
            mode: mode as u32,
            padding: padding as u32,
            align_corners: align as u32,
            reserved: 0,
        }
    }

    #[test]
    fn corners_and_centre_of_a_2x2_image() {
        // X = [[1, 2], [3, 4]]; align_corners: (-1,-1) is X[0,0], (1,1) X[1,1], (0,0) the mean.
        let x = [1f32, 2.0, 3.0, 4.0];
        let g = [-1f32, -1.0, 1.0, 1.0, 0.0, 0.0];
        let mut y = [0f32; 3];
        run_grid_sample(
            &params(ResizeMode::Linear, GridPadding::Zeros, true),
            &[Some(t(&[1, 1, 2, 2], &x)), Some(t(&[1, 1, 3, 2], &g))],
            &mut [tm(&[1, 1, 1, 3], &mut y)],
        )
        .unwrap();
        assert_eq!(y, [1.0, 4.0, 2.5]);
    }

    #[test]
    fn padding_modes_outside_the_input() {
        // 1-D X = [1, 2, 3] at x = 2 (far right, outside).
        let x = [1f32, 2.0, 3.0];
        let g = [2f32];
        let run = |pad| {
            let mut y = [0f32; 1];
            run_grid_sample(
                &params(ResizeMode::Nearest, pad, false),
                &[Some(t(&[1, 1, 3], &x)), Some(t(&[1, 1, 1], &g))],
                &mut [tm(&[1, 1, 1], &mut y)],
            )
            .unwrap();
            y[0]
        };
        assert_eq!(run(GridPadding::Zeros), 0.0);
        assert_eq!(run(GridPadding::Border), 3.0);
        // denormalized 4.0 reflects about 2.5 to 1.0
        assert_eq!(run(GridPadding::Reflection), 2.0);
    }

    #[test]
    fn rejects_a_grid_of_the_wrong_width() {
        let x = [0f32; 4];
        let g = [0f32; 3];
        let mut y = [0f32; 1];
        let r = run_grid_sample(
            &params(ResizeMode::Linear, GridPadding::Zeros, false),
            &[Some(t(&[1, 1, 2, 2], &x)), Some(t(&[1, 1, 1, 3], &g))],
            &mut [tm(&[1, 1, 1, 1], &mut y)],
        );
        assert!(r.is_err());
    }
}
