//! Elementwise ops: unary math and activations, broadcast binary ops (including the legacy
//! `broadcast`/`axis` form before opset 7), variadic Sum/Max/Min/Mean, Where, Clip.

use ge_runtime::format::{Activation, BinaryOp, BinaryParams, DType, UnaryOp};

use super::{broadcast_shapes, is_float};
use crate::error::Result;
use crate::ir::Op;
use crate::onnx::ctx::{Imported, NodeCtx};
use crate::tensor::TensorData;

/// Imports `t` if it is an elementwise op.
pub fn import(t: &str, ctx: &NodeCtx<'_>) -> Option<Result<Imported>> {
    use UnaryOp as U;
    let f = |n: &str, d: f32| ctx.attr_f_or(n, d);
    let u = |op: UnaryOp, a: f32, b: f32| Some(unary(ctx, op, a, b));
    match t {
        "Relu" => u(U::Relu, 0.0, 0.0),
        "LeakyRelu" => u(U::LeakyRelu, f("alpha", 0.01), 0.0),
        "Elu" => u(U::Elu, f("alpha", 1.0), 0.0),
        "Selu" => u(U::Selu, f("alpha", 1.673_263_2), f("gamma", 1.050_701)),
        "Sigmoid" => u(U::Sigmoid, 0.0, 0.0),
        "Tanh" => u(U::Tanh, 0.0, 0.0),
        "HardSigmoid" => u(U::HardSigmoid, f("alpha", 0.2), f("beta", 0.5)),
        "Softplus" => u(U::Softplus, 0.0, 0.0),
        "Softsign" => u(U::Softsign, 0.0, 0.0),
        "Sqrt" => u(U::Sqrt, 0.0, 0.0),
        "Exp" => u(U::Exp, 0.0, 0.0),
        "Log" => u(U::Log, 0.0, 0.0),
        "Neg" => u(U::Neg, 0.0, 0.0),
        "Abs" => u(U::Abs, 0.0, 0.0),
        "Reciprocal" => u(U::Reciprocal, 0.0, 0.0),
        "Erf" => u(U::Erf, 0.0, 0.0),
        "Floor" => u(U::Floor, 0.0, 0.0),
        "Ceil" => u(U::Ceil, 0.0, 0.0),
        "Round" => u(U::Round, 0.0, 0.0),
        "Sign" => u(U::Sign, 0.0, 0.0),
        "Sin" => u(U::Sin, 0.0, 0.0),
        "Cos" => u(U::Cos, 0.0, 0.0),
        "Tan" => u(U::Tan, 0.0, 0.0),
        "Asin" => u(U::Asin, 0.0, 0.0),
        "Acos" => u(U::Acos, 0.0, 0.0),
        "Atan" => u(U::Atan, 0.0, 0.0),
        "Sinh" => u(U::Sinh, 0.0, 0.0),
        "Cosh" => u(U::Cosh, 0.0, 0.0),
        "Asinh" => u(U::Asinh, 0.0, 0.0),
        "Acosh" => u(U::Acosh, 0.0, 0.0),
        "Atanh" => u(U::Atanh, 0.0, 0.0),
        "HardSwish" => u(U::HardSwish, 0.0, 0.0),
        "Mish" => u(U::Mish, 0.0, 0.0),
        "Celu" => u(U::Celu, f("alpha", 1.0), 0.0),
        "ThresholdedRelu" => u(U::ThresholdedRelu, f("alpha", 1.0), 0.0),
        "Shrink" => u(U::Shrink, f("bias", 0.0), f("lambd", 0.5)),
        "Not" => u(U::Not, 0.0, 0.0),
        "IsNaN" => u(U::IsNaN, 0.0, 0.0),
        "IsInf" => u(
            U::IsInf,
            ctx.attr_i_or("detect_positive", 1) as f32,
            ctx.attr_i_or("detect_negative", 1) as f32,
        ),
        "Gelu" => {
            let approx = ctx.attr_s_or("approximate", "none");
            match approx.as_str() {
                "none" => u(U::Gelu, 0.0, 0.0),
                "tanh" => u(U::Gelu, 1.0, 0.0),
                other => Some(Err(
                    ctx.err(format!("approximate='{other}' is not 'none' or 'tanh'"))
                )),
            }
        }
        "Clip" => Some(clip(ctx)),
        "Add" => Some(binary(ctx, BinaryOp::Add)),
        "Sub" => Some(binary(ctx, BinaryOp::Sub)),
        "Mul" => Some(binary(ctx, BinaryOp::Mul)),
        "Div" => Some(binary(ctx, BinaryOp::Div)),
        "Pow" => Some(binary(ctx, BinaryOp::Pow)),
        "Equal" => Some(binary(ctx, BinaryOp::Equal)),
        "Less" => Some(binary(ctx, BinaryOp::Less)),
        "Greater" => Some(binary(ctx, BinaryOp::Greater)),
        "LessOrEqual" => Some(binary(ctx, BinaryOp::LessOrEqual)),
        "GreaterOrEqual" => Some(binary(ctx, BinaryOp::GreaterOrEqual)),
        "And" => Some(binary(ctx, BinaryOp::And)),
        "Or" => Some(binary(ctx, BinaryOp::Or)),
        "Xor" => Some(binary(ctx, BinaryOp::Xor)),
        "PRelu" => Some(binary(ctx, BinaryOp::PRelu)),
        "BitwiseAnd" => Some(binary(ctx, BinaryOp::BitAnd)),
        "BitwiseOr" => Some(binary(ctx, BinaryOp::BitOr)),
        "BitwiseXor" => Some(binary(ctx, BinaryOp::BitXor)),
        "Mod" => Some(binary(
            ctx,
            if ctx.attr_i_or("fmod", 0) != 0 {
                BinaryOp::Fmod
            } else {
                BinaryOp::Mod
            },
        )),
        "BitShift" => Some(match ctx.attr_s_or("direction", "").as_str() {
            "LEFT" => binary(ctx, BinaryOp::BitShiftLeft),
            "RIGHT" => binary(ctx, BinaryOp::BitShiftRight),
            d => Err(ctx.err(format!("direction '{d}' must be LEFT or RIGHT"))),
        }),
        "Sum" => Some(variadic(ctx, BinaryOp::Add)),
        "Max" => Some(variadic(ctx, BinaryOp::Max)),
        "Min" => Some(variadic(ctx, BinaryOp::Min)),
        "Mean" => Some(variadic(ctx, BinaryOp::Mean)),
        "Where" => Some(where_(ctx)),
        _ => None,
    }
}

fn unary(ctx: &NodeCtx<'_>, op: UnaryOp, alpha: f32, beta: f32) -> Result<Imported> {
    let x = ctx.input(0)?;
    let out_dtype = match op {
        UnaryOp::IsNaN | UnaryOp::IsInf => DType::Bool,
        _ => x.dtype,
    };
    let float_only = !matches!(
        op,
        UnaryOp::Relu
            | UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sign
            | UnaryOp::Not
            | UnaryOp::Identity
    );
    if float_only && !is_float(x.dtype) {
        return Err(ctx.unsupported(format!("{} on {} tensors", op.name(), x.dtype.name())));
    }
    Ok(Imported::one(
        Op::unary(op, alpha, beta),
        vec![0],
        out_dtype,
        x.shape.to_vec(),
    ))
}

fn clip(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let (lo, hi) = if ctx.opset < 11 {
        (
            ctx.attr_f_or("min", f32::MIN),
            ctx.attr_f_or("max", f32::MAX),
        )
    } else {
        let bound = |i: usize, what: &str, d: f32| -> Result<f32> {
            Ok(match ctx.const_floats(i, what)? {
                Some(v) if v.len() == 1 => v[0] as f32,
                Some(_) => return Err(ctx.err(format!("{what} must be a scalar"))),
                None => d,
            })
        };
        (bound(1, "min", f32::MIN)?, bound(2, "max", f32::MAX)?)
    };
    if !is_float(x.dtype) {
        return Err(ctx.unsupported(format!("Clip on {} tensors", x.dtype.name())));
    }
    Ok(Imported::one(
        Op::unary(UnaryOp::Clip, lo, hi),
        vec![0],
        x.dtype,
        x.shape.to_vec(),
    ))
}

fn binary(ctx: &NodeCtx<'_>, op: BinaryOp) -> Result<Imported> {
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    let mut overrides = Vec::new();
    let mut b_shape = b.shape.to_vec();
    // Before opset 7, broadcasting needed `broadcast=1`; `axis` aligned B's dims at that axis of A.
    if ctx.opset < 7
        && ctx.attr_i_or("broadcast", 0) != 0
        && !b.shape.is_empty()
        && let Some(axis) = ctx.attr_i("axis")
    {
        {
            let axis = ctx.axis(axis, a.shape.len())?;
            let trailing = a
                .shape
                .len()
                .checked_sub(axis + b.shape.len())
                .ok_or_else(|| ctx.err("B does not fit in A at `axis`"))?;
            if trailing > 0 {
                let data = ctx
                    .const_input(1, "B (legacy broadcast with axis)")?
                    .ok_or_else(|| ctx.err("B missing"))?;
                b_shape.extend(std::iter::repeat_n(1, trailing));
                overrides.push((
                    1,
                    TensorData {
                        dtype: data.dtype,
                        dims: b_shape.clone(),
                        bytes: data.bytes.clone(),
                    },
                ));
            }
        }
    }
    // Legacy PRelu exports (opset < 7) give a per-channel slope [C] for x [N, C, …].
    if op == BinaryOp::PRelu
        && ctx.opset < 7
        && b.shape.len() == 1
        && a.shape.len() > 2
        && b.shape[0] == a.shape[1]
        && b.shape[0] != a.shape[a.shape.len() - 1]
    {
        let data = ctx
            .const_input(1, "slope")?
            .ok_or_else(|| ctx.err("slope missing"))?;
        b_shape = vec![b.shape[0]];
        b_shape.extend(std::iter::repeat_n(1, a.shape.len() - 2));
        overrides.push((
            1,
            TensorData {
                dtype: data.dtype,
                dims: b_shape.clone(),
                bytes: data.bytes.clone(),
            },
        ));
    }
    let shape = broadcast_shapes(&[a.shape, &b_shape]).ok_or_else(|| {
        ctx.err(format!(
            "shapes {:?} and {:?} do not broadcast",
            a.shape, b.shape
        ))
    })?;
    let mixed_ok = matches!(
        op,
        BinaryOp::Pow | BinaryOp::BitShiftLeft | BinaryOp::BitShiftRight
    );
    if a.dtype != b.dtype && !mixed_ok {
        return Err(ctx.err(format!(
            "input dtypes differ ({} vs {})",
            a.dtype.name(),
            b.dtype.name()
        )));
    }
    let out = match op {
        BinaryOp::Equal
        | BinaryOp::Less
        | BinaryOp::Greater
        | BinaryOp::LessOrEqual
        | BinaryOp::GreaterOrEqual => DType::Bool,
        _ => a.dtype,
    };
    let op = Op::Binary(BinaryParams {
        op: op as u32,
        act: Activation::default(),
    });
    Ok(Imported::Op {
        op,
        inputs: vec![0, 1],
        outputs: vec![(out, shape)],
        overrides,
    })
}

fn variadic(ctx: &NodeCtx<'_>, op: BinaryOp) -> Result<Imported> {
    let n = ctx.input_count();
    if n == 0 {
        return Err(ctx.err("needs at least one input"));
    }
    let infos: Vec<_> = (0..n).map(|i| ctx.input(i)).collect::<Result<_>>()?;
    let shapes: Vec<&[usize]> = infos.iter().map(|i| i.shape).collect();
    let shape = broadcast_shapes(&shapes)
        .ok_or_else(|| ctx.err(format!("input shapes {shapes:?} do not broadcast")))?;
    if infos.iter().any(|i| i.dtype != infos[0].dtype) {
        return Err(ctx.err("input dtypes differ"));
    }
    if n > ge_runtime::format::MAX_TASK_IO {
        return Err(ctx.unsupported(format!(
            "{n} inputs (at most {})",
            ge_runtime::format::MAX_TASK_IO
        )));
    }
    let op = Op::Variadic(BinaryParams {
        op: op as u32,
        act: Activation::default(),
    });
    Ok(Imported::one(op, (0..n).collect(), infos[0].dtype, shape))
}

fn where_(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let (c, x, y) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    let shape = broadcast_shapes(&[c.shape, x.shape, y.shape])
        .ok_or_else(|| ctx.err("condition, X and Y do not broadcast"))?;
    if x.dtype != y.dtype || c.dtype != DType::Bool {
        return Err(ctx.err("condition must be bool and X, Y of one dtype"));
    }
    Ok(Imported::one(Op::Where, vec![0, 1, 2], x.dtype, shape))
}
