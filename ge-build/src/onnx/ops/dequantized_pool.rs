//! The internal node the QLinearAveragePool importer writes when its window covers
//! each whole plane (tf2onnx's Keras `AveragePooling2D` before a classifier):
//! `AveragePool(x int8/uint8, x_scale, x_zero_point)` in ge's reserved domain
//! ([`super::weight_only::DOMAIN`]) → `[N, C, 1, …]` float32, one GlobalPool task that
//! dequantizes each value as it sums it (a GlobalPool: firmware's windowed f32 pools link
//! none of it) — the values a DequantizeLinear task would write,
//! folded in the same order, so the same floats — with no float32 copy of the feature map
//! in the arena (MLPerf Tiny's keyword spotter held 32 KB of its 40 KB arena for it).

use ge_runtime::format::{DType, PoolParams};

use super::super::ctx::{Imported, NodeCtx};
use crate::error::Result;
use crate::ir::Op;

/// The op type in ge's reserved domain: the model's own (`AveragePool`), so reports and
/// precision lists name it as the model does.
pub const OP: &str = "AveragePool";

/// `AveragePool(x [N, C, D1…Dk] int8/uint8, x_scale f32 scalar, x_zero_point f32 scalar)`:
/// the average of each whole plane of `(f32(x) − x_zero_point) · x_scale`, float32.
pub fn import(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let (x, s, z) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    let spatial = x.shape.len().saturating_sub(2);
    if !matches!(x.dtype, DType::I8 | DType::U8) || !(1..=3).contains(&spatial) {
        return Err(ctx.err(format!(
            "X must be int8/uint8 [N, C, D1..Dk] with 1 to 3 spatial axes, got {} {:?}",
            x.dtype.name(),
            x.shape
        )));
    }
    let scalar = |t: &super::super::ctx::InputInfo<'_>| {
        t.dtype == DType::F32 && t.data.is_some() && t.shape.iter().product::<usize>() == 1
    };
    if !scalar(&s) || !scalar(&z) {
        return Err(ctx.err("x_scale and x_zero_point must be float32 scalar constants"));
    }
    let mut kernel = [1u32; 3];
    for (k, &d) in kernel.iter_mut().zip(&x.shape[2..]) {
        *k = u32::try_from(d).map_err(|_| ctx.err("a spatial dimension above 2^32"))?;
    }
    let p = PoolParams::whole_plane_average(spatial as u32, kernel);
    let mut out = x.shape[..2].to_vec();
    out.resize(x.shape.len(), 1);
    Ok(Imported::one(
        Op::GlobalPool(p),
        vec![0, 1, 2],
        DType::F32,
        out,
    ))
}
