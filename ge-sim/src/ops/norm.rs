//! BatchNorm (inference), InstanceNorm and LRN, on f32 and f64.

use ge_runtime::format::{
    Activation, DType, LrnParams, NormParams, Shape, TensorMut, TensorRef, UnaryOp, ViewError,
};

use super::real::Real;
use super::unary::apply_unary_in_place;
use super::{KernelError, KernelResult, input, output};
use crate::arch::isa;

const LAYOUT_ERR: KernelError = KernelError::Shape("norm data does not match its shape");

/// `(N, C, spatial)` of an `N x C x D1 x ...` tensor; rank 1 is `(N, 1, 1)` as BatchNorm
/// allows.
fn ncs(s: &Shape) -> Result<(usize, usize, usize), KernelError> {
    let d = s.dims();
    match d {
        [] => Err(KernelError::Shape("norm input must have rank 1 or more")),
        [n] => Ok((*n, 1, 1)),
        [n, c, rest @ ..] => {
            let sp = rest
                .iter()
                .try_fold(1usize, |a, &v| a.checked_mul(v))
                .ok_or(LAYOUT_ERR)?;
            Ok((*n, *c, sp))
        }
    }
}

fn same_shape(x: &TensorRef<'_>, y: &TensorMut<'_>) -> Result<(), KernelError> {
    if x.shape.dims() != y.shape.dims() {
        return Err(KernelError::Shape(
            "norm output shape differs from the input's",
        ));
    }
    if x.dtype != y.dtype {
        return Err(KernelError::DType(ViewError {
            expected: x.dtype,
            found: y.dtype,
        }));
    }
    Ok(())
}

/// A per-channel parameter vector of length `c`.
fn per_channel<'a, T: Real + ge_runtime::format::Element>(
    ins: &[Option<TensorRef<'a>>],
    i: usize,
    what: &'static str,
    c: usize,
) -> Result<&'a [T], KernelError> {
    let t = input(ins, i, what)?;
    let v = t.as_slice::<T>()?;
    if v.len() != c {
        return Err(KernelError::Shape(
            "per-channel parameter length differs from the channel count",
        ));
    }
    Ok(v)
}

/// Calls `f(channel, x_block, y_block)` for each per-(n, c) block of `s` elements, then
/// applies the fused activation to the block while it is still in cache.
fn for_blocks<T: Real>(
    x: &[T],
    y: &mut [T],
    (n, c, s): (usize, usize, usize),
    act: &Activation,
    mut f: impl FnMut(usize, &[T], &mut [T]) -> Result<(), KernelError>,
) -> Result<(), KernelError> {
    let total = n
        .checked_mul(c)
        .and_then(|v| v.checked_mul(s))
        .ok_or(LAYOUT_ERR)?;
    if x.len() != total || y.len() != total {
        return Err(LAYOUT_ERR);
    }
    if total == 0 {
        return Ok(());
    }
    let op = match act.op {
        0 => None,
        op => Some(UnaryOp::from_u32(op).ok_or(KernelError::BadParams("unknown activation op"))?),
    };
    isa::with_simd(
        #[inline(always)]
        || {
            for (i, (xb, yb)) in x.chunks_exact(s).zip(y.chunks_exact_mut(s)).enumerate() {
                f(i % c, xb, yb)?;
                if let Some(op) = op {
                    apply_unary_in_place(op, act.alpha, act.beta, yb);
                }
            }
            Ok(())
        },
    )
}

fn bn_t<T: Real + ge_runtime::format::Element>(
    ins: &[Option<TensorRef<'_>>],
    x: &TensorRef<'_>,
    y: &mut TensorMut<'_>,
    eps: f32,
    act: &Activation,
) -> Result<(), KernelError> {
    let l = ncs(&x.shape)?;
    let c = l.1;
    let scale = per_channel::<T>(ins, 1, "BatchNorm scale", c)?;
    let bias = per_channel::<T>(ins, 2, "BatchNorm bias", c)?;
    let mean = per_channel::<T>(ins, 3, "BatchNorm mean", c)?;
    let var = per_channel::<T>(ins, 4, "BatchNorm var", c)?;
    let eps = T::of(eps as f64);
    for_blocks(
        x.as_slice::<T>()?,
        y.as_slice_mut::<T>()?,
        l,
        act,
        |ch, xb, yb| {
            let (Some(&sc), Some(&b), Some(&m), Some(&v)) =
                (scale.get(ch), bias.get(ch), mean.get(ch), var.get(ch))
            else {
                return Err(LAYOUT_ERR);
            };
            let k = sc / (v + eps).sqrt();
            for (o, &xv) in yb.iter_mut().zip(xb) {
                *o = (xv - m) * k + b;
            }
            Ok(())
        },
    )
}

/// Inference BatchNorm: `y = scale * (x - mean) / sqrt(var + eps) + bias` per channel
/// (inputs x, scale, bias, mean, var, all f32 or all f64), then the fused activation.
pub fn run_batch_norm(
    p: &NormParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "BatchNorm input")?;
    let y = output(outs, 0, "BatchNorm output")?;
    same_shape(x, y)?;
    match x.dtype {
        DType::F32 => bn_t::<f32>(ins, x, y, p.epsilon, &p.act)?,
        DType::F64 => bn_t::<f64>(ins, x, y, p.epsilon, &p.act)?,
        _ => return Err(KernelError::UnsupportedDType("BatchNorm needs f32 or f64")),
    }
    Ok(())
}

fn in_t<T: Real + ge_runtime::format::Element>(
    ins: &[Option<TensorRef<'_>>],
    x: &TensorRef<'_>,
    y: &mut TensorMut<'_>,
    eps: f32,
    act: &Activation,
) -> Result<(), KernelError> {
    let l = ncs(&x.shape)?;
    if x.shape.rank() < 2 {
        return Err(KernelError::Shape(
            "InstanceNorm input must have rank 2 or more",
        ));
    }
    let scale = per_channel::<T>(ins, 1, "InstanceNorm scale", l.1)?;
    let bias = per_channel::<T>(ins, 2, "InstanceNorm bias", l.1)?;
    let eps = eps as f64;
    for_blocks(
        x.as_slice::<T>()?,
        y.as_slice_mut::<T>()?,
        l,
        act,
        |ch, xb, yb| {
            let (Some(&sc), Some(&b)) = (scale.get(ch), bias.get(ch)) else {
                return Err(LAYOUT_ERR);
            };
            let cnt = xb.len() as f64;
            let mean = xb.iter().fold(0.0f64, |a, &v| a + v.wide()) / cnt;
            let var = xb.iter().fold(0.0f64, |a, &v| {
                let d = v.wide() - mean;
                a + d * d
            }) / cnt;
            let k = sc.wide() / libm::sqrt(var + eps);
            let b = b.wide();
            for (o, &xv) in yb.iter_mut().zip(xb) {
                *o = T::of((xv.wide() - mean) * k + b);
            }
            Ok(())
        },
    )
}

/// InstanceNorm: per (n, c), normalize over the spatial dims with population variance
/// (two passes, accumulated in f64), then `* scale[c] + bias[c]` and the fused activation.
pub fn run_instance_norm(
    p: &NormParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "InstanceNorm input")?;
    let y = output(outs, 0, "InstanceNorm output")?;
    same_shape(x, y)?;
    match x.dtype {
        DType::F32 => in_t::<f32>(ins, x, y, p.epsilon, &p.act)?,
        DType::F64 => in_t::<f64>(ins, x, y, p.epsilon, &p.act)?,
        _ => {
            return Err(KernelError::UnsupportedDType(
                "InstanceNorm needs f32 or f64",
            ));
        }
    }
    Ok(())
}

fn lrn_t<T: Real + ge_runtime::format::Element>(
    p: &LrnParams,
    x: &TensorRef<'_>,
    y: &mut TensorMut<'_>,
) -> Result<(), KernelError> {
    let (n, c, s) = ncs(&x.shape)?;
    let size = p.size as usize;
    let before = (size - 1) / 2;
    let after = size - 1 - before;
    let coef = T::of(p.alpha as f64 / size as f64);
    let (bias, beta) = (T::of(p.bias as f64), T::of(p.beta as f64));
    let xs = x.as_slice::<T>()?;
    let ys = y.as_slice_mut::<T>()?;
    let total = n
        .checked_mul(c)
        .and_then(|v| v.checked_mul(s))
        .ok_or(LAYOUT_ERR)?;
    if xs.len() != total || ys.len() != total {
        return Err(LAYOUT_ERR);
    }
    let blk = |ni: usize, ci: usize| (ni * c + ci) * s..(ni * c + ci + 1) * s;
    let beta75 = p.beta == 0.75;
    isa::with_simd(
        #[inline(always)]
        || -> Result<(), KernelError> {
            for ni in 0..n {
                // The first channel whose window covers every channel keeps its square sum
                // (finished last) for the later such channels to copy (the same sum in the
                // same order): a window wider than the tensor costs O(C·S), not O(C²·S).
                let mut full: Option<usize> = None;
                for ci in 0..c {
                    let hi = ci.saturating_add(after).min(c - 1);
                    let lo = ci.saturating_sub(before);
                    let whole = lo == 0 && hi == c - 1;
                    if whole && let Some(f) = full {
                        let (done, rest) = ys.split_at_mut(blk(ni, ci).start);
                        let src = done.get(blk(ni, f)).ok_or(LAYOUT_ERR)?;
                        rest.get_mut(..s).ok_or(LAYOUT_ERR)?.copy_from_slice(src);
                    } else {
                        let yb = ys.get_mut(blk(ni, ci)).ok_or(LAYOUT_ERR)?;
                        yb.fill(T::ZERO);
                        for cj in lo..=hi {
                            let xb = xs.get(blk(ni, cj)).ok_or(LAYOUT_ERR)?;
                            for (o, &v) in yb.iter_mut().zip(xb) {
                                *o = *o + v * v;
                            }
                        }
                        if whole {
                            full = Some(ci);
                            continue;
                        }
                    }
                    lrn_finish(
                        ys.get_mut(blk(ni, ci)).ok_or(LAYOUT_ERR)?,
                        xs.get(blk(ni, ci)).ok_or(LAYOUT_ERR)?,
                        bias,
                        coef,
                        beta,
                        beta75,
                    );
                }
                if let Some(f) = full {
                    lrn_finish(
                        ys.get_mut(blk(ni, f)).ok_or(LAYOUT_ERR)?,
                        xs.get(blk(ni, f)).ok_or(LAYOUT_ERR)?,
                        bias,
                        coef,
                        beta,
                        beta75,
                    );
                }
            }
            Ok(())
        },
    )?;
    Ok(())
}

/// `y = x / (bias + coef · square sum)^β` over one channel `yb` holding its square sum.
#[inline(always)]
fn lrn_finish<T: Real>(yb: &mut [T], xb: &[T], bias: T, coef: T, beta: T, beta75: bool) {
    let it = yb.iter_mut().zip(xb);
    // The usual β = 0.75 as square roots: `powf` dominated Inception v1.
    if beta75 {
        it.for_each(|(o, &v)| {
            let r = (bias + coef * *o).sqrt();
            *o = v / (r * r.sqrt());
        });
    } else {
        it.for_each(|(o, &v)| *o = v / (bias + coef * *o).powf(beta));
    }
}

/// LRN across channels: `y = x / (bias + alpha / size * square_sum)^beta`, where the square
/// sum covers channels `c - floor((size-1)/2) ..= c + ceil((size-1)/2)` (clipped).
pub fn run_lrn(
    p: &LrnParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    if p.size == 0 {
        return Err(KernelError::BadParams("LRN size must be positive"));
    }
    let x = input(ins, 0, "LRN input")?;
    let y = output(outs, 0, "LRN output")?;
    same_shape(x, y)?;
    if x.shape.rank() < 2 {
        return Err(KernelError::Shape("LRN input must have rank 2 or more"));
    }
    match x.dtype {
        DType::F32 => lrn_t::<f32>(p, x, y)?,
        DType::F64 => lrn_t::<f64>(p, x, y)?,
        _ => return Err(KernelError::UnsupportedDType("LRN needs f32 or f64")),
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::excessive_precision)] // expected values pasted from numpy
mod tests {
    extern crate std;
    use super::super::test_util::*;
    use super::*;

    fn np(eps: f32, op: Option<UnaryOp>) -> NormParams {
        NormParams {
            epsilon: eps,
            act: Activation {
                op: op.map_or(0, |o| o as u32),
                alpha: 0.0,
                beta: 0.0,
            },
        }
    }

    #[test]
    fn batch_norm_matches_numpy() {
        let x = [1.0f32, 2.0, 3.0, 4.0, -1.0, 0.0, 5.0, 2.0];
        let (sc, b, m, v) = ([1.5f32, -0.5], [0.1f32, 0.2], [2.0f32, 1.0], [4.0f32, 0.25]);
        let ins = [
            Some(t(&[1, 2, 2, 2], &x)),
            Some(t(&[2], &sc)),
            Some(t(&[2], &b)),
            Some(t(&[2], &m)),
            Some(t(&[2], &v)),
        ];
        let mut y = [0f32; 8];
        run_batch_norm(&np(1e-5, None), &ins, &mut [tm(&[1, 2, 2, 2], &mut y)]).unwrap();
        #[rustfmt::skip]
        let want = [-0.6499990820884705, 0.10000000149011612, 0.8499991297721863, 1.5999982357025146, 2.1999599933624268, 1.1999800205230713, -3.799919843673706, -0.7999799847602844];
        close(&y, &want, 1e-6);
        run_batch_norm(
            &np(1e-5, Some(UnaryOp::Relu)),
            &ins,
            &mut [tm(&[1, 2, 2, 2], &mut y)],
        )
        .unwrap();
        let relu: std::vec::Vec<f32> = want.iter().map(|&v| v.max(0.0)).collect();
        close(&y, &relu, 1e-6);
        // Rank 1 is N with one channel; rank 2 is N x C.
        let mut y1 = [0f32; 3];
        let one = |v: f32| [v];
        let (s1, b1, m1, v1) = (one(2.0), one(1.0), one(1.0), one(1.0));
        let ins1 = [
            Some(t(&[3], &[1.0f32, 2.0, 3.0])),
            Some(t(&[1], &s1)),
            Some(t(&[1], &b1)),
            Some(t(&[1], &m1)),
            Some(t(&[1], &v1)),
        ];
        run_batch_norm(&np(0.0, None), &ins1, &mut [tm(&[3], &mut y1)]).unwrap();
        assert_eq!(y1, [1.0, 3.0, 5.0]);
        let mut y2 = [0f64; 4];
        let (s2, b2, m2, v2) = ([1.0f64, 2.0], [0.0f64, 1.0], [0.0f64, 1.0], [1.0f64, 4.0]);
        let ins2 = [
            Some(t(&[2, 2], &[1.0f64, 1.0, 2.0, 3.0])),
            Some(t(&[2], &s2)),
            Some(t(&[2], &b2)),
            Some(t(&[2], &m2)),
            Some(t(&[2], &v2)),
        ];
        run_batch_norm(&np(0.0, None), &ins2, &mut [tm(&[2, 2], &mut y2)]).unwrap();
        assert_eq!(y2, [1.0, 1.0, 2.0, 3.0]);
    }

    #[test]
    fn batch_norm_errors() {
        let x = [1.0f32; 8];
        let c2 = [1.0f32; 2];
        let c3 = [1.0f32; 3];
        let mut y = [0f32; 8];
        let bad = [
            Some(t(&[1, 2, 2, 2], &x)),
            Some(t(&[3], &c3)),
            Some(t(&[2], &c2)),
            Some(t(&[2], &c2)),
            Some(t(&[2], &c2)),
        ];
        assert!(matches!(
            run_batch_norm(&np(1e-5, None), &bad, &mut [tm(&[1, 2, 2, 2], &mut y)]),
            Err(KernelError::Shape(_))
        ));
        let missing = [
            Some(t(&[1, 2, 2, 2], &x)),
            Some(t(&[2], &c2)),
            Some(t(&[2], &c2)),
            Some(t(&[2], &c2)),
        ];
        assert!(matches!(
            run_batch_norm(&np(1e-5, None), &missing, &mut [tm(&[1, 2, 2, 2], &mut y)]),
            Err(KernelError::MissingTensor(_))
        ));
        let ok = [
            Some(t(&[1, 2, 2, 2], &x)),
            Some(t(&[2], &c2)),
            Some(t(&[2], &c2)),
            Some(t(&[2], &c2)),
            Some(t(&[2], &c2)),
        ];
        assert!(run_batch_norm(&np(1e-5, None), &ok, &mut [tm(&[1, 2, 4], &mut y)]).is_err());
        let mut e: [f32; 0] = [];
        let empty = [
            Some(t::<f32>(&[0, 2, 3], &[])),
            Some(t(&[2], &c2)),
            Some(t(&[2], &c2)),
            Some(t(&[2], &c2)),
            Some(t(&[2], &c2)),
        ];
        run_batch_norm(&np(1e-5, None), &empty, &mut [tm(&[0, 2, 3], &mut e)]).unwrap();
    }

    #[test]
    fn instance_norm_matches_numpy() {
        let x = [
            1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 2.0, 2.0, 2.0, 8.0, 0.0, -3.0,
        ];
        let (s, b) = ([1.0f32, 2.0], [0.0f32, -1.0]);
        let mut y = [0f32; 12];
        run_instance_norm(
            &np(1e-5, None),
            &[
                Some(t(&[2, 2, 3], &x)),
                Some(t(&[2], &s)),
                Some(t(&[2], &b)),
            ],
            &mut [tm(&[2, 2, 3], &mut y)],
        )
        .unwrap();
        #[rustfmt::skip]
        let want = [-1.2247356176376343, 0.0, 1.2247356176376343, -3.4494712352752686, -1.0, 1.4494712352752686, 0.0, 0.0, 0.0, 1.7282402515411377, -1.7179579734802246, -3.010282278060913];
        close(&y, &want, 1e-6);
        // Large offset: the two-pass f64 variance stays accurate.
        let big = [10000.0f32, 10001.0, 10002.0, 10003.0];
        let mut yb = [0f32; 4];
        let one = [1.0f32];
        let zero = [0.0f32];
        run_instance_norm(
            &np(0.0, None),
            &[
                Some(t(&[1, 1, 4], &big)),
                Some(t(&[1], &one)),
                Some(t(&[1], &zero)),
            ],
            &mut [tm(&[1, 1, 4], &mut yb)],
        )
        .unwrap();
        close(
            &yb,
            &[
                -1.3416407864998738,
                -0.4472135954999579,
                0.4472135954999579,
                1.3416407864998738,
            ],
            1e-6,
        );
        assert!(
            run_instance_norm(
                &np(0.0, None),
                &[
                    Some(t(&[4], &big)),
                    Some(t(&[1], &one)),
                    Some(t(&[1], &zero))
                ],
                &mut [tm(&[4], &mut yb)]
            )
            .is_err()
        );
    }

    #[test]
    fn lrn_matches_spec() {
        let x = [1.0f32, 2.0, 3.0, 4.0, 5.0];
        let run = |size, alpha, beta, bias| {
            let mut y = [0f32; 5];
            run_lrn(
                &LrnParams {
                    size,
                    alpha,
                    beta,
                    bias,
                },
                &[Some(t(&[1, 5, 1, 1], &x))],
                &mut [tm(&[1, 5, 1, 1], &mut y)],
            )
            .unwrap();
            y
        };
        // numpy with the ONNX window c - floor((size-1)/2) ..= c + ceil((size-1)/2).
        close(
            &run(3, 0.1, 0.75, 1.0),
            &[
                0.8908199071884155,
                1.5006568431854248,
                1.8064385652542114,
                1.916829228401184,
                2.6203973293304443,
            ],
            1e-6,
        );
        close(
            &run(2, 0.2, 0.5, 2.0),
            &[
                0.6324555277824402,
                1.1009637117385864,
                1.4142136573791504,
                1.6195526123046875,
                2.357022762298584,
            ],
            1e-6,
        );
        let x4 = [1.0f32, -2.0, 3.0, 0.5, 2.0, 1.0, -1.0, 4.0];
        let mut y4 = [0f32; 8];
        run_lrn(
            &LrnParams {
                size: 5,
                alpha: 1e-4,
                beta: 0.75,
                bias: 1.0,
            },
            &[Some(t(&[2, 2, 2], &x4))],
            &mut [tm(&[2, 2, 2], &mut y4)],
        )
        .unwrap();
        #[rustfmt::skip]
        let want = [0.9998500347137451, -1.9998724460601807, 2.9995501041412354, 0.49996811151504517, 1.9998500347137451, 0.9997450709342957, -0.9999250173568726, 3.9989802837371826];
        close(&y4, &want, 1e-6);
        let mut y = [0f32; 5];
        assert!(
            run_lrn(
                &LrnParams {
                    size: 0,
                    alpha: 1.0,
                    beta: 1.0,
                    bias: 1.0
                },
                &[Some(t(&[1, 5, 1, 1], &x))],
                &mut [tm(&[1, 5, 1, 1], &mut y)]
            )
            .is_err()
        );
        assert!(
            run_lrn(
                &LrnParams {
                    size: 3,
                    alpha: 1.0,
                    beta: 1.0,
                    bias: 1.0
                },
                &[Some(t(&[5], &x))],
                &mut [tm(&[5], &mut y)]
            )
            .is_err()
        );
    }

    /// Windows as wide as the tensor or wider (every channel's, or the middle ones') share
    /// one square sum: bitwise the per-window sum in channel order, for β 0.75 and another,
    /// on two images of 7 channels of 3 pixels; a window of `u32::MAX` channels is O(C·S).
    #[test]
    fn wide_lrn_windows_share_one_sum() {
        let (n, c, s) = (2usize, 7usize, 3usize);
        let x: std::vec::Vec<f32> = (0..n * c * s)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.37)
            .collect();
        for (size, beta) in [
            (7u32, 0.75f32),
            (9, 0.6),
            (13, 0.75),
            (30, 1.3),
            (u32::MAX, 0.75),
        ] {
            let p = LrnParams {
                size,
                alpha: 0.3,
                beta,
                bias: 1.5,
            };
            let mut y = std::vec![0f32; x.len()];
            run_lrn(
                &p,
                &[Some(t(&[n, c, s], &x))],
                &mut [tm(&[n, c, s], &mut y)],
            )
            .unwrap();
            let size_f = size as usize;
            let (before, after) = ((size_f - 1) / 2, size_f - 1 - (size_f - 1) / 2);
            let coef = p.alpha / size as f32;
            for ni in 0..n {
                for ci in 0..c {
                    for k in 0..s {
                        let mut sq = 0f32;
                        for cj in ci.saturating_sub(before)..=ci.saturating_add(after).min(c - 1) {
                            let v = x[(ni * c + cj) * s + k];
                            sq += v * v;
                        }
                        let v = x[(ni * c + ci) * s + k];
                        let want = if beta == 0.75 {
                            let r = (p.bias + coef * sq).sqrt();
                            v / (r * r.sqrt())
                        } else {
                            v / (p.bias + coef * sq).powf(beta)
                        };
                        let got = y[(ni * c + ci) * s + k];
                        assert_eq!(got.to_bits(), want.to_bits(), "size {size} n{ni} c{ci} {k}");
                    }
                }
            }
        }
    }
}
