//! Shape and data-movement ops, and ops whose results are known at compile time
//! (Constant, Shape, Size, ConstantOfShape, Range).

use ge_runtime::format::{
    AxisParams, DType, MAX_RANK, PadMode, PadParams, SliceParams, TransposeParams,
};

use super::broadcast_shapes;
use super::registry::OpEntry;
use super::registry::dtypes::{ANY, NUM};
use crate::error::Result;
use crate::ir::Op;
use crate::onnx::ctx::{Imported, NodeCtx};
use crate::tensor::{TensorData, decode_tensor};

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::kernel("Cast", 7, ANY, cast),
    OpEntry::kernel("CastLike", 15, ANY, cast),
    OpEntry::kernel("Concat", 7, ANY, concat),
    OpEntry::constant("Constant", 7, ANY, constant),
    OpEntry::constant("ConstantOfShape", 9, ANY, constant_of_shape),
    OpEntry::kernel("Dropout", 7, ANY, |c| {
        if c.node.output.get(1).is_some_and(|o| !o.is_empty()) {
            super::decomp::dropout(c)
        } else {
            dropout(c)
        }
    })
    .note("inference only (training_mode = 0, or ratio 0)"),
    OpEntry::kernel("Expand", 8, ANY, expand),
    OpEntry::kernel("Flatten", 7, ANY, flatten),
    OpEntry::kernel("Gather", 7, ANY, gather),
    OpEntry::kernel("Identity", 7, ANY, same),
    OpEntry::kernel("Pad", 7, ANY, pad),
    OpEntry::constant("Range", 11, NUM, range).note("start, limit and delta known at compile time"),
    OpEntry::kernel("Reshape", 7, ANY, reshape),
    OpEntry::constant("Shape", 7, ANY, shape_of),
    OpEntry::constant("Size", 7, ANY, size),
    OpEntry::kernel("Slice", 7, ANY, slice),
    OpEntry::kernel("Split", 7, ANY, split),
    OpEntry::kernel("Squeeze", 7, ANY, squeeze),
    OpEntry::kernel("Tile", 7, ANY, tile),
    OpEntry::kernel("Transpose", 7, ANY, transpose),
    OpEntry::kernel("Unsqueeze", 7, ANY, unsqueeze),
];

fn reshaped(ctx: &NodeCtx<'_>, shape: Vec<usize>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let numel = |s: &[usize]| s.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if numel(&shape).is_none() || numel(&shape) != numel(x.shape) {
        return Err(ctx.err(format!("cannot reshape {:?} to {shape:?}", x.shape)));
    }
    Ok(Imported::one(Op::Reshape, vec![0], x.dtype, shape))
}

fn same(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    reshaped(ctx, x.shape.to_vec())
}

fn dropout(ctx: &NodeCtx<'_>) -> Result<Imported> {
    // The mask output (all ones in inference) is not produced: a consumer of it fails to
    // import with "produced by no node".
    super::decomp::check_deterministic_dropout(ctx)?;
    same(ctx)
}

fn reshape(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let spec = if ctx.opset < 5 {
        ctx.attr_ints("shape")
            .ok_or_else(|| ctx.err("shape attribute is required"))?
    } else {
        ctx.const_ints(1, "shape")?
            .ok_or_else(|| ctx.err("shape input is required"))?
    };
    let allowzero = ctx.attr_i_or("allowzero", 0) != 0;
    let total: usize = x.shape.iter().product();
    let mut out = Vec::with_capacity(spec.len());
    let mut infer = None;
    for (i, &d) in spec.iter().enumerate() {
        match d {
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            0 if !allowzero => out.push(*x.shape.get(i).ok_or_else(|| {
                ctx.err(format!(
                    "shape {spec:?} copies dim {i} the input does not have"
                ))
            })?),
            d if d >= 0 => out.push(d as usize),
            _ => return Err(ctx.err(format!("invalid shape {spec:?}"))),
        }
    }
    if let Some(i) = infer {
        let known = out
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .unwrap_or(0);
        if known == 0 || !total.is_multiple_of(known) {
            return Err(ctx.err(format!("cannot reshape {:?} to {spec:?}", x.shape)));
        }
        out[i] = total / known;
    }
    reshaped(ctx, out)
}

fn flatten(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let r = x.shape.len() as i64;
    let a = ctx.attr_i_or("axis", 1);
    let a = if a < 0 { a + r } else { a };
    if !(0..=r).contains(&a) {
        return Err(ctx.err(format!("axis {a} out of range for rank {r}")));
    }
    let a = a as usize;
    reshaped(
        ctx,
        vec![x.shape[..a].iter().product(), x.shape[a..].iter().product()],
    )
}

fn axes_arg(ctx: &NodeCtx<'_>) -> Result<Option<Vec<i64>>> {
    if ctx.opset >= 13 {
        ctx.const_ints(1, "axes")
    } else {
        Ok(ctx.attr_ints("axes"))
    }
}

fn squeeze(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let out: Vec<usize> = match axes_arg(ctx)? {
        Some(axes) if !axes.is_empty() => {
            let axes: Vec<usize> = axes
                .iter()
                .map(|&a| ctx.axis(a, x.shape.len()))
                .collect::<Result<_>>()?;
            if let Some(&a) = axes.iter().find(|&&a| x.shape[a] != 1) {
                return Err(ctx.err(format!("cannot squeeze axis {a} of size {}", x.shape[a])));
            }
            x.shape
                .iter()
                .enumerate()
                .filter(|(i, _)| !axes.contains(i))
                .map(|(_, &d)| d)
                .collect()
        }
        _ => x.shape.iter().copied().filter(|&d| d != 1).collect(),
    };
    reshaped(ctx, out)
}

fn unsqueeze(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let axes = axes_arg(ctx)?.ok_or_else(|| ctx.err("axes are required"))?;
    let rank = x.shape.len() + axes.len();
    let mut ins: Vec<usize> = axes
        .iter()
        .map(|&a| ctx.axis(a, rank))
        .collect::<Result<_>>()?;
    ins.sort_unstable();
    ins.dedup();
    if ins.len() != axes.len() {
        return Err(ctx.err(format!("axes {axes:?} repeat")));
    }
    let mut src = x.shape.iter();
    let out: Vec<usize> = (0..rank)
        .map(|i| {
            if ins.contains(&i) {
                1
            } else {
                src.next().copied().unwrap_or(1)
            }
        })
        .collect();
    reshaped(ctx, out)
}

fn transpose(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let r = x.shape.len();
    let perm: Vec<usize> = match ctx.attr_ints("perm") {
        Some(p) => p.iter().map(|&a| ctx.axis(a, r)).collect::<Result<_>>()?,
        None => (0..r).rev().collect(),
    };
    let mut seen = vec![false; r];
    if perm.len() != r || perm.iter().any(|&p| std::mem::replace(&mut seen[p], true)) {
        return Err(ctx.err(format!("perm {perm:?} is not a permutation of rank {r}")));
    }
    let mut p = TransposeParams {
        perm: [0; MAX_RANK],
    };
    for (d, &s) in p.perm.iter_mut().zip(&perm) {
        *d = s as u32;
    }
    let out = perm.iter().map(|&a| x.shape[a]).collect();
    Ok(Imported::one(Op::Transpose(p), vec![0], x.dtype, out))
}

fn concat(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let n = ctx.input_count();
    let infos: Vec<_> = (0..n).map(|i| ctx.input(i)).collect::<Result<_>>()?;
    let first = infos
        .first()
        .ok_or_else(|| ctx.err("needs at least one input"))?;
    let axis = ctx
        .axis(
            ctx.attr_i_or("axis", if ctx.opset < 4 { 1 } else { i64::MAX }),
            first.shape.len(),
        )
        .map_err(|_| ctx.err("axis is required and must be in range"))?;
    let mut out = first.shape.to_vec();
    out[axis] = 0;
    for t in &infos {
        let same_rest = t.shape.len() == out.len()
            && t.shape
                .iter()
                .zip(&out)
                .enumerate()
                .all(|(i, (a, b))| i == axis || a == b);
        if !same_rest || t.dtype != first.dtype {
            return Err(ctx.err(format!(
                "input shapes {:?} differ outside axis {axis}",
                infos.iter().map(|i| i.shape).collect::<Vec<_>>()
            )));
        }
        out[axis] += t.shape[axis];
    }
    if super::fan_in::too_many(n) {
        return super::fan_in::concat_tree(ctx, axis as i64);
    }
    Ok(Imported::one(
        Op::Concat(AxisParams { axis: axis as u32 }),
        (0..n).collect(),
        first.dtype,
        out,
    ))
}

fn split(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let axis = ctx.axis(ctx.attr_i_or("axis", 0), x.shape.len())?;
    let dim = x.shape[axis];
    let n_out = ctx.node.output.len();
    let sizes: Vec<usize> = match if ctx.opset >= 13 {
        ctx.const_ints(1, "split")?
    } else {
        ctx.attr_ints("split")
    } {
        Some(s) if !s.is_empty() => s.iter().map(|&v| v.max(0) as usize).collect(),
        _ => {
            let parts = ctx
                .attr_i("num_outputs")
                .map_or(n_out, |v| v.max(1) as usize);
            // Checked before the sizes are built: a hostile count overflowed their Vec.
            if parts != n_out {
                return Err(ctx.err(format!(
                    "num_outputs {parts} differs from the node's {n_out} outputs"
                )));
            }
            let each = dim.div_ceil(parts);
            (0..parts)
                .map(|i| each.min(dim.saturating_sub(i * each)))
                .collect()
        }
    };
    if sizes.iter().sum::<usize>() != dim || sizes.len() != n_out {
        return Err(ctx.err(format!(
            "split sizes {sizes:?} do not cover dim {dim} with {n_out} outputs"
        )));
    }
    if super::fan_in::too_many(n_out) {
        return super::fan_in::split_tree(ctx, axis, &sizes);
    }
    let outputs = sizes
        .iter()
        .map(|&s| {
            let mut o = x.shape.to_vec();
            o[axis] = s;
            (x.dtype, o)
        })
        .collect();
    Ok(Imported::Op {
        op: Op::Split(AxisParams { axis: axis as u32 }),
        inputs: vec![0],
        outputs,
        overrides: Vec::new(),
    })
}

fn slice(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let r = x.shape.len();
    let (starts, ends, axes, steps) = if ctx.opset < 10 {
        (
            ctx.attr_ints("starts")
                .ok_or_else(|| ctx.err("starts is required"))?,
            ctx.attr_ints("ends")
                .ok_or_else(|| ctx.err("ends is required"))?,
            ctx.attr_ints("axes"),
            None,
        )
    } else {
        (
            ctx.const_ints(1, "starts")?
                .ok_or_else(|| ctx.err("starts is required"))?,
            ctx.const_ints(2, "ends")?
                .ok_or_else(|| ctx.err("ends is required"))?,
            ctx.const_ints(3, "axes")?,
            ctx.const_ints(4, "steps")?,
        )
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(ctx.err("starts, ends, axes and steps differ in length"));
    }
    let mut p = SliceParams {
        starts: [0; MAX_RANK],
        steps: [1; MAX_RANK],
    };
    let mut out = x.shape.to_vec();
    for i in 0..starts.len() {
        let a = ctx.axis(axes[i], r)?;
        let d = x.shape[a] as i64;
        let step = steps[i];
        if step == 0 {
            return Err(ctx.err("slice step 0"));
        }
        let fix = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
        let (s, e) = (fix(starts[i]), fix(ends[i]));
        let (s, e) = if step > 0 {
            (s.clamp(0, d), e.clamp(0, d))
        } else {
            (s.clamp(0, d - 1), e.clamp(-1, d - 1))
        };
        let (span, stride) = if step > 0 {
            ((e - s).max(0), step)
        } else {
            ((s - e).max(0), -step)
        };
        let len = (span + stride - 1) / stride;
        p.starts[a] = s.max(0);
        p.steps[a] = step;
        out[a] = len as usize;
    }
    Ok(Imported::one(Op::Slice(p), vec![0], x.dtype, out))
}

fn gather(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let idx = ctx.input(1)?;
    if !matches!(idx.dtype, DType::I64 | DType::I32) {
        return Err(ctx.err("indices must be int32 or int64"));
    }
    if x.shape.is_empty() {
        return Err(ctx.err("data must have rank >= 1"));
    }
    let axis = ctx.axis(ctx.attr_i_or("axis", 0), x.shape.len())?;
    if let Some(d) = idx.data {
        let dim = x.shape[axis] as i64;
        if let Some(bad) = d
            .to_i64_vec()
            .map_err(|e| ctx.err(e))?
            .into_iter()
            .find(|&i| i < -dim || i >= dim)
        {
            return Err(ctx.err(format!(
                "index {bad} is out of range for axis {axis} of size {dim}"
            )));
        }
    }
    let mut out = x.shape[..axis].to_vec();
    out.extend_from_slice(idx.shape);
    out.extend_from_slice(&x.shape[axis + 1..]);
    Ok(Imported::one(
        Op::Gather(AxisParams { axis: axis as u32 }),
        vec![0, 1],
        x.dtype,
        out,
    ))
}

fn pad(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let r = x.shape.len();
    let mode = ctx.attr_s_or("mode", "constant");
    let (pads, value, axes) = if ctx.opset < 11 {
        let pads = ctx
            .attr_ints(if ctx.opset < 2 { "paddings" } else { "pads" })
            .ok_or_else(|| ctx.err("pads is required"))?;
        (pads, f64::from(ctx.attr_f_or("value", 0.0)), None)
    } else {
        let pads = ctx
            .const_ints(1, "pads")?
            .ok_or_else(|| ctx.err("pads is required"))?;
        let value = ctx
            .const_floats(2, "constant_value")?
            .and_then(|v| v.first().copied())
            .unwrap_or(0.0);
        (pads, value, ctx.const_ints(3, "axes")?)
    };
    let axes: Vec<usize> = match axes {
        Some(a) => a.iter().map(|&v| ctx.axis(v, r)).collect::<Result<_>>()?,
        None => (0..r).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return Err(ctx.err(format!(
            "pads {pads:?} must have {} entries",
            2 * axes.len()
        )));
    }
    let mode = match mode.as_str() {
        "constant" => PadMode::Constant,
        "reflect" => PadMode::Reflect,
        "edge" => PadMode::Edge,
        "wrap" => PadMode::Wrap,
        m => return Err(ctx.err(format!("mode '{m}' is not constant, reflect, edge or wrap"))),
    };
    let mut p = PadParams {
        mode: mode as u32,
        reserved: 0,
        begin: [0; MAX_RANK],
        end: [0; MAX_RANK],
        value,
    };
    let mut out = x.shape.to_vec();
    let n = axes.len();
    for (i, &a) in axes.iter().enumerate() {
        p.begin[a] = pads[i];
        p.end[a] = pads[n + i];
        let o = x.shape[a] as i64 + pads[i] + pads[n + i];
        if o < 0 {
            return Err(ctx.err(format!("pads crop axis {a} below zero")));
        }
        if mode == PadMode::Reflect
            && (pads[i] >= x.shape[a] as i64 || pads[n + i] >= x.shape[a] as i64)
        {
            return Err(ctx.unsupported("reflect pads as large as the axis"));
        }
        out[a] = o as usize;
    }
    Ok(Imported::one(Op::Pad(p), vec![0], x.dtype, out))
}

fn shape_of(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let r = x.shape.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let s = clamp(ctx.attr_i_or("start", 0));
    let e = clamp(ctx.attr_i_or("end", r));
    let dims: Vec<i64> = x.shape[s..e.max(s)].iter().map(|&d| d as i64).collect();
    Ok(Imported::Constants(vec![TensorData::from_i64s(&dims)]))
}

fn size(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let n = x.shape.iter().product::<usize>() as i64;
    Ok(Imported::Constants(vec![TensorData {
        dtype: DType::I64,
        dims: vec![],
        bytes: n.to_le_bytes().to_vec(),
    }]))
}

fn constant(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let t = if let Some(t) = ctx.attr_t("value") {
        decode_tensor(t, None).map_err(|e| ctx.err(format!("value: {e}")))?
    } else if let Some(f) = ctx.attr_f("value_float") {
        TensorData {
            dtype: DType::F32,
            dims: vec![],
            bytes: f.to_le_bytes().to_vec(),
        }
    } else if let Some(i) = ctx.attr_i("value_int") {
        TensorData {
            dtype: DType::I64,
            dims: vec![],
            bytes: i.to_le_bytes().to_vec(),
        }
    } else if let Some(v) = ctx
        .attr_floats("value_floats")
        .filter(|_| ctx.has_attr("value_floats"))
    {
        TensorData {
            dtype: DType::F32,
            dims: vec![v.len()],
            bytes: v.iter().flat_map(|f| f.to_le_bytes()).collect(),
        }
    } else if let Some(v) = ctx
        .attr_ints("value_ints")
        .filter(|_| ctx.has_attr("value_ints"))
    {
        TensorData::from_i64s(&v)
    } else {
        return Err(ctx.unsupported("only tensor, float(s) and int(s) constants are supported"));
    };
    Ok(Imported::Constants(vec![t]))
}

fn constant_of_shape(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let dims: Vec<usize> = ctx
        .const_ints(0, "shape")?
        .unwrap_or_default()
        .iter()
        .map(|&d| d.max(0) as usize)
        .collect();
    let fill = match ctx.attr_t("value") {
        Some(t) => decode_tensor(t, None).map_err(|e| ctx.err(format!("value: {e}")))?,
        None => TensorData {
            dtype: DType::F32,
            dims: vec![1],
            bytes: 0f32.to_le_bytes().to_vec(),
        },
    };
    if fill.numel() != 1 {
        return Err(ctx.err("value must hold one element"));
    }
    // The size is checked from the shape before anything that size is allocated (a hostile
    // shape aborted the compiler, or wrapped its product), and an allocation the host
    // cannot make is an error too.
    crate::onnx::import::check_tensor_size(fill.dtype, &dims, ctx.max_tensor_bytes)
        .map_err(|reason| ctx.err(reason))?;
    let n: usize = dims.iter().product();
    let len = fill.bytes.len().saturating_mul(n);
    // Over the fold budget: an Expand of the one value at run time (the blob keeps one
    // element, the arena the tensor), not a constant the compiler builds and stores.
    if ctx.max_fold_bytes.is_some_and(|b| len as u64 > b) {
        let dtype = fill.dtype;
        return Ok(Imported::Op {
            op: Op::Expand,
            inputs: vec![0],
            outputs: vec![(dtype, dims)],
            overrides: vec![(0, fill)],
        });
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(len).map_err(|_| {
        ctx.err(format!(
            "{len} bytes for the constant could not be allocated; lower --max-tensor-bytes or \
             give the shape as a run-time input"
        ))
    })?;
    for _ in 0..n {
        bytes.extend_from_slice(&fill.bytes);
    }
    Ok(Imported::Constants(vec![TensorData {
        dtype: fill.dtype,
        dims,
        bytes,
    }]))
}

fn expand(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let shape: Vec<usize> = ctx
        .const_ints(1, "shape")?
        .ok_or_else(|| ctx.err("shape is required"))?
        .iter()
        .map(|&d| d.max(0) as usize)
        .collect();
    let out = broadcast_shapes(&[x.shape, &shape])
        .ok_or_else(|| ctx.err(format!("{:?} does not broadcast with {shape:?}", x.shape)))?;
    Ok(Imported::one(Op::Expand, vec![0], x.dtype, out))
}

fn tile(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let reps = ctx
        .const_ints(1, "repeats")?
        .ok_or_else(|| ctx.err("repeats is required"))?;
    if reps.len() != x.shape.len() || reps.iter().any(|&r| r < 0) {
        return Err(ctx.err(format!(
            "repeats {reps:?} must have {} non-negative entries",
            x.shape.len()
        )));
    }
    let out = x
        .shape
        .iter()
        .zip(&reps)
        .map(|(&d, &r)| d * r as usize)
        .collect();
    Ok(Imported::one(Op::Tile, vec![0], x.dtype, out))
}

fn cast(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let to = if ctx.node.op_type() == "CastLike" {
        ctx.input(1)?.dtype
    } else {
        let to = ctx.attr_i("to").ok_or_else(|| ctx.err("to is required"))?;
        DType::from_u8(u8::try_from(to).unwrap_or(0))
            .ok_or_else(|| ctx.unsupported(format!("cast to element type {to}")))?
    };
    Ok(Imported::one(Op::Cast, vec![0], to, x.shape.to_vec()))
}

/// The most elements an importer computes into one compile-time constant (1 GiB of f32).
pub const MAX_CONST_ELEMS: usize = 1 << 28;

fn range(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let dtype = ctx.input(0)?.dtype;
    let get = |i: usize, what: &str| -> Result<f64> {
        ctx.const_floats(i, what)?
            .and_then(|v| v.first().copied())
            .ok_or_else(|| ctx.err(format!("{what} is required")))
    };
    let (start, limit, delta) = (get(0, "start")?, get(1, "limit")?, get(2, "delta")?);
    if delta == 0.0 {
        return Err(ctx.err("delta is zero"));
    }
    let n = ((limit - start) / delta).ceil().max(0.0) as usize;
    if n > MAX_CONST_ELEMS {
        return Err(ctx.unsupported(format!(
            "Range of {n} elements (compile-time constants hold at most {MAX_CONST_ELEMS})"
        )));
    }
    let bytes: Vec<u8> = match dtype {
        DType::F32 => (0..n)
            .flat_map(|i| (start as f32 + i as f32 * delta as f32).to_le_bytes())
            .collect(),
        DType::F64 => (0..n)
            .flat_map(|i| (start + i as f64 * delta).to_le_bytes())
            .collect(),
        DType::I64 => (0..n)
            .flat_map(|i| (start as i64 + i as i64 * delta as i64).to_le_bytes())
            .collect(),
        DType::I32 => (0..n)
            .flat_map(|i| (start as i32 + i as i32 * delta as i32).to_le_bytes())
            .collect(),
        DType::I16 => (0..n)
            .flat_map(|i| (start as i16 + i as i16 * delta as i16).to_le_bytes())
            .collect(),
        DType::F16 | DType::Bf16 => {
            // The op's function body adds delta in the element type: rounded every step.
            let round = |v: f64| {
                if dtype == DType::F16 {
                    half::f16::from_f64(v).to_f64()
                } else {
                    half::bf16::from_f64(v).to_f64()
                }
            };
            let (d, mut acc) = (round(delta), round(start));
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(acc);
                acc = round(acc + d);
            }
            super::sub::tensor_data(dtype, vec![n], &v).bytes
        }
        d => return Err(ctx.unsupported(format!("Range of {}", d.name()))),
    };
    Ok(Imported::Constants(vec![TensorData {
        dtype,
        dims: vec![n],
        bytes,
    }]))
}
