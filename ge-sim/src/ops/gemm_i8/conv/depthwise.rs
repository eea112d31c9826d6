//! Depthwise QConv in f32 arithmetic (exact for int8 products within `MAX_DW_TAPS` taps),
//! with requantization on the way out.

use super::*;

/// A depthwise conv on a padded f32 copy of each channel, `band` output rows at a time
/// (the rows their windows reach; the planner's level, the same bytes): every product and partial sum
/// is an integer below 2^24 in magnitude (at most [`MAX_DW_TAPS`] taps of 255·128), so f32
/// arithmetic is exact whatever the order and the result is the integer the GEMM path
/// computes (padding reads as the activation zero point there too); the tap loop is then a
/// plain multiply-add over consecutive values, built for the host's vector ISA. That path
/// ran a 16-column tile for one column per group. `None` when the workspace is too small
/// for the band or the window too large ([`dw_direct`]). O(N·C·(H·W + H_out·W_out·k)).
pub(super) fn depthwise_f32<A: Act + bytemuck::Pod>(
    s: &Slices<'_>,
    x: &[A],
    pad: u8,
    band_rows: usize,
    ws: &mut [u8],
    y: &mut [u8],
) -> Option<KernelResult> {
    let (p, g) = (s.p, &s.g);
    let b = band_rows.clamp(1, g.oh.max(1));
    let (hp, wp) = dw_plane(p, g, b)?;
    let run = dw_run(p, g, wp, b)?;
    let need = dw_band(p, g, b)?;
    // All of the workspace (the ring and the AVX-512 band use what the band's layout does
    // not), from which the band's `need` values are cut.
    let whole = ws.len() / 4 * 4;
    let ws: &mut [f32] = bytemuck::try_cast_slice_mut(ws.get_mut(..whole)?).ok()?;
    if ws.len() < need {
        return None;
    }
    if g.k > MAX_DW_TAPS || (s.y != DType::I32 && s.rq.is_empty()) {
        return None;
    }
    let (sh, sw) = (p.stride[0] as usize, p.stride[1] as usize);
    let (dh, dw) = (p.dilation[0] as usize, p.dilation[1] as usize);
    let (pt, pl) = (p.pad_begin[0] as usize, p.pad_begin[1] as usize);
    let (hw, ohw) = (g.h * g.w, g.oh * g.ow);
    let flat = dw_flat(p);
    // Output rows a band of the vector paths holds in the whole workspace.
    let fast_rows = ((ws.len() / wp.max(1)).saturating_sub((g.kh - 1) * dh + 1) / sh.max(1) + 1)
        .clamp(b, g.oh.max(1));
    // The byte im2col writes for padding, read as an activation.
    let pad = if A::SIGNED {
        f32::from(pad as i8)
    } else {
        f32::from(pad)
    };
    let mut w = [0f32; MAX_DW_TAPS];
    // The vector kernels (AVX-512, else AVX2 in two eight-lane halves).
    let vectors = crate::arch::qtile::depthwise_vectors();
    // Rows narrower than a vector ([`dw_lanes`]), compact taps, no weight zero point, 8-bit
    // outputs in one vector form and a workspace that holds the ring: sixteen channels a
    // vector.
    if vectors
        && dw_lanes(p, g).is_some_and(|l| l > 0)
        && s.compact
        && s.zb.iter().all(|&z| z == 0)
        && matches!(s.y, DType::U8 | DType::I8)
        && !s.rq.is_empty()
    {
        let (lo, hi) = q8_bounds(s.y);
        let xb: &[u8] = bytemuck::cast_slice(x);
        let chw = g.c * hw;
        let mut all = true;
        for n in 0..g.batch {
            let planes = super::Planes {
                x: &xb[n * chw..][..chw],
                signed: A::SIGNED,
                c: g.c,
                h: g.h,
                w: g.w,
                oh: g.oh,
                ow: g.ow,
                kh: g.kh,
                kw: g.kw,
                sh,
                sw,
                dh,
                dw,
                pt,
                pl,
                pad,
                taps: s.b,
                corr: s.corr,
                rq: s.rq,
                zp: s.zp,
                lo,
                hi,
            };
            let out = &mut y[n * g.c * ohw..][..g.c * ohw];
            if !crate::arch::qtile::depthwise_lanes(&planes, ws, out) {
                all = false;
                break;
            }
        }
        if all {
            return Some(Ok(()));
        }
    }
    isa::with_simd(
        #[inline(always)]
        || {
            for n in 0..g.batch {
                for c in 0..g.c {
                    let panel = &s.b[c * s.plen..(c + 1) * s.plen];
                    for (kk, wv) in w.iter_mut().enumerate().take(g.k) {
                        *wv = f32::from(if s.compact {
                            panel[kk]
                        } else {
                            panel[kk / 2 * 2 * crate::ops::gemm_i8::NR + kk % 2]
                        });
                    }
                    let plane = &x[(n * g.c + c) * hw..][..hw];
                    let (corr, zb) = (s.corr[c], pick(s.zb, c).unwrap_or(0));
                    let rq = pick(s.rq, c).unwrap_or(Requant { mult: 0, shift: 1 });
                    // The vector band (AVX-512, else AVX2): 8-bit outputs in a vector
                    // requantization form, no weight zero point (its sums of activations stay
                    // on the loop below).
                    let fast = if vectors
                        && zb == 0
                        && matches!(s.y, DType::U8 | DType::I8)
                        && super::DwBand::stride_fits(sw)
                    {
                        let (lo, hi) = q8_bounds(s.y);
                        crate::arch::qtile::BandRq::new(rq, s.zp, lo, hi)
                    } else {
                        None
                    };
                    // The whole workspace one band (it needs none of the runs below),
                    // widened, each output row computed in registers.
                    if let Some(rq) = fast {
                        let fb = fast_rows;
                        let mut done = true;
                        for o0 in (0..g.oh).step_by(fb) {
                            let here = fb.min(g.oh - o0);
                            let band_in = super::DwBand {
                                plane: bytemuck::cast_slice(plane),
                                signed: A::SIGNED,
                                h: g.h,
                                w: g.w,
                                iy0: (o0 * sh) as isize - pt as isize,
                                rows: (here - 1) * sh + (g.kh - 1) * dh + 1,
                                wp,
                                pl,
                                pad,
                                taps: &w[..g.k],
                                kh: g.kh,
                                kw: g.kw,
                                dh,
                                dw,
                                sh,
                                sw,
                                here,
                                ow: g.ow,
                                corr,
                            };
                            let at = (n * g.c + c) * ohw + o0 * g.ow;
                            let out = &mut y[at..at + here * g.ow];
                            done &= crate::arch::qtile::depthwise_band(rq, &band_in, ws, out);
                        }
                        if done {
                            continue;
                        }
                    }
                    let (band, rest) = ws.split_at_mut(hp * wp + dw_slack(p, g));
                    let (acc, rest) = rest.split_at_mut(run);
                    let (sum, qv) = rest.split_at_mut(run);
                    for o0 in (0..g.oh).step_by(b) {
                        let here = b.min(g.oh - o0);
                        // The band's rows with their padding written out (rows and columns past
                        // the input read as the zero point, as im2col's do).
                        band.fill(pad);
                        for (r, row) in band.chunks_exact_mut(wp).enumerate() {
                            let Some(iy) = (o0 * sh + r).checked_sub(pt).filter(|&iy| iy < g.h)
                            else {
                                continue;
                            };
                            let src = &plane[iy * g.w..][..g.w];
                            let lo = pl.min(wp);
                            for (d, v) in row[lo..].iter_mut().zip(src) {
                                *d = f32::from(v.wide());
                            }
                        }
                        // Runs: the whole band at once (stride ≤ 2), else each output row.
                        let runs = if flat { 1 } else { here };
                        for oy in 0..runs {
                            acc.fill(0.0);
                            sum.fill(0.0);
                            for i in 0..g.kh {
                                for j in 0..g.kw {
                                    let wt = w[i * g.kw + j];
                                    let from = &band[(oy * sh + i * dh) * wp + j * dw..];
                                    if flat || sw == 1 {
                                        for (a, &v) in acc.iter_mut().zip(from) {
                                            *a += v * wt;
                                        }
                                        if zb != 0 {
                                            for (a, &v) in sum.iter_mut().zip(from) {
                                                *a += v;
                                            }
                                        }
                                    } else {
                                        for (t, a) in acc.iter_mut().enumerate() {
                                            *a += from[t * sw] * wt;
                                        }
                                        if zb != 0 {
                                            for (t, a) in sum.iter_mut().enumerate() {
                                                *a += from[t * sw];
                                            }
                                        }
                                    }
                                }
                            }
                            // The run's rows: `sh·wp` apart in a flat run, every `sw`-th of
                            // their first `(ow − 1)·sw + 1` positions kept.
                            let (rows, stride, step) = if flat {
                                (here, sh * wp, sw)
                            } else {
                                (1, g.ow, 1)
                            };
                            let at = (n * g.c + c) * ohw + (o0 + oy) * g.ow;
                            let q8 = matches!(s.y, DType::U8 | DType::I8);
                            // Either vector form (onnxruntime's f32 or TFLite's fixed point),
                            // lane by lane over the whole run (the scalar `apply` per output
                            // was most of this task's time).
                            if q8
                                && crate::arch::qtile::requant_run(
                                    rq,
                                    acc,
                                    sum,
                                    corr,
                                    zb,
                                    s.zp,
                                    q8_bounds(s.y),
                                    bytemuck::cast_slice_mut(&mut *qv),
                                )
                            {
                                let bytes: &[u8] = bytemuck::cast_slice(&*qv);
                                for r in 0..rows {
                                    let out = &mut y[at + r * g.ow..][..g.ow];
                                    let from = bytes[r * stride..].iter().step_by(step);
                                    for (o, &q) in out.iter_mut().zip(from) {
                                        *o = q;
                                    }
                                }
                                continue;
                            }
                            if let (Some(scale), true) = (f32_scale(rq), q8) {
                                // onnxruntime's f32 requantization over the run: the rounded
                                // product plus the zero point is exact in f32 below 2^24, and
                                // a larger one saturates either way.
                                let (lo, hi) = if s.y == DType::U8 {
                                    (0.0, 255.0)
                                } else {
                                    (-128.0, 127.0)
                                };
                                let zp = s.zp as f32;
                                for ((q, &a), &sm) in qv.iter_mut().zip(acc.iter()).zip(sum.iter())
                                {
                                    let v = (a as i32)
                                        .wrapping_add(corr)
                                        .wrapping_sub(zb.wrapping_mul(sm as i32));
                                    // max/min, not `f32::clamp`: its bounds check links float formatting
                                    // into firmware (7.6 KB) for a case that cannot arise.
                                    *q = ((v as f32 * scale).round_even() + zp).max(lo).min(hi);
                                }
                                for r in 0..rows {
                                    let out = &mut y[at + r * g.ow..][..g.ow];
                                    let from = qv[r * stride..].iter().step_by(step);
                                    for (o, &q) in out.iter_mut().zip(from) {
                                        *o = q as i32 as u8;
                                    }
                                }
                                continue;
                            }
                            for r in 0..rows {
                                for t in 0..g.ow {
                                    let i = r * stride + t * step;
                                    let (a, sm) = (acc[i], sum[i]);
                                    let v = (a as i32)
                                        .wrapping_add(corr)
                                        .wrapping_sub(zb.wrapping_mul(sm as i32));
                                    let o = at + r * g.ow + t;
                                    match s.y {
                                        DType::I32 => {
                                            y[o * 4..o * 4 + 4].copy_from_slice(&v.to_le_bytes())
                                        }
                                        DType::U8 => y[o] = rq.apply(v, s.zp, 0, 255) as u8,
                                        _ => y[o] = rq.apply(v, s.zp, -128, 127) as i8 as u8,
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
    );
    Some(Ok(()))
}

/// Most taps of a depthwise window the direct path takes (larger ones are an error).
pub(super) const MAX_DW_TAPS: usize = 64;

/// The scale of onnxruntime's f32 requantization form, `None` for the fixed-point one.
pub(super) fn f32_scale(rq: Requant) -> Option<f32> {
    (rq.shift == 0).then(|| f32::from_bits(rq.mult as u32))
}

/// A per-channel list's entry `c`, its only one for a per-tensor list, `None` when empty.
pub(super) fn pick<T: Copy>(v: &[T], c: usize) -> Option<T> {
    if v.len() == 1 {
        v.first().copied()
    } else {
        v.get(c).copied()
    }
}
