//! Blocked kernels against the plain ones on random data: the conv on every ISA tile this
//! CPU runs (tolerance 1e-4·(1 + |y|): both paths sum the same K products in different
//! orders, one rounding per product-add), bitwise across thread counts; the depthwise conv
//! likewise, bitwise between the FMA classes and within 1e-5·(1 + |y|) of the portable one
//! (FMA against a multiply then an add); the reorders exactly.

extern crate std;
use std::vec::Vec;

use ge_runtime::format::{
    Activation, BLOCK, ChannelLayout, ConvParams, PoolKind, PoolParams, ReorderParams, UnaryOp,
    WeightLayout, pack_blocked_weights,
};

use super::conv::{Geometry, Operands, run_on};
use super::{depthwise, run_reorder};
use crate::arch::isa::Isa;
use crate::ops::conv::run_conv_on;
use crate::ops::gemm::{micro::TileAct, tile_act};
use crate::ops::pool::{run_global_pool, run_pool};
use crate::ops::test_util::{Slots, close, t, tm, values};

fn reorder(dims: &[usize], x: &[f32], to: ChannelLayout) -> Vec<f32> {
    let mut y = std::vec![0.0; x.len()];
    let p = ReorderParams { to: to as u32 };
    run_reorder(&p, &[Some(t(dims, x))], &mut [tm(dims, &mut y)]).unwrap();
    y
}

#[test]
fn reorders_round_trip() {
    // 35 pixels: two whole 16-pixel tiles and a remainder.
    let (dims, s) = ([2, 32, 5, 7], 35);
    let x = values(2 * 32 * s, 1);
    let b = reorder(&dims, &x, ChannelLayout::Blocked);
    // Channel 17 of image 1, pixel (2, 3): group 1·2 + 1, lane 1.
    assert_eq!(b[(3 * s + 2 * 7 + 3) * BLOCK + 1], x[(32 + 17) * s + 17]);
    for img in 0..2 {
        for c in 0..32 {
            for q in 0..s {
                let blocked = ((img * 2 + c / BLOCK) * s + q) * BLOCK + c % BLOCK;
                assert_eq!(
                    b[blocked],
                    x[(img * 32 + c) * s + q],
                    "image {img} channel {c} pixel {q}"
                );
            }
        }
    }
    assert_eq!(reorder(&dims, &b, ChannelLayout::BlockedToPlain), x);
}

struct Case {
    x: [usize; 4],
    cout: usize,
    k: [usize; 2],
    stride: [usize; 2],
    dil: [usize; 2],
    pad: [usize; 2],
    residual: bool,
    act: u32,
    /// One channel per group (`cout` = input channels).
    depthwise: bool,
}

fn out_dim(i: usize, k: usize, s: usize, d: usize, p: usize) -> usize {
    (i + 2 * p - (k - 1) * d - 1) / s + 1
}

fn check(c: &Case) {
    let [n, cin, h, w] = c.x;
    let oh = out_dim(h, c.k[0], c.stride[0], c.dil[0], c.pad[0]);
    let ow = out_dim(w, c.k[1], c.stride[1], c.dil[1], c.pad[1]);
    let group = if c.depthwise { cin } else { 1 };
    let (xd, wd, yd) = (
        [n, cin, h, w],
        [c.cout, cin / group, c.k[0], c.k[1]],
        [n, c.cout, oh, ow],
    );
    let x = values(xd.iter().product(), 2);
    let wt = values(wd.iter().product(), 3);
    let bias = values(c.cout, 4);
    let res = values(yd.iter().product(), 5);
    let act = Activation {
        op: c.act,
        alpha: 0.0,
        beta: 0.0,
    };
    let mut p = ConvParams {
        spatial: 2,
        group: group as u32,
        kernel: [c.k[0] as u32, c.k[1] as u32, 1],
        stride: [c.stride[0] as u32, c.stride[1] as u32, 1],
        dilation: [c.dil[0] as u32, c.dil[1] as u32, 1],
        pad_begin: [c.pad[0] as u32, c.pad[1] as u32, 0],
        pad_end: [c.pad[0] as u32, c.pad[1] as u32, 0],
        output_padding: [0; 3],
        act,
        prologue: Activation::default(),
    };
    // The plain conv.
    let mut want = std::vec![0.0; res.len()];
    let mut ws = std::vec![0u8; 64 << 20];
    let mut ins = std::vec![
        Some(t(&xd, &x)),
        Some(t(&wd, &wt)),
        Some(t(&[c.cout], &bias))
    ];
    if c.residual {
        ins.push(Some(t(&yd, &res)));
    }
    run_conv_on(&p, &ins, &mut [tm(&yd, &mut want)], &mut ws, &Slots(1)).unwrap();
    // The blocked one: through the task entry, then each ISA's tiles directly.
    let layout = if cin % BLOCK == 0 {
        ChannelLayout::Blocked
    } else {
        ChannelLayout::PlainToBlocked
    };
    let cb = ge_runtime::format::input_block(layout);
    let xb = if cb == BLOCK {
        reorder(&xd, &x, ChannelLayout::Blocked)
    } else {
        x.clone()
    };
    let rb = reorder(&yd, &res, ChannelLayout::Blocked);
    let mut wb = std::vec![0.0; wt.len()];
    pack_blocked_weights(&wt, wd, if c.depthwise { 1 } else { cb }, &mut wb);
    p = p
        .with_weight_layout(WeightLayout::Blocked)
        .with_channel_layout(layout);
    let mut ins = std::vec![
        Some(t(&xd, &xb)),
        Some(t(&wd, &wb)),
        Some(t(&[c.cout], &bias))
    ];
    if c.residual {
        ins.push(Some(t(&yd, &rb)));
    }
    let mut got = std::vec![0.0; want.len()];
    run_conv_on(&p, &ins, &mut [tm(&yd, &mut got)], &mut ws, &Slots(3)).unwrap();
    let plain = reorder(&yd, &got, ChannelLayout::BlockedToPlain);
    close(&plain, &want, 1e-4);
    let geo = Geometry {
        n,
        cin,
        h,
        w,
        cout: c.cout,
        oh,
        ow,
        kernel: c.k,
        stride: c.stride,
        dilation: c.dil,
        pad: c.pad,
        layout,
    };
    let ops = Operands {
        x: &xb,
        w: &wb,
        bias: Some(&bias),
        residual: c.residual.then_some(&rb[..]),
        act: tile_act(&act).unwrap_or(TileAct::None),
    };
    let run_isa = |y: &mut [f32], slots, isa| {
        if c.depthwise {
            depthwise::run_on(&geo, &ops, y, &Slots(slots), isa).unwrap();
        } else {
            run_on(&geo, &ops, y, &Slots(slots), isa).unwrap();
        }
    };
    let mut portable = std::vec![0.0; want.len()];
    run_isa(&mut portable, 1, Isa::Portable);
    let mut fma: Option<Vec<f32>> = None;
    for &isa in Isa::ALL.iter().filter(|i| i.supported()) {
        let mut one = std::vec![0.0; want.len()];
        run_isa(&mut one, 1, isa);
        let mut three = std::vec![0.0; want.len()];
        run_isa(&mut three, 3, isa);
        assert!(
            one.iter()
                .zip(&three)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{isa:?}: thread split changed values"
        );
        // Both convs run each output's multiply-adds in one order on every class: FMA
        // classes agree bitwise (activations the tiles take as vectors aside), the portable
        // one within rounding.
        if matches!(tile_act(&act), Some(TileAct::None | TileAct::Clamp { .. })) {
            if isa == Isa::Portable {
                assert_eq!(one, portable);
            } else if let Some(fma) = &fma {
                assert_eq!(&one, fma, "{isa:?}: differs from the other FMA class");
            } else {
                fma = Some(one.clone());
            }
            close(&one, &portable, 1e-5);
        }
        if tile_act(&act).is_some() {
            close(
                &reorder(&yd, &one, ChannelLayout::BlockedToPlain),
                &want,
                1e-4,
            );
        }
    }
}

#[test]
fn blocked_conv_matches_the_plain_conv() {
    let relu = UnaryOp::Relu as u32;
    let case = |x, cout, k, stride, pad| Case {
        x,
        cout,
        k,
        stride,
        dil: [1, 1],
        pad,
        residual: false,
        act: 0,
        depthwise: false,
    };
    // 1×1 (output rows of 7 and 14: uneven tiles), 3×3 pad 1, strided, a remainder group.
    check(&Case {
        residual: true,
        act: relu,
        ..case([1, 32, 14, 14], 64, [1, 1], [1, 1], [0, 0])
    });
    check(&case([1, 16, 7, 7], 80, [3, 3], [1, 1], [1, 1]));
    check(&Case {
        act: relu,
        ..case([2, 32, 9, 11], 48, [3, 3], [2, 2], [1, 1])
    });
    check(&case([1, 16, 8, 8], 16, [1, 1], [2, 2], [0, 0]));
    // Unpadded 1×1 at strides 2 and 3 over several input blocks (each block's tap the
    // first's a plane further): tiles wrapping rows gather, tiles in one row read in place.
    check(&Case {
        residual: true,
        act: relu,
        ..case([1, 48, 9, 23], 32, [1, 1], [2, 2], [0, 0])
    });
    check(&case([2, 32, 10, 10], 16, [1, 1], [3, 3], [0, 0]));
    // The stem: a plain 3-channel input, 7×7 stride 2 pad 3.
    check(&Case {
        act: relu,
        ..case([1, 3, 20, 23], 32, [7, 7], [2, 2], [3, 3])
    });
    // Dilated, asymmetric kernel, SiLU (the tile's std activation).
    check(&Case {
        dil: [2, 1],
        act: UnaryOp::Silu as u32,
        ..case([1, 16, 10, 12], 32, [3, 2], [1, 1], [2, 1])
    });
    // Chunks and bands: a 1×1 of 160 channels (two weight chunks), a 3×3 of 48 (three, one
    // block each) on 40×30 = 1,200 pixels (two bands; tiles wrapping rows, bias and residual
    // added once after the last chunk), stride 3 (every tap gathered).
    check(&Case {
        residual: true,
        ..case([1, 160, 6, 5], 64, [1, 1], [1, 1], [0, 0])
    });
    check(&Case {
        residual: true,
        act: relu,
        ..case([1, 48, 40, 30], 80, [3, 3], [1, 1], [1, 1])
    });
    check(&case([1, 32, 13, 14], 32, [3, 3], [3, 3], [1, 1]));
    // Pointwise groups of two or three blocks take wider tiles (24 / blocks pixels, the
    // last pixels of a short tile computed but not stored): three blocks after two chunks
    // with a residual (63 pixels: tiles of 7 and 8), two blocks (35 pixels: 11 and 12); a
    // one-block strided stem on a plain input.
    check(&Case {
        residual: true,
        act: relu,
        ..case([1, 160, 7, 9], 48, [1, 1], [1, 1], [0, 0])
    });
    check(&Case {
        residual: true,
        ..case([2, 32, 5, 7], 32, [1, 1], [1, 1], [0, 0])
    });
    // Planes narrower than the tile (7 of 8 pixels stored, 9 of 12: a store past them
    // would land on the next block's first pixels).
    check(&case([1, 32, 1, 7], 48, [1, 1], [1, 1], [0, 0]));
    check(&case([1, 16, 3, 3], 32, [1, 1], [1, 1], [0, 0]));
    check(&case([1, 3, 21, 19], 16, [3, 3], [2, 2], [1, 1]));
    // A 1-D conv exported as k×1 on width-1 planes (run along W), strided.
    check(&case([1, 32, 23, 1], 48, [5, 1], [1, 1], [2, 0]));
    check(&case([1, 16, 23, 1], 32, [3, 1], [2, 1], [1, 0]));
    // An activation the tile does not take (Tanh): a pass over the output after.
    check(&Case {
        act: UnaryOp::Tanh as u32,
        ..case([1, 16, 5, 6], 16, [3, 3], [1, 1], [1, 1])
    });
}

fn pool_params(kind: PoolKind, k: u32, s: u32, pad: u32) -> PoolParams {
    PoolParams {
        kind: kind as u32,
        spatial: 2,
        kernel: [k, k, 1],
        stride: [s, s, 1],
        dilation: [1; 3],
        pad_begin: [pad, pad, 0],
        pad_end: [pad, pad, 0],
        count_include_pad: 0,
        p: 0.0,
    }
}

#[test]
fn blocked_pools_match_the_plain_pools() {
    let xd = [1, 32, 9, 10];
    let x = values(32 * 90, 7);
    let xb = reorder(&xd, &x, ChannelLayout::Blocked);
    for (kind, k, s, pad) in [
        (PoolKind::Max, 3, 2, 1),
        (PoolKind::Average, 3, 1, 1),
        (PoolKind::Max, 2, 2, 0),
    ] {
        let p = pool_params(kind, k, s, pad);
        let (oh, ow) = (
            out_dim(9, k as usize, s as usize, 1, pad as usize),
            out_dim(10, k as usize, s as usize, 1, pad as usize),
        );
        let yd = [1, 32, oh, ow];
        let mut want = std::vec![0.0; 32 * oh * ow];
        run_pool(&p, &[Some(t(&xd, &x))], &mut [tm(&yd, &mut want)]).unwrap();
        let mut got = std::vec![0.0; want.len()];
        let pb = p.with_channel_layout(ChannelLayout::Blocked);
        run_pool(&pb, &[Some(t(&xd, &xb))], &mut [tm(&yd, &mut got)]).unwrap();
        // Max is exact; the average's sums may be folded in another order.
        close(
            &reorder(&yd, &got, ChannelLayout::BlockedToPlain),
            &want,
            1e-6,
        );
    }
    for kind in [PoolKind::Max, PoolKind::Average] {
        let p = pool_params(kind, 1, 1, 0);
        let yd = [1, 32, 1, 1];
        let mut want = std::vec![0.0; 32];
        run_global_pool(&p, &[Some(t(&xd, &x))], &mut [tm(&yd, &mut want)]).unwrap();
        let mut got = std::vec![0.0; 32];
        let pb = p.with_channel_layout(ChannelLayout::BlockedToPlain);
        run_global_pool(&pb, &[Some(t(&xd, &xb))], &mut [tm(&yd, &mut got)]).unwrap();
        close(&got, &want, 1e-6);
    }
}

#[test]
fn blocked_depthwise_matches_the_plain_conv() {
    let case = |x: [usize; 4], k, stride, pad| Case {
        x,
        cout: x[1],
        k,
        stride,
        dil: [1, 1],
        pad,
        residual: false,
        act: 0,
        depthwise: true,
    };
    // 3×3 pad 1 (rows of 7 interior pixels: 4, 2, 1 runs), residual and ReLU; two images.
    check(&Case {
        residual: true,
        act: UnaryOp::Relu as u32,
        ..case([2, 32, 9, 9], [3, 3], [1, 1], [1, 1])
    });
    // Stride 2 (even and odd widths), 5×5 pad 2, a plane wider than a band (300 pixels:
    // two bands), stride 3 and dilation (the generic stride), 1×1.
    check(&case([1, 48, 11, 12], [3, 3], [2, 2], [1, 1]));
    check(&case([1, 16, 14, 13], [5, 5], [1, 1], [2, 2]));
    check(&Case {
        act: UnaryOp::Silu as u32,
        ..case([1, 16, 20, 15], [3, 3], [1, 1], [1, 1])
    });
    check(&Case {
        dil: [2, 2],
        ..case([1, 16, 13, 14], [3, 3], [3, 3], [2, 2])
    });
    check(&case([1, 32, 4, 5], [1, 1], [1, 1], [0, 0]));
    // A kernel wider than the plane (every pixel a border pixel).
    check(&case([1, 16, 3, 2], [3, 5], [1, 1], [1, 2]));
}

/// A fused prologue (per-input-channel scale and shift, then ReLU: DenseNet's
/// pre-activation 1×1 convs; or a BatchNorm alone, whose prologue activation is none) on
/// blocked channels, through the task entry with the workspace the planner sizes: the plain
/// conv's values within 1e-4·(1 + |y|), and the prologue's values themselves exactly (a 1×1
/// conv whose weights pick one input channel each).
#[test]
fn blocked_conv_applies_a_prologue() {
    let relu = Activation {
        op: UnaryOp::Relu as u32,
        alpha: 0.0,
        beta: 0.0,
    };
    prologue_case(relu, |v| v.max(0.0));
    prologue_case(Activation::default(), |v| v);
}

fn prologue_case(prologue: Activation, act: impl Fn(f32) -> f32) {
    use crate::ops::conv::conv_workspace_bytes;
    let (n, cin, h, w, cout) = (2, 48, 5, 7, 32);
    let (xd, wd, yd) = ([n, cin, h, w], [cout, cin, 1, 1], [n, cout, h, w]);
    let x = values(xd.iter().product(), 7);
    let scale = values(cin, 8);
    let shift = values(cin, 9);
    let run = |wt: &[f32], blocked: bool| -> Vec<f32> {
        let mut p = ConvParams {
            spatial: 2,
            group: 1,
            kernel: [1, 1, 1],
            stride: [1, 1, 1],
            dilation: [1, 1, 1],
            pad_begin: [0; 3],
            pad_end: [0; 3],
            output_padding: [0; 3],
            act: Activation::default(),
            prologue,
        };
        let (xin, win) = if blocked {
            p = p
                .with_weight_layout(WeightLayout::Blocked)
                .with_channel_layout(ChannelLayout::Blocked);
            let mut wb = std::vec![0.0; wt.len()];
            pack_blocked_weights(wt, wd, BLOCK, &mut wb);
            (reorder(&xd, &x, ChannelLayout::Blocked), wb)
        } else {
            (x.clone(), wt.to_vec())
        };
        let ins = std::vec![
            Some(t(&xd, &xin)),
            Some(t(&wd, &win)),
            None,
            None,
            Some(t(&[cin], &scale)),
            Some(t(&[cin], &shift)),
        ];
        let mut y = std::vec![0.0; yd.iter().product()];
        let mut out = [tm(&yd, &mut y)];
        let shapes: Vec<_> = ins.iter().map(|i| i.as_ref().map(|t| t.shape)).collect();
        let nb = conv_workspace_bytes(&p, false, &shapes, &[out[0].shape]);
        let mut ws = std::vec![0u8; nb.max(4)];
        run_conv_on(&p, &ins, &mut out, &mut ws, &Slots(2)).unwrap();
        if blocked {
            reorder(&yd, &y, ChannelLayout::BlockedToPlain)
        } else {
            y
        }
    };
    let wt = values(wd.iter().product(), 10);
    close(&run(&wt, true), &run(&wt, false), 1e-4);
    // Output channel `o` = input channel `o` after the prologue.
    let mut pick = std::vec![0.0; wt.len()];
    for o in 0..cout {
        pick[o * cin + o] = 1.0;
    }
    let got = run(&pick, true);
    for (i, &v) in got.iter().enumerate() {
        let (img, o, q) = (i / (cout * h * w), i / (h * w) % cout, i % (h * w));
        let xv = x[(img * cin + o) * h * w + q];
        assert_eq!(v, act(xv * scale[o] + shift[o]), "image {img} channel {o}");
    }
}
