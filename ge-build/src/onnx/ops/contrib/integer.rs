//! Integer matrix products to float: DynamicQuantizeMatMul (A quantized to uint8 at run
//! time, as DynamicQuantizeLinear does), MatMulIntegerToFloat (`int32 product · sa · sb +
//! bias`) and MatMulNBits (2/4/8-bit block-quantized weights, unpacked and dequantized at
//! compile time into an f32 matrix: onnxruntime's CPU kernel at `accuracy_level` 0 also
//! multiplies in f32).

use ge_runtime::format::DType;

use super::super::decomp::{in_name, out0};
use super::super::sub::{A, Sub, tensor_data};
use crate::error::Result;
use crate::onnx::ctx::{Imported, NodeCtx};

/// `Cast(int32 acc, f32) · scales (+ input bias)` into output 0.
fn scaled(ctx: &NodeCtx<'_>, mut s: Sub, acc: &str, scale: &str, bias: usize) -> Result<Imported> {
    let f = s.op("Cast", &[acc], vec![A::I("to", DType::F32 as i64)]);
    let y = out0(ctx)?;
    if ctx.input_opt(bias).is_some() {
        let m = s.op("Mul", &[&f, scale], vec![]);
        s.to("Add", &[&m, &in_name(ctx, bias)], &[&y], vec![]);
    } else {
        s.to("Mul", &[&f, scale], &[&y], vec![]);
    }
    Ok(s.done())
}

/// Input `i` as given, or reshaped to a scalar when it holds one element.
fn maybe_scalar(ctx: &NodeCtx<'_>, s: &mut Sub, i: usize) -> Result<String> {
    let t = ctx.input(i)?;
    let name = in_name(ctx, i);
    Ok(
        if t.shape.iter().product::<usize>() == 1 && !t.shape.is_empty() {
            super::super::decomp::reshape(s, &name, &[])
        } else {
            name
        },
    )
}

/// Checks that a scale or zero point `i` is per tensor or per column of B (`n` columns).
fn per_column(ctx: &NodeCtx<'_>, i: usize, n: usize) -> Result<()> {
    if let Some(t) = ctx.input_opt(i) {
        let k: usize = t.shape.iter().product();
        if k != 1 && t.shape != [n] {
            return Err(ctx.unsupported(format!(
                "input {i} has shape {:?}: per tensor or per column ([{n}]) expected",
                t.shape
            )));
        }
    }
    Ok(())
}

fn b_columns(ctx: &NodeCtx<'_>) -> Result<usize> {
    let b = ctx.input(1)?;
    if !matches!(b.dtype, DType::I8 | DType::U8) || b.shape.len() < 2 {
        return Err(ctx.unsupported(format!(
            "B is {} {:?}: an int8/uint8 matrix expected",
            b.dtype.name(),
            b.shape
        )));
    }
    Ok(b.shape[b.shape.len() - 1])
}

/// DynamicQuantizeMatMul (A, B, b_scale, b_zero_point, bias).
pub fn dynamic_quantize_matmul(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let n = b_columns(ctx)?;
    per_column(ctx, 2, n)?;
    per_column(ctx, 3, n)?;
    let mut s = Sub::new(ctx);
    let (aq, sa, za) = (s.fresh(), s.fresh(), s.fresh());
    s.to(
        "DynamicQuantizeLinear",
        &[&in_name(ctx, 0)],
        &[&aq, &sa, &za],
        vec![],
    );
    let zb = match ctx.input_opt(3) {
        Some(_) => maybe_scalar(ctx, &mut s, 3)?,
        None => String::new(),
    };
    let acc = s.op("MatMulInteger", &[&aq, &in_name(ctx, 1), &za, &zb], vec![]);
    let sb = maybe_scalar(ctx, &mut s, 2)?;
    let m = s.op("Mul", &[&sa, &sb], vec![]);
    scaled(ctx, s, &acc, &m, 4)
}

/// MatMulIntegerToFloat (A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias).
pub fn matmul_integer_to_float(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let n = b_columns(ctx)?;
    for (i, what) in [(2, "a_scale"), (4, "a_zero_point")] {
        if ctx
            .input_opt(i)
            .is_some_and(|t| t.shape.iter().product::<usize>() != 1)
        {
            return Err(ctx.unsupported(format!("{what} per column of A (per tensor expected)")));
        }
    }
    per_column(ctx, 3, n)?;
    per_column(ctx, 5, n)?;
    let mut s = Sub::new(ctx);
    let mut z = [String::new(), String::new()];
    for (k, i) in [4, 5].into_iter().enumerate() {
        if ctx.input_opt(i).is_some() {
            z[k] = maybe_scalar(ctx, &mut s, i)?;
        }
    }
    let acc = s.op(
        "MatMulInteger",
        &[&in_name(ctx, 0), &in_name(ctx, 1), &z[0], &z[1]],
        vec![],
    );
    let sa = maybe_scalar(ctx, &mut s, 2)?;
    let sb = maybe_scalar(ctx, &mut s, 3)?;
    let m = s.op("Mul", &[&sa, &sb], vec![]);
    scaled(ctx, s, &acc, &m, 6)
}

/// Value `j` of `bits` bits from a little-endian bit-packed byte row (low bits first).
fn unpack(row: &[u8], j: usize, bits: usize) -> f64 {
    let per = 8 / bits;
    let byte = row.get(j / per).copied().unwrap_or(0);
    ((byte >> ((j % per) * bits)) & ((1u16 << bits) - 1) as u8) as f64
}

/// MatMulNBits (A, B, scales, zero_points, g_idx, bias): `A @ W + bias` with
/// `W[k, n] = (q[n, k] - zp[n, k / block]) · scale[n, k / block]` built at compile time.
pub fn matmul_nbits(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let attr = |n: &str| -> Result<usize> {
        match ctx.attr_i(n) {
            Some(v) if v > 0 => Ok(v as usize),
            _ => Err(ctx.err(format!("attribute {n} must be positive"))),
        }
    };
    let (k, n, block) = (attr("K")?, attr("N")?, attr("block_size")?);
    let bits = ctx.attr_i_or("bits", 4) as usize;
    if !matches!(bits, 2 | 4 | 8) {
        return Err(ctx.unsupported(format!("bits = {bits} (2, 4 or 8 are supported)")));
    }
    if ctx.attr_i_or("weight_prepacked", 0) != 0 {
        return Err(ctx.unsupported("weight_prepacked (a GPU-specific packed layout)"));
    }
    if ctx.input_opt(4).is_some() {
        return Err(ctx.unsupported("g_idx (deprecated act-order groups); re-quantize without it"));
    }
    let a = ctx.input(0)?;
    if a.dtype != DType::F32 || a.shape.last() != Some(&k) {
        return Err(ctx.unsupported(format!(
            "A is {} {:?}: float with last axis K = {k} expected",
            a.dtype.name(),
            a.shape
        )));
    }
    let blocks = k.div_ceil(block);
    let blob = block * bits / 8;
    let q = ctx
        .const_input(1, "B (packed weights)")?
        .ok_or_else(|| ctx.err("B is required"))?;
    if q.dtype != DType::U8 || q.dims != [n, blocks, blob] {
        return Err(ctx.err(format!(
            "B is {} {:?}; uint8 [{n}, {blocks}, {blob}] expected",
            q.dtype.name(),
            q.dims
        )));
    }
    let scales = ctx
        .const_floats(2, "scales")?
        .ok_or_else(|| ctx.err("scales are required"))?;
    if scales.len() != n * blocks {
        return Err(ctx.err(format!("{} scales; [{n}, {blocks}] expected", scales.len())));
    }
    let default_zp = (1u32 << (bits - 1)) as f64;
    let zps: Vec<f64> = match ctx.input_opt(3) {
        None => vec![default_zp; n * blocks],
        Some(z) if z.dtype == DType::U8 => {
            let d = ctx
                .const_input(3, "zero_points")?
                .map(|d| d.bytes.clone())
                .unwrap_or_default();
            let row = (blocks * bits).div_ceil(8);
            if d.len() != n * row {
                return Err(ctx.err(format!(
                    "packed zero_points hold {} bytes; [{n}, {row}] expected",
                    d.len()
                )));
            }
            (0..n * blocks)
                .map(|i| {
                    unpack(
                        &d[i / blocks * row..(i / blocks + 1) * row],
                        i % blocks,
                        bits,
                    )
                })
                .collect()
        }
        Some(_) => {
            let v = ctx.const_floats(3, "zero_points")?.unwrap_or_default();
            if v.len() != n * blocks {
                return Err(ctx.err(format!("{} zero points; [{n}, {blocks}] expected", v.len())));
            }
            v
        }
    };
    let mut w = vec![0.0f64; k * n];
    for col in 0..n {
        for blk in 0..blocks {
            let row = &q.bytes[(col * blocks + blk) * blob..(col * blocks + blk + 1) * blob];
            let (sc, zp) = (
                scales[col * blocks + blk] as f32,
                zps[col * blocks + blk] as f32,
            );
            for j in 0..block.min(k - blk * block) {
                // f32 as onnxruntime dequantizes: (q - zp) · scale.
                w[(blk * block + j) * n + col] = ((unpack(row, j, bits) as f32 - zp) * sc) as f64;
            }
        }
    }
    let mut s = Sub::new(ctx);
    let wc = s.constant(tensor_data(DType::F32, vec![k, n], &w));
    let y = out0(ctx)?;
    if ctx.input_opt(5).is_some() {
        let m = s.op("MatMul", &[&in_name(ctx, 0), &wc], vec![]);
        s.to("Add", &[&m, &in_name(ctx, 5)], &[&y], vec![]);
    } else {
        s.to("MatMul", &[&in_name(ctx, 0), &wc], &[&y], vec![]);
    }
    Ok(s.done())
}
