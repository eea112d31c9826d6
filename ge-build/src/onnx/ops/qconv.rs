//! ConvInteger and QLinearConv with a constant int8/uint8 weight lowered to one `QConv` task
//! (im2col on the int8 GEMM): the weight stays int8, packed per group; zero points (and
//! QLinearConv's int32 bias) fold into a per-channel correction; requantization as
//! [`super::qgemm`] (same rounding note). 2-D only, depthwise included (as groups of one
//! channel on the same GEMM); other ranks and run-time weights keep their decomposition.
//! O(weight size) per node.

use ge_runtime::format::{
    DType, QCONV_CHANNEL_QUADS, QCONV_FLIPPED, QCONV_INPUTS, QCONV_ROW_QUADS, QConvParams,
    QGEMM_OUT_I32,
};
use ge_sim::target::{
    QuadLayout, Requant, depthwise_on_plane, fold_zero_points, pack_b, pack_quads, packed_len,
    quad_layout, quads_len,
};

use super::super::ctx::{Imported, NodeCtx};
use super::qgemm::{
    Layer, NONE, Za, activation_zp, constants, int8_constant, multipliers, zero_point_out,
};
use super::qparams::{Per, is_q8, same_axis, scale, zero_point};
use crate::error::Result;
use crate::ir::Op;
use crate::tensor::TensorData;

/// What differs between ConvInteger and QLinearConv.
struct Spec {
    /// ONNX input indices of x, x's zero point, w, w's zero point.
    x: usize,
    xz: usize,
    w: usize,
    wz: usize,
    out: (DType, u32, i32),
    rq: Option<Vec<Requant>>,
    bias: Option<Vec<i32>>,
}

fn lower(ctx: &NodeCtx<'_>, s: Spec) -> Result<Option<Imported>> {
    let (x, wi) = (ctx.input(s.x)?, ctx.input(s.w)?);
    if !is_q8(x.dtype) || x.shape.len() != 4 {
        return Ok(None);
    }
    let Some((b, shift)) = int8_constant(ctx, s.w) else {
        return Ok(None);
    };
    let Some(za) = activation_zp(ctx, s.xz)? else {
        return Ok(None);
    };
    let (cp, out_shape) = super::conv::geometry(ctx, s.x, s.w)?;
    let m = wi.shape[0];
    let Some(zb) = zero_point(ctx, s.wz, s.w, "w_zero_point", Per::TensorOr(m))? else {
        return Ok(None);
    };
    let group = cp.group as usize;
    let (mg, k) = (m / group, wi.shape[1..].iter().product::<usize>());
    let zb: Vec<i32> = zb.iter().map(|z| z - shift).collect();
    let kerr = |e: ge_runtime::KernelError| ctx.err(e.to_string());
    // A depthwise conv the kernel runs on its f32 plane reads its taps as they are: the
    // weight stays `[C][kh·kw]` (9 B a 3×3 channel, not a 16-column GEMM panel of 160 B:
    // MobileNet's blob was half depthwise padding).
    let compact = depthwise_on_plane(
        group,
        m,
        x.shape[1],
        k,
        s.rq.is_some() || s.out.1 == QGEMM_OUT_I32,
    );
    // Other convs multiply a padded copy of the input rows in quads, without im2col, or (1×1
    // on VNNI) broadcast the quads against the planes (`ge_sim`'s `quads`).
    let (cg, kh, kw) = (
        x.shape[1] / group,
        cp.kernel[0] as usize,
        cp.kernel[1] as usize,
    );
    let quads = if compact || wi.shape.len() != 4 {
        None
    } else {
        quad_layout(
            group,
            m,
            x.shape[1],
            [kh, kw],
            cp.dilation[1] as usize,
            zb.iter().all(|&z| z == 0),
            matches!(za, Za::Const(_)),
        )
    };
    let plen = if compact {
        k
    } else if let Some(layout) = quads {
        quads_len(layout, mg, cg, kh, kw).ok_or_else(|| ctx.err("the weight is too large"))?
    } else {
        packed_len(k, mg).ok_or_else(|| ctx.err("the weight is too large"))?
    };
    let mut packed = vec![0i8; plen * group];
    let za_const = match za {
        Za::Const(z) => z,
        Za::Input(_) => 0,
    };
    let (mut corr, mut adj) = (vec![0i32; m], vec![0i32; m]);
    // i8 activations are read flipped to `a + 128` (u8) by the kernel: their corrections
    // are those of zero point `za + 128`, computed here once instead of on every run.
    // (A depthwise conv on its plane reads them as they are.)
    let flip = x.dtype == DType::I8 && matches!(za, Za::Const(_)) && !compact;
    let mut flipped = vec![0i32; if flip { m } else { 0 }];
    for g in 0..group {
        // Group g's B[kk][j] = w[g·mg + j][kk]: k rows, mg columns, column stride k.
        let bg = &b[g * mg * k..(g + 1) * mg * k];
        let zg = if zb.len() == 1 {
            &zb[..]
        } else {
            &zb[g * mg..(g + 1) * mg]
        };
        let cols = g * mg..(g + 1) * mg;
        let dst = &mut packed[g * plen..(g + 1) * plen];
        if compact {
            dst.copy_from_slice(bg);
        } else if let Some(layout) = quads {
            pack_quads(layout, bg, mg, cg, kh, kw, dst).map_err(kerr)?;
        } else {
            pack_b(bg, k, mg, 1, k, dst).map_err(kerr)?;
        }
        let bias = s.bias.as_ref().map(|v| &v[cols.clone()]);
        fold_zero_points(bg, k, mg, 1, k, za_const, zg, bias, &mut corr[cols.clone()])
            .map_err(kerr)?;
        if flip {
            let f = &mut flipped[cols.clone()];
            fold_zero_points(bg, k, mg, 1, k, za_const + 128, zg, bias, f).map_err(kerr)?;
        }
        fold_zero_points(bg, k, mg, 1, k, -1, zg, None, &mut adj[cols]).map_err(kerr)?;
    }
    let mut inputs = vec![s.x, s.w, NONE, NONE, NONE];
    let adj = match za {
        Za::Input(i) => {
            inputs.extend([i, NONE]);
            Some(adj)
        }
        Za::Const(_) => None,
    };
    let mut overrides = constants(ctx, &packed, &corr, &zb, s.rq.as_deref(), adj.as_deref())?;
    if flip {
        inputs.resize(QCONV_INPUTS, NONE);
        let bytes = bytemuck::cast_slice(&flipped).to_vec();
        let t = TensorData::new(DType::I32, vec![m], bytes).map_err(|e| ctx.err(e.to_string()))?;
        overrides.push((QCONV_FLIPPED, t));
    }
    let two = |v: [u32; 3]| [v[0], v[1]];
    let p = QConvParams {
        out: s.out.1
            | match quads {
                Some(QuadLayout::Rows) => QCONV_ROW_QUADS,
                Some(QuadLayout::Channels) => QCONV_CHANNEL_QUADS,
                None => 0,
            },
        out_zp: s.out.2,
        a_zp: za_const,
        group: cp.group,
        kernel: two(cp.kernel),
        stride: two(cp.stride),
        dilation: two(cp.dilation),
        pad_begin: two(cp.pad_begin),
        pad_end: two(cp.pad_end),
    };
    Ok(Some(Imported::Op {
        op: Op::QConv(p),
        inputs,
        outputs: vec![(s.out.0, out_shape)],
        overrides,
    }))
}

/// ConvInteger (x, w, x_zero_point, w_zero_point) → an i32 `QConv`, or `None`.
pub fn conv_integer(ctx: &NodeCtx<'_>) -> Result<Option<Imported>> {
    let spec = Spec {
        x: 0,
        xz: 2,
        w: 1,
        wz: 3,
        out: (DType::I32, QGEMM_OUT_I32, 0),
        rq: None,
        bias: None,
    };
    lower(ctx, spec)
}

/// QLinearConv (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B) → a requantizing
/// `QConv`, or `None`. The scales are checked whether or not the node is lowered.
pub fn qlinear_conv(ctx: &NodeCtx<'_>) -> Result<Option<Imported>> {
    let m = ctx.input(3)?.shape.first().copied().unwrap_or(1);
    let sx = scale(ctx, 1, "x_scale", Per::Tensor)?;
    let sw = scale(ctx, 4, "w_scale", Per::TensorOr(m))?;
    let sy = scale(ctx, 6, "y_scale", Per::Tensor)?;
    let zw = zero_point(ctx, 5, 3, "w_zero_point", Per::TensorOr(m))?;
    let zy = zero_point_out(ctx, 7)?;
    if let (Some(sw), Some(zw)) = (&sw, &zw) {
        same_axis(ctx, (4, sw.len()), (5, zw.len()))?;
    }
    let (Some(sx), Some(sw), Some(sy), Some((y_dt, zy))) = (sx, sw, sy, zy) else {
        return Ok(None);
    };
    let bias = match ctx.input_opt(8) {
        None => None,
        Some(b) if b.dtype == DType::I32 && b.shape == [m] => match b.data {
            Some(d) => Some(
                d.to_i64_vec()
                    .map_err(|e| ctx.err(format!("B (input 8): {e}")))?
                    .iter()
                    .map(|&v| v as i32)
                    .collect(),
            ),
            None => return Ok(None),
        },
        Some(b) => {
            return Err(ctx.err(format!(
                "B is {} {:?}: the bias must be int32 of shape [{m}]",
                b.dtype.name(),
                b.shape
            )));
        }
    };
    let (kind, rq) = multipliers(ctx, sx[0], &sw, sy[0], Layer::Conv)?;
    let spec = Spec {
        x: 0,
        xz: 2,
        w: 3,
        wz: 5,
        out: (y_dt, kind, zy),
        rq: Some(rq),
        bias,
    };
    lower(ctx, spec)
}
