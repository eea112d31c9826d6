//! Convolutions and pooling: Conv, ConvTranspose, Max/Average/Lp pooling, global pooling.
//! Padding (explicit pads or `auto_pad`) is resolved here, so kernels see begin/end pads.

use ge_runtime::format::{Activation, ConvParams, PoolKind, PoolParams};

use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use crate::error::Result;
use crate::ir::Op;
use crate::onnx::ctx::{Imported, NodeCtx};

/// Spatial window attributes shared by conv and pooling.
struct Window {
    kernel: Vec<usize>,
    stride: Vec<usize>,
    dilation: Vec<usize>,
    pad_begin: Vec<usize>,
    pad_end: Vec<usize>,
}

fn positive(ctx: &NodeCtx<'_>, name: &str, n: usize) -> Result<Vec<usize>> {
    match ctx.attr_ints(name) {
        None => Ok(vec![1; n]),
        Some(v) if v.len() == n && v.iter().all(|&x| x >= 1) => {
            Ok(v.iter().map(|&x| x as usize).collect())
        }
        Some(v) => Err(ctx.err(format!("{name} {v:?} must have {n} positive entries"))),
    }
}

/// Resolves strides, dilations and pads (explicit or `auto_pad`) for `input` spatial dims.
fn window(ctx: &NodeCtx<'_>, input: &[usize], kernel: Vec<usize>) -> Result<Window> {
    let n = input.len();
    if kernel.len() != n || kernel.contains(&0) {
        return Err(ctx.err(format!(
            "kernel shape {kernel:?} does not match {n} spatial dims"
        )));
    }
    let stride = positive(ctx, "strides", n)?;
    let dilation = positive(ctx, "dilations", n)?;
    let auto_pad = ctx.attr_s_or("auto_pad", "NOTSET");
    let (mut pb, mut pe) = (vec![0usize; n], vec![0usize; n]);
    match auto_pad.as_str() {
        "NOTSET" | "" => {
            if let Some(p) = ctx.attr_ints("pads") {
                if p.len() != 2 * n || p.iter().any(|&x| x < 0) {
                    return Err(ctx.err(format!(
                        "pads {p:?} must have {} non-negative entries",
                        2 * n
                    )));
                }
                for i in 0..n {
                    pb[i] = p[i] as usize;
                    pe[i] = p[n + i] as usize;
                }
            }
        }
        "VALID" => {}
        "SAME_UPPER" | "SAME_LOWER" => {
            for i in 0..n {
                let out = input[i].div_ceil(stride[i]);
                let span = (kernel[i] - 1) * dilation[i] + 1;
                let total = ((out.max(1) - 1) * stride[i] + span).saturating_sub(input[i]);
                let small = total / 2;
                if auto_pad == "SAME_UPPER" {
                    (pb[i], pe[i]) = (small, total - small);
                } else {
                    (pb[i], pe[i]) = (total - small, small);
                }
            }
        }
        other => {
            return Err(ctx.err(format!(
                "auto_pad '{other}' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"
            )));
        }
    }
    Ok(Window {
        kernel,
        stride,
        dilation,
        pad_begin: pb,
        pad_end: pe,
    })
}

fn arr3(v: &[usize]) -> [u32; 3] {
    let mut a = [0u32; 3];
    for (d, &s) in a.iter_mut().zip(v) {
        *d = s as u32;
    }
    a
}

/// Output size of a window sweep; `ceil` for pooling's ceil_mode (windows that would start in
/// the end padding are dropped, as onnxruntime does).
fn out_size(ctx: &NodeCtx<'_>, w: &Window, input: &[usize], ceil: bool) -> Result<Vec<usize>> {
    (0..input.len())
        .map(|i| {
            let padded = input[i] + w.pad_begin[i] + w.pad_end[i];
            let span = (w.kernel[i] - 1) * w.dilation[i] + 1;
            if padded < span {
                return Err(ctx.err(format!(
                    "spatial dim {i}: window {span} is larger than the padded input {padded}"
                )));
            }
            let num = padded - span;
            let mut out = if ceil {
                num.div_ceil(w.stride[i]) + 1
            } else {
                num / w.stride[i] + 1
            };
            if ceil && (out - 1) * w.stride[i] >= input[i] + w.pad_begin[i] {
                out -= 1;
            }
            Ok(out)
        })
        .collect()
}

fn check_spatial(ctx: &NodeCtx<'_>, x: &[usize]) -> Result<usize> {
    let n = x.len().checked_sub(2).ok_or_else(|| {
        ctx.err(format!(
            "input rank {} is below 3 (N, C, spatial…)",
            x.len()
        ))
    })?;
    if !(1..=3).contains(&n) {
        return Err(ctx.unsupported(format!("{n} spatial dims (1 to 3 are supported)")));
    }
    Ok(n)
}

/// `Conv`.
pub fn conv(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let (p, out) = geometry(ctx, 0, 1)?;
    let x = ctx.input(0)?;
    let w = ctx.input(1)?;
    if let Some(b) = ctx.input_opt(2)
        && b.shape != [w.shape[0]]
    {
        return Err(ctx.err(format!("bias shape {:?} must be [{}]", b.shape, w.shape[0])));
    }
    let inputs = if ctx.input_opt(2).is_some() {
        vec![0, 1, 2]
    } else {
        vec![0, 1]
    };
    Ok(Imported::one(Op::Conv(p), inputs, x.dtype, out))
}

/// The checked geometry of a convolution reading x at input `xi` and the weight at `wi`
/// (Conv, ConvInteger, QLinearConv): its parameters and the output shape.
pub fn geometry(ctx: &NodeCtx<'_>, xi: usize, wi: usize) -> Result<(ConvParams, Vec<usize>)> {
    let x = ctx.input(xi)?;
    let w = ctx.input(wi)?;
    let n = check_spatial(ctx, x.shape)?;
    if w.shape.len() != n + 2 {
        return Err(ctx.err(format!(
            "weight rank {} differs from input rank {}",
            w.shape.len(),
            n + 2
        )));
    }
    let group = ctx.attr_i_or("group", 1);
    let c = x.shape[1];
    if group < 1
        || c % group as usize != 0
        || w.shape[0] % group as usize != 0
        || w.shape[1] * group as usize != c
    {
        return Err(ctx.err(format!(
            "group {group} does not divide channels: input {:?}, weight {:?}",
            x.shape, w.shape
        )));
    }
    let kernel = match ctx.attr_ints("kernel_shape") {
        Some(k) => k.iter().map(|&v| v.max(0) as usize).collect(),
        None => w.shape[2..].to_vec(),
    };
    if kernel != w.shape[2..] {
        return Err(ctx.err(format!(
            "kernel_shape {kernel:?} differs from the weight's {:?}",
            &w.shape[2..]
        )));
    }
    let win = window(ctx, &x.shape[2..], kernel)?;
    let mut out = vec![x.shape[0], w.shape[0]];
    out.extend(out_size(ctx, &win, &x.shape[2..], false)?);
    Ok((conv_params(n, group as u32, &win, &[]), out))
}

fn conv_params(n: usize, group: u32, w: &Window, output_padding: &[usize]) -> ConvParams {
    ConvParams {
        spatial: n as u32,
        group,
        kernel: arr3(&w.kernel),
        stride: arr3(&w.stride),
        dilation: arr3(&w.dilation),
        pad_begin: arr3(&w.pad_begin),
        pad_end: arr3(&w.pad_end),
        output_padding: arr3(output_padding),
        act: Activation::default(),
        prologue: Activation::default(),
    }
}

/// `ConvTranspose`.
pub fn conv_transpose(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let w = ctx.input(1)?;
    let n = check_spatial(ctx, x.shape)?;
    if w.shape.len() != n + 2 {
        return Err(ctx.err(format!(
            "weight rank {} differs from input rank {}",
            w.shape.len(),
            n + 2
        )));
    }
    let group = ctx.attr_i_or("group", 1).max(1) as usize;
    if w.shape[0] != x.shape[1] || x.shape[1] % group != 0 {
        return Err(ctx.err(format!(
            "weight {:?} does not match input channels {} with group {group}",
            w.shape, x.shape[1]
        )));
    }
    let m = w.shape[1] * group;
    let kernel: Vec<usize> = match ctx.attr_ints("kernel_shape") {
        Some(k) => k.iter().map(|&v| v.max(0) as usize).collect(),
        None => w.shape[2..].to_vec(),
    };
    let stride = positive(ctx, "strides", n)?;
    let dilation = positive(ctx, "dilations", n)?;
    let opad: Vec<usize> = match ctx.attr_ints("output_padding") {
        Some(v) if v.len() == n && v.iter().all(|&p| p >= 0) => {
            v.iter().map(|&p| p as usize).collect()
        }
        Some(v) => {
            return Err(ctx.err(format!(
                "output_padding {v:?} must have {n} non-negative entries"
            )));
        }
        None => vec![0; n],
    };
    let input = &x.shape[2..];
    if kernel.len() != n || kernel.contains(&0) || input.contains(&0) {
        return Err(ctx.err(format!(
            "kernel shape {kernel:?} and input {:?} must be {n} non-zero spatial dims",
            x.shape
        )));
    }
    let full: Vec<usize> = (0..n)
        .map(|i| {
            stride[i]
                .checked_mul(input[i] - 1)?
                .checked_add(opad[i])?
                .checked_add((kernel[i] - 1).checked_mul(dilation[i])?)?
                .checked_add(1)
        })
        .collect::<Option<_>>()
        .ok_or_else(|| ctx.err("the output size overflows"))?;
    let auto_pad = ctx.attr_s_or("auto_pad", "NOTSET");
    let target: Option<Vec<usize>> = match ctx.attr_ints("output_shape") {
        Some(s) => {
            let s: Vec<usize> = s.iter().map(|&v| v.max(0) as usize).collect();
            Some(if s.len() == n + 2 { s[2..].to_vec() } else { s })
        }
        None if auto_pad.starts_with("SAME") => {
            Some((0..n).map(|i| input[i].saturating_mul(stride[i])).collect())
        }
        None => None,
    };
    let (mut pb, mut pe) = (vec![0; n], vec![0; n]);
    match target {
        Some(t) => {
            if t.len() != n {
                return Err(ctx.err(format!("output_shape {t:?} must have {n} spatial entries")));
            }
            for i in 0..n {
                let total = full[i].checked_sub(t[i]).ok_or_else(|| {
                    ctx.unsupported("output_shape larger than the full transposed convolution")
                })?;
                if auto_pad == "SAME_UPPER" {
                    (pb[i], pe[i]) = (total / 2, total - total / 2);
                } else {
                    (pb[i], pe[i]) = (total - total / 2, total / 2);
                }
            }
        }
        None => {
            if let Some(p) = ctx.attr_ints("pads") {
                if p.len() != 2 * n || p.iter().any(|&v| v < 0) {
                    return Err(ctx.err(format!(
                        "pads {p:?} must have {} non-negative entries",
                        2 * n
                    )));
                }
                for i in 0..n {
                    (pb[i], pe[i]) = (p[i] as usize, p[n + i] as usize);
                }
            }
        }
    }
    let mut out = vec![x.shape[0], m];
    for i in 0..n {
        out.push(
            full[i]
                .checked_sub(pb[i].saturating_add(pe[i]))
                .filter(|&o| o > 0)
                .ok_or_else(|| ctx.err("pads remove the whole output"))?,
        );
    }
    let win = Window {
        kernel,
        stride,
        dilation,
        pad_begin: pb,
        pad_end: pe,
    };
    let p = conv_params(n, group as u32, &win, &opad);
    let inputs = if ctx.input_opt(2).is_some() {
        vec![0, 1, 2]
    } else {
        vec![0, 1]
    };
    Ok(Imported::one(Op::ConvTranspose(p), inputs, x.dtype, out))
}

/// `MaxPool`, `AveragePool`, `LpPool`.
pub fn pool(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let kind = match ctx.node.op_type() {
        "MaxPool" => PoolKind::Max,
        "AveragePool" => PoolKind::Average,
        _ => PoolKind::Lp,
    };
    pool_of(ctx, kind)
}

/// A Pool task of `kind` from the node's input 0 and window attributes (also the 8-bit
/// average of QLinearAveragePool in TFLite's arithmetic).
pub fn pool_of(ctx: &NodeCtx<'_>, kind: PoolKind) -> Result<Imported> {
    let x = ctx.input(0)?;
    let n = check_spatial(ctx, x.shape)?;
    if ctx.node.output.iter().skip(1).any(|o| !o.is_empty()) {
        return Err(ctx.unsupported("the Indices output of MaxPool is not supported"));
    }
    if kind == PoolKind::Max && ctx.attr_i_or("storage_order", 0) != 0 {
        return Err(ctx.unsupported("storage_order=1"));
    }
    let kernel: Vec<usize> = ctx
        .attr_ints("kernel_shape")
        .ok_or_else(|| ctx.err("kernel_shape is required"))?
        .iter()
        .map(|&v| v.max(0) as usize)
        .collect();
    let win = window(ctx, &x.shape[2..], kernel)?;
    let ceil = ctx.attr_i_or("ceil_mode", 0) != 0;
    let mut out = x.shape[..2].to_vec();
    out.extend(out_size(ctx, &win, &x.shape[2..], ceil)?);
    let p = PoolParams {
        kind: kind as u32,
        spatial: n as u32,
        kernel: arr3(&win.kernel),
        stride: arr3(&win.stride),
        dilation: arr3(&win.dilation),
        pad_begin: arr3(&win.pad_begin),
        pad_end: arr3(&win.pad_end),
        count_include_pad: ctx.attr_i_or("count_include_pad", 0) as u32,
        p: ctx
            .attr_i("p")
            .map_or_else(|| ctx.attr_f_or("p", 2.0), |v| v as f32),
    };
    Ok(Imported::one(Op::Pool(p), vec![0], x.dtype, out))
}

/// `GlobalAveragePool`, `GlobalMaxPool`, `GlobalLpPool`.
pub fn global_pool(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if x.shape.len() < 3 {
        return Err(ctx.err(format!("input rank {} is below 3", x.shape.len())));
    }
    let kind = match ctx.node.op_type() {
        "GlobalMaxPool" => PoolKind::Max,
        "GlobalAveragePool" => PoolKind::Average,
        _ => PoolKind::Lp,
    };
    let mut out = x.shape[..2].to_vec();
    out.extend(std::iter::repeat_n(1, x.shape.len() - 2));
    let p = PoolParams {
        kind: kind as u32,
        spatial: (x.shape.len() - 2) as u32,
        kernel: [0; 3],
        stride: [1; 3],
        dilation: [1; 3],
        pad_begin: [0; 3],
        pad_end: [0; 3],
        count_include_pad: 0,
        p: ctx
            .attr_i("p")
            .map_or_else(|| ctx.attr_f_or("p", 2.0), |v| v as f32),
    };
    Ok(Imported::one(Op::GlobalPool(p), vec![0], x.dtype, out))
}
/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::kernel("AveragePool", 7, FLOAT, pool),
    OpEntry::kernel("Conv", 7, FLOAT, conv),
    OpEntry::kernel("ConvTranspose", 7, FLOAT, conv_transpose),
    OpEntry::kernel("GlobalAveragePool", 7, FLOAT, global_pool),
    OpEntry::kernel("GlobalLpPool", 7, FLOAT, global_pool),
    OpEntry::kernel("GlobalMaxPool", 7, FLOAT, global_pool),
    OpEntry::kernel("LpPool", 7, FLOAT, pool),
    OpEntry::kernel("MaxPool", 7, FLOAT, |c| {
        if super::pool_indices::wants_indices(c) {
            super::pool_indices::max_pool_with_indices(c)
        } else {
            pool(c)
        }
    })
    .note("with the Indices output: decomposed (Gather of windows, ReduceMax, ArgMax)"),
];
