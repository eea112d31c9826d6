//! The depthwise plane's AVX-512 paths (sixteen channels a vector for narrow rows, the
//! per-channel band for wide ones) and AVX2's (sixteen channels as two eight-lane halves for
//! narrow rows; run with `GE_ISA=avx2`) against the GEMM path on panels: symmetric weights (the
//! paths' condition), channel counts not a multiple of sixteen, strides 1 and 2, pads, u8
//! and i8, onnxruntime's and TFLite's requantization, every workspace level.

extern crate std;
use std::vec;
use std::vec::Vec;

use ge_runtime::format::{DType, QConvParams, QGEMM_OUT_Q8_F32, QGEMM_OUT_Q8_TFLITE, Shape};

use super::*;
use crate::ops::gemm_i8::{Requant, fold_zero_points, pack_b, packed_len};
use crate::ops::test_util::{t, tmb};

/// Runs a depthwise conv of `c` channels on an `h × w` input with compact taps (the plane's
/// paths, at every level) and on panels (the GEMM path): both outputs.
fn both<A: Act + bytemuck::Pod>(
    (c, h, w): (usize, usize, usize),
    stride: usize,
    za: i32,
    to_a: fn(i32) -> A,
    kind: u32,
) -> (Vec<u8>, Vec<u8>) {
    let mut seed = 0x77u64 ^ (c * 131 + h * 7 + stride) as u64;
    let mut int = |lo: i32, hi: i32| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        lo + ((seed >> 8) % (hi - lo + 1) as u64) as i32
    };
    let (lo, hi) = if A::SIGNED { (-128, 127) } else { (0, 255) };
    let x: Vec<A> = (0..c * h * w).map(|_| to_a(int(lo, hi))).collect();
    let taps: Vec<i8> = (0..c * 9).map(|_| int(-128, 127) as i8).collect();
    let plen = packed_len(9, 1).unwrap();
    let mut panels = vec![0i8; plen * c];
    let mut corr = vec![0i32; c];
    for ch in 0..c {
        let b = &taps[ch * 9..][..9];
        pack_b(b, 9, 1, 1, 9, &mut panels[ch * plen..][..plen]).unwrap();
        let bias = [int(-3000, 3000)];
        fold_zero_points(b, 9, 1, 1, 9, za, &[0], Some(&bias), &mut corr[ch..ch + 1]).unwrap();
    }
    let rq: Vec<i32> = (0..c)
        .flat_map(|_| {
            let r = if kind == QGEMM_OUT_Q8_TFLITE {
                Requant::from_tflite(f64::from(int(1, 1000)) * 1e-4).unwrap()
            } else {
                Requant::from_f32_scale(int(1, 1000) as f32 * 1e-4).unwrap()
            };
            [r.mult, r.shift]
        })
        .collect();
    let p = QConvParams {
        out: kind,
        out_zp: -2,
        a_zp: za,
        group: c as u32,
        kernel: [3, 3],
        stride: [stride as u32; 2],
        dilation: [1, 1],
        pad_begin: [1, 1],
        pad_end: [1, 1],
    };
    let (oh, ow) = ((h + 2 - 3) / stride + 1, (w + 2 - 3) / stride + 1);
    let xt = ge_runtime::format::TensorRef {
        dtype: if A::SIGNED { DType::I8 } else { DType::U8 },
        shape: Shape::new(&[1, c, h, w]).unwrap(),
        data: bytemuck::cast_slice(&x),
    };
    let run = |b: &[i8], ws_len: usize, path: Option<Path>| {
        let ins = [
            Some(xt),
            Some(t(&[b.len()], b)),
            Some(t(&[c], &corr)),
            None,
            Some(t(&[c, 2], &rq)),
        ];
        let mut y = vec![0u8; c * oh * ow];
        let mut ws = vec![0u32; ws_len.div_ceil(4)];
        let ws: &mut [u8] = &mut bytemuck::cast_slice_mut(&mut ws)[..ws_len];
        let mut outs = [tmb(&[1, c, oh, ow], &mut y)];
        outs[0].dtype = DType::I8;
        run_qconv_on(&p, &ins, &mut outs, ws, path).unwrap();
        y
    };
    let gemm = Path::Gemm {
        rows: ROWS,
        flip: false,
        table: false,
    };
    let old = run(&panels, 1 << 20, Some(gemm));
    let shapes = [
        Some(xt.shape),
        Some(Shape::new(&[taps.len()]).unwrap()),
        Some(Shape::new(&[c]).unwrap()),
        None,
        Some(Shape::new(&[c, 2]).unwrap()),
    ];
    let levels = workspace_levels(&p, &shapes, &[Shape::new(&[1, c, oh, ow]).unwrap()]);
    let new = run(&taps, levels[0], None);
    for (level, &bytes) in levels.iter().enumerate() {
        assert_eq!(run(&taps, bytes, None), old, "level {level} ({bytes} B)");
    }
    (new, old)
}

/// Narrow rows (the sixteen-channel ring on AVX-512) and wide ones (the per-channel band),
/// channel counts of 5, 16 and 37, strides 1 and 2, u8 and i8, both requantizations.
#[test]
fn depthwise_paths_match_the_gemm_path() {
    for shape in [(37, 9, 7), (16, 5, 12), (5, 6, 40), (20, 25, 5)] {
        for stride in [1, 2] {
            for kind in [QGEMM_OUT_Q8_F32, QGEMM_OUT_Q8_TFLITE] {
                let (new, old) = both(shape, stride, 9, |v| v as u8, kind);
                assert_eq!(new, old, "u8 {shape:?} stride {stride} kind {kind}");
                assert!(
                    new.iter().any(|&v| v != new[0]),
                    "a constant output tests nothing"
                );
                let (new, old) = both(shape, stride, -5, |v| v as i8, kind);
                assert_eq!(new, old, "i8 {shape:?} stride {stride} kind {kind}");
            }
        }
    }
}
