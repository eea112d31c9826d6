//! The half kernels against the f32 kernels on the same (16-bit) operands, rounded with the
//! portable bit math: so each checks its slicing and the F16C conversions it ran with.
//! Tolerance: 1 unit in the last place of the 16-bit result (the f32 kernels compute every
//! element by the same operations whatever slice it falls in, so in practice they agree to
//! the bit; one ulp leaves room for a different f32 path on a slice, e.g. im2col).

extern crate std;
use std::vec::Vec;

use ge_runtime::format::{
    Activation, ConvParams, DType, GemmParams, OpKind, PoolKind, PoolParams, Shape, TensorMut,
    TensorRef, UnaryOp,
};

use super::convert::{fast, narrow, widen};
use crate::kernels::cast::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
use crate::kernels::{execute, workspace_bytes, workspace_bytes_for};

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

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
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
/// a 1×1 conv, 64 × 56 × 56 into a 3×3 one; VGG's 64 × 224 × 224 3×3): the widened slices and
/// the f32 kernel's packing, under 1.2 MiB, where widening the whole input took up to 12.8 MB.
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
        assert!(bytes > 0 && bytes < 1_200_000, "{x:?} → {y:?}: {bytes} B");
    }
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
    let p = crate::kernels::fused::tests::scaled_sum_relu();
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
