//! Kernel speed benches: wall time and GFLOP/s (or GB/s) of the hot kernels on typical shapes.
//!
//! ```text
//! cargo bench -p ge-sim --bench kernels                       # all of them
//! cargo bench -p ge-sim --bench kernels -- conv gemm          # those whose name contains a word
//! GE_THREADS=2 cargo bench -p ge-sim --features std --bench kernels -- resnet50_conv
//! ```
//!
//! Benches: `conv`, `resnet50_conv` (its convolutions split between `GE_THREADS` threads with
//! `--features std`; timed on the thread's CPU clock when single-threaded, so a loaded machine
//! inflates it less; `GE_BENCH_WALL=1` for wall time), `gemm`, `qgemm` (int8, one thread),
//! `resize`, `transpose`. They print timings and assert nothing,
//! so they are not tests (a plain `harness = false` bench keeps criterion out of the build).

use std::time::Instant;

use ge_runtime::format::{
    Activation, ConvParams, CoordTransform, DType, MAX_RANK, NearestMode, OpKind, ResizeMode,
    ResizeParams, Shape, TensorMut, TensorRef, TransposeParams,
};
use ge_sim::ops::conv::{conv_workspace_bytes, run_conv, run_conv_on, run_conv_transpose};
use ge_sim::ops::gemm::{sgemm, sgemm_ws_len};
use ge_sim::ops::gemm_i8::{
    QGemm, QOut, QOutParams, Requant, fold_zero_points, pack_b, packed_len, qgemm as qgemm_run,
};
use ge_sim::ops::resize::run_resize;
use ge_sim::ops::transpose::run_transpose;
use ge_sim::threads::Parallel;
#[cfg(not(feature = "std"))]
use ge_sim::threads::Serial;

const BENCHES: [(&str, fn()); 6] = [
    ("conv", conv),
    ("resnet50_conv", resnet50_conv),
    ("gemm", gemm),
    ("qgemm", qgemm),
    ("resize", resize),
    ("transpose", transpose),
];

fn main() {
    // `cargo bench` passes `--bench`; anything else not starting with `-` filters by name.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for (name, run) in BENCHES {
        if filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())) {
            println!("== {name}");
            run();
        }
    }
}

/// Seconds on a clock: the calling thread's CPU time for single-thread runs (a loaded
/// machine's preemptions then do not count), wall time otherwise.
struct Clock {
    cpu: bool,
    start: Instant,
}

impl Clock {
    fn for_threads(threads: usize) -> Self {
        Clock {
            cpu: threads <= 1 && std::env::var_os("GE_BENCH_WALL").is_none(),
            start: Instant::now(),
        }
    }

    fn now(&self) -> f64 {
        if self.cpu {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `ts` is a valid timespec for the call to fill.
            if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
                return ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
            }
        }
        self.start.elapsed().as_secs_f64()
    }
}

fn lcg(seed: &mut u32) -> f32 {
    *seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
    (*seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
}

fn rand_vec(n: usize, seed: &mut u32) -> Vec<f32> {
    (0..n).map(|_| lcg(seed)).collect()
}

/// A 2-D convolution: input `x`, weights `w`, groups, strides and symmetric pads.
struct ConvCase {
    x: [usize; 4],
    w: [usize; 4],
    group: usize,
    stride: usize,
    pad: usize,
}

impl ConvCase {
    fn params(&self) -> ConvParams {
        let mut p = ConvParams {
            spatial: 2,
            group: self.group as u32,
            kernel: [0; 3],
            stride: [1; 3],
            dilation: [1; 3],
            pad_begin: [0; 3],
            pad_end: [0; 3],
            output_padding: [0; 3],
            act: Activation::default(),
            prologue: Activation::default(),
        };
        for i in 0..2 {
            p.kernel[i] = self.w[2 + i] as u32;
            p.stride[i] = self.stride as u32;
            p.pad_begin[i] = self.pad as u32;
            p.pad_end[i] = self.pad as u32;
        }
        p
    }

    fn out_dims(&self, transpose: bool) -> Vec<usize> {
        let m = if transpose {
            self.w[1] * self.group
        } else {
            self.w[0]
        };
        let mut d = vec![self.x[0], m];
        for i in 0..2 {
            let k = self.w[2 + i];
            d.push(if transpose {
                self.stride * (self.x[2 + i] - 1) + k - 2 * self.pad
            } else {
                (self.x[2 + i] + 2 * self.pad - k) / self.stride + 1
            });
        }
        d
    }
}

fn f32_ref(d: &[f32], shape: Shape) -> Option<TensorRef<'_>> {
    Some(TensorRef {
        dtype: DType::F32,
        shape,
        data: bytemuck::cast_slice(d),
    })
}

fn f32_mut(d: &mut [f32], shape: Shape) -> TensorMut<'_> {
    TensorMut {
        dtype: DType::F32,
        shape,
        data: bytemuck::cast_slice_mut(d),
    }
}

fn conv() {
    let cc = |x, w, group, stride, pad| ConvCase {
        x,
        w,
        group,
        stride,
        pad,
    };
    for (name, c, transpose) in [
        (
            "3x3 64->64 56x56",
            cc([1, 64, 56, 56], [64, 64, 3, 3], 1, 1, 1),
            false,
        ),
        (
            "3x3/2 3->32 224x224",
            cc([1, 3, 224, 224], [32, 3, 3, 3], 1, 2, 1),
            false,
        ),
        (
            "3x3 64->16 320x320",
            cc([1, 64, 320, 320], [16, 64, 3, 3], 1, 1, 1),
            false,
        ),
        (
            "3x3 16->16 160x160",
            cc([1, 16, 160, 160], [16, 16, 3, 3], 1, 1, 1),
            false,
        ),
        (
            "3x3 64->64 20x20",
            cc([1, 64, 20, 20], [64, 64, 3, 3], 1, 1, 1),
            false,
        ),
        (
            "3x3 32->32 40x40",
            cc([1, 32, 40, 40], [32, 32, 3, 3], 1, 1, 1),
            false,
        ),
        (
            "3x3/2 128->256 20x20",
            cc([1, 128, 20, 20], [256, 128, 3, 3], 1, 2, 1),
            false,
        ),
        (
            "3x3/2 3->64 224x224 (squeezenet stem)",
            cc([1, 3, 224, 224], [64, 3, 3, 3], 1, 2, 0),
            false,
        ),
        (
            "3x3 16->64 55x55 (squeezenet expand)",
            cc([1, 16, 55, 55], [64, 16, 3, 3], 1, 1, 1),
            false,
        ),
        (
            "1x1 64->16 55x55 (squeezenet squeeze)",
            cc([1, 64, 55, 55], [16, 64, 1, 1], 1, 1, 0),
            false,
        ),
        (
            "1x1 16->64 55x55 (squeezenet expand)",
            cc([1, 16, 55, 55], [64, 16, 1, 1], 1, 1, 0),
            false,
        ),
        (
            "1x1 512->1000 13x13 (squeezenet conv10)",
            cc([1, 512, 13, 13], [1000, 512, 1, 1], 1, 1, 0),
            false,
        ),
        (
            "1x1 128->128 20x20",
            cc([1, 128, 20, 20], [128, 128, 1, 1], 1, 1, 0),
            false,
        ),
        (
            "1x1 32->32 80x80",
            cc([1, 32, 80, 80], [32, 32, 1, 1], 1, 1, 0),
            false,
        ),
        (
            "1x1 256->64 56x56",
            cc([1, 256, 56, 56], [64, 256, 1, 1], 1, 1, 0),
            false,
        ),
        (
            "dw 3x3 128 56x56",
            cc([1, 128, 56, 56], [128, 1, 3, 3], 128, 1, 1),
            false,
        ),
        (
            "dw 3x3 16 112x112",
            cc([1, 16, 112, 112], [16, 1, 3, 3], 16, 1, 1),
            false,
        ),
        (
            "dw 3x3/2 32 112x112",
            cc([1, 32, 112, 112], [32, 1, 3, 3], 32, 2, 1),
            false,
        ),
        (
            "dw 5x5 256 14x14",
            cc([1, 256, 14, 14], [256, 1, 5, 5], 256, 1, 2),
            false,
        ),
        (
            "dw 3x3/2 112 56x56",
            cc([1, 112, 56, 56], [112, 1, 3, 3], 112, 2, 1),
            false,
        ),
        (
            "dw 3x3 544 7x7",
            cc([1, 544, 7, 7], [544, 1, 3, 3], 544, 1, 1),
            false,
        ),
        (
            "convT 4x4/2 64->32 28x28",
            cc([1, 64, 28, 28], [64, 32, 4, 4], 1, 2, 1),
            true,
        ),
    ] {
        // `GE_CONV=dw`: only the cases whose name contains it.
        if std::env::var("GE_CONV").is_ok_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let yd = c.out_dims(transpose);
        let p = c.params();
        let (xs, wsh, ys) = (
            Shape::new(&c.x).unwrap(),
            Shape::new(&c.w).unwrap(),
            Shape::new(&yd).unwrap(),
        );
        let bs = Shape::new(&[yd[1]]).unwrap();
        let x = vec![0.5f32; xs.numel()];
        let w = vec![0.25f32; wsh.numel()];
        let b = vec![0.0f32; yd[1]];
        let mut y = vec![0.0f32; ys.numel()];
        let nb = conv_workspace_bytes(&p, transpose, &[Some(xs), Some(wsh), Some(bs)], &[ys]);
        let mut ws = vec![0u32; nb / 4];
        let ins = [f32_ref(&x, xs), f32_ref(&w, wsh), f32_ref(&b, bs)];
        let mut outs = [f32_mut(&mut y, ys)];
        let mut run = || {
            let ws: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
            if transpose {
                run_conv_transpose(&p, &ins, &mut outs, ws)
            } else {
                run_conv(&p, &ins, &mut outs, ws)
            }
            .unwrap()
        };
        run();
        let reps = std::env::var("GE_CONV_REPS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5);
        // The fastest run: a shared machine's stalls only ever add time.
        let mut dt = f64::MAX;
        for _ in 0..reps {
            let t = Instant::now();
            run();
            dt = dt.min(t.elapsed().as_secs_f64());
        }
        let kind = if transpose {
            OpKind::ConvTranspose
        } else {
            OpKind::Conv
        };
        let work = ge_sim::ops::registry::estimate_work(
            kind,
            bytemuck::bytes_of(&p),
            &[Some(xs), Some(wsh), Some(bs)],
            &[ys],
        );
        let macs = work.cube_macs as f64;
        println!(
            "{name}: {:.2} ms, {:.1} GFLOP/s",
            dt * 1e3,
            2.0 * macs / dt / 1e9
        );
    }
}

/// ResNet-50's convolutions (shape, count), each the best of 10 runs.
fn resnet50_conv() {
    #[cfg(feature = "std")]
    let pool = ge_sim::threads::ThreadPool::new(
        std::env::var("GE_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1),
    );
    #[cfg(feature = "std")]
    let par: &dyn Parallel = &pool;
    #[cfg(not(feature = "std"))]
    let par: &dyn Parallel = &Serial;
    let clock = Clock::for_threads(par.threads());
    // (C, H, M, k, stride, count)
    let shapes: [(usize, usize, usize, usize, usize, usize); 23] = [
        (3, 224, 64, 7, 2, 1),
        (64, 56, 64, 1, 1, 1),
        (64, 56, 64, 3, 1, 3),
        (64, 56, 256, 1, 1, 4),
        (128, 28, 128, 3, 1, 3),
        (128, 28, 512, 1, 1, 4),
        (128, 56, 128, 3, 2, 1),
        (256, 14, 256, 3, 1, 5),
        (256, 14, 1024, 1, 1, 6),
        (256, 28, 256, 3, 2, 1),
        (256, 56, 64, 1, 1, 2),
        (256, 56, 128, 1, 1, 1),
        (256, 56, 512, 1, 2, 1),
        (512, 7, 512, 3, 1, 2),
        (512, 7, 2048, 1, 1, 3),
        (512, 14, 512, 3, 2, 1),
        (512, 28, 128, 1, 1, 3),
        (512, 28, 256, 1, 1, 1),
        (512, 28, 1024, 1, 2, 1),
        (1024, 14, 256, 1, 1, 5),
        (1024, 14, 512, 1, 1, 1),
        (1024, 14, 2048, 1, 2, 1),
        (2048, 7, 512, 1, 1, 2),
    ];
    let (mut total_ms, mut total_macs) = (0.0, 0.0);
    let mut seed = 5;
    for (ci, h, co, k, s, count) in shapes {
        let c = ConvCase {
            x: [1, ci, h, h],
            w: [co, ci, k, k],
            group: 1,
            stride: s,
            pad: k / 2,
        };
        let yd = c.out_dims(false);
        let mut p = c.params();
        p.act.op = 1;
        let (xs, wsh, ys) = (
            Shape::new(&c.x).unwrap(),
            Shape::new(&c.w).unwrap(),
            Shape::new(&yd).unwrap(),
        );
        let bs = Shape::new(&[co]).unwrap();
        let x = rand_vec(xs.numel(), &mut seed);
        let w = rand_vec(wsh.numel(), &mut seed);
        let b = rand_vec(co, &mut seed);
        let mut y = vec![0.0f32; ys.numel()];
        let nb = conv_workspace_bytes(&p, false, &[Some(xs), Some(wsh), Some(bs)], &[ys]);
        let mut ws = vec![0u32; nb / 4];
        let ins = [f32_ref(&x, xs), f32_ref(&w, wsh), f32_ref(&b, bs)];
        let mut outs = [f32_mut(&mut y, ys)];
        let mut run =
            || run_conv_on(&p, &ins, &mut outs, bytemuck::cast_slice_mut(&mut ws), par).unwrap();
        run();
        let work = ge_sim::ops::registry::estimate_work(
            OpKind::Conv,
            bytemuck::bytes_of(&p),
            &[Some(xs), Some(wsh), Some(bs)],
            &[ys],
        );
        let mut best = f64::MAX;
        for _ in 0..10 {
            let t = clock.now();
            run();
            best = best.min(clock.now() - t);
        }
        let macs = work.cube_macs as f64;
        println!(
            "{ci:>4}x{h:<3} -> {co:>4} k{k} s{s} x{count}: {:.3} ms, {:.1} GFLOP/s",
            best * 1e3,
            2.0 * macs / best / 1e9
        );
        total_ms += best * 1e3 * count as f64;
        total_macs += macs * count as f64;
    }
    println!(
        "total {total_ms:.1} ms, {:.1} GFLOP/s",
        2.0 * total_macs / (total_ms / 1e3) / 1e9
    );
}

fn gemm() {
    let mut seed = 1;
    // `GE_GEMM=96x128x256,12x32x64`: m × n × k shapes of one's own, best of 50 runs each.
    if let Ok(list) = std::env::var("GE_GEMM") {
        for shape in list.split(',') {
            let d: Vec<usize> = shape.split('x').filter_map(|v| v.parse().ok()).collect();
            let [m, n, k] = d[..] else {
                panic!("GE_GEMM shape {shape:?} is not MxNxK");
            };
            let a = rand_vec(m * k, &mut seed);
            let b = rand_vec(k * n, &mut seed);
            let mut c = vec![0.0f32; m * n];
            let mut ws = vec![0.0; sgemm_ws_len(m, n, k)];
            let mut best = f64::MAX;
            for _ in 0..50 {
                let t = Instant::now();
                sgemm(
                    m, n, k, 1.0, &a, k, false, &b, n, false, false, &mut c, n, &mut ws,
                )
                .unwrap();
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
                "sgemm {m}x{n}x{k}: {:.1} GFLOP/s (best of 50)",
                2.0 * (m * n * k) as f64 / best / 1e9
            );
        }
    }
    // The register block alone, its operands hot in L1 (packed A panels, packed B).
    // `fused`: the epilogue a conv's tile runs (bias and ReLU), else the plain store.
    for (kc, fused) in [
        (16usize, true),
        (32, true),
        (64, true),
        (64, false),
        (128, false),
        (256, false),
    ] {
        use ge_sim::ops::gemm::micro::{self, Block, BlockA, BlockB, TileAct, TileEp};
        let isa = micro::isa();
        let (bm, bn) = micro::block_dims(isa);
        let a = rand_vec(bm * kc, &mut seed);
        let b = rand_vec(bn * kc, &mut seed);
        let mut c = vec![0.0f32; bm * bn];
        let bias = rand_vec(bm, &mut seed);
        let ep = TileEp {
            alpha: 1.0,
            add: false,
            bias: if fused {
                bias.as_ptr()
            } else {
                core::ptr::null()
            },
            res: core::ptr::null(),
            ldr: 0,
            act: if fused {
                TileAct::Clamp {
                    lo: 0.0,
                    hi: f32::INFINITY,
                }
            } else {
                TileAct::None
            },
        };
        let blk = Block {
            kc,
            a: BlockA {
                a: [a.as_ptr(), a[micro::MR * kc..].as_ptr()],
                rs: 1,
                cs: [micro::MR; 2],
            },
            b: BlockB::Packed {
                bp: b.as_ptr(),
                stride: kc * micro::NR,
            },
            c: c.as_mut_ptr(),
            ldc: bn,
            mr: bm,
            nr: bn,
            ep: &ep,
            flat: None,
        };
        let reps = 20_000;
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            for _ in 0..reps {
                // SAFETY: A holds two `MR × kc` panels, B `bn / NR` panels of `kc × NR`,
                // C `bm × bn`; the ISA is the detected one.
                unsafe { micro::block(isa, &blk) };
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "block {bm}x{bn} kc {kc}{}, operands in L1: {:.1} GFLOP/s",
            if fused { " +bias+relu" } else { "" },
            2.0 * (bm * bn * kc * reps) as f64 / best / 1e9
        );
    }
    for s in [256usize, 512, 1024] {
        let a = rand_vec(s * s, &mut seed);
        let b = rand_vec(s * s, &mut seed);
        let mut c = vec![0.0f32; s * s];
        let mut ws = vec![0.0; sgemm_ws_len(s, s, s)];
        let dt = seconds_per_run(s, || {
            sgemm(
                s, s, s, 1.0, &a, s, false, &b, s, false, false, &mut c, s, &mut ws,
            )
            .unwrap()
        });
        println!(
            "sgemm {s}^3: {:.1} GFLOP/s",
            2.0 * (s * s * s) as f64 / dt / 1e9
        );
    }
}

/// Seconds per call of `run` after one warm-up call: the mean of 10 calls for sizes up to
/// 512, of 3 above.
fn seconds_per_run(s: usize, mut run: impl FnMut()) -> f64 {
    run();
    let reps = if s <= 512 { 10 } else { 3 };
    let t = Instant::now();
    for _ in 0..reps {
        run();
    }
    t.elapsed().as_secs_f64() / reps as f64
}

/// u8 activations × per-channel i8 weights → requantized u8 (the QLinearMatMul shape of work).
fn qgemm() {
    let mut seed = 1;
    for s in [256usize, 512, 1024] {
        let a: Vec<u8> = rand_vec(s * s, &mut seed)
            .iter()
            .map(|v| (v * 254.0 + 128.0) as u8)
            .collect();
        let b: Vec<i8> = rand_vec(s * s, &mut seed)
            .iter()
            .map(|v| (v * 254.0) as i8)
            .collect();
        let mut packed = vec![0i8; packed_len(s, s).unwrap()];
        pack_b(&b, s, s, s, 1, &mut packed).unwrap();
        let mut corr = vec![0i32; s];
        fold_zero_points(&b, s, s, s, 1, 128, &[0], None, &mut corr).unwrap();
        let rq = vec![Requant::from_real(1e-4).unwrap(); s];
        let mut c = vec![0u8; s * s];
        let g = QGemm {
            m: s,
            n: s,
            k: s,
            a: &a,
            lda: s,
            b: &packed,
            corr: &corr,
            zb: &[],
        };
        let dt = seconds_per_run(s, || {
            let q = QOutParams { rq: &rq, zp: 128 };
            qgemm_run(
                &g,
                QOut::U8 {
                    c: &mut c,
                    ldc: s,
                    q,
                },
            )
            .unwrap()
        });
        println!(
            "qgemm u8×i8→u8 {s}^3: {:.1} GOP/s",
            2.0 * (s * s * s) as f64 / dt / 1e9
        );
    }
}

fn resize() {
    let (xd, yd) = ([1usize, 256, 64, 64], [1usize, 256, 128, 128]);
    let x = vec![1.0f32; xd.iter().product()];
    let mut y = vec![0.0f32; yd.iter().product()];
    for mode in [ResizeMode::Nearest, ResizeMode::Linear, ResizeMode::Cubic] {
        let mut p = ResizeParams {
            mode: mode as u32,
            coord: CoordTransform::HalfPixel as u32,
            nearest: NearestMode::RoundPreferFloor as u32,
            exclude_outside: 0,
            cubic_coeff: -0.75,
            extrapolation: 0.0,
            scales: [1.0; MAX_RANK],
            roi: [0.0; 2 * MAX_RANK],
        };
        p.scales[..4].copy_from_slice(&[1., 1., 2., 2.]);
        for i in 0..4 {
            p.roi[MAX_RANK + i] = 1.0;
        }
        let ins = [f32_ref(&x, Shape::new(&xd).unwrap())];
        let mut outs = [f32_mut(&mut y, Shape::new(&yd).unwrap())];
        let t = Instant::now();
        run_resize(&p, &ins, &mut outs).unwrap();
        println!(
            "{mode:?} 2x of 1x256x64x64: {:.2} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
    }
}

fn transpose() {
    for (name, xd, pm) in [
        (
            "NCHW->NHWC 1x64x112x112",
            [1usize, 64, 112, 112],
            [0u32, 2, 3, 1],
        ),
        ("NHWC->NCHW 1x112x112x64", [1, 112, 112, 64], [0, 3, 1, 2]),
        ("2-D 2048x2048", [1, 1, 2048, 2048], [0, 1, 3, 2]),
    ] {
        let n: usize = xd.iter().product();
        let x: Vec<f32> = (0..n).map(|v| v as f32).collect();
        let mut y = vec![0.0f32; n];
        let yd: Vec<usize> = pm.iter().map(|&a| xd[a as usize]).collect();
        let mut perm = TransposeParams {
            perm: [0; MAX_RANK],
        };
        perm.perm[..pm.len()].copy_from_slice(&pm);
        let ins = [f32_ref(&x, Shape::new(&xd).unwrap())];
        let mut outs = [f32_mut(&mut y, Shape::new(&yd).unwrap())];
        run_transpose(&perm, &ins, &mut outs).unwrap();
        let t = Instant::now();
        for _ in 0..5 {
            run_transpose(&perm, &ins, &mut outs).unwrap();
        }
        let dt = t.elapsed().as_secs_f64() / 5.0;
        println!(
            "{name}: {:.2} ms, {:.2} GB/s",
            dt * 1e3,
            8.0 * n as f64 / dt / 1e9
        );
    }
}
