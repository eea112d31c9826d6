//! The registry against the kernels: every kind's entry runs, sizes its workspace and charges its work; epilogues and in-place inputs as the compiler uses them.

extern crate std;
use std::vec::Vec;

use ge_runtime::format::{
    Activation, BinaryParams, ConvParams, Element, GemmParams, NormParams, UnaryParams,
};

use super::super::KernelError;
use super::*;
use crate::threads::Serial;

fn shape(d: &[usize]) -> Shape {
    Shape::new(d).unwrap()
}

fn tref<'a, T: Element>(d: &[usize], v: &'a [T]) -> TensorRef<'a> {
    TensorRef {
        dtype: T::DTYPE,
        shape: shape(d),
        data: bytemuck::cast_slice(v),
    }
}

fn tmut<'a, T: Element>(d: &[usize], v: &'a mut [T]) -> TensorMut<'a> {
    TensorMut {
        dtype: T::DTYPE,
        shape: shape(d),
        data: bytemuck::cast_slice_mut(v),
    }
}

fn unary_ops() -> impl Iterator<Item = UnaryOp> {
    (0..=255).filter_map(UnaryOp::from_u32)
}

fn binary_ops() -> impl Iterator<Item = BinaryOp> {
    (0..=255).filter_map(BinaryOp::from_u32)
}

/// `alpha`/`beta` that make `op` a meaningful activation (Clip's bounds, …).
fn activation(op: UnaryOp) -> Activation {
    let (alpha, beta) = match op {
        UnaryOp::Clip => (-0.5, 0.75),
        UnaryOp::HardSigmoid => (0.2, 0.5),
        UnaryOp::Selu => (1.67, 1.05),
        UnaryOp::Gelu => (0.0, 0.0),
        _ => (0.1, 0.0),
    };
    Activation {
        op: op as u32,
        alpha,
        beta,
    }
}

#[test]
fn every_kind_has_its_entry() {
    let decoded: Vec<OpKind> = (0..=u16::MAX).filter_map(OpKind::from_u16).collect();
    assert_eq!(decoded.len(), OpKind::ALL.len());
    for &kind in &decoded {
        assert!(OpKind::ALL.contains(&kind));
        let k = kernel(kind);
        assert_eq!(k.kind, kind, "{} has another kind's entry", kind.name());
        assert_ne!(
            k.dtypes,
            DTypes::NONE,
            "{} takes no element type",
            kind.name()
        );
        if let Some(ip) = k.in_place {
            assert_ne!(ip.dtypes, DTypes::NONE);
            assert!(ip.dtypes.is_subset(k.dtypes), "{}", kind.name());
        }
        if let Some(e) = k.epilogue {
            assert_ne!(e.dtypes, DTypes::NONE);
            assert!(e.dtypes.is_subset(k.dtypes), "{}", kind.name());
            assert!(unary_ops().any(e.activation), "{}", kind.name());
        }
    }
}

#[test]
fn in_place_kinds_are_the_ones_the_format_allows() {
    // The loader (`ge_runtime::Model`) accepts `TaskDesc::in_place` for the kinds of
    // `OpKind::runs_in_place` only: the registry must offer exactly those.
    for &kind in OpKind::ALL {
        assert_eq!(
            kernel(kind).in_place.is_some(),
            kind.runs_in_place(),
            "{}",
            kind.name()
        );
    }
}

#[test]
fn in_place_inputs_are_the_ones_the_in_place_kernels_run() {
    let x = [-1.5f32, -0.25, 0.5, 2.0, 3.0, -4.0];
    let b = [2.0f32, -1.0, 0.5];
    let f32s = [DType::F32, DType::F32];
    // Unary: input 0 of a one-input task, for every op.
    let k = kernel(OpKind::Unary);
    for op in unary_ops() {
        let p = UnaryParams {
            act: activation(op),
        };
        let p = bytemuck::bytes_of(&p);
        assert_eq!(k.in_place_inputs(p, &f32s[..1], DType::F32), &[0]);
        assert!(k.in_place_inputs(p, &f32s, DType::F32).is_empty());
        assert!(k.in_place_inputs(p, &[DType::F64], DType::F64).is_empty());
        let mut y = x;
        let r = in_place::run_in_place(OpKind::Unary, p, 0, &[None], &mut [tmut(&[6], &mut y)]);
        assert_eq!(r, Ok(()), "{op:?}");
    }
    // Binary: inputs 0 and 1 exactly for the ops the in-place kernel runs.
    let k = kernel(OpKind::Binary);
    for op in binary_ops() {
        let p = BinaryParams {
            op: op as u32,
            act: Activation::default(),
        };
        let p = bytemuck::bytes_of(&p);
        let inputs = k.in_place_inputs(p, &f32s, DType::F32);
        assert!(inputs.is_empty() || inputs == [0, 1], "{op:?}");
        assert!(k.in_place_inputs(p, &f32s[..1], DType::F32).is_empty());
        assert!(
            k.in_place_inputs(p, &[DType::F32, DType::I32], DType::F32)
                .is_empty()
        );
        for slot in 0..2 {
            let mut y = x;
            let ins = if slot == 0 {
                [None, Some(tref(&[3], &b))]
            } else {
                [Some(tref(&[3], &b)), None]
            };
            let r =
                in_place::run_in_place(OpKind::Binary, p, slot, &ins, &mut [tmut(&[2, 3], &mut y)]);
            assert_eq!(r.is_ok(), inputs.contains(&slot), "{op:?} input {slot}");
        }
    }
}

/// Parameter record, f32 inputs (dims, values) and output dims.
type SampleTask = (Vec<u8>, Vec<(Vec<usize>, Vec<f32>)>, Vec<usize>);

/// A small task of an epilogue-capable kind with activation `act`: its parameter record,
/// f32 inputs and output shape.
fn epilogue_task(kind: OpKind, act: Activation) -> SampleTask {
    let ramp = |n: usize| -> Vec<f32> { (0..n).map(|i| i as f32 * 0.37 - 1.3).collect() };
    let conv = |transpose: bool| {
        let mut p: ConvParams = bytemuck::Zeroable::zeroed();
        p.spatial = 2;
        p.group = 1;
        p.kernel = [2, 2, 1];
        p.stride = [1, 1, 1];
        p.dilation = [1, 1, 1];
        p.act = act;
        let (x, y) = if transpose {
            (std::vec![1, 1, 2, 2], std::vec![1, 1, 3, 3])
        } else {
            (std::vec![1, 1, 3, 3], std::vec![1, 1, 2, 2])
        };
        let xn = x.iter().product();
        let inputs = std::vec![
            (x, ramp(xn)),
            (std::vec![1, 1, 2, 2], ramp(4)),
            (std::vec![1], std::vec![0.1])
        ];
        (bytemuck::bytes_of(&p).to_vec(), inputs, y)
    };
    match kind {
        OpKind::Conv => conv(false),
        OpKind::ConvTranspose => conv(true),
        OpKind::Gemm | OpKind::GemmPacked => {
            // A 3 × 2 B in panel order is row-major (one K block, one narrow panel).
            let p = GemmParams {
                trans_a: 0,
                trans_b: if kind == OpKind::GemmPacked {
                    ge_runtime::format::GEMM_B_PANELS
                } else {
                    0
                },
                alpha: 1.0,
                beta: 0.0,
                act,
            };
            let inputs = std::vec![(std::vec![2, 3], ramp(6)), (std::vec![3, 2], ramp(6))];
            (bytemuck::bytes_of(&p).to_vec(), inputs, std::vec![2, 2])
        }
        OpKind::GemmW8 => {
            let p = GemmParams {
                trans_a: 0,
                trans_b: 0,
                alpha: 1.0,
                beta: 1.0,
                act,
            };
            // B's values are whole numbers: run_f32 stores GemmW8's B as int8.
            let b: Vec<f32> = (0..6).map(|i| (i as f32 - 2.0) * 7.0).collect();
            let inputs = std::vec![
                (std::vec![2, 3], ramp(6)),
                (std::vec![3, 2], b),
                (std::vec![2], std::vec![0.05, 0.125]),
                (std::vec![2], std::vec![0.3, -0.2]),
            ];
            (bytemuck::bytes_of(&p).to_vec(), inputs, std::vec![2, 2])
        }
        OpKind::Binary | OpKind::Variadic => {
            let p = BinaryParams {
                op: BinaryOp::Add as u32,
                act,
            };
            let inputs = std::vec![(std::vec![2, 3], ramp(6)), (std::vec![2, 3], ramp(6))];
            (bytemuck::bytes_of(&p).to_vec(), inputs, std::vec![2, 3])
        }
        OpKind::BatchNorm => {
            let p = NormParams { epsilon: 1e-5, act };
            let c = |v: [f32; 2]| (std::vec![2], v.to_vec());
            let inputs = std::vec![
                (std::vec![1, 2, 2, 1], ramp(4)),
                c([1.5, 0.5]),
                c([0.25, -0.5]),
                c([0.1, -0.2]),
                c([1.0, 2.0]),
            ];
            (
                bytemuck::bytes_of(&p).to_vec(),
                inputs,
                std::vec![1, 2, 2, 1],
            )
        }
        _ => panic!(
            "{} offers an epilogue: give it a sample task here",
            kind.name()
        ),
    }
}

/// Runs `kind`'s kernel through its entry on f32 inputs; returns output 0.
fn run_f32(
    kind: OpKind,
    params: &[u8],
    inputs: &[(Vec<usize>, Vec<f32>)],
    out: &[usize],
) -> Vec<f32> {
    let k = kernel(kind);
    // GemmW8's B (input 1) is int8.
    let int8: Vec<i8> = match (kind, inputs.get(1)) {
        (OpKind::GemmW8, Some((_, v))) => v.iter().map(|&x| x as i8).collect(),
        _ => Vec::new(),
    };
    let ins: Vec<Option<TensorRef<'_>>> = inputs
        .iter()
        .enumerate()
        .map(|(i, (d, v))| {
            Some(if i == 1 && !int8.is_empty() {
                tref(d, &int8)
            } else {
                tref(d, v)
            })
        })
        .collect();
    let in_shapes: Vec<Option<Shape>> = ins.iter().map(|t| t.map(|t| t.shape)).collect();
    let mut ws = std::vec![0u64; (k.workspace)(params, &in_shapes, &[shape(out)]).div_ceil(8)];
    let mut y = std::vec![0f32; out.iter().product()];
    let r = (k.run)(
        params,
        &ins,
        &mut [tmut(out, &mut y)],
        bytemuck::cast_slice_mut(&mut ws),
        &Serial,
    );
    assert_eq!(r, Ok(()), "{}", kind.name());
    y
}

#[test]
fn epilogue_activations_match_a_separate_unary_task() {
    for &kind in OpKind::ALL {
        let Some(e) = kernel(kind).epilogue else {
            continue;
        };
        for op in unary_ops().filter(|&op| (e.activation)(op)) {
            let act = activation(op);
            let (plain, inputs, out) = epilogue_task(kind, Activation::default());
            let raw = run_f32(kind, &plain, &inputs, &out);
            let unary = UnaryParams { act };
            let want = run_f32(
                OpKind::Unary,
                bytemuck::bytes_of(&unary),
                &[(out.clone(), raw)],
                &out,
            );
            let (fused, _, _) = epilogue_task(kind, act);
            let got = run_f32(kind, &fused, &inputs, &out);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-6 * w.abs().max(1.0),
                    "{} + {op:?} at {i}: {g} vs {w}",
                    kind.name()
                );
            }
        }
    }
}

#[test]
fn malformed_tasks_fail_without_panicking() {
    for &kind in OpKind::ALL {
        let k = kernel(kind);
        let zeroed = std::vec![0u8; kind.params_len()];
        for params in [&[][..], &zeroed[..], &[0xff; 3][..]] {
            for (ins, outs) in [
                (&[][..], &[][..]),
                (&[None, Some(shape(&[0, 3]))][..], &[shape(&[2, 0, 7])][..]),
            ] {
                (k.workspace)(params, ins, outs);
                (k.work)(params, ins, outs);
                assert_eq!(
                    (k.work)(params, ins, outs),
                    super::estimate_work(kind, params, ins, outs)
                );
            }
            let r = super::super::execute_on(kind, params, &[], &mut [], &mut [], &Serial);
            assert!(r.is_err(), "{} ran without tensors", kind.name());
        }
    }
}

#[test]
fn dispatch_rejects_output_types_the_kernel_never_produces() {
    let x = [1.0f64; 4];
    let mut y = [0f64; 4];
    let p = UnaryParams {
        act: activation(UnaryOp::Relu),
    };
    // Unary takes f64; Fused (f32 only) does not.
    let ins = [Some(tref(&[4], &x))];
    let r = super::super::execute(
        OpKind::Unary,
        bytemuck::bytes_of(&p),
        &ins,
        &mut [tmut(&[4], &mut y)],
        &mut [],
    );
    assert_eq!(r, Ok(()));
    assert!(!kernel(OpKind::Fused).dtypes.contains(DType::F64));
    let zeroed = std::vec![0u8; OpKind::Fused.params_len()];
    let r = super::super::execute(
        OpKind::Fused,
        &zeroed,
        &ins,
        &mut [tmut(&[4], &mut y)],
        &mut [],
    );
    assert!(matches!(r, Err(KernelError::UnsupportedDType(_))), "{r:?}");
}

#[test]
fn dtype_sets() {
    assert!(DTypes::F32.is_subset(DTypes::FLOAT));
    assert!(DTypes::FLOAT.is_subset(DTypes::NUMERIC));
    assert!(DTypes::NUMERIC.is_subset(DTypes::ANY));
    assert!(!DTypes::NUMERIC.contains(DType::F16));
    assert_eq!(DTypes::ANY.iter().count(), 13);
    assert_eq!(
        std::format!("{:?}", DTypes::FLOAT),
        r#"{"float32", "float64"}"#
    );
}
