//! Convolutions against a naive reference: every path the planner picks (im2col, direct rows, depthwise planes and bands, blocked, AVX-512 depthwise), groups, dilations, strides, pads, prologues, epilogues, thread splits; ConvTranspose.

extern crate std;
use super::*;
use ge_runtime::format::{Activation, DType, UnaryOp};
use std::vec::Vec;

fn lcg(seed: &mut u32) -> f32 {
    *seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
    (*seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
}

struct Case {
    x: Vec<usize>,
    w: Vec<usize>,
    group: usize,
    stride: Vec<usize>,
    dil: Vec<usize>,
    pb: Vec<usize>,
    pe: Vec<usize>,
    op: Vec<usize>,
    bias: bool,
}

fn params(c: &Case) -> ConvParams {
    let sp = c.x.len() - 2;
    let mut p = ConvParams {
        spatial: sp as u32,
        group: c.group as u32,
        kernel: [0; 3],
        stride: [1; 3],
        dilation: [1; 3],
        pad_begin: [0; 3],
        pad_end: [0; 3],
        output_padding: [0; 3],
        act: Activation::default(),
        prologue: Activation::default(),
    };
    for i in 0..sp {
        p.kernel[i] = c.w[2 + i] as u32;
        p.stride[i] = c.stride[i] as u32;
        p.dilation[i] = c.dil[i] as u32;
        p.pad_begin[i] = c.pb[i] as u32;
        p.pad_end[i] = c.pe[i] as u32;
        if !c.op.is_empty() {
            p.output_padding[i] = c.op[i] as u32;
        }
    }
    p
}

/// Naive N-d conv (up to 3 spatial) over flattened indices.
fn naive_conv(c: &Case, x: &[f32], w: &[f32], b: Option<&[f32]>, yd: &[usize]) -> Vec<f32> {
    let sp = c.x.len() - 2;
    let pad3 = |v: &[usize], fill: usize| -> [usize; 3] {
        let mut o = [fill; 3];
        o[3 - sp..].copy_from_slice(&v[..sp]);
        o
    };
    let (xs, ks, ys) = (pad3(&c.x[2..], 1), pad3(&c.w[2..], 1), pad3(&yd[2..], 1));
    let (st, dl, pb) = (pad3(&c.stride, 1), pad3(&c.dil, 1), pad3(&c.pb, 0));
    let (n, ci, m) = (c.x[0], c.x[1], c.w[0]);
    let (cg, mg) = (ci / c.group, m / c.group);
    let mut y = std::vec![0.0f32; n * m * ys.iter().product::<usize>()];
    for bn in 0..n {
        for mo in 0..m {
            let g = mo / mg;
            for o0 in 0..ys[0] {
                for o1 in 0..ys[1] {
                    for o2 in 0..ys[2] {
                        let mut s = b.map_or(0.0, |b| b[mo] as f64);
                        for cc in 0..cg {
                            let ch = g * cg + cc;
                            for k0 in 0..ks[0] {
                                for k1 in 0..ks[1] {
                                    for k2 in 0..ks[2] {
                                        let i0 = (o0 * st[0] + k0 * dl[0]) as i64 - pb[0] as i64;
                                        let i1 = (o1 * st[1] + k1 * dl[1]) as i64 - pb[1] as i64;
                                        let i2 = (o2 * st[2] + k2 * dl[2]) as i64 - pb[2] as i64;
                                        if i0 < 0
                                            || i1 < 0
                                            || i2 < 0
                                            || i0 >= xs[0] as i64
                                            || i1 >= xs[1] as i64
                                            || i2 >= xs[2] as i64
                                        {
                                            continue;
                                        }
                                        let xi = (((bn * ci + ch) * xs[0] + i0 as usize) * xs[1]
                                            + i1 as usize)
                                            * xs[2]
                                            + i2 as usize;
                                        let wi = (((mo * cg + cc) * ks[0] + k0) * ks[1] + k1)
                                            * ks[2]
                                            + k2;
                                        s += x[xi] as f64 * w[wi] as f64;
                                    }
                                }
                            }
                        }
                        y[(((bn * m + mo) * ys[0] + o0) * ys[1] + o1) * ys[2] + o2] = s as f32;
                    }
                }
            }
        }
    }
    y
}

/// Naive ConvTranspose by direct scatter.
fn naive_conv_t(c: &Case, x: &[f32], w: &[f32], b: Option<&[f32]>, yd: &[usize]) -> Vec<f32> {
    let sp = c.x.len() - 2;
    let pad3 = |v: &[usize], fill: usize| -> [usize; 3] {
        let mut o = [fill; 3];
        o[3 - sp..].copy_from_slice(&v[..sp]);
        o
    };
    let (xs, ks, ys) = (pad3(&c.x[2..], 1), pad3(&c.w[2..], 1), pad3(&yd[2..], 1));
    let (st, dl, pb) = (pad3(&c.stride, 1), pad3(&c.dil, 1), pad3(&c.pb, 0));
    let (n, ci) = (c.x[0], c.x[1]);
    let mg = c.w[1];
    let m = mg * c.group;
    let cg = ci / c.group;
    let yp: usize = ys.iter().product();
    let mut y = std::vec![0.0f64; n * m * yp];
    for bn in 0..n {
        for mo in 0..m {
            for v in &mut y[(bn * m + mo) * yp..(bn * m + mo + 1) * yp] {
                *v = b.map_or(0.0, |b| b[mo] as f64);
            }
        }
        for ch in 0..ci {
            let g = ch / cg;
            for i0 in 0..xs[0] {
                for i1 in 0..xs[1] {
                    for i2 in 0..xs[2] {
                        let xv =
                            x[(((bn * ci + ch) * xs[0] + i0) * xs[1] + i1) * xs[2] + i2] as f64;
                        for mm in 0..mg {
                            let mo = g * mg + mm;
                            for k0 in 0..ks[0] {
                                for k1 in 0..ks[1] {
                                    for k2 in 0..ks[2] {
                                        let o0 = (i0 * st[0] + k0 * dl[0]) as i64 - pb[0] as i64;
                                        let o1 = (i1 * st[1] + k1 * dl[1]) as i64 - pb[1] as i64;
                                        let o2 = (i2 * st[2] + k2 * dl[2]) as i64 - pb[2] as i64;
                                        if o0 < 0
                                            || o1 < 0
                                            || o2 < 0
                                            || o0 >= ys[0] as i64
                                            || o1 >= ys[1] as i64
                                            || o2 >= ys[2] as i64
                                        {
                                            continue;
                                        }
                                        let wi = (((ch * mg + mm) * ks[0] + k0) * ks[1] + k1)
                                            * ks[2]
                                            + k2;
                                        let yi = (((bn * m + mo) * ys[0] + o0 as usize) * ys[1]
                                            + o1 as usize)
                                            * ys[2]
                                            + o2 as usize;
                                        y[yi] += xv * w[wi] as f64;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    y.iter().map(|&v| v as f32).collect()
}

fn out_dims(c: &Case, transpose: bool) -> Vec<usize> {
    let sp = c.x.len() - 2;
    let m = if transpose { c.w[1] * c.group } else { c.w[0] };
    let mut d = std::vec![c.x[0], m];
    for i in 0..sp {
        let span = c.dil[i] * (c.w[2 + i] - 1) + 1;
        d.push(if transpose {
            c.stride[i] * (c.x[2 + i] - 1) + c.op.get(i).copied().unwrap_or(0) + span
                - c.pb[i]
                - c.pe[i]
        } else {
            (c.x[2 + i] + c.pb[i] + c.pe[i] - span) / c.stride[i] + 1
        });
    }
    d
}

/// Runs the kernel with exactly the planned workspace and compares with the naive loop.
fn check(c: &Case, transpose: bool) -> Path {
    let mut seed = 11;
    let x: Vec<f32> = (0..c.x.iter().product()).map(|_| lcg(&mut seed)).collect();
    let w: Vec<f32> = (0..c.w.iter().product()).map(|_| lcg(&mut seed)).collect();
    let yd = out_dims(c, transpose);
    let m = yd[1];
    let b: Vec<f32> = (0..m).map(|_| lcg(&mut seed)).collect();
    let p = params(c);
    let (xs, wsh, ys) = (
        Shape::new(&c.x).unwrap(),
        Shape::new(&c.w).unwrap(),
        Shape::new(&yd).unwrap(),
    );
    let bs = Shape::new(&[m]).unwrap();
    let nbytes = conv_workspace_bytes(
        &p,
        transpose,
        &[Some(xs), Some(wsh), c.bias.then_some(bs)],
        &[ys],
    );
    let mut ws = std::vec![0u32; nbytes / 4];
    let mut y = std::vec![0.0f32; yd.iter().product()];
    let ins = [
        Some(TensorRef {
            dtype: DType::F32,
            shape: xs,
            data: bytemuck::cast_slice(&x),
        }),
        Some(TensorRef {
            dtype: DType::F32,
            shape: wsh,
            data: bytemuck::cast_slice(&w),
        }),
        c.bias.then(|| TensorRef {
            dtype: DType::F32,
            shape: bs,
            data: bytemuck::cast_slice(&b),
        }),
    ];
    let mut outs = [TensorMut {
        dtype: DType::F32,
        shape: ys,
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    let ws_bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
    if transpose {
        run_conv_transpose(&p, &ins, &mut outs, ws_bytes)
    } else {
        run_conv(&p, &ins, &mut outs, ws_bytes)
    }
    .unwrap();
    let planned = plan(&p, transpose, &xs, &wsh, &ys).unwrap();
    if !transpose {
        // Weights pre-packed by the compiler give bitwise the same result on every path,
        // in a workspace planned for them, on one slot and on three.
        let (g, k) = (c.group, c.w[1..].iter().product::<usize>());
        let rows = c.w[0] / g;
        let mut wp = w.clone();
        for gi in 0..g {
            let at = gi * rows * k;
            ge_runtime::format::pack_panels(
                &w[at..at + rows * k],
                rows,
                k,
                &mut wp[at..at + rows * k],
            );
        }
        let pp = p.with_weight_layout(WeightLayout::Panels);
        let shapes = [Some(xs), Some(wsh), c.bias.then_some(bs)];
        let nb = conv_workspace_bytes(&pp, false, &shapes, &[ys]);
        assert!(nb <= nbytes, "packed weights need more workspace");
        let mut ins_p = ins;
        ins_p[1] = Some(TensorRef {
            dtype: DType::F32,
            shape: wsh,
            data: bytemuck::cast_slice(&wp),
        });
        for slots in [1, 3] {
            let mut wsp = std::vec![0u32; nb / 4];
            let mut yp = std::vec![0.0f32; y.len()];
            let mut outs_p = [TensorMut {
                dtype: DType::F32,
                shape: ys,
                data: bytemuck::cast_slice_mut(&mut yp),
            }];
            let par = super::super::test_util::Slots(slots);
            let wsb: &mut [u8] = bytemuck::cast_slice_mut(&mut wsp);
            run_conv_on(&pp, &ins_p, &mut outs_p, wsb, &par).unwrap();
            assert!(
                y.iter().zip(&yp).all(|(a, b)| a.to_bits() == b.to_bits()),
                "packed weights differ ({slots} slots, {:?})",
                planned.path
            );
        }
    }
    if !transpose {
        // Every smaller workspace the planner may give (bands of fewer rows, fewer packing
        // slots) gives bitwise the same result, on one slot and on three.
        let shapes = [Some(xs), Some(wsh), c.bias.then_some(bs)];
        if let Some(levels) = conv_workspace_levels(&p, &shapes, &[ys]) {
            assert_eq!(levels[0], nbytes, "level 0 is the planned workspace");
            assert!(levels.windows(2).all(|l| l[1] <= l[0]), "{levels:?}");
            for (&lv, slots) in levels.iter().zip([1, 3].into_iter().cycle()) {
                let mut wsl = std::vec![0u32; lv.div_ceil(4)];
                let mut yl = std::vec![0.0f32; y.len()];
                let mut outs_l = [TensorMut {
                    dtype: DType::F32,
                    shape: ys,
                    data: bytemuck::cast_slice_mut(&mut yl),
                }];
                let par = super::super::test_util::Slots(slots);
                let wsb: &mut [u8] = &mut bytemuck::cast_slice_mut(&mut wsl)[..lv];
                run_conv_on(&p, &ins, &mut outs_l, wsb, &par).unwrap();
                assert!(
                    y.iter().zip(&yl).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "workspace level {lv} B of {levels:?} differs ({:?})",
                    planned.path
                );
            }
        }
    }
    if let Path::Direct(_) = planned.path {
        // The im2col path gives bitwise the same result (same taps, order and K blocks),
        // on one slot and on three.
        let implicit = Plan {
            path: Path::Implicit,
            gemm_len: gemm_packed_ws_len(planned.geo.small_plane, planned.rows),
            ..planned
        };
        let mut ws2 = std::vec![0u32; implicit.gemm_len];
        let mut y2 = std::vec![0.0f32; y.len()];
        let mut outs2 = [TensorMut {
            dtype: DType::F32,
            shape: ys,
            data: bytemuck::cast_slice_mut(&mut y2),
        }];
        let ws2b: &mut [u8] = bytemuck::cast_slice_mut(&mut ws2);
        run_conv_planned(&p, &implicit, &ins, &mut outs2, ws2b, &Serial).unwrap();
        assert_eq!(y, y2, "direct and im2col paths differ");
        let mut y3 = std::vec![0.0f32; y.len()];
        let mut outs3 = [TensorMut {
            dtype: DType::F32,
            shape: ys,
            data: bytemuck::cast_slice_mut(&mut y3),
        }];
        let ws_bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
        run_conv_planned(
            &p,
            &planned,
            &ins,
            &mut outs3,
            ws_bytes,
            &super::super::test_util::Slots(3),
        )
        .unwrap();
        assert_eq!(y, y3, "direct path differs between 1 and 3 slots");
    }
    let narrow_direct = match planned.path {
        Path::Implicit if planned.geo.small[2] < super::super::gemm::NR => {
            direct::layout_within(&planned.geo, usize::MAX)
        }
        _ => None,
    };
    if let Some(lay) = narrow_direct {
        // Narrow rows are planned on im2col; blobs of an older ge run them on the direct
        // path, which gives bitwise the same values on one slot and on three.
        let forced = Plan {
            path: Path::Direct(lay),
            gemm_len: lay.ws_len(),
            ..planned
        };
        for slots in [1, 3] {
            let mut wsd = std::vec![0u32; forced.gemm_len];
            let mut yd = std::vec![0.0f32; y.len()];
            let mut outsd = [TensorMut {
                dtype: DType::F32,
                shape: ys,
                data: bytemuck::cast_slice_mut(&mut yd),
            }];
            let wsdb: &mut [u8] = bytemuck::cast_slice_mut(&mut wsd);
            let par = super::super::test_util::Slots(slots);
            run_conv_planned(&p, &forced, &ins, &mut outsd, wsdb, &par).unwrap();
            assert_eq!(
                y, yd,
                "narrow direct and im2col paths differ ({slots} slots)"
            );
        }
    }
    if let Path::Depthwise(Some(_)) = planned.path {
        // The banded depthwise path gives the row loop's values (same sums, same order).
        let rows = Plan {
            path: Path::Depthwise(None),
            gemm_len: 0,
            ..planned
        };
        let mut y2 = std::vec![0.0f32; y.len()];
        let mut outs2 = [TensorMut {
            dtype: DType::F32,
            shape: ys,
            data: bytemuck::cast_slice_mut(&mut y2),
        }];
        run_conv_planned(&p, &rows, &ins, &mut outs2, &mut [], &Serial).unwrap();
        assert_eq!(y, y2, "banded depthwise and the row loop differ");
        let mut y3 = std::vec![0.0f32; y.len()];
        let mut outs3 = [TensorMut {
            dtype: DType::F32,
            shape: ys,
            data: bytemuck::cast_slice_mut(&mut y3),
        }];
        let ws_bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
        let slots = super::super::test_util::Slots(3);
        run_conv_planned(&p, &planned, &ins, &mut outs3, ws_bytes, &slots).unwrap();
        assert_eq!(y, y3, "banded depthwise differs between 1 and 3 slots");
    }
    let bias = c.bias.then_some(&b[..]);
    let want = if transpose {
        naive_conv_t(c, &x, &w, bias, &yd)
    } else {
        naive_conv(c, &x, &w, bias, &yd)
    };
    let err = y
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(err < 1e-4, "err {err}");
    if nbytes >= 4 {
        // one float short of the plan runs on a smaller band or fewer slots where one
        // fits, and is refused otherwise
        let short: &mut [u8] = &mut bytemuck::cast_slice_mut::<u32, u8>(&mut ws)[..nbytes - 4];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: ys,
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        let r = if transpose {
            run_conv_transpose(&p, &ins, &mut outs, short)
        } else {
            run_conv(&p, &ins, &mut outs, short)
        };
        let pl = plan(&p, transpose, &xs, &wsh, &ys).unwrap();
        let im2col = gemm_packed_ws_len(pl.geo.small_plane, pl.rows) * 4;
        // On AVX2 the lanes path runs a direct, pointwise or im2col plan in what it
        // needs, which may be less than the plan's other paths.
        #[cfg(feature = "std")]
        let lanes_fit = !transpose
            && crate::arch::kernels::CONV_LANES
            && isa::isa() == isa::Isa::Avx2Fma
            && lanes_layout(&pl.geo, pl.path)
                .is_some_and(|lay| lanes::ws_len(&pl.geo, &lay) * 4 <= nbytes - 4);
        #[cfg(not(feature = "std"))]
        let lanes_fit = false;
        // A GEMM plan short of its slots runs on the slots the workspace holds.
        let one_slot = (pl.col_len + pack_slot_len(pl.geo.small_plane, pl.rows)) * 4 <= nbytes - 4;
        let fallback = lanes_fit
            || match pl.path {
                Path::Direct(_) => {
                    direct::layout_within(&pl.geo, (nbytes - 4) / 4).is_some()
                        || (cfg!(feature = "std") && im2col <= nbytes - 4)
                }
                // An im2col plan (narrow rows, strided 1×1) short of its workspace runs
                // on fewer slots, or the direct path when that fits.
                Path::Implicit => {
                    one_slot
                        || (cfg!(feature = "std")
                            && direct::layout_within(&pl.geo, (nbytes - 4) / 4).is_some())
                }
                Path::Pointwise => one_slot,
                Path::Depthwise(_) => true,
                _ => false,
            };
        if fallback {
            // a direct plan falls back to narrower bands or to im2col when only that
            // workspace is there, an im2col one to the direct path, a depthwise one to
            // the row loop
            assert_eq!(r, Ok(()));
            let e = y
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(e < 1e-4, "fallback err {e}");
        } else {
            assert_eq!(r, Err(KernelError::Workspace));
        }
    }
    plan(&p, transpose, &xs, &wsh, &ys).unwrap().path
}

#[allow(clippy::too_many_arguments)]
fn case(
    x: &[usize],
    w: &[usize],
    group: usize,
    stride: &[usize],
    dil: &[usize],
    pb: &[usize],
    pe: &[usize],
    bias: bool,
) -> Case {
    Case {
        x: x.to_vec(),
        w: w.to_vec(),
        group,
        stride: stride.to_vec(),
        dil: dil.to_vec(),
        pb: pb.to_vec(),
        pe: pe.to_vec(),
        op: Vec::new(),
        bias,
    }
}

#[test]
fn conv2d_groups_dilation_stride_asymmetric_pads() {
    let c = case(
        &[2, 4, 9, 8],
        &[6, 2, 3, 2],
        2,
        &[2, 1],
        &[2, 3],
        &[1, 0],
        &[2, 3],
        true,
    );
    assert_eq!(
        check(&c, false),
        Path::Implicit,
        "narrow rows: im2col (direct compared in check)"
    );
    let c = case(
        &[1, 3, 7, 7],
        &[5, 3, 3, 3],
        1,
        &[1, 1],
        &[1, 1],
        &[1, 1],
        &[1, 1],
        false,
    );
    check(&c, false);
    let c = case(
        &[1, 3, 6, 5],
        &[4, 3, 2, 4],
        1,
        &[3, 2],
        &[1, 1],
        &[0, 2],
        &[1, 0],
        true,
    );
    check(&c, false);
}

#[test]
fn conv_pointwise_and_depthwise() {
    let c = case(
        &[2, 6, 5, 7],
        &[4, 3, 1, 1],
        2,
        &[1, 1],
        &[1, 1],
        &[0, 0],
        &[0, 0],
        true,
    );
    assert_eq!(check(&c, false), Path::Pointwise);
    let c = case(
        &[2, 5, 9, 10],
        &[5, 1, 3, 3],
        5,
        &[1, 1],
        &[1, 1],
        &[1, 1],
        &[1, 1],
        true,
    );
    assert_banded(check(&c, false));
    let c = case(
        &[1, 4, 11, 10],
        &[4, 1, 5, 3],
        4,
        &[2, 3],
        &[2, 1],
        &[3, 0],
        &[1, 2],
        false,
    );
    assert_banded(check(&c, false));
    // depthwise with channel multiplier 2 goes through im2col
    let c = case(
        &[1, 3, 6, 6],
        &[6, 1, 3, 3],
        3,
        &[1, 1],
        &[1, 1],
        &[1, 1],
        &[1, 1],
        true,
    );
    // Narrow stride-1 rows are planned for flat tiles (run on AVX-512; im2col
    // elsewhere), which give the im2col values bitwise (compared in check).
    assert!(
        matches!(check(&c, false), Path::Direct(l) if l.narrow),
        "narrow rows: flat direct tiles"
    );
}

#[test]
fn pads_wider_than_rows() {
    // whole column runs fall left or right of the input (pads >= width)
    check(
        &case(
            &[1, 2, 3, 2],
            &[3, 2, 2, 2],
            1,
            &[1, 1],
            &[1, 1],
            &[3, 4],
            &[3, 5],
            true,
        ),
        false,
    );
    check(
        &case(
            &[1, 2, 3, 2],
            &[2, 1, 2, 2],
            2,
            &[1, 2],
            &[1, 2],
            &[3, 4],
            &[3, 5],
            true,
        ),
        false,
    );
    check(
        &case(&[1, 3, 2], &[3, 1, 1], 3, &[1], &[1], &[4], &[4], false),
        false,
    );
    // width 1, kernel 3, pads (2, 0): the first tap's valid outputs start past the row
    check(
        &case(&[1, 2, 1], &[3, 2, 3], 1, &[1], &[1], &[2], &[0], true),
        false,
    );
    check(
        &case(
            &[1, 2, 2, 1],
            &[2, 1, 1, 3],
            2,
            &[1, 1],
            &[1, 1],
            &[0, 2],
            &[0, 0],
            true,
        ),
        false,
    );
    check(
        &case(&[1, 2, 1], &[2, 1, 3], 2, &[1], &[1], &[2], &[0], true),
        false,
    );
}

#[test]
fn conv1d_and_conv3d() {
    check(
        &case(&[2, 3, 17], &[4, 3, 3], 1, &[2], &[2], &[2], &[1], true),
        false,
    );
    check(
        &case(&[1, 2, 10], &[2, 1, 4], 2, &[1], &[1], &[0], &[3], false),
        false,
    );
    check(
        &case(
            &[1, 2, 5, 6, 7],
            &[3, 2, 2, 3, 2],
            1,
            &[1, 2, 1],
            &[2, 1, 1],
            &[1, 0, 1],
            &[0, 1, 1],
            true,
        ),
        false,
    );
    check(
        &case(
            &[1, 4, 4, 5, 6],
            &[4, 1, 3, 3, 3],
            4,
            &[1, 1, 2],
            &[1, 1, 1],
            &[1, 1, 1],
            &[1, 1, 1],
            true,
        ),
        false,
    );
}

/// A 1-D conv exported along H (`[N, C, H, 1]`, `k × 1` kernel) runs as rows of H outputs
/// on the direct path; unit axes with a stride, and a unit axis between two others, too.
#[test]
fn unit_axes_move_first() {
    let c = case(
        &[1, 16, 300, 1],
        &[24, 16, 5, 1],
        1,
        &[1, 3],
        &[1, 1],
        &[2, 0],
        &[2, 0],
        true,
    );
    assert!(matches!(check(&c, false), Path::Direct(_)));
    let c = case(
        &[2, 4, 9, 1, 40],
        &[6, 4, 3, 1, 3],
        1,
        &[2, 2, 1],
        &[1, 1, 2],
        &[1, 0, 1],
        &[0, 0, 1],
        false,
    );
    check(&c, false);
    let c = case(
        &[1, 8, 1, 64],
        &[8, 8, 1, 3],
        1,
        &[1, 1],
        &[1, 1],
        &[0, 1],
        &[0, 1],
        false,
    );
    check(&c, true);
}

/// One channel in and out (basic-pitch's 256-tap stride-2 filters, 1-channel heads) runs
/// on the direct path, one-row strips on AVX-512: against the reference at every
/// stride, with a partial strip and a bias.
#[test]
fn single_channel_direct() {
    for (x, w, s, pb) in [
        ([1, 1, 1, 700], [1, 1, 1, 64], [1, 2], [0, 0]),
        ([1, 1, 1, 300], [1, 1, 1, 9], [1, 1], [0, 4]),
        ([1, 1, 23, 150], [1, 1, 5, 5], [1, 1], [2, 2]),
        ([1, 1, 9, 260], [1, 1, 3, 7], [1, 3], [1, 3]),
    ] {
        let c = case(&x, &w, 1, &s, &[1, 1], &pb, &pb, true);
        let path = check(&c, false);
        if cfg!(feature = "std") {
            assert!(matches!(path, Path::Direct(_)), "{x:?} {w:?}: {path:?}");
        }
    }
}

/// The banded depthwise path is taken (with `std`; the row loop without).
fn assert_banded(p: Path) {
    assert!(
        matches!(p, Path::Depthwise(l) if l.is_some() == cfg!(feature = "std")),
        "{p:?}"
    );
}

/// Banded depthwise: strides 2 and 3 with 5×5 and dilated taps, rows wider than a
/// 32-column block, planes taller than one band; and bitwise the same on 3 slots.
#[test]
fn depthwise_bands_strides_and_slots() {
    for (x, w, s, d, pb, pe) in [
        ([1, 3, 41, 75], [3, 1, 5, 5], [2, 2], [1, 1], [2, 2], [2, 2]),
        ([2, 2, 30, 50], [2, 1, 3, 3], [3, 3], [1, 2], [1, 2], [0, 1]),
        (
            [1, 2, 400, 90],
            [2, 1, 3, 3],
            [1, 1],
            [1, 1],
            [1, 1],
            [1, 1],
        ),
        ([1, 2, 17, 9], [2, 1, 7, 7], [1, 2], [1, 1], [3, 3], [3, 3]),
        // Stride-2 rows split by whole registers and a tail (odd and even pads).
        ([1, 4, 56, 56], [4, 1, 3, 3], [2, 2], [1, 1], [1, 1], [1, 1]),
        ([1, 2, 33, 70], [2, 1, 3, 3], [2, 2], [1, 1], [0, 0], [0, 0]),
    ] {
        let c = case(&x, &w, x[1], &s, &d, &pb, &pe, true);
        assert_banded(check(&c, false));
    }
    // 8 channels × 64² outputs × 9 taps: split between slots (check compares 1 and 3)
    let c = case(
        &[1, 8, 64, 64],
        &[8, 1, 3, 3],
        8,
        &[1, 1],
        &[1, 1],
        &[1, 1],
        &[1, 1],
        true,
    );
    assert_banded(check(&c, false));
}

/// A depthwise case's input (with an infinity and a −0), weights, bias and residual.
fn depthwise_data(c: &Case, yd: &[usize], mut seed: u32) -> [Vec<f32>; 4] {
    let mut draw = |n: usize| (0..n).map(|_| lcg(&mut seed)).collect::<Vec<f32>>();
    let mut xv = draw(c.x.iter().product());
    xv[5] = f32::INFINITY;
    xv[11] = -0.0;
    let wv = draw(c.w.iter().product());
    let bv = draw(c.x[1]);
    [xv, wv, bv, draw(yd.iter().product())]
}

/// Banded stride-1 depthwise convs with a residual, against the row loop bitwise (a SiLU
/// within 4 ulp where the AVX-512 band applies its own form):
/// padding on one side only, none at all, planes narrower and wider than a 16-output
/// chunk, special values in the input; each activation (the band applies the tile ones
/// while copying out, the row loop in a pass over the output; Tanh in a pass on both).
#[test]
fn banded_depthwise_with_residual_is_the_row_loop() {
    for (x, k, pb, pe) in [
        ([1, 4, 14, 14], [5, 5], [2, 2], [2, 2]),
        ([2, 3, 9, 30], [3, 5], [0, 2], [2, 1]),
        ([1, 2, 20, 40], [7, 7], [3, 3], [3, 3]),
        ([1, 2, 17, 33], [3, 3], [0, 0], [0, 0]),
    ] {
        let c = case(
            &x,
            &[x[1], 1, k[0], k[1]],
            x[1],
            &[1, 1],
            &[1, 1],
            &pb,
            &pe,
            true,
        );
        let yd = out_dims(&c, false);
        let [xv, wv, bv, rv] = depthwise_data(&c, &yd, 7);
        for op in [
            UnaryOp::Identity,
            UnaryOp::Relu,
            UnaryOp::HardSwish,
            UnaryOp::Silu,
            UnaryOp::Tanh,
        ] {
            let mut p = params(&c);
            p.act = Activation {
                op: if op == UnaryOp::Identity {
                    0
                } else {
                    op as u32
                },
                alpha: 0.0,
                beta: 0.0,
            };
            use super::super::test_util::{shape, t, tm};
            let (xs, wsh, ys, bs) = (shape(&x), shape(&c.w), shape(&yd), shape(&[x[1]]));
            let ins = [
                Some(t(&x, &xv)),
                Some(t(&c.w, &wv)),
                Some(t(&[x[1]], &bv)),
                Some(t(&yd, &rv)),
            ];
            let nbytes = conv_workspace_bytes(&p, false, &[Some(xs), Some(wsh), Some(bs)], &[ys]);
            let planned = plan(&p, false, &xs, &wsh, &ys).unwrap();
            assert!(
                matches!(planned.path, Path::Depthwise(Some(_))),
                "{x:?} {k:?}"
            );
            let run = |pl: &Plan, ws: &mut [u32]| {
                let mut y = std::vec![0.0f32; rv.len()];
                let mut outs = [tm(&yd, &mut y)];
                let wsb: &mut [u8] = bytemuck::cast_slice_mut(ws);
                run_conv_planned(&p, pl, &ins, &mut outs, wsb, &Serial).unwrap();
                y
            };
            let got = run(&planned, &mut std::vec![0u32; nbytes / 4]);
            let rows = Plan {
                path: Path::Depthwise(None),
                gemm_len: 0,
                ..planned
            };
            let want = run(&rows, &mut []);
            // Bitwise, but for a SiLU the AVX-512 band computes in its own form (4 ulp).
            let sigmoid = op == UnaryOp::Silu;
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(&g, &w)| super::super::test_util::same_value(g, w, sigmoid)),
                "{x:?} k {k:?} pads {pb:?}/{pe:?} {op:?}: {got:?} vs {want:?}"
            );
        }
    }
}

/// AVX-512 channel blocks against the row loop bitwise, on one slot and three: channel
/// counts off a multiple of 16, rows of several 16-pixel transposes, strides 2 and 3,
/// dilation, one-sided and asymmetric padding, a residual, special input values.
#[cfg(feature = "std")]
#[test]
fn blocked_depthwise_is_the_row_loop() {
    if isa::isa() != isa::Isa::Avx512 {
        std::println!("skipping the AVX-512 depthwise blocks: this CPU lacks AVX-512");
        return;
    }
    use super::super::test_util::{Slots, shape, t, tm};
    for (x, k, s, d, pb, pe) in [
        ([1, 17, 14, 14], [5, 5], [1, 1], [1, 1], [2, 2], [2, 2]),
        ([2, 3, 9, 37], [3, 5], [1, 2], [1, 1], [0, 2], [2, 1]),
        ([1, 40, 20, 40], [7, 7], [1, 1], [1, 1], [3, 3], [3, 3]),
        ([1, 16, 17, 33], [3, 3], [2, 2], [1, 1], [0, 0], [0, 0]),
        ([1, 33, 11, 50], [3, 3], [3, 3], [2, 2], [1, 2], [0, 1]),
        ([1, 2, 7, 7], [1, 1], [1, 1], [1, 1], [0, 0], [0, 0]),
    ] {
        let c = case(&x, &[x[1], 1, k[0], k[1]], x[1], &s, &d, &pb, &pe, true);
        let yd = out_dims(&c, false);
        let [xv, wv, bv, rv] = depthwise_data(&c, &yd, 5);
        let p = params(&c);
        let (xs, wsh, ys) = (shape(&x), shape(&c.w), shape(&yd));
        let ins = [
            Some(t(&x, &xv)),
            Some(t(&c.w, &wv)),
            Some(t(&[x[1]], &bv)),
            Some(t(&yd, &rv)),
        ];
        let planned = plan(&p, false, &xs, &wsh, &ys).unwrap();
        let lay = depthwise_blocks::layout(&planned.geo).unwrap();
        assert!(
            lay.ws_len() <= planned.gemm_len,
            "{x:?}: blocks outgrow the plan"
        );
        let run = |pl: &Plan, slots: usize| {
            let mut ws = std::vec![0u32; pl.gemm_len];
            let mut y = std::vec![0.0f32; rv.len()];
            let mut outs = [tm(&yd, &mut y)];
            let wsb: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
            run_conv_planned(&p, pl, &ins, &mut outs, wsb, &Slots(slots)).unwrap();
            y
        };
        let rows = Plan {
            path: Path::Depthwise(None),
            gemm_len: 0,
            ..planned
        };
        let want = run(&rows, 1);
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        for slots in [1, 3] {
            let blocked = Plan {
                path: Path::DepthwiseBlocked(lay),
                ..planned
            };
            let got = run(&blocked, slots);
            assert_eq!(
                bits(&got),
                bits(&want),
                "{x:?} k {k:?} s {s:?} ({slots} slots)"
            );
        }
    }
}

/// The lanes path (output channels in the AVX2 lanes) gives bitwise the planned direct
/// or pointwise path's values (a sigmoid within 4 ulp where the planned path's AVX-512
/// epilogue computes it), on one slot and on three, with every epilogue (bias,
/// residual, each tile activation), ONNX-order and pre-packed weights, a BatchNorm
/// prologue, strides, dilations, groups, partial channel blocks and pixel tiles, several
/// K blocks and bands. The planned path is the reference only with vector tiles (the
/// lanes path is chosen on AVX2 alone): under `GE_ISA=portable` it sums in another order.
#[cfg(feature = "std")]
#[test]
fn lanes_path_is_the_planned_paths_values() {
    if !isa::Isa::Avx2Fma.supported() || isa::isa() == isa::Isa::Portable {
        std::println!("skipping the lanes path: AVX2+FMA absent or the ISA forced portable");
        return;
    }
    let acts = [
        Activation::default(),
        Activation {
            op: UnaryOp::Relu as u32,
            alpha: 0.0,
            beta: 0.0,
        },
        Activation {
            op: UnaryOp::LeakyRelu as u32,
            alpha: 0.1,
            beta: 0.0,
        },
        Activation {
            op: UnaryOp::HardSwish as u32,
            alpha: 0.0,
            beta: 0.0,
        },
        Activation {
            op: UnaryOp::Silu as u32,
            alpha: 0.0,
            beta: 0.0,
        },
    ];
    /// Input, weights, group, stride, dilation, pads.
    type Conv2d = (
        &'static [usize],
        &'static [usize],
        usize,
        [usize; 2],
        [usize; 2],
        [usize; 2],
    );
    let cases: [Conv2d; 11] = [
        // YOLO-like 3x3 on a 20-wide plane, 64 taps·9: three K blocks
        (&[1, 64, 20, 20], &[32, 64, 3, 3], 1, [1, 1], [1, 1], [1, 1]),
        // YOLO's downsampling 3x3/2 pad 1: stride-2 band rows split by shuffles
        (&[1, 16, 48, 48], &[32, 16, 3, 3], 1, [2, 2], [1, 1], [1, 1]),
        // odd width, pad 1: the row's last input column lands in phase 0 alone
        (&[1, 16, 27, 41], &[16, 16, 3, 3], 1, [2, 2], [1, 1], [1, 1]),
        // 40 filters: a partial channel block; 9-wide rows: pixel tiles across rows
        (&[2, 16, 11, 9], &[40, 16, 3, 3], 1, [1, 1], [1, 1], [1, 1]),
        // stride 2 both ways, 11 outputs per row (planned on im2col)
        (&[1, 24, 21, 21], &[48, 24, 3, 3], 1, [2, 2], [1, 1], [1, 1]),
        // vertical stride 2, horizontal stride 3 with dilation 2, two groups
        (&[1, 32, 30, 40], &[32, 16, 3, 3], 2, [2, 3], [1, 2], [1, 2]),
        // many rows: several bands
        (
            &[1, 32, 140, 60],
            &[16, 32, 3, 3],
            1,
            [1, 1],
            [1, 1],
            [1, 1],
        ),
        // 5x5, padding 2
        (&[1, 8, 17, 13], &[16, 8, 5, 5], 1, [1, 1], [1, 1], [2, 2]),
        // a 7x7 stride-2 stem on 3 channels (K = 147)
        (&[1, 3, 40, 40], &[16, 3, 7, 7], 1, [2, 2], [1, 1], [3, 3]),
        // dilation 2 both ways
        (&[1, 16, 24, 24], &[32, 16, 3, 3], 1, [1, 1], [2, 2], [2, 2]),
        // unpadded 3x3 (a prologue may apply)
        (&[1, 12, 16, 16], &[32, 12, 3, 3], 1, [1, 1], [1, 1], [0, 0]),
    ];
    let mut seed = 29;
    let mut vals = |n: usize| -> Vec<f32> { (0..n).map(|_| lcg(&mut seed)).collect() };
    for (xd, wd, group, stride, dil, pad) in cases {
        let c = case(xd, wd, group, &stride, &dil, &pad, &pad, true);
        let yd = out_dims(&c, false);
        let (xs, wsh, ys) = (
            Shape::new(xd).unwrap(),
            Shape::new(wd).unwrap(),
            Shape::new(&yd).unwrap(),
        );
        let m = wd[0];
        let (bs, cs) = (Shape::new(&[m]).unwrap(), Shape::new(&[xd[1]]).unwrap());
        let (x, w, b, r) = (
            vals(xs.numel()),
            vals(wsh.numel()),
            vals(m),
            vals(ys.numel()),
        );
        let (scale, shift) = (vals(xd[1]), vals(xd[1]));
        let (rows, k) = (m / group, wsh.numel() / m);
        let mut wp = w.clone();
        for gi in 0..group {
            let at = gi * rows * k;
            ge_runtime::format::pack_panels(&w[at..at + rows * k], rows, k, &mut wp[at..]);
        }
        fn t(v: &[f32], shape: Shape) -> Option<TensorRef<'_>> {
            Some(TensorRef {
                dtype: DType::F32,
                shape,
                data: bytemuck::cast_slice(v),
            })
        }
        let unpadded = pad == [0, 0];
        for (ai, act) in acts.into_iter().enumerate() {
            for packed in [false, true] {
                for extra in 0..if unpadded && group == 1 { 3 } else { 2 } {
                    // extra 1: a residual; 2: a BatchNorm(+Relu) prologue
                    let mut p = params(&c);
                    p.act = act;
                    if packed {
                        p = p.with_weight_layout(WeightLayout::Panels);
                    }
                    let mut ins = std::vec![
                        t(&x, xs),
                        t(if packed { &wp } else { &w }, wsh),
                        t(&b, bs),
                        (extra == 1).then(|| t(&r, ys)).flatten(),
                    ];
                    if extra == 2 {
                        p.prologue = acts[1];
                        ins.extend([t(&scale, cs), t(&shift, cs)]);
                    }
                    let planned = plan(&p, false, &xs, &wsh, &ys).unwrap();
                    let src = lanes_layout(&planned.geo, planned.path);
                    let src = src.unwrap_or_else(|| {
                        panic!("{xd:?} {wd:?}: not a lanes conv ({:?})", planned.path)
                    });
                    let run = |pl: &Plan, slots: usize| {
                        let mut ws = std::vec![0u32; pl.col_len + pl.gemm_len];
                        let mut y = std::vec![0.0f32; ys.numel()];
                        let mut outs = [TensorMut {
                            dtype: DType::F32,
                            shape: ys,
                            data: bytemuck::cast_slice_mut(&mut y),
                        }];
                        let par = super::super::test_util::Slots(slots);
                        let wsb: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
                        run_conv_planned(&p, pl, &ins, &mut outs, wsb, &par).unwrap();
                        y
                    };
                    let want = run(&planned, 1);
                    let lanes = Plan {
                        path: Path::Lanes(src),
                        gemm_len: lanes::ws_len(&planned.geo, &src),
                        ..planned
                    };
                    assert!(
                        lanes.gemm_len <= planned.gemm_len,
                        "lanes workspace not planned"
                    );
                    for slots in [1, 3] {
                        let got = run(&lanes, slots);
                        let sigmoid =
                            [UnaryOp::Sigmoid as u32, UnaryOp::Silu as u32].contains(&act.op);
                        let diff = got.iter().zip(&want).position(|(&g, &w)| {
                            !super::super::test_util::same_value(g, w, sigmoid)
                        });
                        assert!(
                            diff.is_none(),
                            "{xd:?} {wd:?} act {ai} packed {packed} extra {extra} \
                             {slots} slots: lanes and {:?} differ at {diff:?}",
                            planned.path
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn direct_bands_strides_and_k_blocks() {
    // 64·9 = 576 taps: three K blocks; 70 output rows: several bands; 7 filters: a
    // partial channel panel.
    let c = case(
        &[1, 64, 70, 40],
        &[7, 64, 3, 3],
        1,
        &[1, 1],
        &[1, 1],
        &[1, 1],
        &[1, 1],
        true,
    );
    assert!(matches!(check(&c, false), Path::Direct(_)));
    // Rows 7 wide (two channel panels per pass) and 17 filters (a pair, then a partial
    // single panel); 70·9 = 630 taps: three K blocks of 210, splitting channels 23 and
    // 46 between two bands' channel ranges.
    let c = case(
        &[1, 70, 9, 7],
        &[17, 70, 3, 3],
        1,
        &[1, 1],
        &[1, 1],
        &[1, 1],
        &[1, 1],
        true,
    );
    // Narrow stride-1 rows are planned for flat tiles (run on AVX-512; im2col
    // elsewhere), which give the im2col values bitwise (compared in check).
    assert!(
        matches!(check(&c, false), Path::Direct(l) if l.narrow),
        "narrow rows: flat direct tiles"
    );
    // horizontal stride 3 (three phases) with dilation 2, vertical stride 2, groups.
    let c = case(
        &[2, 40, 30, 37],
        &[26, 20, 3, 3],
        2,
        &[2, 3],
        &[1, 2],
        &[1, 2],
        &[0, 1],
        true,
    );
    assert_eq!(
        check(&c, false),
        Path::Implicit,
        "narrow rows: im2col (direct compared in check)"
    );
    // the same strides on rows wide enough to be planned on the direct path
    let c = case(
        &[1, 8, 20, 60],
        &[10, 8, 3, 3],
        1,
        &[2, 3],
        &[1, 2],
        &[1, 2],
        &[0, 1],
        true,
    );
    assert!(matches!(check(&c, false), Path::Direct(_)));
    // rows one column wide go through im2col (the width axis is not a unit axis here)
    let c = case(
        &[1, 8, 20, 2],
        &[4, 8, 5, 2],
        1,
        &[1, 1],
        &[1, 1],
        &[2, 0],
        &[2, 0],
        true,
    );
    assert_eq!(check(&c, false), Path::Implicit);
}

#[test]
fn conv_chunks_columns() {
    // C/g·Πk = 576 rows × 1600 columns exceeds COL_CAP: several column chunks
    let c = case(
        &[1, 64, 40, 40],
        &[4, 64, 3, 3],
        1,
        &[1, 1],
        &[1, 1],
        &[1, 1],
        &[1, 1],
        true,
    );
    assert!(matches!(check(&c, false), Path::Direct(_)));
}

#[test]
fn conv_transpose_matches_naive() {
    let mut c = case(
        &[2, 4, 3, 4],
        &[4, 3, 3, 2],
        2,
        &[2, 3],
        &[1, 2],
        &[1, 0],
        &[0, 2],
        true,
    );
    c.op = std::vec![1, 2];
    check(&c, true);
    check(
        &case(&[1, 3, 5], &[3, 2, 4], 1, &[2], &[1], &[1], &[2], false),
        true,
    );
    check(
        &case(
            &[1, 2, 3, 3, 2],
            &[2, 1, 2, 2, 3],
            2,
            &[2, 1, 2],
            &[1, 2, 1],
            &[0, 1, 1],
            &[1, 0, 0],
            true,
        ),
        true,
    );
    check(
        &case(
            &[1, 3, 4, 4],
            &[3, 5, 1, 1],
            1,
            &[1, 1],
            &[1, 1],
            &[0, 0],
            &[0, 0],
            true,
        ),
        true,
    );
}

#[test]
fn conv_known_values() {
    // ONNX Conv doc example: x = arange(25) as [1,1,5,5], w = ones[1,1,3,3], pads 1
    let x: Vec<f32> = (0..25).map(|v| v as f32).collect();
    let w = [1.0f32; 9];
    let p = params(&case(
        &[1, 1, 5, 5],
        &[1, 1, 3, 3],
        1,
        &[1, 1],
        &[1, 1],
        &[1, 1],
        &[1, 1],
        false,
    ));
    let mut y = [0.0f32; 25];
    let (xs, ws) = (
        Shape::new(&[1, 1, 5, 5]).unwrap(),
        Shape::new(&[1, 1, 3, 3]).unwrap(),
    );
    let nbytes = conv_workspace_bytes(&p, false, &[Some(xs), Some(ws)], &[xs]);
    let mut scratch = std::vec![0u32; nbytes / 4];
    let ins = [
        Some(TensorRef {
            dtype: DType::F32,
            shape: xs,
            data: bytemuck::cast_slice(&x),
        }),
        Some(TensorRef {
            dtype: DType::F32,
            shape: ws,
            data: bytemuck::cast_slice(&w),
        }),
    ];
    let mut outs = [TensorMut {
        dtype: DType::F32,
        shape: xs,
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    run_conv(&p, &ins, &mut outs, bytemuck::cast_slice_mut(&mut scratch)).unwrap();
    assert_eq!(
        y,
        [
            12., 21., 27., 33., 24., 33., 54., 63., 72., 51., 63., 99., 108., 117., 81., 93., 144.,
            153., 162., 111., 72., 111., 117., 123., 84.
        ]
    );
    // wrong output size is refused
    let mut y = [0.0f32; 16];
    let mut outs = [TensorMut {
        dtype: DType::F32,
        shape: Shape::new(&[1, 1, 4, 4]).unwrap(),
        data: bytemuck::cast_slice_mut(&mut y),
    }];
    assert!(run_conv(&p, &ins, &mut outs, &mut []).is_err());
}

/// Random (mostly malformed) descriptions must give a result or an error, never a panic.
#[test]
fn malformed_never_panics() {
    let mut seed = 5u32;
    let mut r = |n: u32| {
        seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        ((seed >> 8) % n) as usize
    };
    let mut oks = 0usize;
    for _ in 0..4000 {
        let sp = 1 + r(3);
        let transpose = r(2) == 1;
        let sane = r(4) != 0;
        let (g, cg, mg) = (1 + r(2), r(3), 1 + r(2));
        let mut xd = if sane {
            std::vec![1 + r(2), g * cg]
        } else {
            std::vec![r(3), r(4)]
        };
        let mut wd = match (sane, transpose) {
            (true, false) => std::vec![g * mg, cg],
            (true, true) => std::vec![g * cg, mg],
            _ => std::vec![r(4), r(3)],
        };
        for _ in 0..sp {
            xd.push(r(6) + usize::from(sane));
            wd.push(r(4) + usize::from(sane));
        }
        let pos = |v: usize| if sane { v as u32 + 1 } else { v as u32 };
        let mut p = ConvParams {
            spatial: if r(10) == 0 { r(5) as u32 } else { sp as u32 },
            group: if sane { g as u32 } else { r(3) as u32 },
            kernel: [0; 3],
            stride: [0; 3],
            dilation: [0; 3],
            pad_begin: [0; 3],
            pad_end: [0; 3],
            output_padding: [0; 3],
            act: Activation::default(),
            prologue: Activation::default(),
        };
        for i in 0..3 {
            p.kernel[i] = if r(8) != 0 {
                wd.get(2 + i).copied().unwrap_or(0) as u32
            } else {
                r(4) as u32
            };
            p.stride[i] = pos(r(3));
            p.dilation[i] = pos(r(2));
            p.pad_begin[i] = r(3) as u32;
            p.pad_end[i] = r(3) as u32;
            p.output_padding[i] = r(2) as u32;
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
        // output: the consistent size when it exists, else random
        let g = (p.group as usize).max(1);
        let m = if transpose { wd[1] * g } else { wd[0] };
        let mut yd = std::vec![xd[0], if r(8) == 0 { r(4) } else { m }];
        for i in 0..sp {
            let (x, k, s, d) = (
                xd[2 + i] as i64,
                wd[2 + i] as i64,
                p.stride[i].max(1) as i64,
                p.dilation[i].max(1) as i64,
            );
            let (pb, pe) = (p.pad_begin[i] as i64, p.pad_end[i] as i64);
            let span = d * (k - 1) + 1;
            let o = if transpose {
                s * (x - 1) + p.output_padding[i] as i64 + span - pb - pe
            } else {
                (x + pb + pe - span) / s + 1
            };
            yd.push(if r(6) == 0 || !(0..64).contains(&o) {
                r(5)
            } else {
                o as usize
            });
        }
        let (xs, wsh, ys) = (
            Shape::new(&xd).unwrap(),
            Shape::new(&wd).unwrap(),
            Shape::new(&yd).unwrap(),
        );
        let bs = Shape::new(&[if r(6) == 0 { r(4) } else { m }]).unwrap();
        let short = |n: usize, r: &mut dyn FnMut(u32) -> usize| {
            if r(20) == 0 { n.saturating_sub(1) } else { n }
        };
        let x = std::vec![1.0f32; short(xs.numel(), &mut r)];
        let w = std::vec![1.0f32; short(wsh.numel(), &mut r)];
        let b = std::vec![1.0f32; bs.numel()];
        let mut y = std::vec![0.0f32; short(ys.numel(), &mut r)];
        let nb = conv_workspace_bytes(&p, transpose, &[Some(xs), Some(wsh), Some(bs)], &[ys]);
        let mut ws = std::vec![0u32; (nb / 4).saturating_sub(r(2) * r(3)).min(1 << 20)];
        let ins = [
            Some(TensorRef {
                dtype: DType::F32,
                shape: xs,
                data: bytemuck::cast_slice(&x),
            }),
            Some(TensorRef {
                dtype: DType::F32,
                shape: wsh,
                data: bytemuck::cast_slice(&w),
            }),
            if r(2) == 0 {
                Some(TensorRef {
                    dtype: DType::F32,
                    shape: bs,
                    data: bytemuck::cast_slice(&b),
                })
            } else {
                None
            },
        ];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: ys,
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        let wsb: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
        let res = if transpose {
            run_conv_transpose(&p, &ins, &mut outs, wsb)
        } else {
            run_conv(&p, &ins, &mut outs, wsb)
        };
        oks += usize::from(res.is_ok());
    }
    // the generator also produces well-formed cases; they must run
    assert!(oks > 500, "only {oks} well-formed cases ran");
}

/// A 16-channel 3 × 3 conv on 32 × 32 (ResNet-8's first stage) offers bands down to 4 rows (3.5× less),
/// a pointwise conv 2 and 1 packing slots: both shrink, and `check` runs every level.
#[test]
fn f32_conv_workspaces_are_elastic() {
    for (c, shrinks) in [
        (
            case(
                &[1, 16, 32, 32],
                &[16, 16, 3, 3],
                1,
                &[1, 1],
                &[1, 1],
                &[1, 1],
                &[1, 1],
                true,
            ),
            3.0,
        ),
        (
            case(
                &[1, 64, 5, 25],
                &[64, 64, 1, 1],
                1,
                &[1, 1],
                &[1, 1],
                &[0, 0],
                &[0, 0],
                true,
            ),
            3.9,
        ),
    ] {
        check(&c, false);
        let p = params(&c);
        let yd = out_dims(&c, false);
        let shapes = [
            Some(Shape::new(&c.x).unwrap()),
            Some(Shape::new(&c.w).unwrap()),
        ];
        let levels = conv_workspace_levels(&p, &shapes, &[Shape::new(&yd).unwrap()]).unwrap();
        let ratio = levels[0] as f64 / levels[crate::ops::WORKSPACE_LEVELS - 1] as f64;
        assert!(ratio >= shrinks, "{levels:?}");
    }
}
