//! Col2Im: summing sliding blocks back into an image is a grouped ConvTranspose whose
//! kernel is one-hot (block position k of channel c feeds output channel c at offset k),
//! with Col2Im's strides, dilations and pads.

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape};
use super::is_float;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// Op types handled here.
pub const OPS: &[&str] = &["Col2Im"];

/// Imports `t` if it is handled here; `None` otherwise.
pub fn import(t: &str, ctx: &NodeCtx<'_>) -> Option<Result<Imported>> {
    match t {
        "Col2Im" => Some(col2im(ctx)),
        _ => None,
    }
}

fn positive(ctx: &NodeCtx<'_>, v: Vec<i64>, what: &str) -> Result<Vec<usize>> {
    v.iter()
        .map(|&d| {
            usize::try_from(d)
                .ok()
                .filter(|&d| d > 0)
                .ok_or_else(|| ctx.err(format!("{what} {v:?} must be positive")))
        })
        .collect()
}

fn col2im(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    if !is_float(x.dtype) {
        return Err(ctx.unsupported(format!("{} input", x.dtype.name())));
    }
    let image = ctx
        .const_ints(1, "image_shape")?
        .ok_or_else(|| ctx.err("image_shape is required"))?;
    let block = ctx
        .const_ints(2, "block_shape")?
        .ok_or_else(|| ctx.err("block_shape is required"))?;
    let image = positive(ctx, image, "image_shape")?;
    let block = positive(ctx, block, "block_shape")?;
    let d = image.len();
    if block.len() != d || d == 0 || x.shape.len() != 3 {
        return Err(ctx.err(format!(
            "input {:?}, image_shape {image:?} and block_shape {block:?} do not match",
            x.shape
        )));
    }
    let attr = |name: &str, len: usize, default: i64| -> Result<Vec<i64>> {
        match ctx.attr_ints(name) {
            Some(v) if v.len() == len => Ok(v),
            Some(v) => Err(ctx.err(format!("{name} has {} entries, expected {len}", v.len()))),
            None => Ok(vec![default; len]),
        }
    };
    let dil = positive(ctx, attr("dilations", d, 1)?, "dilations")?;
    let strides = positive(ctx, attr("strides", d, 1)?, "strides")?;
    let pads = attr("pads", 2 * d, 0)?;
    if pads.iter().any(|&p| p < 0) {
        return Err(ctx.err(format!("pads {pads:?} must not be negative")));
    }
    let k: usize = block.iter().product();
    let (n, ck, l) = (x.shape[0], x.shape[1], x.shape[2]);
    if ck % k != 0 {
        return Err(ctx.err(format!("{ck} channels do not split into blocks of {k}")));
    }
    let c = ck / k;
    let mut grid = Vec::with_capacity(d);
    // Rows past the last block (the padded span not a multiple of the stride) receive
    // nothing: ConvTranspose's output_padding appends them.
    let mut extra = Vec::with_capacity(d);
    for i in 0..d {
        // i128: attribute values cannot overflow it.
        let span = image[i] as i128 + pads[i] as i128 + pads[d + i] as i128
            - dil[i] as i128 * (block[i] as i128 - 1)
            - 1;
        if span < 0 || span > isize::MAX as i128 {
            return Err(ctx.err(format!("block {i} does not fit the padded image")));
        }
        grid.push(span as usize / strides[i] + 1);
        extra.push(span as usize % strides[i]);
    }
    if grid.iter().product::<usize>() != l {
        return Err(ctx.err(format!(
            "{l} blocks do not match the {grid:?} sliding positions"
        )));
    }
    let mut s = Sub::new(ctx);
    let mut shape = vec![n, ck];
    shape.extend(&grid);
    let xr = reshape(&mut s, &in_name(ctx, 0), &shape);
    let mut wshape = vec![ck, 1];
    wshape.extend(&block);
    let w: Vec<f64> = (0..ck)
        .flat_map(|ch| (0..k).map(move |pos| (pos == ch % k) as u8 as f64))
        .collect();
    let wc = s.constant(tensor_data(x.dtype, wshape, &w));
    let as_i64 = |v: &[usize]| v.iter().map(|&u| u as i64).collect::<Vec<_>>();
    let y = s.op(
        "ConvTranspose",
        &[&xr, &wc],
        vec![
            A::I("group", c as i64),
            A::Is("kernel_shape", as_i64(&block)),
            A::Is("strides", as_i64(&strides)),
            A::Is("dilations", as_i64(&dil)),
            A::Is("pads", pads),
            A::Is("output_padding", as_i64(&extra)),
        ],
    );
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}
