//! The quad layouts against the definition (tiles, on every ISA path this CPU runs) and
//! against the GEMM path on panels (whole convs: strides, pads, groups, stems of one to
//! three channels, u8 and i8, every output kind, at every workspace level).

extern crate std;
use std::vec;
use std::vec::Vec;

use ge_runtime::format::{
    DType, QCONV_CHANNEL_QUADS, QCONV_ROW_QUADS, QConvParams, QGEMM_OUT_I32, QGEMM_OUT_Q8_F32,
    QGEMM_OUT_Q8_TFLITE, Shape,
};

use super::*;
use crate::arch::isa::Isa;
use crate::ops::gemm_i8::{Columns, MR, NR, Requant, fold_zero_points, pack_b, packed_len};
use crate::ops::test_util::{t, tmb};

/// xorshift; a quarter of the values at the range's ends.
struct Gen(u64);

impl Gen {
    fn int(&mut self, lo: i32, hi: i32) -> i32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        match self.0 % 8 {
            0 => lo,
            1 => hi,
            r => lo + ((self.0 >> 8).wrapping_add(r) % (hi - lo + 1) as u64) as i32,
        }
    }
}

/// Every tile (portable, AVX2, AVX-512 VNNI where the CPU has them) gives the definition's
/// sums: full-range activations and weights, several panels, quad rows in both layouts'
/// shapes, rows past `MR`.
#[test]
fn quad_tiles_match_the_definition() {
    let mut g = Gen(0x9a17);
    for &(planes, kh, per, n) in &[
        (1usize, 3usize, 1usize, 16usize),
        (3, 10, 1, 40),
        (4, 3, 3, 17),
        (2, 1, 2, 5),
    ] {
        let geo = QuadGeo {
            planes,
            kh,
            per,
            plane: 97 * kh + 13,
            row: 97,
        };
        let m = 11;
        let at = |i: usize| 3 * i + (i / 4) * 7;
        let len = at(m - 1) + geo.offset(geo.quads() - 1) + 4;
        let a: Vec<u8> = (0..len).map(|_| g.int(0, 255) as u8).collect();
        let panels = n.div_ceil(NR);
        let b: Vec<i8> = (0..panels * geo.quads() * 64)
            .map(|_| g.int(-128, 127) as i8)
            .collect();
        let corr: Vec<i32> = (0..n).map(|_| g.int(-5000, 5000)).collect();
        let mut want = vec![0i32; m * n];
        for i in 0..m {
            for j in 0..n {
                let (p, t) = (j / NR, j % NR);
                let mut s = corr[j];
                for r in 0..geo.quads() {
                    for u in 0..4 {
                        let av = i32::from(a[at(i) + geo.offset(r) + u]);
                        let bv = i32::from(b[(p * geo.quads() + r) * 64 + 4 * t + u]);
                        s = s.wrapping_add(av * bv);
                    }
                }
                want[i * n + j] = s;
            }
        }
        let cols = Columns {
            n,
            corr: &corr,
            zb: &[],
        };
        for isa in Isa::ALL.iter().copied().filter(|i| i.supported()) {
            let mut got = vec![0i32; m * n];
            let mut out = QOut::I32 {
                c: &mut got,
                ldc: n,
            };
            block(isa, &cols, m, at, &a, geo, &b, &mut out).unwrap();
            assert_eq!(got, want, "{isa:?} planes {planes} kh {kh} per {per} n {n}");
        }
        // A copy one byte short is an error, not a read past it.
        let mut got = vec![0i32; m * n];
        let mut out = QOut::I32 {
            c: &mut got,
            ldc: n,
        };
        assert!(
            block(
                Isa::Portable,
                &cols,
                m,
                at,
                &a[..len - 1],
                geo,
                &b,
                &mut out
            )
            .is_err()
        );
    }
    let _ = MR;
}

/// One conv: (cg, mg, group), (kh, kw), stride, pads (top, left, bottom, right), input h × w.
type Case = (
    (usize, usize, usize),
    [usize; 2],
    [usize; 2],
    [usize; 4],
    [usize; 2],
);

/// Runs `case` with activations from `to_a`, output kind `kind`, weights on GEMM panels
/// (the GEMM path) and in `layout` (every workspace level): both outputs' bytes.
fn both<A: Act + bytemuck::Pod>(
    case: Case,
    layout: QuadLayout,
    za: i32,
    to_a: fn(i32) -> A,
    range: (i32, i32),
    kind: u32,
) -> (Vec<u8>, Vec<u8>) {
    let ((cg, mg, group), [kh, kw], [sh, sw], pads, [h, w]) = case;
    let (c, m, k) = (cg * group, mg * group, cg * kh * kw);
    let mut g = Gen(0x5eed ^ (cg * 31 + kh * 7 + kw) as u64);
    let x: Vec<A> = (0..c * h * w)
        .map(|_| to_a(g.int(range.0, range.1)))
        .collect();
    let bias: Vec<i32> = (0..m).map(|_| g.int(-5000, 5000)).collect();
    let zb = vec![0i32; 1];
    let (plen, qlen) = (
        packed_len(k, mg).unwrap(),
        quads_len(layout, mg, cg, kh, kw).unwrap(),
    );
    let (mut panels, mut quads) = (vec![0i8; plen * group], vec![0i8; qlen * group]);
    let (mut corr, mut flipped) = (vec![0i32; m], vec![0i32; m]);
    for gi in 0..group {
        let b: Vec<i8> = (0..mg * k).map(|_| g.int(-128, 127) as i8).collect();
        pack_b(&b, k, mg, 1, k, &mut panels[gi * plen..][..plen]).unwrap();
        pack_quads(layout, &b, mg, cg, kh, kw, &mut quads[gi * qlen..][..qlen]).unwrap();
        let bias = Some(&bias[gi * mg..][..mg]);
        let (cr, f) = (&mut corr[gi * mg..][..mg], &mut flipped[gi * mg..][..mg]);
        fold_zero_points(&b, k, mg, 1, k, za, &zb, bias, cr).unwrap();
        fold_zero_points(&b, k, mg, 1, k, za + 128, &zb, bias, f).unwrap();
    }
    let rq: Vec<i32> = (0..m)
        .flat_map(|_| {
            let r = if kind == QGEMM_OUT_Q8_TFLITE {
                Requant::from_tflite(f64::from(g.int(1, 1000)) * 1e-4).unwrap()
            } else {
                Requant::from_f32_scale(g.int(1, 1000) as f32 * 1e-4).unwrap()
            };
            [r.mult, r.shift]
        })
        .collect();
    let mut p = QConvParams {
        out: kind,
        out_zp: 3,
        a_zp: za,
        group: group as u32,
        kernel: [kh as u32, kw as u32],
        stride: [sh as u32, sw as u32],
        dilation: [1, 1],
        pad_begin: [pads[0] as u32, pads[1] as u32],
        pad_end: [pads[2] as u32, pads[3] as u32],
    };
    let (oh, ow) = (
        (h + pads[0] + pads[2] - kh) / sh + 1,
        (w + pads[1] + pads[3] - kw) / sw + 1,
    );
    let (dtype, esize) = if kind == QGEMM_OUT_I32 {
        (DType::I32, 4)
    } else {
        (DType::I8, 1)
    };
    let xt = ge_runtime::format::TensorRef {
        dtype: if A::SIGNED { DType::I8 } else { DType::U8 },
        shape: Shape::new(&[1, c, h, w]).unwrap(),
        data: bytemuck::cast_slice(&x),
    };
    let run = |p: &QConvParams, b: &[i8], ws_len: usize, path: Option<Path>| {
        let ins = [
            Some(xt),
            Some(t(&[b.len()], b)),
            Some(t(&[m], &corr)),
            None,
            (kind != QGEMM_OUT_I32).then(|| t(&[m, 2], &rq)),
            None,
            None,
            Some(t(&[m], &flipped)),
        ];
        let mut y = vec![0u8; m * oh * ow * esize];
        let mut ws = vec![0u32; ws_len.div_ceil(4)];
        let ws: &mut [u8] = &mut bytemuck::cast_slice_mut(&mut ws)[..ws_len];
        let mut outs = [tmb(&[1, m, oh, ow], &mut y)];
        outs[0].dtype = dtype;
        run_qconv_on(p, &ins, &mut outs, ws, path).unwrap();
        y
    };
    let gemm = Path::Gemm {
        rows: ROWS,
        flip: false,
        table: false,
    };
    let old = run(&p, &panels, 1 << 20, Some(gemm));
    p.out |= match layout {
        QuadLayout::Rows => QCONV_ROW_QUADS,
        QuadLayout::Channels => QCONV_CHANNEL_QUADS,
    };
    let shapes = [Some(xt.shape), Some(Shape::new(&[quads.len()]).unwrap())];
    let levels = workspace_levels(&p, &shapes, &[Shape::new(&[1, m, oh, ow]).unwrap()]);
    let new = run(&p, &quads, levels[0], None);
    for (level, &bytes) in levels.iter().enumerate().skip(1) {
        assert!(bytes <= levels[level - 1], "levels shrink: {levels:?}");
        assert_eq!(
            run(&p, &quads, bytes, None),
            new,
            "level {level} ({bytes} B)"
        );
    }
    (new, old)
}

/// Quad convs give the GEMM path's bytes: few output channels (positions in lanes), pointwise (grouped, channels not a multiple of
/// four), ResNet-8's 3×3s (stride 1 and 2) and 1×1 stride 2, channels not a multiple of four, the stems (one channel 10×4 stride 2 as kws's, three
/// channels 3×3 stride 2 as vww's), asymmetric pads, grouped, 5- and 7-tap rows, u8 and i8,
/// onnxruntime's and TFLite's requantization and i32.
#[test]
fn quad_convs_match_the_gemm_path() {
    let cases: [(Case, QuadLayout); 15] = [
        // At most eight outputs a group: positions in lanes (vww's stem; rows wider than
        // a vector; grouped).
        (
            ((3, 8, 1), [3, 3], [2, 2], [0, 0, 1, 1], [11, 40]),
            QuadLayout::Channels,
        ),
        (
            ((4, 5, 1), [3, 3], [1, 1], [1; 4], [9, 21]),
            QuadLayout::Channels,
        ),
        (
            ((4, 6, 2), [3, 3], [2, 1], [1; 4], [7, 18]),
            QuadLayout::Channels,
        ),
        // 1×1: the VNNI pointwise kernel reading the quads in place (else the quad path).
        (
            ((8, 17, 1), [1, 1], [1, 1], [0; 4], [9, 8]),
            QuadLayout::Channels,
        ),
        (
            ((64, 20, 1), [1, 1], [1, 1], [0; 4], [5, 7]),
            QuadLayout::Channels,
        ),
        (
            ((6, 28, 4), [1, 1], [1, 1], [0; 4], [3, 11]),
            QuadLayout::Channels,
        ),
        (
            ((16, 16, 1), [3, 3], [1, 1], [1; 4], [9, 8]),
            QuadLayout::Channels,
        ),
        (
            ((8, 20, 1), [3, 3], [2, 2], [0, 0, 1, 1], [9, 8]),
            QuadLayout::Channels,
        ),
        (
            ((8, 17, 1), [1, 1], [2, 2], [0; 4], [9, 8]),
            QuadLayout::Channels,
        ),
        (
            ((5, 9, 2), [3, 3], [1, 1], [1; 4], [7, 6]),
            QuadLayout::Channels,
        ),
        (
            ((1, 19, 1), [10, 4], [2, 2], [4, 1, 5, 1], [13, 10]),
            QuadLayout::Rows,
        ),
        (
            ((3, 8, 1), [3, 3], [2, 2], [0, 0, 1, 1], [11, 12]),
            QuadLayout::Rows,
        ),
        (
            ((2, 6, 1), [3, 5], [1, 1], [1, 2, 1, 2], [6, 7]),
            QuadLayout::Rows,
        ),
        (
            ((2, 6, 1), [1, 7], [1, 3], [0, 3, 0, 3], [5, 9]),
            QuadLayout::Rows,
        ),
        (
            ((4, 33, 1), [2, 2], [1, 2], [0; 4], [6, 9]),
            QuadLayout::Channels,
        ),
    ];
    for (case, layout) in cases {
        for kind in [QGEMM_OUT_Q8_F32, QGEMM_OUT_Q8_TFLITE, QGEMM_OUT_I32] {
            let (new, old) = both(case, layout, 7, |v| v as u8, (0, 255), kind);
            assert_eq!(new, old, "u8 {case:?} {layout:?} kind {kind}");
            assert!(
                new.iter().any(|&v| v != new[0]),
                "a constant output tests nothing"
            );
            let (new, old) = both(case, layout, -9, |v| v as i8, (-128, 127), kind);
            assert_eq!(new, old, "i8 {case:?} {layout:?} kind {kind}");
        }
    }
}

/// The compiler's choice: channel quads for whole channel quads, row quads for the stems,
/// nothing for depthwise, pointwise, dilated rows, weight zero points or a run-time
/// activation zero point.
#[test]
fn quad_layout_follows_the_padding_it_saves() {
    let f = |cg: usize, kernel| quad_layout(1, 8, cg, kernel, 1, true, true);
    assert_eq!(f(16, [3, 3]), Some(QuadLayout::Channels));
    assert_eq!(f(1, [10, 4]), Some(QuadLayout::Rows));
    assert_eq!(f(3, [3, 3]), Some(QuadLayout::Channels), "a tie");
    assert_eq!(f(2, [3, 3]), Some(QuadLayout::Rows));
    assert_eq!(f(8, [1, 1]), Some(QuadLayout::Channels), "pointwise");
    assert_eq!(quad_layout(8, 8, 8, [3, 3], 1, true, true), None);
    assert_eq!(quad_layout(1, 8, 8, [3, 3], 2, true, true), None);
    assert_eq!(quad_layout(1, 8, 8, [3, 3], 1, false, true), None);
    assert_eq!(quad_layout(1, 8, 8, [3, 3], 1, true, false), None);
}
