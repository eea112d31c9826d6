//! Algebraic simplification: `x + 0`, `x - 0`, `x * 1`, `x / 1` → `x` (when that keeps x's
//! shape and dtype); division by a float constant that is a power of two → multiplication by
//! its (exact) reciprocal;
//! transpose ∘ transpose → one transpose (or none when the permutations cancel).
//! One pass in topological order: O(V + E + constant bytes inspected).

use ge_runtime::format::{BinaryOp, DType, MAX_RANK, TransposeParams};

use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op};
use crate::tensor::TensorData;

/// Algebraic simplification.
pub struct Algebraic;

fn all_equal(d: &TensorData, want: f64) -> bool {
    matches!(d.dtype, DType::F32 | DType::F64 | DType::I32 | DType::I64)
        && d.to_f64_vec().is_ok_and(|v| v.iter().all(|&x| x == want))
}

/// True when `1 / c` is exact, so `x * (1 / c)` is bitwise `x / c`: c and 1/c are normal
/// powers of two. Any other reciprocal rounds, and `x * (1/255)` ≠ `x / 255` in the last bit
/// often enough to move a quantization's rounding (DynamicQuantizeLinear's scale; found by
/// tools/difftest.py, seed 11 graph 4073).
fn exact_reciprocal(c: f32) -> bool {
    let r = 1.0 / c;
    c.is_normal() && r.is_normal() && c.to_bits() & 0x7f_ffff == 0 && r.to_bits() & 0x7f_ffff == 0
}

impl Pass for Algebraic {
    pass_info!("algebraic", O1);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let mut users = g.users();
        let mut changed = false;
        for n in g.topo_order() {
            let node = g.g[n].clone();
            let [y] = node.outputs[..] else { continue };
            match node.op {
                Op::Binary(p) if p.act.is_none() => {
                    let (Some(Some(a)), Some(Some(b))) =
                        (node.inputs.first().copied(), node.inputs.get(1).copied())
                    else {
                        continue;
                    };
                    let op = BinaryOp::from_u32(p.op);
                    let keeps = |x| {
                        g.value(x).shape == g.value(y).shape && g.value(x).dtype == g.value(y).dtype
                    };
                    let neutral = |c, v: f64| g.constant(c).is_some_and(|d| all_equal(d, v));
                    let pass_through = match op {
                        Some(BinaryOp::Add) if neutral(b, 0.0) && keeps(a) => Some(a),
                        Some(BinaryOp::Add) if neutral(a, 0.0) && keeps(b) => Some(b),
                        Some(BinaryOp::Sub) if neutral(b, 0.0) && keeps(a) => Some(a),
                        Some(BinaryOp::Mul) if neutral(b, 1.0) && keeps(a) => Some(a),
                        Some(BinaryOp::Mul) if neutral(a, 1.0) && keeps(b) => Some(b),
                        Some(BinaryOp::Div) if neutral(b, 1.0) && keeps(a) => Some(a),
                        _ => None,
                    };
                    if let Some(x) = pass_through {
                        let u = users.remove(&y).unwrap_or_default();
                        g.replace_uses(y, x, &u);
                        users.entry(x).or_default().extend(u);
                        g.remove_node(n);
                        changed = true;
                    } else if op == Some(BinaryOp::Div)
                        && let Some(d) = g.constant(b)
                        && d.dtype == DType::F32
                        && d.bytes
                            .chunks_exact(4)
                            .all(|c| exact_reciprocal(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                    {
                        let recip: Vec<u8> = d
                            .bytes
                            .chunks_exact(4)
                            .flat_map(|c| {
                                (1.0 / f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_le_bytes()
                            })
                            .collect();
                        let data = TensorData {
                            dtype: DType::F32,
                            dims: d.dims.clone(),
                            bytes: recip,
                        };
                        let c = g.add_constant(format!("{}:reciprocal", g.value(b).name), data);
                        g.set_inputs(n, vec![Some(a), Some(c)]);
                        g.g[n].op = Op::binary(BinaryOp::Mul);
                        changed = true;
                    }
                }
                Op::Transpose(outer) => {
                    let Some(Some(x)) = node.inputs.first().copied() else {
                        continue;
                    };
                    let Some(p) = g.value(x).producer else {
                        continue;
                    };
                    let Op::Transpose(inner) = g.g[p].op else {
                        continue;
                    };
                    let Some(Some(src)) = g.g[p].inputs.first().copied() else {
                        continue;
                    };
                    let rank = g.value(y).shape.len();
                    let mut perm = [0u32; MAX_RANK];
                    for (d, &o) in perm.iter_mut().zip(&outer.perm).take(rank) {
                        *d = inner.perm[o as usize];
                    }
                    if (0..rank).all(|i| perm[i] as usize == i) {
                        let u = users.remove(&y).unwrap_or_default();
                        g.replace_uses(y, src, &u);
                        users.entry(src).or_default().extend(u);
                        g.remove_node(n);
                    } else {
                        g.g[n].op = Op::Transpose(TransposeParams { perm });
                        g.set_inputs(n, vec![Some(src)]);
                        users.entry(src).or_default().push(n);
                    }
                    changed = true;
                }
                _ => {}
            }
        }
        Ok(changed)
    }
}
