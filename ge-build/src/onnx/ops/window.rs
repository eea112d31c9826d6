//! Window functions (`HannWindow`, `HammingWindow`, `BlackmanWindow`): compile-time constants,
//! since `size` decides the output's shape and must be known while compiling.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::is_float;
use super::registry::OpEntry;
use super::registry::dtypes::FLOAT;
use super::shape::MAX_CONST_ELEMS;
use super::sub::tensor_data;
use crate::error::Result;

/// The ops this family imports: one registry line each (see [`super::registry`]).
pub const OPS: &[OpEntry] = &[
    OpEntry::constant("BlackmanWindow", 17, FLOAT, |c| window(c, "BlackmanWindow"))
        .note("size known at compile time"),
    OpEntry::constant("HammingWindow", 17, FLOAT, |c| window(c, "HammingWindow"))
        .note("size known at compile time"),
    OpEntry::constant("HannWindow", 17, FLOAT, |c| window(c, "HannWindow"))
        .note("size known at compile time"),
];

/// The window of `size` samples, computed in f64 and rounded to `output_datatype`.
fn window(ctx: &NodeCtx<'_>, t: &str) -> Result<Imported> {
    let size = match ctx.const_ints(0, "size")?.as_deref() {
        Some([n]) => *n,
        _ => return Err(ctx.err("size must be a scalar")),
    };
    let n = usize::try_from(size)
        .ok()
        .filter(|&n| n <= MAX_CONST_ELEMS)
        .ok_or_else(|| ctx.err(format!("size {size} is negative or too large")))?;
    let code = ctx.attr_i_or("output_datatype", DType::F32 as i64);
    let dtype = u8::try_from(code)
        .ok()
        .and_then(DType::from_u8)
        .ok_or_else(|| ctx.unsupported(format!("output_datatype {code}")))?;
    let periodic = ctx.attr_i_or("periodic", 1) != 0;
    let len = if periodic { n as f64 } else { n as f64 - 1.0 };
    let tau = std::f64::consts::TAU;
    let v: Vec<f64> = (0..n)
        .map(|i| {
            let x = i as f64 / len;
            match t {
                "HannWindow" => (std::f64::consts::PI * x).sin().powi(2),
                "HammingWindow" => 25.0 / 46.0 - 21.0 / 46.0 * (tau * x).cos(),
                _ => 0.42 - 0.5 * (tau * x).cos() + 0.08 * (2.0 * tau * x).cos(),
            }
        })
        .collect();
    let v = if is_float(dtype) {
        v
    } else {
        v.iter().map(|x| x.trunc()).collect()
    };
    Ok(Imported::Constants(vec![tensor_data(dtype, vec![n], &v)]))
}
