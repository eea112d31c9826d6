//! Sampling grids: GridSample (a device kernel) and AffineGrid (decomposed: the
//! normalized base grid is a constant, so the op is one batched MatMul with θᵀ).

use ge_runtime::format::{GridPadding, GridSampleParams, MAX_RANK, ResizeMode};

use super::super::ctx::{Imported, NodeCtx};
use super::decomp::{in_name, out0, reshape};
use super::is_float;
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::sub::{A, Sub, tensor_data};
use crate::error::Result;
use crate::ir::Op;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::decomposed("AffineGrid", 20, FLOAT, affine_grid).note("size known at compile time"),
    OpEntry::kernel("GridSample", 16, FLOAT, grid_sample),
];

fn grid_sample(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let grid = ctx.input(1)?;
    if !is_float(x.dtype) || !is_float(grid.dtype) {
        return Err(ctx.unsupported(format!(
            "X of {} and grid of {} (float only)",
            x.dtype.name(),
            grid.dtype.name()
        )));
    }
    let r = x.shape.len();
    let rank_ok = if ctx.opset < 20 {
        r == 4
    } else {
        (3..=MAX_RANK).contains(&r)
    };
    if !rank_ok
        || grid.shape.len() != r
        || grid.shape[0] != x.shape[0]
        || grid.shape[r - 1] != r - 2
    {
        return Err(ctx.err(format!(
            "X {:?} and grid {:?} do not match [N, C, d…] / [N, o…, rank − 2]{}",
            x.shape,
            grid.shape,
            if ctx.opset < 20 {
                " (4-D only before opset 20)"
            } else {
                ""
            }
        )));
    }
    let out_spatial = &grid.shape[1..r - 1];
    if x.shape[2..].contains(&0) && !out_spatial.contains(&0) && x.shape[..2].iter().all(|&d| d > 0)
    {
        return Err(ctx.err(format!(
            "X {:?} has an empty spatial axis to sample from",
            x.shape
        )));
    }
    if grid.dtype != x.dtype {
        // The kernel reads both in one type: convert the grid, then import again.
        let mut s = Sub::new(ctx);
        let g = s.op(
            "Cast",
            &[&in_name(ctx, 1)],
            vec![A::I("to", x.dtype as i64)],
        );
        let mut node = ctx.node.clone();
        node.input = vec![in_name(ctx, 0), g];
        s.push(node);
        return Ok(s.done());
    }
    let mode = match ctx.attr_s_or("mode", "linear").as_str() {
        "nearest" => ResizeMode::Nearest,
        "linear" | "bilinear" => ResizeMode::Linear,
        "cubic" | "bicubic" => ResizeMode::Cubic,
        m => {
            return Err(ctx.err(format!(
                "mode '{m}' is not nearest, linear (bilinear) or cubic (bicubic)"
            )));
        }
    };
    let padding = match ctx.attr_s_or("padding_mode", "zeros").as_str() {
        "zeros" => GridPadding::Zeros,
        "border" => GridPadding::Border,
        "reflection" => GridPadding::Reflection,
        m => {
            return Err(ctx.err(format!(
                "padding_mode '{m}' is not zeros, border or reflection"
            )));
        }
    };
    let p = GridSampleParams {
        mode: mode as u32,
        padding: padding as u32,
        align_corners: (ctx.attr_i_or("align_corners", 0) != 0) as u32,
        reserved: 0,
    };
    let mut shape = vec![x.shape[0], x.shape[1]];
    shape.extend_from_slice(out_spatial);
    Ok(Imported::one(Op::GridSample(p), vec![0, 1], x.dtype, shape))
}

/// Most points of an AffineGrid base grid (a compile-time constant).
const MAX_GRID_POINTS: usize = 1 << 24;

/// Normalized coordinates of `len` points along one axis.
fn axis_coords(len: usize, align: bool) -> Vec<f64> {
    (0..len)
        .map(|i| {
            if !align {
                -1.0 + (2 * i + 1) as f64 / len as f64
            } else if len > 1 {
                -1.0 + 2.0 * i as f64 / (len - 1) as f64
            } else {
                -1.0
            }
        })
        .collect()
}

/// AffineGrid: `grid[n, p…] = θ[n] · (x, y[, z], 1)` over the base grid of `size`.
fn affine_grid(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let theta = ctx.input(0)?;
    let size = ctx
        .const_ints(1, "size")?
        .ok_or_else(|| ctx.err("size is required"))?;
    if !is_float(theta.dtype) {
        return Err(ctx.unsupported(format!("theta of {} (float only)", theta.dtype.name())));
    }
    let dims: Vec<usize> = size
        .iter()
        .map(|&d| usize::try_from(d).ok().filter(|&d| d > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| ctx.err(format!("size {size:?} must be positive")))?;
    let k = dims.len().saturating_sub(2);
    let n = dims.first().copied().unwrap_or(0);
    if !(k == 2 || k == 3) || theta.shape != [n, k, k + 1] {
        return Err(ctx.err(format!(
            "theta {:?} and size {size:?} do not match [N, 2, 3] / (N, C, H, W) or \
             [N, 3, 4] / (N, C, D, H, W)",
            theta.shape
        )));
    }
    let spatial = &dims[2..];
    let points = spatial
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&p| p <= MAX_GRID_POINTS)
        .ok_or_else(|| {
            ctx.unsupported(format!(
                "size {size:?} has more than {MAX_GRID_POINTS} grid points"
            ))
        })?;
    let align = ctx.attr_i_or("align_corners", 0) != 0;
    let coords: Vec<Vec<f64>> = spatial.iter().map(|&l| axis_coords(l, align)).collect();
    // Base grid [points, k + 1]: per point (innermost coordinate first, …, 1).
    let mut base = Vec::with_capacity(points * (k + 1));
    for p in 0..points {
        let mut rest = p;
        let mut idx = vec![0; k];
        for a in (0..k).rev() {
            idx[a] = rest % spatial[a];
            rest /= spatial[a];
        }
        base.extend((0..k).rev().map(|a| coords[a][idx[a]]));
        base.push(1.0);
    }
    let mut s = Sub::new(ctx);
    let b = s.constant(tensor_data(theta.dtype, vec![points, k + 1], &base));
    let tt = s.op(
        "Transpose",
        &[&in_name(ctx, 0)],
        vec![A::Is("perm", vec![0, 2, 1])],
    );
    let g = s.op("MatMul", &[&b, &tt], vec![]);
    let mut shape = vec![n];
    shape.extend_from_slice(spatial);
    shape.push(k);
    let y = reshape(&mut s, &g, &shape);
    s.to("Identity", &[&y], &[&out0(ctx)?], vec![]);
    Ok(s.done())
}
