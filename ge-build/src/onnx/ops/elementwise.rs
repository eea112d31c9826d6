//! Elementwise ops: unary math and activations, broadcast binary ops (including the legacy
//! `broadcast`/`axis` form before opset 7), variadic Sum/Max/Min/Mean, Where, Clip.

use ge_runtime::format::{Activation, BinaryOp, BinaryParams, DType, UnaryOp};

use super::registry::dtypes::{ANY, BOOL, FLOAT, INT_BOOL, NUM, UINT};
use super::registry::{MICROSOFT, MIN_OPSET, OpEntry};
use super::{broadcast_shapes, is_float};
use crate::error::Result;
use crate::ir::Op;
use crate::onnx::ctx::{Imported, NodeCtx};
use crate::tensor::TensorData;
use UnaryOp as U;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::kernel("Abs", 7, NUM, |c| unary(c, U::Abs, 0.0, 0.0)),
    OpEntry::kernel("Acos", 7, FLOAT, |c| unary(c, U::Acos, 0.0, 0.0)),
    OpEntry::kernel("Acosh", 9, FLOAT, |c| unary(c, U::Acosh, 0.0, 0.0)),
    OpEntry::kernel("Add", 7, NUM, |c| binary(c, BinaryOp::Add)),
    OpEntry::kernel("And", 7, BOOL, |c| binary(c, BinaryOp::And)),
    OpEntry::kernel("Asin", 7, FLOAT, |c| unary(c, U::Asin, 0.0, 0.0)),
    OpEntry::kernel("Asinh", 9, FLOAT, |c| unary(c, U::Asinh, 0.0, 0.0)),
    OpEntry::kernel("Atan", 7, FLOAT, |c| unary(c, U::Atan, 0.0, 0.0)),
    OpEntry::kernel("Atanh", 9, FLOAT, |c| unary(c, U::Atanh, 0.0, 0.0)),
    OpEntry::kernel("BitShift", 11, UINT, bit_shift),
    OpEntry::kernel("BitwiseAnd", 18, INT_BOOL, |c| binary(c, BinaryOp::BitAnd)),
    OpEntry::kernel("BitwiseOr", 18, INT_BOOL, |c| binary(c, BinaryOp::BitOr)),
    OpEntry::kernel("BitwiseXor", 18, INT_BOOL, |c| binary(c, BinaryOp::BitXor)),
    OpEntry::kernel("Ceil", 7, FLOAT, |c| unary(c, U::Ceil, 0.0, 0.0)),
    OpEntry::kernel("Celu", 12, FLOAT, |c| {
        unary(c, U::Celu, c.attr_f_or("alpha", 1.0), 0.0)
    }),
    OpEntry::kernel("Clip", 7, NUM, |c| {
        if super::decomp::clip_needs_decomp(c) {
            super::decomp::clip(c)
        } else {
            clip(c)
        }
    })
    .note("run-time min/max or integer inputs are decomposed into Max/Min"),
    OpEntry::kernel("Cos", 7, FLOAT, |c| unary(c, U::Cos, 0.0, 0.0)),
    OpEntry::kernel("Cosh", 9, FLOAT, |c| unary(c, U::Cosh, 0.0, 0.0)),
    OpEntry::kernel("Div", 7, NUM, |c| binary(c, BinaryOp::Div)),
    OpEntry::kernel("Elu", 7, FLOAT, |c| {
        unary(c, U::Elu, c.attr_f_or("alpha", 1.0), 0.0)
    }),
    OpEntry::kernel("Equal", 7, ANY, |c| binary(c, BinaryOp::Equal)),
    OpEntry::kernel("Erf", 9, FLOAT, |c| unary(c, U::Erf, 0.0, 0.0)),
    OpEntry::kernel("Exp", 7, FLOAT, |c| unary(c, U::Exp, 0.0, 0.0)),
    OpEntry::kernel("Floor", 7, FLOAT, |c| unary(c, U::Floor, 0.0, 0.0)),
    // onnxruntime's optimizer writes the exact (erf) GELU as com.microsoft Gelu.
    OpEntry::kernel("Gelu", MIN_OPSET, FLOAT, |c| unary(c, U::Gelu, 0.0, 0.0)).in_domain(MICROSOFT),
    OpEntry::kernel("Gelu", 20, FLOAT, gelu),
    OpEntry::kernel("Greater", 7, NUM, |c| binary(c, BinaryOp::Greater)),
    OpEntry::kernel("GreaterOrEqual", 12, NUM, |c| {
        binary(c, BinaryOp::GreaterOrEqual)
    }),
    OpEntry::kernel("HardSigmoid", 7, FLOAT, |c| {
        unary(
            c,
            U::HardSigmoid,
            c.attr_f_or("alpha", 0.2),
            c.attr_f_or("beta", 0.5),
        )
    }),
    OpEntry::kernel("HardSwish", 14, FLOAT, |c| unary(c, U::HardSwish, 0.0, 0.0)),
    OpEntry::kernel("IsInf", 10, FLOAT, |c| {
        unary(
            c,
            U::IsInf,
            c.attr_i_or("detect_positive", 1) as f32,
            c.attr_i_or("detect_negative", 1) as f32,
        )
    }),
    OpEntry::kernel("IsNaN", 9, FLOAT, |c| unary(c, U::IsNaN, 0.0, 0.0)),
    OpEntry::kernel("LeakyRelu", 7, FLOAT, |c| {
        unary(c, U::LeakyRelu, c.attr_f_or("alpha", 0.01), 0.0)
    }),
    OpEntry::kernel("Less", 7, NUM, |c| binary(c, BinaryOp::Less)),
    OpEntry::kernel("LessOrEqual", 12, NUM, |c| binary(c, BinaryOp::LessOrEqual)),
    OpEntry::kernel("Log", 7, FLOAT, |c| unary(c, U::Log, 0.0, 0.0)),
    OpEntry::kernel("Max", 7, NUM, |c| variadic(c, BinaryOp::Max)),
    OpEntry::kernel("Mean", 7, NUM, |c| variadic(c, BinaryOp::Mean)),
    OpEntry::kernel("Min", 7, NUM, |c| variadic(c, BinaryOp::Min)),
    OpEntry::kernel("Mish", 18, FLOAT, |c| unary(c, U::Mish, 0.0, 0.0)),
    OpEntry::kernel("Mod", 10, NUM, |c| {
        binary(
            c,
            if c.attr_i_or("fmod", 0) != 0 {
                BinaryOp::Fmod
            } else {
                BinaryOp::Mod
            },
        )
    }),
    OpEntry::kernel("Mul", 7, NUM, |c| binary(c, BinaryOp::Mul)),
    OpEntry::kernel("Neg", 7, NUM, |c| unary(c, U::Neg, 0.0, 0.0)),
    OpEntry::kernel("Not", 7, BOOL, |c| unary(c, U::Not, 0.0, 0.0)),
    OpEntry::kernel("Or", 7, BOOL, |c| binary(c, BinaryOp::Or)),
    OpEntry::kernel("PRelu", 7, FLOAT, |c| binary(c, BinaryOp::PRelu)),
    OpEntry::kernel("Pow", 7, NUM, |c| binary(c, BinaryOp::Pow)),
    OpEntry::kernel("Reciprocal", 7, FLOAT, |c| {
        unary(c, U::Reciprocal, 0.0, 0.0)
    }),
    OpEntry::kernel("Relu", 7, NUM, |c| unary(c, U::Relu, 0.0, 0.0)),
    OpEntry::kernel("Round", 11, FLOAT, |c| unary(c, U::Round, 0.0, 0.0)),
    OpEntry::kernel("Selu", 7, FLOAT, |c| {
        unary(
            c,
            U::Selu,
            c.attr_f_or("alpha", 1.673_263_2),
            c.attr_f_or("gamma", 1.050_701),
        )
    }),
    OpEntry::kernel("Shrink", 9, FLOAT, |c| {
        unary(
            c,
            U::Shrink,
            c.attr_f_or("bias", 0.0),
            c.attr_f_or("lambd", 0.5),
        )
    }),
    OpEntry::kernel("Sigmoid", 7, FLOAT, |c| unary(c, U::Sigmoid, 0.0, 0.0)),
    OpEntry::kernel("Sign", 9, NUM, |c| unary(c, U::Sign, 0.0, 0.0)),
    OpEntry::kernel("Sin", 7, FLOAT, |c| unary(c, U::Sin, 0.0, 0.0)),
    OpEntry::kernel("Sinh", 9, FLOAT, |c| unary(c, U::Sinh, 0.0, 0.0)),
    OpEntry::kernel("Softplus", 7, FLOAT, |c| unary(c, U::Softplus, 0.0, 0.0)),
    OpEntry::kernel("Softsign", 7, FLOAT, |c| unary(c, U::Softsign, 0.0, 0.0)),
    OpEntry::kernel("Sqrt", 7, FLOAT, |c| unary(c, U::Sqrt, 0.0, 0.0)),
    OpEntry::kernel("Sub", 7, NUM, |c| binary(c, BinaryOp::Sub)),
    OpEntry::kernel("Sum", 7, NUM, |c| variadic(c, BinaryOp::Add)),
    OpEntry::kernel("Tan", 7, FLOAT, |c| unary(c, U::Tan, 0.0, 0.0)),
    OpEntry::kernel("Tanh", 7, FLOAT, |c| unary(c, U::Tanh, 0.0, 0.0)),
    OpEntry::kernel("ThresholdedRelu", 10, FLOAT, |c| {
        unary(c, U::ThresholdedRelu, c.attr_f_or("alpha", 1.0), 0.0)
    }),
    OpEntry::kernel("Where", 9, ANY, where_),
    OpEntry::kernel("Xor", 7, BOOL, |c| binary(c, BinaryOp::Xor)),
];

/// Gelu (opset 20): exact (erf) or tanh approximation, one unary kernel either way.
fn gelu(ctx: &NodeCtx<'_>) -> Result<Imported> {
    match ctx.attr_s_or("approximate", "none").as_str() {
        "none" => unary(ctx, UnaryOp::Gelu, 0.0, 0.0),
        "tanh" => unary(ctx, UnaryOp::Gelu, 1.0, 0.0),
        other => Err(ctx.err(format!("approximate='{other}' is not 'none' or 'tanh'"))),
    }
}

/// BitShift with its `direction` attribute.
fn bit_shift(ctx: &NodeCtx<'_>) -> Result<Imported> {
    match ctx.attr_s_or("direction", "").as_str() {
        "LEFT" => binary(ctx, BinaryOp::BitShiftLeft),
        "RIGHT" => binary(ctx, BinaryOp::BitShiftRight),
        d => Err(ctx.err(format!("direction '{d}' must be LEFT or RIGHT"))),
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
    if super::fan_in::too_many(n) {
        return super::fan_in::variadic_tree(ctx, infos[0].dtype);
    }
    let params = BinaryParams {
        op: op as u32,
        act: Activation::default(),
    };
    // Two inputs are the binary op, which the fusion passes and autofusion know (a
    // ResNet's `Sum` residual then fuses with its activation and Q/DQ neighbours).
    let op = if n == 2 {
        Op::Binary(params)
    } else {
        Op::Variadic(params)
    };
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
