//! BitCast: reinterprets a tensor's bytes as another dtype of the same width (a reshape-like
//! byte view, so usually free). (BitwiseNot is decomposed in `decomp.rs`.)

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::registry::OpEntry;
use super::registry::dtypes::ANY;
use crate::error::Result;
use crate::ir::Op;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] =
    &[OpEntry::kernel("BitCast", 26, ANY, bitcast).note("a byte view (free unless copied)")];

/// BitCast: the input's bytes under the target dtype (same element width, same shape).
fn bitcast(ctx: &NodeCtx<'_>) -> Result<Imported> {
    let x = ctx.input(0)?;
    let to = ctx.attr_i("to").ok_or_else(|| ctx.err("to is required"))?;
    let dtype = u8::try_from(to)
        .ok()
        .and_then(DType::from_u8)
        .ok_or_else(|| ctx.unsupported(format!("target element type {to}")))?;
    if dtype.size() != x.dtype.size() {
        return Err(ctx.err(format!(
            "{} and {} differ in bit width",
            x.dtype.name(),
            dtype.name()
        )));
    }
    Ok(Imported::one(Op::Reshape, vec![0], dtype, x.shape.to_vec()))
}
