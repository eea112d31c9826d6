//! Pooling against a naive reference: every kind, window, pad, ceil mode and dilation, blocked layouts, int8 max, global pools.

extern crate std;
use super::*;
use std::vec::Vec;

#[allow(clippy::too_many_arguments)]
fn pool(
    kind: PoolKind,
    x: &[f32],
    xd: &[usize],
    yd: &[usize],
    k: &[u32],
    s: &[u32],
    d: &[u32],
    pb: &[u32],
    pe: &[u32],
    cip: u32,
    pw: f32,
) -> Result<Vec<f32>, KernelError> {
    let sp = k.len();
    let mut p = PoolParams {
        kind: kind as u32,
        spatial: sp as u32,
        kernel: [1; 3],
        stride: [1; 3],
        dilation: [1; 3],
        pad_begin: [0; 3],
        pad_end: [0; 3],
        count_include_pad: cip,
        p: pw,
    };
    p.kernel[..sp].copy_from_slice(k);
    p.stride[..sp].copy_from_slice(s);
    p.dilation[..sp].copy_from_slice(d);
    p.pad_begin[..sp].copy_from_slice(pb);
    p.pad_end[..sp].copy_from_slice(pe);
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
    run_pool(&p, &ins, &mut outs)?;
    Ok(y)
}

fn close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

fn arange(n: usize) -> Vec<f32> {
    (0..n).map(|v| v as f32).collect()
}

/// Direct per-output evaluation, for the vectorized interior path.
#[allow(clippy::too_many_arguments)]
fn reference(
    max: bool,
    x: &[f32],
    (h, w): (usize, usize),
    (oh, ow): (usize, usize),
    k: [usize; 2],
    s: [usize; 2],
    d: [usize; 2],
    pb: [usize; 2],
    include_pad: bool,
    pe: [usize; 2],
) -> Vec<f32> {
    let mut y = Vec::new();
    for plane in x.chunks(h * w) {
        for i in 0..oh {
            for j in 0..ow {
                let (mut acc, mut n, mut padded) = (if max { f32::MIN } else { 0.0 }, 0, 0);
                for a in 0..k[0] {
                    for b in 0..k[1] {
                        let r = (i * s[0] + a * d[0]) as i64 - pb[0] as i64;
                        let c = (j * s[1] + b * d[1]) as i64 - pb[1] as i64;
                        let inside = |v: i64, lim: usize, e: usize| v < (lim + e) as i64;
                        if inside(r, h, pe[0]) && inside(c, w, pe[1]) {
                            padded += 1;
                        }
                        if r < 0 || c < 0 || r >= h as i64 || c >= w as i64 {
                            continue;
                        }
                        let v = plane[r as usize * w + c as usize];
                        acc = if max { acc.max(v) } else { acc + v };
                        n += 1;
                    }
                }
                let n = if include_pad { padded } else { n };
                y.push(if max { acc } else { acc / n as f32 });
            }
        }
    }
    y
}

#[test]
fn wide_rows_match_direct_evaluation() {
    // 1,700 columns: the separable interior path runs in several chunks; 27 and 13
    // (SqueezeNet's stages): a row's last register of columns reads on into the next
    // rows, the plane's last rows take masked loads.
    for (h, w) in [(9, 37), (4, 1700), (27, 27), (13, 13)] {
        wide_rows(h, w);
    }
}

/// Small stride-1 planes (YOLO's SPPF 5 × 5 on 10 × 10, asymmetric pads, 1-wide
/// planes): the padded flat path with `std`, the tap loop without; exactly the reference.
#[test]
fn small_planes_match_direct_evaluation() {
    for (h, w, k, pb, pe) in [
        (10, 10, [5, 5], [2, 2], [2, 2]),
        (7, 3, [3, 2], [0, 1], [2, 0]),
        (1, 9, [1, 4], [0, 3], [0, 0]),
        (20, 20, [5, 5], [2, 2], [2, 2]),
        (40, 40, [5, 5], [2, 2], [2, 2]),
    ] {
        let x: Vec<f32> = (0..3 * h * w)
            .map(|i| ((i * 7919) % 211) as f32 - 100.0)
            .collect();
        let out = |i: usize| [h, w][i] + pb[i] + pe[i] + 1 - k[i];
        let (oh, ow) = (out(0), out(1));
        let u = |a: [usize; 2]| a.map(|v| v as u32);
        let got = pool(
            PoolKind::Max,
            &x,
            &[3, 1, h, w],
            &[3, 1, oh, ow],
            &u(k),
            &[1, 1],
            &[1, 1],
            &u(pb),
            &u(pe),
            0,
            0.0,
        )
        .unwrap();
        let want = reference(true, &x, (h, w), (oh, ow), k, [1, 1], [1, 1], pb, false, pe);
        assert_eq!(got, want, "{h}x{w} k {k:?}");
    }
}

fn wide_rows(h: usize, w: usize) {
    let x: Vec<f32> = (0..2 * h * w)
        .map(|i| ((i * 7919) % 211) as f32 - 100.0)
        .collect();
    for (k, s, d, pb, pe) in WINDOWS {
        let out = |i: usize| (([h, w][i] + pb[i] + pe[i] - (k[i] - 1) * d[i] - 1) / s[i]) + 1;
        let (oh, ow) = (out(0), out(1));
        let u = |a: [usize; 2]| a.map(|v| v as u32);
        for (kind, max, cip) in [
            (PoolKind::Max, true, 0),
            (PoolKind::Average, false, 0),
            (PoolKind::Average, false, 1),
        ] {
            let got = pool(
                kind,
                &x,
                &[1, 2, h, w],
                &[1, 2, oh, ow],
                &u(k),
                &u(s),
                &u(d),
                &u(pb),
                &u(pe),
                cip,
                0.0,
            )
            .unwrap();
            let want = reference(max, &x, (h, w), (oh, ow), k, s, d, pb, cip == 1, pe);
            close(&got, &want);
        }
    }
}

/// Windows covering whole unpadded planes (1-D to 3-D, channel counts not a multiple of
/// the interleave) give each plane's fold in memory order, bitwise: max with NaN and
/// signed zeros, average, Lp.
#[test]
fn whole_plane_windows_fold_each_plane_in_order() {
    for dims in [
        &[1, 11, 7, 7][..],
        &[2, 9, 3, 5],
        &[1, 10, 13],
        &[1, 9, 2, 3, 4],
    ] {
        let plane: usize = dims[2..].iter().product();
        let n: usize = dims.iter().product();
        let mut x: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 211) as f32 / 7.0 - 15.0)
            .collect();
        x[3] = f32::NAN;
        x[plane + 1] = -0.0;
        let sp = dims.len() - 2;
        let k: Vec<u32> = dims[2..].iter().map(|&d| d as u32).collect();
        let yd: Vec<usize> = dims[..2]
            .iter()
            .copied()
            .chain(core::iter::repeat_n(1, sp))
            .collect();
        let ones = std::vec![1u32; sp];
        let zeros = std::vec![0u32; sp];
        for (kind, e) in [
            (PoolKind::Max, 0.0),
            (PoolKind::Average, 0.0),
            (PoolKind::Lp, 3.0),
        ] {
            let got = pool(kind, &x, dims, &yd, &k, &ones, &ones, &zeros, &zeros, 0, e).unwrap();
            let want: Vec<f32> = x
                .chunks_exact(plane)
                .map(|p| match kind {
                    PoolKind::Max => p.iter().fold(f32::NEG_INFINITY, |a, &v| max_step(a, v)),
                    PoolKind::Average => p.iter().fold(0.0, |a, &v| a + v) / plane as f32,
                    PoolKind::Lp => lp_root(p.iter().fold(0.0, |a, &v| a + lp_term(v, e)), e),
                })
                .collect();
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{kind:?} {dims:?}");
        }
    }
}

#[test]
fn max_pool_ceil_mode_and_dilation() {
    // onnx.reference MaxPool(x=arange(16).reshape(1,1,4,4), kernel 3x3, strides 2, ceil_mode 1)
    let x = arange(16);
    close(
        &pool(
            PoolKind::Max,
            &x,
            &[1, 1, 4, 4],
            &[1, 1, 2, 2],
            &[3, 3],
            &[2, 2],
            &[1, 1],
            &[0, 0],
            &[0, 0],
            0,
            0.0,
        )
        .unwrap(),
        &[10., 11., 14., 15.],
    );
    // dilation 2, kernel 2, strides 2, pads 1: onnx.reference [5, 7, 13, 15]
    close(
        &pool(
            PoolKind::Max,
            &x,
            &[1, 1, 4, 4],
            &[1, 1, 2, 2],
            &[2, 2],
            &[2, 2],
            &[2, 2],
            &[1, 1],
            &[1, 1],
            0,
            0.0,
        )
        .unwrap(),
        &[5., 7., 13., 15.],
    );
}

#[test]
fn average_pool_pads_and_ceil() {
    // onnx.reference AveragePool x=arange(16) [1,1,4,4], k 3, s 2, pads 1, ceil_mode 0
    let x = arange(16);
    // count_include_pad = 0: [2.5, 4, 8.5, 10]
    close(
        &pool(
            PoolKind::Average,
            &x,
            &[1, 1, 4, 4],
            &[1, 1, 2, 2],
            &[3, 3],
            &[2, 2],
            &[1, 1],
            &[1, 1],
            &[1, 1],
            0,
            0.0,
        )
        .unwrap(),
        &[2.5, 4., 8.5, 10.],
    );
    // count_include_pad = 1: [10, 24, 51, 90] / 9
    let y = pool(
        PoolKind::Average,
        &x,
        &[1, 1, 4, 4],
        &[1, 1, 2, 2],
        &[3, 3],
        &[2, 2],
        &[1, 1],
        &[1, 1],
        &[1, 1],
        1,
        0.0,
    )
    .unwrap();
    close(&y, &[10.0 / 9.0, 24.0 / 9.0, 51.0 / 9.0, 90.0 / 9.0]);
    // ceil mode 1-D: x=[0..5], k 2, s 2, no pads -> out 3 (last window clipped)
    let x = arange(5);
    close(
        &pool(
            PoolKind::Average,
            &x,
            &[1, 1, 5],
            &[1, 1, 3],
            &[2],
            &[2],
            &[1],
            &[0],
            &[0],
            0,
            0.0,
        )
        .unwrap(),
        &[0.5, 2.5, 4.0],
    );
    // count_include_pad with ceil: last window past the padded extent counts only 1 tap
    close(
        &pool(
            PoolKind::Average,
            &x,
            &[1, 1, 5],
            &[1, 1, 3],
            &[2],
            &[2],
            &[1],
            &[0],
            &[0],
            1,
            0.0,
        )
        .unwrap(),
        &[0.5, 2.5, 4.0],
    );
    // 1 end pad + ceil: x=[0..5], k 3, s 2, pe 1: windows [0,3),[2,5),[4,7) -> include_pad
    // counts 3,3,2; onnx.reference (ceil_mode 1) gives [1, 3, 2] and [1, 3, 4]
    close(
        &pool(
            PoolKind::Average,
            &x,
            &[1, 1, 5],
            &[1, 1, 3],
            &[3],
            &[2],
            &[1],
            &[0],
            &[1],
            1,
            0.0,
        )
        .unwrap(),
        &[1.0, 3.0, 2.0],
    );
    close(
        &pool(
            PoolKind::Average,
            &x,
            &[1, 1, 5],
            &[1, 1, 3],
            &[3],
            &[2],
            &[1],
            &[0],
            &[1],
            0,
            0.0,
        )
        .unwrap(),
        &[1.0, 3.0, 4.0],
    );
    // pads 1/1, ceil: x=[0..6], k 3, s 2 -> onnx.reference [1/3, 2, 4, 2.5] and [0.5, 2, 4, 5]
    let x6 = arange(6);
    close(
        &pool(
            PoolKind::Average,
            &x6,
            &[1, 1, 6],
            &[1, 1, 4],
            &[3],
            &[2],
            &[1],
            &[1],
            &[1],
            1,
            0.0,
        )
        .unwrap(),
        &[1.0 / 3.0, 2.0, 4.0, 2.5],
    );
    close(
        &pool(
            PoolKind::Average,
            &x6,
            &[1, 1, 6],
            &[1, 1, 4],
            &[3],
            &[2],
            &[1],
            &[1],
            &[1],
            0,
            0.0,
        )
        .unwrap(),
        &[0.5, 2.0, 4.0, 5.0],
    );
    // wrong output size
    assert!(
        pool(
            PoolKind::Average,
            &x,
            &[1, 1, 5],
            &[1, 1, 4],
            &[3],
            &[2],
            &[1],
            &[0],
            &[1],
            0,
            0.0
        )
        .is_err()
    );
}

#[test]
fn lp_and_3d() {
    let x = [3.0f32, -4.0, 1.0, 2.0, -2.0, 0.5];
    // p=2 over windows of 2 (stride 2): [5, sqrt(5), sqrt(4.25)]
    close(
        &pool(
            PoolKind::Lp,
            &x,
            &[1, 1, 6],
            &[1, 1, 3],
            &[2],
            &[2],
            &[1],
            &[0],
            &[0],
            0,
            2.0,
        )
        .unwrap(),
        &[5.0, 5f32.sqrt(), 4.25f32.sqrt()],
    );
    // p=3: (27+64)^(1/3)
    let y = pool(
        PoolKind::Lp,
        &x[..2],
        &[1, 1, 2],
        &[1, 1, 1],
        &[2],
        &[1],
        &[1],
        &[0],
        &[0],
        0,
        3.0,
    )
    .unwrap();
    close(&y, &[91f32.powf(1.0 / 3.0)]);
    // 3-D max over 2x2x2 cubes of arange(64) [4,4,4] stride 2 -> max is the +21 corner
    let x = arange(64);
    let y = pool(
        PoolKind::Max,
        &x,
        &[1, 1, 4, 4, 4],
        &[1, 1, 2, 2, 2],
        &[2, 2, 2],
        &[2, 2, 2],
        &[1, 1, 1],
        &[0, 0, 0],
        &[0, 0, 0],
        0,
        0.0,
    )
    .unwrap();
    close(&y, &[21., 23., 29., 31., 53., 55., 61., 63.]);
}

#[test]
fn max_pool_uint8() {
    let x: Vec<u8> = (0..16).map(|v| (v * 37 % 251) as u8).collect();
    let mut y = [0u8; 4];
    let p = PoolParams {
        kind: PoolKind::Max as u32,
        spatial: 2,
        kernel: [2, 2, 1],
        stride: [2, 2, 1],
        dilation: [1; 3],
        pad_begin: [0; 3],
        pad_end: [0; 3],
        count_include_pad: 0,
        p: 0.0,
    };
    let ins = [Some(TensorRef {
        dtype: DType::U8,
        shape: Shape::new(&[1, 1, 4, 4]).unwrap(),
        data: &x,
    })];
    let mut outs = [TensorMut {
        dtype: DType::U8,
        shape: Shape::new(&[1, 1, 2, 2]).unwrap(),
        data: &mut y,
    }];
    run_pool(&p, &ins, &mut outs).unwrap();
    // x = [0,37,74,111, 148,185,222,8, 45,82,119,156, 193,230,16,53]
    assert_eq!(y, [185, 222, 230, 156]);
}

#[test]
fn global_pools() {
    let x = [1.0f32, 2.0, 3.0, 4.0, -1.0, -2.0, 5.0, 0.0];
    let mut y = [0.0f32; 2];
    let ins = [Some(TensorRef {
        dtype: DType::F32,
        shape: Shape::new(&[1, 2, 2, 2]).unwrap(),
        data: bytemuck::cast_slice(&x),
    })];
    for (kind, p, want) in [
        (PoolKind::Average, 0.0, [2.5, 0.5]),
        (PoolKind::Max, 0.0, [4.0, 5.0]),
        (PoolKind::Lp, 1.0, [10.0, 8.0]),
    ] {
        let pp = PoolParams {
            kind: kind as u32,
            spatial: 2,
            kernel: [0; 3],
            stride: [0; 3],
            dilation: [0; 3],
            pad_begin: [0; 3],
            pad_end: [0; 3],
            count_include_pad: 0,
            p,
        };
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[1, 2, 1, 1]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_global_pool(&pp, &ins, &mut outs).unwrap();
        close(&y, &want);
    }
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
        let sp = 1 + r(3);
        let mut p = PoolParams {
            kind: r(4) as u32,
            spatial: if r(10) == 0 { r(5) as u32 } else { sp as u32 },
            kernel: [0; 3],
            stride: [0; 3],
            dilation: [0; 3],
            pad_begin: [0; 3],
            pad_end: [0; 3],
            count_include_pad: r(2) as u32,
            p: [0.0, 1.0, 2.0, 3.0, -1.0][r(5)],
        };
        let mut xd = std::vec![r(3), r(3)];
        let mut yd = xd.clone();
        for i in 0..3 {
            p.kernel[i] = (r(4) + usize::from(r(6) != 0)) as u32;
            p.stride[i] = (r(3) + usize::from(r(6) != 0)) as u32;
            p.dilation[i] = (r(2) + usize::from(r(6) != 0)) as u32;
            p.pad_begin[i] = r(3) as u32;
            p.pad_end[i] = r(3) as u32;
        }
        let big = u32::MAX - r(2) as u32;
        match r(40) {
            0 => p.pad_begin[r(3)] = big,
            1 => p.pad_end[r(3)] = big,
            2 => p.stride[r(3)] = big,
            3 => p.dilation[r(3)] = big,
            4 => p.kernel[r(3)] = big,
            _ => {}
        }
        for i in 0..sp {
            let x = r(7);
            xd.push(x);
            let (k, s, d) = (
                p.kernel[i] as i64,
                p.stride[i].max(1) as i64,
                p.dilation[i] as i64,
            );
            let num = x as i64 + p.pad_begin[i] as i64 + p.pad_end[i] as i64 - (d * (k - 1) + 1);
            let o = if r(2) == 0 {
                num / s + 1
            } else {
                (num + s - 1).div_euclid(s) + 1
            };
            yd.push(if r(8) == 0 || !(0..64).contains(&o) {
                r(5)
            } else {
                o as usize
            });
        }
        let (xs, ys) = (Shape::new(&xd).unwrap(), Shape::new(&yd).unwrap());
        let x = std::vec![1.5f32; xs.numel()];
        let mut y = std::vec![0.0f32; ys.numel()];
        let ins = [Some(TensorRef {
            dtype: DType::F32,
            shape: xs,
            data: bytemuck::cast_slice(&x),
        })];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: ys,
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        oks += usize::from(run_pool(&p, &ins, &mut outs).is_ok());
        let _ = run_global_pool(&p, &ins, &mut outs);
    }
    assert!(oks > 300, "only {oks} well-formed cases ran");
}

/// The dequantizing average of whole planes (int8 / uint8 in, f32 out) gives the bits of
/// dequantizing first (`(f32(x) − zp) · scale`, as a separate task writes it) and then the
/// f32 pool — on planes of odd sizes, more planes than one fold group, both 8-bit types —
/// and refuses windows that are not whole planes.
#[test]
fn dequantizing_average_matches_dequantize_then_pool() {
    use crate::ops::test_util::{t, tm};
    let (n, c, h, w) = (2usize, 11usize, 5usize, 7usize);
    let (scale, zp) = (0.0371f32, 3.0f32);
    let p = PoolParams::whole_plane_average(2, [h as u32, w as u32, 1]);
    let mut seed = 0x9e37_79b9u32;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let xi: Vec<i8> = (0..n * c * h * w).map(|_| next() as i8).collect();
    let xu: Vec<u8> = xi.iter().map(|&v| v as u8).collect();
    let (sc, zs) = ([scale], [zp]);
    let run = |x: TensorRef<'_>| {
        let mut y = std::vec![0f32; n * c];
        let ins = [Some(x), Some(t(&[1], &sc)), Some(t(&[1], &zs))];
        let mut outs = [tm(&[n, c, 1, 1], &mut y)];
        run_global_pool(&p, &ins, &mut outs).map(|()| y)
    };
    let reference = |xf: Vec<f32>| {
        let mut y = std::vec![0f32; n * c];
        let ins = [Some(t(&[n, c, h, w], &xf))];
        run_pool_f32(&p, &ins, &mut [tm(&[n, c, 1, 1], &mut y)]).unwrap();
        y
    };
    let got = run(t(&[n, c, h, w], &xi)).unwrap();
    let want = reference(xi.iter().map(|&v| (f32::from(v) - zp) * scale).collect());
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want), "int8");
    assert!(
        got.iter().any(|&v| v != got[0]),
        "a constant output tests nothing"
    );
    let got = run(t(&[n, c, h, w], &xu)).unwrap();
    let want = reference(xu.iter().map(|&v| (f32::from(v) - zp) * scale).collect());
    assert_eq!(bits(&got), bits(&want), "uint8");
    // A 3 × 3 window on a 5 × 7 plane is not a whole plane: refused, not miscomputed.
    let small = PoolParams {
        kernel: [3, 3, 1],
        ..p
    };
    let mut y = std::vec![0f32; n * c * 3 * 5];
    let ins = [
        Some(t(&[n, c, h, w], &xi)),
        Some(t(&[1], &sc)),
        Some(t(&[1], &zs)),
    ];
    assert!(run_global_pool(&small, &ins, &mut [tm(&[n, c, 3, 5], &mut y)]).is_err());
}
