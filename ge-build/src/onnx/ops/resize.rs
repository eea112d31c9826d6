//! `Resize` (opsets 10–19) and the older `Upsample` (opsets 7–9).

use ge_runtime::format::{CoordTransform, MAX_RANK, NearestMode, ResizeMode, ResizeParams};

use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use crate::error::Result;
use crate::ir::Op;
use crate::onnx::ctx::{Imported, NodeCtx};

/// `Resize` and `Upsample`.
pub fn resize(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let r = x.shape.len();
    let upsample = ctx.node.op_type() == "Upsample";
    let mode = match ctx.attr_s_or("mode", "nearest").as_str() {
        "nearest" => ResizeMode::Nearest,
        "linear" | "bilinear" => ResizeMode::Linear,
        "cubic" if !upsample => ResizeMode::Cubic,
        m => return Err(ctx.err(format!("mode '{m}' is not supported"))),
    };
    if ctx.attr_i_or("antialias", 0) != 0 {
        return Err(ctx.unsupported("antialias=1"));
    }
    let policy = ctx.attr_s_or("keep_aspect_ratio_policy", "stretch");
    if !matches!(policy.as_str(), "stretch" | "not_larger" | "not_smaller") {
        return Err(ctx.err(format!(
            "keep_aspect_ratio_policy '{policy}' is not supported"
        )));
    }
    let axes: Vec<usize> = match ctx.attr_ints("axes") {
        Some(a) => a.iter().map(|&a| ctx.axis(a, r)).collect::<Result<_>>()?,
        None => (0..r).collect(),
    };
    if (1..axes.len()).any(|i| axes[..i].contains(&axes[i])) {
        return Err(ctx.err(format!("axes {axes:?} repeat an axis")));
    }
    let (scales, sizes, roi) = if upsample {
        let s = if ctx.opset < 9 {
            ctx.attr_floats("scales")
                .map(|v| v.iter().map(|&f| f64::from(f)).collect())
        } else {
            ctx.const_floats(1, "scales")?
        };
        (s, None, None)
    } else if ctx.opset < 11 {
        (ctx.const_floats(1, "scales")?, None, None)
    } else {
        (
            ctx.const_floats(2, "scales")?.filter(|v| !v.is_empty()),
            ctx.const_ints(3, "sizes")?.filter(|v| !v.is_empty()),
            ctx.const_floats(1, "roi")?,
        )
    };
    let n = axes.len();
    // Scales, sizes and roi given for `axes` only: the other axes keep their size.
    let full = |v: Vec<f64>, fill: &dyn Fn(usize) -> f64| -> Result<Vec<f64>> {
        if v.len() != n {
            return Err(ctx.err(format!("{v:?} must have one entry per axis ({n})")));
        }
        let mut f: Vec<f64> = (0..r).map(fill).collect();
        for (&a, &x) in axes.iter().zip(&v) {
            f[a] = x;
        }
        Ok(f)
    };
    let scales = scales.map(|v| full(v, &|_| 1.0)).transpose()?;
    let sizes = sizes
        .map(|v| {
            full(v.iter().map(|&d| d as f64).collect(), &|i| {
                x.shape[i] as f64
            })
        })
        .transpose()?
        .map(|v| v.iter().map(|&d| d as i64).collect::<Vec<i64>>());
    let roi = match roi {
        Some(v) if v.len() == 2 * n && n != r => {
            let start = full(v[..n].to_vec(), &|_| 0.0)?;
            let end = full(v[n..].to_vec(), &|_| 1.0)?;
            Some([start, end].concat())
        }
        v => v,
    };
    let mut p = ResizeParams {
        mode: mode as u32,
        coord: 0,
        nearest: 0,
        exclude_outside: ctx.attr_i_or("exclude_outside", 0) as u32,
        cubic_coeff: ctx.attr_f_or("cubic_coeff_a", -0.75),
        extrapolation: ctx.attr_f_or("extrapolation_value", 0.0),
        scales: [1.0; MAX_RANK],
        roi: [0.0; 2 * MAX_RANK],
    };
    let mut out = x.shape.to_vec();
    match (sizes, scales) {
        (Some(sz), _) => {
            if sz.len() != r {
                return Err(ctx.err(format!("sizes {sz:?} must have {r} entries")));
            }
            for i in 0..r {
                out[i] = sz[i].max(0) as usize;
                p.scales[i] = out[i] as f32 / x.shape[i].max(1) as f32;
            }
            if policy != "stretch" {
                // One scale for all `axes` (the smallest or largest), sizes rounded half up.
                let ratio = |&a: &usize| sz[a] as f64 / x.shape[a].max(1) as f64;
                let it = axes.iter().map(ratio);
                let scale = if policy == "not_larger" {
                    it.fold(f64::INFINITY, f64::min)
                } else {
                    it.fold(0.0, f64::max)
                };
                for &a in &axes {
                    out[a] = (scale * x.shape[a] as f64 + 0.5) as usize;
                    p.scales[a] = scale as f32;
                }
            }
        }
        (None, Some(sc)) => {
            if sc.len() != r || sc.iter().any(|&s| s <= 0.0) {
                return Err(ctx.err(format!("scales {sc:?} must have {r} positive entries")));
            }
            for i in 0..r {
                out[i] = (x.shape[i] as f64 * sc[i]).floor() as usize;
                p.scales[i] = sc[i] as f32;
            }
        }
        (None, None) => return Err(ctx.err("either scales or sizes is required")),
    }
    let coord = if upsample || ctx.opset < 11 {
        CoordTransform::Asymmetric
    } else {
        match ctx
            .attr_s_or("coordinate_transformation_mode", "half_pixel")
            .as_str()
        {
            "half_pixel" => CoordTransform::HalfPixel,
            "pytorch_half_pixel" => CoordTransform::PytorchHalfPixel,
            "align_corners" => CoordTransform::AlignCorners,
            "asymmetric" => CoordTransform::Asymmetric,
            "tf_crop_and_resize" => CoordTransform::TfCropAndResize,
            "half_pixel_symmetric" => CoordTransform::HalfPixelSymmetric,
            m => {
                return Err(ctx.err(format!(
                    "coordinate_transformation_mode '{m}' is not supported"
                )));
            }
        }
    };
    p.coord = coord as u32;
    if coord == CoordTransform::TfCropAndResize {
        let roi = roi.ok_or_else(|| ctx.err("tf_crop_and_resize needs roi"))?;
        if roi.len() != 2 * r {
            return Err(ctx.err(format!("roi must have {} entries", 2 * r)));
        }
        for (d, &s) in p.roi.iter_mut().zip(roi.iter().take(r)) {
            *d = s as f32;
        }
        for (d, &s) in p.roi[MAX_RANK..].iter_mut().zip(roi.iter().skip(r)) {
            *d = s as f32;
        }
    }
    let nearest = if upsample || ctx.opset < 11 {
        NearestMode::Floor
    } else {
        match ctx.attr_s_or("nearest_mode", "round_prefer_floor").as_str() {
            "round_prefer_floor" => NearestMode::RoundPreferFloor,
            "round_prefer_ceil" => NearestMode::RoundPreferCeil,
            "floor" => NearestMode::Floor,
            "ceil" => NearestMode::Ceil,
            m => return Err(ctx.err(format!("nearest_mode '{m}' is not supported"))),
        }
    };
    p.nearest = nearest as u32;
    Ok(Imported::one(Op::Resize(p), vec![0], x.dtype, out))
}
/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::kernel("Resize", 10, FLOAT, resize),
    OpEntry::kernel("Upsample", 7, FLOAT, resize).until(9),
];
