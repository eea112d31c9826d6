//! Elementwise kernels that update one input in place: the planner gives an elementwise
//! task's output the buffer of an input that dies there (`TaskDesc::in_place`), so the two
//! tensors never coexist. The memory views then hand the kernel that input only as output 0
//! (`&mut`), and these kernels read it from there. Which kinds, params and dtypes run in
//! place is the kinds' [`super::registry`] entries' [`super::registry::InPlace`].

use ge_runtime::format::{
    BinaryOp, BinaryParams, DType, KernelId, KernelVariant, OpKind, Shape, TensorMut, TensorRef,
    UnaryParams,
};

use super::binary::Arith;
use super::broadcast::accumulate;
use super::set::registry_entry;
use super::unary::{apply_activation, apply_unary_op};
use super::{KernelError, KernelResult, input, output};

/// Runs an in-place task whose input `k` is output 0, through its kind's registry entry.
pub fn run_in_place(
    kind: OpKind,
    params: &[u8],
    k: usize,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let id = KernelId::new(kind, DType::F32, KernelVariant::InPlace);
    let entry =
        registry_entry(id).ok_or(KernelError::BadParams("op kind does not run in place"))?;
    super::run_entry(
        &entry,
        params,
        Some(k),
        ins,
        outs,
        &mut [],
        &crate::threads::Serial,
    )
}

/// The binary ops the in-place kernel implements, as `f(a, b)` on f32.
pub fn binary_op(op: BinaryOp) -> Option<fn(f32, f32) -> f32> {
    use BinaryOp::*;
    Some(match op {
        Add => f32::plus,
        Sub => f32::minus,
        Mul => f32::times,
        Div => f32::over,
        Pow => f32::power,
        Max => f32::maxp,
        Min => f32::minp,
        _ => return None,
    })
}

fn f32_output<'b>(outs: &'b mut [TensorMut<'_>]) -> Result<(Shape, &'b mut [f32]), KernelError> {
    let y = output(outs, 0, "in-place output")?;
    let shape = y.shape;
    let data = y.as_slice_mut::<f32>()?;
    if Some(data.len()) != shape.checked_numel() {
        return Err(KernelError::Shape("tensor data does not match its shape"));
    }
    Ok((shape, data))
}

/// `y = f(y)`.
pub fn unary(p: &UnaryParams, k: usize, outs: &mut [TensorMut<'_>]) -> KernelResult {
    if k != 0 {
        return Err(KernelError::BadParams("in-place unary must update input 0"));
    }
    let (_, y) = f32_output(outs)?;
    apply_unary_op(&p.act, y)?;
    Ok(())
}

/// `y = y ∘ b` (k = 0) or `y = a ∘ y` (k = 1), the other operand broadcast to `y`'s shape,
/// then the fused activation.
pub fn binary(
    p: &BinaryParams,
    k: usize,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let op = BinaryOp::from_u32(p.op).ok_or(KernelError::BadParams("unknown binary op"))?;
    let other = match k {
        0 => input(ins, 1, "binary input B")?,
        1 => input(ins, 0, "binary input A")?,
        _ => return Err(KernelError::BadParams("in-place binary input out of range")),
    };
    let b = other.as_slice::<f32>()?;
    let (shape, y) = f32_output(outs)?;
    // With `std`, each op's own function item (not `binary_op`'s pointer), so the loops
    // inline it and vectorize. `accumulate` passes `y`'s element first; updating input 1
    // in place swaps the operands.
    fn run<F: Fn(f32, f32) -> f32 + Copy>(
        f: F,
        k: usize,
        y: &mut [f32],
        shape: &Shape,
        b: &[f32],
        bs: &Shape,
    ) -> Result<(), KernelError> {
        if k == 0 {
            accumulate(y, shape, b, bs, f)
        } else {
            accumulate(y, shape, b, bs, move |v, o| f(o, v))
        }
    }
    use BinaryOp::*;
    let bs = other.shape;
    // Firmware keeps the one loop through `binary_op`'s pointer (about 2 KB less code).
    if !cfg!(feature = "std") {
        let f = binary_op(op).ok_or(KernelError::BadParams("binary op does not run in place"))?;
        run(f, k, y, &shape, b, &bs)?;
        apply_activation(&p.act, y)?;
        return Ok(());
    }
    match op {
        Add => run(f32::plus, k, y, &shape, b, &bs),
        Sub => run(f32::minus, k, y, &shape, b, &bs),
        Mul => run(f32::times, k, y, &shape, b, &bs),
        Div => run(f32::over, k, y, &shape, b, &bs),
        Pow => run(f32::power, k, y, &shape, b, &bs),
        Max => run(f32::maxp, k, y, &shape, b, &bs),
        Min => run(f32::minp, k, y, &shape, b, &bs),
        _ => Err(KernelError::BadParams("binary op does not run in place")),
    }?;
    apply_activation(&p.act, y)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use ge_runtime::format::{Activation, DType, UnaryOp};

    fn view<'a>(shape: &[usize], data: &'a mut [f32]) -> TensorMut<'a> {
        TensorMut {
            dtype: DType::F32,
            shape: Shape::new(shape).unwrap(),
            data: bytemuck::cast_slice_mut(data),
        }
    }

    #[test]
    fn binary_in_place_matches_out_of_place() {
        let a: std::vec::Vec<f32> = (0..12).map(|i| i as f32 - 5.0).collect();
        let b = [2.0f32, -1.0, 0.5];
        let bt = TensorRef {
            dtype: DType::F32,
            shape: Shape::new(&[3]).unwrap(),
            data: bytemuck::cast_slice(&b),
        };
        let relu = Activation {
            op: UnaryOp::Relu as u32,
            ..Activation::default()
        };
        for (k, op) in [(0, BinaryOp::Sub), (1, BinaryOp::Sub), (0, BinaryOp::Mul)] {
            let mut y = a.clone();
            let p = BinaryParams {
                op: op as u32,
                act: relu,
            };
            let ins = if k == 0 {
                [None, Some(bt)]
            } else {
                [Some(bt), None]
            };
            let mut outs = [view(&[4, 3], &mut y)];
            run_in_place(OpKind::Binary, bytemuck::bytes_of(&p), k, &ins, &mut outs).unwrap();
            for (i, (&got, &x)) in y.iter().zip(&a).enumerate() {
                let o = b[i % 3];
                let want = match (op, k) {
                    (BinaryOp::Sub, 0) => x - o,
                    (BinaryOp::Sub, _) => o - x,
                    _ => x * o,
                };
                assert_eq!(got, want.max(0.0), "{op:?} k{k} at {i}");
            }
        }
    }

    #[test]
    fn unary_in_place_and_malformed() {
        let mut y = [-1.0f32, 2.0];
        let p = UnaryParams {
            act: Activation {
                op: UnaryOp::Relu as u32,
                ..Activation::default()
            },
        };
        let mut outs = [view(&[2], &mut y)];
        run_in_place(OpKind::Unary, bytemuck::bytes_of(&p), 0, &[None], &mut outs).unwrap();
        assert_eq!(y, [0.0, 2.0]);
        let mut outs = [view(&[2], &mut y)];
        assert!(
            run_in_place(OpKind::Unary, bytemuck::bytes_of(&p), 1, &[None], &mut outs).is_err()
        );
        assert!(run_in_place(OpKind::Conv, &[], 0, &[None], &mut outs).is_err());
    }
}
