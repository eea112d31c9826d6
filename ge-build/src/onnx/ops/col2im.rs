//! `Col2Im` (PyTorch's fold): a ScatterElements with `add` reduction of every column entry
//! into its (padded) image position, from a constant index table, then a Slice dropping the
//! padding. `image_shape` and `block_shape` decide shapes, so they must be known while
//! compiling.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{attr_ints_n, in_name, out0, reshape};
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::shape::MAX_CONST_ELEMS;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[OpEntry::decomposed("Col2Im", 18, FLOAT, col2im)
    .note("image_shape and block_shape known at compile time")];

/// Col2Im(input [N, C * prod(block), L], image_shape, block_shape).
fn col2im(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let img = ctx
        .const_ints(1, "image_shape")?
        .ok_or_else(|| ctx.err("image_shape is required"))?;
    let blk = ctx
        .const_ints(2, "block_shape")?
        .ok_or_else(|| ctx.err("block_shape is required"))?;
    let d = img.len();
    let ints = |name: &str, default: i64, n: usize| attr_ints_n(ctx, name, default, n);
    let dil = ints("dilations", 1, d)?;
    let strides = ints("strides", 1, d)?;
    let pads = ints("pads", 0, 2 * d)?;
    let bad = |v: &[i64], min: i64| v.iter().any(|&a| a < min);
    if d == 0 || blk.len() != d || bad(&img, 1) || bad(&blk, 1) || bad(&dil, 1) {
        return Err(ctx.err("image_shape and block_shape must be positive, of one length"));
    }
    if bad(&strides, 1) || bad(&pads, 0) {
        return Err(ctx.err("strides must be positive and pads non-negative"));
    }
    let [n, ck, l] = *x.shape else {
        return Err(ctx.err("input must be rank 3 [N, C * prod(block_shape), L]"));
    };
    let padded: Vec<i64> = (0..d)
        .map(|i| img[i].saturating_add(pads[i]).saturating_add(pads[d + i]))
        .collect();
    let mut blocks = Vec::with_capacity(d);
    for i in 0..d {
        let span = dil[i].saturating_mul(blk[i] - 1).saturating_add(1);
        if padded[i] < span {
            return Err(ctx.err("a block is larger than the padded image"));
        }
        blocks.push((padded[i] - span) / strides[i] + 1);
    }
    let prod = |v: &[i64]| v.iter().fold(1i64, |a, &b| a.saturating_mul(b));
    let (k, nb) = (prod(&blk), prod(&blocks));
    if k <= 0 || ck as i64 % k != 0 || nb != l as i64 {
        return Err(ctx.err(format!(
            "input {:?} does not hold {k}-element blocks at {nb} positions",
            x.shape
        )));
    }
    let c = ck / k as usize;
    let plane = prod(&padded);
    let sat = |a: usize, b: usize, c: usize| a.saturating_mul(b).saturating_mul(c);
    if sat(n, ck, l).max(sat(n, c, plane as usize)) > MAX_CONST_ELEMS {
        return Err(ctx.unsupported("a Col2Im this large"));
    }
    // Flat padded-image position of column entry (kernel offset kk, block position bb).
    let mut table = Vec::with_capacity((k * nb) as usize);
    for kk in 0..k {
        for bb in 0..nb {
            let (mut kr, mut br, mut flat) = (kk, bb, 0i64);
            let mut pos = vec![0i64; d];
            for i in (0..d).rev() {
                pos[i] = (br % blocks[i]) * strides[i] + (kr % blk[i]) * dil[i];
                br /= blocks[i];
                kr /= blk[i];
            }
            for i in 0..d {
                flat = flat * padded[i] + pos[i];
            }
            table.push(flat as f64);
        }
    }
    let per_image: Vec<f64> = (0..n * c).flat_map(|_| table.iter().copied()).collect();
    let kl = (k * nb) as usize;
    let mut s = Sub::new(ctx);
    let idx = s.constant(tensor_data(DType::I64, vec![n, c, kl], &per_image));
    let zeros = s.constant(tensor_data(
        x.dtype,
        vec![n, c, plane as usize],
        &vec![0.0; n * c * plane as usize],
    ));
    let cols = reshape(&mut s, &in_name(ctx, 0), &[n, c, kl]);
    let summed = s.op(
        "ScatterElements",
        &[&zeros, &idx, &cols],
        vec![A::I("axis", 2), A::S("reduction", "add")],
    );
    let mut shape = vec![n, c];
    shape.extend(padded.iter().map(|&p| p as usize));
    let y = reshape(&mut s, &summed, &shape);
    let st = s.ints(&pads[..d]);
    let en: Vec<i64> = (0..d).map(|i| pads[i] + img[i]).collect();
    let en = s.ints(&en);
    let axes: Vec<i64> = (2..2 + d as i64).collect();
    let ax = s.ints(&axes);
    s.to("Slice", &[&y, &st, &en, &ax], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}
