//! The half kernels against the f32 kernels on the same (16-bit) operands, rounded with the
//! portable bit math: so each checks its slicing and the F16C conversions it ran with.
//! Tolerance: 1 unit in the last place of the 16-bit result (the f32 kernels compute every
//! element by the same operations whatever slice it falls in, so in practice they agree to
//! the bit; one ulp leaves room for a different f32 path on a slice, e.g. im2col).

extern crate std;
use std::vec::Vec;

use ge_runtime::format::{
    Activation, AttentionParams, ConvParams, DType, GemmParams, OpKind, PoolKind, PoolParams,
    Shape, TensorMut, TensorRef, UnaryOp,
};

use super::convert::{fast, narrow, widen};
use crate::ops::cast::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
use crate::ops::test_util::values;
use crate::ops::{
    WORKSPACE_LEVELS, execute, workspace_bytes, workspace_bytes_for, workspace_levels_for,
};

fn to_bits(d: DType, v: f32) -> u16 {
    if d == DType::F16 {
        f32_to_f16(v)
    } else {
        f32_to_bf16(v)
    }
}

fn from_bits(d: DType, h: u16) -> f32 {
    if d == DType::F16 {
        f16_to_f32(h)
    } else {
        bf16_to_f32(h)
    }
}

fn view<'a>(dt: DType, dims: &[usize], data: &'a [u8]) -> Option<TensorRef<'a>> {
    Some(TensorRef {
        dtype: dt,
        shape: Shape::new(dims).unwrap(),
        data,
    })
}

/// Runs one task into an output of `shape` and element type `d` (`T`'s size), with the
/// workspace its output type plans.
fn run_task<T: bytemuck::Pod + bytemuck::Zeroable>(
    kind: OpKind,
    params: &[u8],
    ins: &[Option<TensorRef<'_>>],
    shape: Shape,
    d: DType,
) -> Vec<T> {
    let shapes: Vec<Option<Shape>> = ins.iter().map(|t| t.map(|t| t.shape)).collect();
    let bytes = if d == DType::F32 {
        workspace_bytes(kind, params, &shapes, &[shape])
    } else {
        workspace_bytes_for(kind, params, &shapes, &[shape], d)
    };
    let mut ws = std::vec![0u64; bytes.div_ceil(8)];
    let mut out = std::vec![T::zeroed(); shape.numel()];
    let mut y = [TensorMut {
        dtype: d,
        shape,
        data: bytemuck::cast_slice_mut(&mut out),
    }];
    execute(kind, params, ins, &mut y, bytemuck::cast_slice_mut(&mut ws)).unwrap();
    out
}

/// Runs `kind` on 16-bit copies of `ins` (`dims`, absent when `None`) into a 16-bit output
/// of `out`, and on their f32 values; asserts the results agree within one ulp.
fn check(kind: OpKind, params: &[u8], ins: &[Option<&[usize]>], out: &[usize], d: DType) {
    let bits: Vec<Option<Vec<u16>>> = ins
        .iter()
        .enumerate()
        .map(|(i, dims)| {
            dims.map(|dims| {
                let n = dims.iter().product();
                values(n, i as u64 + 7)
                    .iter()
                    .map(|&v| to_bits(d, v))
                    .collect()
            })
        })
        .collect();
    let wide: Vec<Option<Vec<f32>>> = bits
        .iter()
        .map(|b| {
            b.as_ref()
                .map(|b| b.iter().map(|&h| from_bits(d, h)).collect())
        })
        .collect();
    let half_ins: Vec<Option<TensorRef<'_>>> = ins
        .iter()
        .zip(&bits)
        .map(|(dims, b)| view(d, (*dims)?, bytemuck::cast_slice(b.as_ref()?)))
        .collect();
    let f32_ins: Vec<Option<TensorRef<'_>>> = ins
        .iter()
        .zip(&wide)
        .map(|(dims, w)| view(DType::F32, (*dims)?, bytemuck::cast_slice(w.as_ref()?)))
        .collect();
    let y = Shape::new(out).unwrap();
    let half: Vec<u16> = run_task(kind, params, &half_ins, y, d);
    let reference: Vec<f32> = run_task(kind, params, &f32_ins, y, DType::F32);

    for (i, (&h, &r)) in half.iter().zip(&reference).enumerate() {
        let want = to_bits(d, r);
        let ulps = (i32::from(h as i16) - i32::from(want as i16)).unsigned_abs();
        assert!(
            ulps <= 1,
            "{kind:?} {d:?} element {i}: {h:#x} vs {want:#x} ({r})"
        );
    }
    assert!(
        reference.iter().any(|&v| v != 0.0),
        "{kind:?}: an all-zero result tests nothing"
    );
}

fn conv(group: u32, k: u32, stride: u32, pad: u32, act: UnaryOp) -> ConvParams {
    let mut p: ConvParams = bytemuck::Zeroable::zeroed();
    p.spatial = 2;
    p.group = group;
    p.kernel = [k, k, 1];
    p.stride = [stride, stride, 1];
    p.dilation = [1, 1, 1];
    p.pad_begin = [pad, pad, 0];
    p.pad_end = [pad, pad, 0];
    p.act = Activation {
        op: act as u32,
        alpha: 0.0,
        beta: 0.0,
    };
    p
}

#[test]
fn conv_matches_the_f32_conv_in_slices() {
    for d in [DType::F16, DType::Bf16] {
        // 3×3 padded (the direct path), 64 filters over 4096 outputs: three slices, bias,
        // residual and a fused Relu.
        let p = conv(1, 3, 1, 1, UnaryOp::Relu);
        let ins = [
            Some(&[1, 8, 64, 64][..]),
            Some(&[64, 8, 3, 3]),
            Some(&[64]),
            Some(&[1, 64, 64, 64]),
        ];
        check(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &ins,
            &[1, 64, 64, 64],
            d,
        );
        // Stage 5's shape at half the channels: 512 filters of 256 × 3 × 3 over 7 × 7, one
        // band and several slices of output channels (about 110 filters each).
        let p = conv(1, 3, 1, 1, UnaryOp::Relu);
        check(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[Some(&[1, 256, 7, 7]), Some(&[512, 256, 3, 3]), Some(&[512])],
            &[1, 512, 7, 7],
            d,
        );
        // 1×1 (GEMM on the input), batch 2.
        let p = conv(1, 1, 1, 0, UnaryOp::Relu);
        check(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[Some(&[2, 16, 20, 20]), Some(&[40, 16, 1, 1]), Some(&[40])],
            &[2, 40, 20, 20],
            d,
        );
        // 7×7 stride 2 (ResNet's stem) and a grouped conv.
        let p = conv(1, 7, 2, 3, UnaryOp::Relu);
        check(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[Some(&[1, 3, 40, 40]), Some(&[16, 3, 7, 7])],
            &[1, 16, 20, 20],
            d,
        );
        let p = conv(4, 3, 2, 1, UnaryOp::Relu);
        check(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[Some(&[1, 8, 30, 30]), Some(&[12, 2, 3, 3]), Some(&[12])],
            &[1, 12, 15, 15],
            d,
        );
        // Bands of output rows whose windows cross the band borders: stride 2, dilation 2,
        // uneven padding (3 above, 1 below), batch 2 with a residual, odd sizes.
        let mut p = conv(1, 3, 2, 3, UnaryOp::Relu);
        (p.dilation, p.pad_end) = ([2, 1, 1], [1, 2, 0]);
        check(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[
                Some(&[2, 5, 61, 23]),
                Some(&[7, 5, 3, 3]),
                Some(&[7]),
                Some(&[2, 7, 31, 13]),
            ],
            &[2, 7, 31, 13],
            d,
        );
        // A 1-D conv (bands of single elements' rows) and the prologue's scale and shift.
        let mut p = conv(1, 5, 1, 0, UnaryOp::Relu);
        (p.spatial, p.kernel, p.prologue.op) = (1, [5, 1, 1], UnaryOp::Relu as u32);
        check(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[
                Some(&[1, 6, 300]),
                Some(&[9, 6, 5]),
                None,
                None,
                Some(&[6]),
                Some(&[6]),
            ],
            &[1, 9, 296],
            d,
        );
        // Strided 1 × 1 convs run as stride-1 convs of the pixels they read: ResNet's
        // downsampling shape (batch 2, residual, odd sizes), strides 2 × 3, a grouped one with
        // the prologue, and rows of more pixels than one widening step (550 outputs).
        let p = conv(1, 1, 2, 0, UnaryOp::Relu);
        check(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[
                Some(&[2, 24, 29, 27]),
                Some(&[40, 24, 1, 1]),
                Some(&[40]),
                Some(&[2, 40, 15, 14]),
            ],
            &[2, 40, 15, 14],
            d,
        );
        let mut p = conv(1, 1, 2, 0, UnaryOp::Relu);
        p.stride = [2, 3, 1];
        check(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[Some(&[1, 8, 12, 1100]), Some(&[16, 8, 1, 1])],
            &[1, 16, 6, 367],
            d,
        );
        let p = conv(4, 1, 2, 0, UnaryOp::Relu);
        check(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[Some(&[1, 8, 9, 1100]), Some(&[12, 2, 1, 1]), Some(&[12])],
            &[1, 12, 5, 550],
            d,
        );
        let mut p = conv(1, 1, 2, 0, UnaryOp::Relu);
        p.prologue.op = UnaryOp::Relu as u32;
        check(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[
                Some(&[1, 8, 9, 11]),
                Some(&[12, 8, 1, 1]),
                Some(&[12]),
                None,
                Some(&[8]),
                Some(&[8]),
            ],
            &[1, 12, 5, 6],
            d,
        );
        // Depthwise over 32 large planes: two slices of whole groups.
        let p = conv(32, 3, 1, 1, UnaryOp::Relu);
        check(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[Some(&[1, 32, 56, 56]), Some(&[32, 1, 3, 3]), Some(&[32])],
            &[1, 32, 56, 56],
            d,
        );
    }
}

#[test]
fn gemm_matches_the_f32_gemm_in_slices() {
    for d in [DType::F16, DType::Bf16] {
        let mut p: GemmParams = bytemuck::Zeroable::zeroed();
        (p.alpha, p.beta, p.trans_b) = (1.0, 1.0, 1);
        // ResNet's classifier: [1, 2048] · [1000, 2048]ᵀ + C[1000].
        check(
            OpKind::Gemm,
            bytemuck::bytes_of(&p),
            &[Some(&[1, 2048]), Some(&[1000, 2048]), Some(&[1000])],
            &[1, 1000],
            d,
        );
        // 64 rows, B not transposed, C per row and column, alpha and a Relu: two slices.
        (p.alpha, p.beta, p.trans_b) = (0.5, 2.0, 0);
        p.act.op = UnaryOp::Relu as u32;
        check(
            OpKind::Gemm,
            bytemuck::bytes_of(&p),
            &[Some(&[64, 256]), Some(&[256, 1000]), Some(&[64, 1000])],
            &[64, 1000],
            d,
        );
        // C broadcast along the columns.
        check(
            OpKind::Gemm,
            bytemuck::bytes_of(&p),
            &[Some(&[64, 256]), Some(&[256, 1000]), Some(&[64, 1])],
            &[64, 1000],
            d,
        );
    }
}

#[test]
fn matmul_matches_the_f32_matmul() {
    for d in [DType::F16, DType::Bf16] {
        let mm = |a: &[usize], b: &[usize], y: &[usize]| {
            check(OpKind::MatMul, &[], &[Some(a), Some(b)], y, d);
        };
        // A shared 2-D B through the half Gemm: leading axes folded, columns sliced
        // (1,536 columns of 384 rows: four slices).
        mm(&[1, 6, 384], &[384, 1536], &[1, 6, 1536]);
        mm(&[5, 7], &[7, 9], &[5, 9]);
        // Attention-shaped batches, both operands batched.
        mm(&[1, 4, 16, 8], &[1, 4, 8, 16], &[1, 4, 16, 16]);
        // Broadcast batches: each A matrix meets every B matrix, and the reverse.
        mm(&[3, 1, 5, 7], &[1, 2, 7, 4], &[3, 2, 5, 4]);
        mm(&[5, 7], &[2, 7, 4], &[2, 5, 4]);
        // 1-D operands (a vector on either side, and a dot product).
        mm(&[7], &[2, 7, 4], &[2, 4]);
        mm(&[2, 5, 7], &[7], &[2, 5]);
        mm(&[7], &[7], &[]);
    }
}

#[test]
fn gemm_w8_matches_the_f32_gemm_w8() {
    let p = GemmParams {
        beta: 1.0,
        act: Activation {
            op: UnaryOp::Relu as u32,
            alpha: 0.0,
            beta: 0.0,
        },
        ..crate::ops::gemm::PLAIN_GEMM
    };
    let (m, k, n) = (2 * 9, 64, 40);
    let w: Vec<i8> = (0..k * n).map(|i| ((i * 37) % 255) as i8).collect();
    for d in [DType::F16, DType::Bf16] {
        let half = |len: usize, seed: u64| -> Vec<u16> {
            values(len, seed)
                .iter()
                .map(|&v| to_bits(d, v * 0.1))
                .collect()
        };
        let (a, sc, c, r) = (half(m * k, 1), half(n, 2), half(n, 3), half(m * n, 4));
        let wide = |h: &[u16]| -> Vec<f32> { h.iter().map(|&x| from_bits(d, x)).collect() };
        let (aw, sw, cw, rw) = (wide(&a), wide(&sc), wide(&c), wide(&r));
        let dims: [&[usize]; 5] = [&[2, 9, k], &[k, n], &[n], &[n], &[2, 9, n]];
        let wv = Some(TensorRef {
            dtype: DType::I8,
            shape: Shape::new(dims[1]).unwrap(),
            data: bytemuck::cast_slice(&w),
        });
        fn h<'a>(d: DType, dims: &[usize], v: &'a [u16]) -> Option<TensorRef<'a>> {
            view(d, dims, bytemuck::cast_slice(v))
        }
        fn f<'a>(dims: &[usize], v: &'a [f32]) -> Option<TensorRef<'a>> {
            view(DType::F32, dims, bytemuck::cast_slice(v))
        }
        let y = Shape::new(&[2, 9, n]).unwrap();
        let params = bytemuck::bytes_of(&p);
        let got: Vec<u16> = run_task(
            OpKind::GemmW8,
            params,
            &[
                h(d, dims[0], &a),
                wv,
                h(d, dims[2], &sc),
                h(d, dims[3], &c),
                h(d, dims[4], &r),
            ],
            y,
            d,
        );
        let want: Vec<f32> = run_task(
            OpKind::GemmW8,
            params,
            &[
                f(dims[0], &aw),
                wv,
                f(dims[2], &sw),
                f(dims[3], &cw),
                f(dims[4], &rw),
            ],
            y,
            DType::F32,
        );
        assert!(want.iter().any(|&v| v != 0.0));
        for (i, (&g, &r)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, to_bits(d, r), "{d:?} element {i}");
        }
    }
}

#[test]
fn attention_matches_the_f32_attention_by_heads() {
    let p = AttentionParams {
        scale: 0.5,
        reserved: 0,
    };
    for d in [DType::F16, DType::Bf16] {
        let (q, k, v): (&[usize], &[usize], &[usize]) =
            (&[1, 3, 5, 4], &[1, 3, 4, 6], &[1, 3, 6, 2]);
        let y = [1, 3, 5, 2];
        let params = bytemuck::bytes_of(&p);
        check(
            OpKind::Attention,
            params,
            &[Some(q), Some(k), Some(v)],
            &y,
            d,
        );
        // A key mask broadcast over heads and query rows, and a full per-head one.
        for mask in [&[1, 1, 1, 6][..], &[1, 3, 5, 6]] {
            check(
                OpKind::Attention,
                params,
                &[Some(q), Some(k), Some(v), Some(mask)],
                &y,
                d,
            );
        }
    }
}

#[test]
fn pooling_matches_the_f32_pooling_in_slices() {
    for d in [DType::F16, DType::Bf16] {
        let mut p: PoolParams = bytemuck::Zeroable::zeroed();
        p.kind = PoolKind::Max as u32;
        p.spatial = 2;
        p.kernel = [3, 3, 1];
        p.stride = [2, 2, 1];
        p.dilation = [1, 1, 1];
        p.pad_begin = [1, 1, 0];
        p.pad_end = [1, 1, 0];
        check(
            OpKind::Pool,
            bytemuck::bytes_of(&p),
            &[Some(&[2, 16, 112, 112])],
            &[2, 16, 56, 56],
            d,
        );
        p.kind = PoolKind::Average as u32;
        check(
            OpKind::Pool,
            bytemuck::bytes_of(&p),
            &[Some(&[1, 8, 30, 30])],
            &[1, 8, 15, 15],
            d,
        );
        check(
            OpKind::GlobalPool,
            bytemuck::bytes_of(&p),
            &[Some(&[2, 64, 7, 7])],
            &[2, 64, 1, 1],
            d,
        );
    }
}

#[test]
fn layer_norm_matches_the_f32_layer_norm_in_slices() {
    use ge_runtime::format::LayerNormParams;
    let act = Activation {
        op: 0,
        alpha: 0.0,
        beta: 0.0,
    };
    for d in [DType::F16, DType::Bf16] {
        // A transformer's rows (4,096 of 384: several slices) with scale and bias; the
        // trailing two axes of a map with a broadcast scale and no bias.
        for (axis, x, scale, bias) in [
            (2, &[2, 2048, 384][..], &[384][..], Some(&[384][..])),
            (2, &[3, 5, 4, 6], &[1, 6], None),
        ] {
            let p = LayerNormParams {
                axis,
                epsilon: 1e-5,
                act,
            };
            check(
                OpKind::LayerNorm,
                bytemuck::bytes_of(&p),
                &[Some(x), Some(scale), bias],
                x,
                d,
            );
        }
    }
}

#[test]
fn binary_ops_match_the_f32_binary_kernel() {
    use ge_runtime::format::{BinaryOp, BinaryParams};
    let none = Activation {
        op: 0,
        alpha: 0.0,
        beta: 0.0,
    };
    let relu = Activation {
        op: UnaryOp::Relu as u32,
        ..none
    };
    for d in [DType::F16, DType::Bf16] {
        for (op, act, a, b, y) in [
            // A scale over the last axis; a residual sum with its Relu; both broadcasting.
            (
                BinaryOp::Mul,
                none,
                &[2, 128, 384][..],
                &[384][..],
                &[2, 128, 384][..],
            ),
            (
                BinaryOp::Add,
                relu,
                &[1, 64, 56, 56],
                &[1, 64, 56, 56],
                &[1, 64, 56, 56],
            ),
            (BinaryOp::Sub, none, &[3, 1, 5], &[1, 4, 1], &[3, 4, 5]),
            (BinaryOp::Max, none, &[4, 6], &[4, 6], &[4, 6]),
            (
                BinaryOp::PRelu,
                none,
                &[1, 8, 5, 5],
                &[8, 1, 1],
                &[1, 8, 5, 5],
            ),
        ] {
            let p = BinaryParams { op: op as u32, act };
            check(
                OpKind::Binary,
                bytemuck::bytes_of(&p),
                &[Some(a), Some(b)],
                y,
                d,
            );
        }
    }
}

#[test]
fn resize_matches_the_f32_resize_by_planes() {
    use ge_runtime::format::{CoordTransform, ResizeMode, ResizeParams};
    let mut p: ResizeParams = bytemuck::Zeroable::zeroed();
    p.mode = ResizeMode::Linear as u32;
    p.coord = CoordTransform::HalfPixel as u32;
    p.scales = [1.0; 8];
    for d in [DType::F16, DType::Bf16] {
        // U²-Net's 2× bilinear upsample over 64 planes (several slices), and a resize that
        // also scales the channels (one slice).
        (p.scales[2], p.scales[3]) = (2.0, 2.0);
        check(
            OpKind::Resize,
            bytemuck::bytes_of(&p),
            &[Some(&[1, 64, 80, 80])],
            &[1, 64, 160, 160],
            d,
        );
        (p.scales[1], p.scales[2], p.scales[3]) = (1.5, 0.5, 3.0);
        check(
            OpKind::Resize,
            bytemuck::bytes_of(&p),
            &[Some(&[2, 4, 6, 5])],
            &[2, 6, 3, 15],
            d,
        );
        p.scales[1] = 1.0;
        p.mode = ResizeMode::Cubic as u32;
        p.cubic_coeff = -0.75;
        check(
            OpKind::Resize,
            bytemuck::bytes_of(&p),
            &[Some(&[2, 4, 6, 5])],
            &[2, 4, 3, 15],
            d,
        );
        p.mode = ResizeMode::Linear as u32;
    }
}

#[test]
fn softmax_matches_the_f32_softmax_in_slices() {
    use ge_runtime::format::{SoftmaxKind, SoftmaxParams};
    for d in [DType::F16, DType::Bf16] {
        for (kind, axis, coerce, dims) in [
            (SoftmaxKind::Softmax, 1, 0, &[1, 1000][..]),
            // Attention scores: 4096 rows of 128 over several slices, the last axis.
            (SoftmaxKind::Softmax, 3, 0, &[2, 8, 256, 128]),
            // Over a middle axis, and opset < 13's 2-D view.
            (SoftmaxKind::LogSoftmax, 1, 0, &[3, 10, 4, 5]),
            (SoftmaxKind::Softmax, 2, 1, &[3, 4, 6, 5]),
            (SoftmaxKind::Hardmax, 0, 0, &[4, 9]),
        ] {
            let p = SoftmaxParams {
                kind: kind as u32,
                axis,
                coerce_2d: coerce,
            };
            check(
                OpKind::Softmax,
                bytemuck::bytes_of(&p),
                &[Some(dims)],
                dims,
                d,
            );
        }
    }
}

/// The conv's scratch stays bounded however large its input (ResNet-50's 256 × 56 × 56 into
/// a 1×1 conv, 64 × 56 × 56 into a 3×3 one; VGG's 64 × 224 × 224 3×3; stage 5's 512 × 7 × 7
/// 3×3): the widened slices (2 MiB of weights, outputs and residual) and the f32 kernel's
/// packing, under 3 MB, where widening the whole input took up to 12.8 MB.
#[test]
fn conv_workspace_is_bounded_by_bands() {
    for (p, x, w, y) in [
        (
            conv(1, 1, 1, 0, UnaryOp::Relu),
            [1, 256, 56, 56],
            [64, 256, 1, 1],
            [1, 64, 56, 56],
        ),
        (
            conv(1, 3, 1, 1, UnaryOp::Relu),
            [1, 64, 56, 56],
            [64, 64, 3, 3],
            [1, 64, 56, 56],
        ),
        (
            conv(1, 3, 1, 1, UnaryOp::Relu),
            [1, 64, 224, 224],
            [64, 64, 3, 3],
            [1, 64, 224, 224],
        ),
        (
            conv(1, 3, 1, 1, UnaryOp::Relu),
            [1, 512, 7, 7],
            [512, 512, 3, 3],
            [1, 512, 7, 7],
        ),
    ] {
        let s = |d: &[usize]| Some(Shape::new(d).unwrap());
        let bytes = workspace_bytes_for(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[s(&x), s(&w), s(&[w[0]])],
            &[Shape::new(&y).unwrap()],
            DType::F16,
        );
        assert!(bytes > 0 && bytes < 3_000_000, "{x:?} → {y:?}: {bytes} B");
    }
}

/// A half conv runs with any of its workspace levels (what an older ge planned — 512 KiB
/// slices — is one of them), on shorter slices the smaller the workspace, to the same values
/// (within one fp16 step: slices of other widths may take other f32 conv paths); a workspace
/// too small for any slicing is refused.
#[test]
fn a_half_conv_runs_at_every_workspace_level() {
    let p = conv(1, 3, 1, 1, UnaryOp::Relu);
    let (xd, wd, yd): (&[usize], &[usize], &[usize]) =
        (&[1, 256, 7, 7], &[512, 256, 3, 3], &[1, 512, 7, 7]);
    let d = DType::F16;
    let bits = |n: usize, seed: u64| -> Vec<u16> {
        values(n, seed).iter().map(|&v| to_bits(d, v)).collect()
    };
    let (x, w) = (bits(xd.iter().product(), 1), bits(wd.iter().product(), 2));
    let ins = [
        view(d, xd, bytemuck::cast_slice(&x)),
        view(d, wd, bytemuck::cast_slice(&w)),
    ];
    let shapes = [ins[0].map(|t| t.shape), ins[1].map(|t| t.shape)];
    let y = Shape::new(yd).unwrap();
    let params = bytemuck::bytes_of(&p);
    let levels = workspace_levels_for(OpKind::Conv, params, &shapes, &[y], d);
    assert_eq!(
        levels[0],
        workspace_bytes_for(OpKind::Conv, params, &shapes, &[y], d)
    );
    assert!(levels.windows(2).all(|l| l[0] >= l[1]), "{levels:?}");
    assert!(levels[0] > levels[WORKSPACE_LEVELS - 1], "{levels:?}");
    let run = |bytes: usize| -> Result<Vec<u16>, crate::ops::KernelError> {
        let mut ws = std::vec![0u64; bytes.div_ceil(8)];
        let mut out = std::vec![0u16; y.numel()];
        let mut o = [TensorMut {
            dtype: d,
            shape: y,
            data: bytemuck::cast_slice_mut(&mut out),
        }];
        execute(
            OpKind::Conv,
            params,
            &ins,
            &mut o,
            &mut bytemuck::cast_slice_mut::<u64, u8>(&mut ws)[..bytes],
        )?;
        Ok(out)
    };
    let preferred = run(levels[0]).unwrap();
    for &bytes in &levels[1..] {
        for (i, (&a, &b)) in preferred.iter().zip(&run(bytes).unwrap()).enumerate() {
            let ulps = (i32::from(a as i16) - i32::from(b as i16)).unsigned_abs();
            assert!(ulps <= 1, "{bytes} B, element {i}: {a:#x} vs {b:#x}");
        }
    }
    // Below the sizes it offers, a narrower slicing that fits still runs (a blob planned
    // by a ge that offered other sizes); below every slicing, the conv is refused.
    let least = levels[WORKSPACE_LEVELS - 1];
    for (i, (&a, &b)) in preferred.iter().zip(&run(least - 64).unwrap()).enumerate() {
        let ulps = (i32::from(a as i16) - i32::from(b as i16)).unsigned_abs();
        assert!(ulps <= 1, "below the least, element {i}: {a:#x} vs {b:#x}");
    }
    assert!(run(4096).is_err(), "ran in 4 KiB");
}

/// An f32 activation (the graph input) read straight by a half conv: the f32 conv on the
/// unrounded input and the widened weights, rounded once.
#[test]
fn conv_reads_an_f32_input() {
    let p = conv(1, 7, 2, 3, UnaryOp::Relu);
    let (xd, wd, yd) = ([1, 3, 40, 40], [16, 3, 7, 7], [1, 16, 20, 20]);
    let x = values(xd.iter().product(), 1);
    let wbits: Vec<u16> = values(wd.iter().product(), 2)
        .iter()
        .map(|&v| f32_to_f16(v))
        .collect();
    let wide: Vec<f32> = wbits.iter().map(|&h| f16_to_f32(h)).collect();
    let params = bytemuck::bytes_of(&p);
    let y = Shape::new(&yd).unwrap();
    let x_in = view(DType::F32, &xd, bytemuck::cast_slice(&x));
    let got: Vec<u16> = run_task(
        OpKind::Conv,
        params,
        &[x_in, view(DType::F16, &wd, bytemuck::cast_slice(&wbits))],
        y,
        DType::F16,
    );
    let want: Vec<f32> = run_task(
        OpKind::Conv,
        params,
        &[x_in, view(DType::F32, &wd, bytemuck::cast_slice(&wide))],
        y,
        DType::F32,
    );
    assert!(want.iter().any(|&v| v != 0.0));
    for (i, (&h, &r)) in got.iter().zip(&want).enumerate() {
        let ulps = (i32::from(h as i16) - i32::from(f32_to_f16(r) as i16)).unsigned_abs();
        assert!(ulps <= 1, "element {i}: {h:#x} vs {r}");
    }
}

#[test]
fn f16c_and_portable_conversions_agree() {
    if !fast() {
        return; // no F16C here: only the portable build runs
    }
    let all: Vec<u16> = (0..=u16::MAX).collect();
    let bytes: &[u8] = bytemuck::cast_slice(&all);
    let (mut a, mut b) = (std::vec![0f32; all.len()], std::vec![0f32; all.len()]);
    widen(DType::F16, bytes, &mut a, true).unwrap();
    widen(DType::F16, bytes, &mut b, false).unwrap();
    for (h, (x, y)) in all.iter().zip(a.iter().zip(&b)) {
        assert!(
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
            "{h:#x}: {x} vs {y}"
        );
    }
    // Narrowing: every f16 value, the midpoints between neighbours (ties to even), values
    // past the range, subnormals, and a spread of random ones.
    let mut src: Vec<f32> = a.clone();
    for w in a.windows(2) {
        src.push((w[0] + w[1]) * 0.5);
    }
    src.extend([
        65504.0,
        65519.0,
        65520.0,
        1e9,
        -1e9,
        1e-8,
        -3e-8,
        f32::INFINITY,
        f32::NAN,
    ]);
    src.extend(values(100_000, 3).iter().map(|v| v * 70_000.0));
    src.truncate(src.len() / 8 * 8 + 3); // a ragged tail for the portable remainder
    let (mut x, mut y) = (std::vec![0u16; src.len()], std::vec![0u16; src.len()]);
    narrow(DType::F16, &src, bytemuck::cast_slice_mut(&mut x), true).unwrap();
    narrow(DType::F16, &src, bytemuck::cast_slice_mut(&mut y), false).unwrap();
    for (v, (p, q)) in src.iter().zip(x.iter().zip(&y)) {
        let nan = |h: u16| h & 0x7c00 == 0x7c00 && h & 0x3ff != 0;
        assert!(p == q || (nan(*p) && nan(*q)), "{v}: {p:#x} vs {q:#x}");
    }
}

/// A vector program (`relu(x · s + b)`, numpy broadcasting) over shapes that split into
/// several slices along the first non-unit axis, with inputs that slice (x), broadcast along
/// it (s, lower rank) and slice while broadcasting along the rows (b: [C, 1, 1] against
/// [1, C, H, W]).
#[test]
fn vector_programs_match_the_f32_interpreter_in_slices() {
    let p = crate::ops::fused::tests::scaled_sum_relu();
    for d in [DType::F16, DType::Bf16] {
        for (x, s, b) in [
            // 64 channels of 80 × 80 (6,400 per index): 40 indices a slice, 2 slices.
            (&[1, 64, 80, 80][..], &[80][..], &[64, 1, 1][..]),
            // Leading unit dims, then a 2-D body (511 rows a slice, 2 slices); s as x.
            (&[1, 1, 700, 513], &[1, 1, 700, 513], &[513]),
            // A one-element operand and a rank-1 output (2 slices).
            (&[300_000], &[1], &[300_000]),
        ] {
            check(
                OpKind::Fused,
                bytemuck::bytes_of(&p),
                &[Some(x), Some(s), Some(b)],
                x,
                d,
            );
        }
    }
}
