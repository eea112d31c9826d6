//! Fused attention: for every batch and query row, `softmax(q·Kt·scale + mask)·V` with the
//! score row kept in the workspace (T floats), so the S×T score matrix never reaches global
//! memory. The softmax subtracts the row maximum.

use ge_runtime::format::{AttentionParams, MAX_RANK, Shape, TensorMut, TensorRef};

use super::broadcast::broadcast_strides;
use super::{KernelError, KernelResult, input, output, vmath};
use crate::arch::isa;

/// Scratch bytes: one score row of T floats.
pub fn attention_workspace_bytes(in_shapes: &[Option<Shape>]) -> usize {
    in_shapes
        .get(1)
        .copied()
        .flatten()
        .map_or(0, |k| k.dims().last().copied().unwrap_or(0) * 4)
}

/// Attention geometry: `batch` products of `[s, d]·[d, t]` scores and `[t, e]` values, and
/// the mask's broadcast strides over the `[…, s, t]` scores.
pub(crate) struct Geometry {
    pub(crate) batch: usize,
    pub(crate) s: usize,
    pub(crate) d: usize,
    pub(crate) t: usize,
    pub(crate) e: usize,
    scores: Shape,
    mask_strides: Option<[usize; MAX_RANK]>,
}

impl Geometry {
    /// Checks the operand and output shapes (element types are the caller's).
    pub(crate) fn new(ins: &[Option<TensorRef<'_>>], y: &Shape) -> Result<Geometry, KernelError> {
        let (q, k, v) = (
            input(ins, 0, "Q")?,
            input(ins, 1, "Kt")?,
            input(ins, 2, "V")?,
        );
        let r = q.shape.rank();
        if r < 2 || k.shape.rank() != r || v.shape.rank() != r {
            return Err(KernelError::Shape(
                "attention operands must share a rank ≥ 2",
            ));
        }
        let (qd, kd, vd) = (q.shape.dims(), k.shape.dims(), v.shape.dims());
        let (s, d, t, e) = (qd[r - 2], qd[r - 1], kd[r - 1], vd[r - 1]);
        if kd[r - 2] != d
            || vd[r - 2] != t
            || qd[..r - 2] != kd[..r - 2]
            || qd[..r - 2] != vd[..r - 2]
        {
            return Err(KernelError::Shape("attention operand shapes do not chain"));
        }
        let mut want = [0usize; MAX_RANK];
        want[..r].copy_from_slice(qd);
        want[r - 1] = e;
        if y.dims() != &want[..r] {
            return Err(KernelError::Shape("attention output shape"));
        }
        want[r - 1] = t;
        let scores = Shape::new(&want[..r]).ok_or(KernelError::Shape("rank"))?;
        let mask_strides = match ins.get(3).and_then(|m| m.as_ref()) {
            Some(m) => Some(broadcast_strides(&m.shape, &scores)?),
            None => None,
        };
        Ok(Geometry {
            batch: qd[..r - 2].iter().product(),
            s,
            d,
            t,
            e,
            scores,
            mask_strides,
        })
    }

    /// The mask's view of batch `b`: its offset and its row and column strides.
    fn mask_at(&self, b: usize) -> Option<(usize, usize, usize)> {
        let st = self.mask_strides.as_ref()?;
        let (sd, r) = (self.scores.dims(), self.scores.rank());
        let (mut base, mut rem) = (0usize, b);
        for a in (0..r - 2).rev() {
            base += (rem % sd[a]) * st[a];
            rem /= sd[a];
        }
        Some((base, st[r - 2], st[r - 1]))
    }

    /// Attention of batch `b` on f32 operands: `q` `[s, d]`, `k` `[d, t]`, `v` `[t, e]`, the
    /// whole `mask`, into `y` `[s, e]`, with `row` (`t` floats) holding one score row.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn attend(
        &self,
        p: &AttentionParams,
        b: usize,
        (q, k, v): (&[f32], &[f32], &[f32]),
        mask: Option<&[f32]>,
        y: &mut [f32],
        row: &mut [f32],
    ) -> KernelResult {
        let (s, d, t, e) = (self.s, self.d, self.t, self.e);
        let mask = mask.zip(self.mask_at(b));
        for i in 0..s {
            row.fill(0.0);
            for (c, &qc) in q[i * d..(i + 1) * d].iter().enumerate() {
                for (rj, &kj) in row.iter_mut().zip(&k[c * t..(c + 1) * t]) {
                    *rj += qc * kj;
                }
            }
            let mut max = f32::NEG_INFINITY;
            for (j, rj) in row.iter_mut().enumerate() {
                *rj *= p.scale;
                if let Some((m, (base, si, sj))) = mask {
                    *rj += *m
                        .get(base + i * si + j * sj)
                        .ok_or(KernelError::Shape("mask index"))?;
                }
                max = max.max(*rj);
            }
            for rj in row.iter_mut() {
                *rj = vmath::exp(*rj - max);
            }
            let sum = vmath::sum_by(row, |v| v);
            let out = &mut y[i * e..(i + 1) * e];
            out.fill(0.0);
            for (j, &pj) in row.iter().enumerate() {
                let w = pj / sum;
                for (o, &vj) in out.iter_mut().zip(&v[j * e..(j + 1) * e]) {
                    *o += w * vj;
                }
            }
        }
        Ok(())
    }
}

/// Runs fused attention.
pub fn run_attention(
    p: &AttentionParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let y = output(outs, 0, "Y")?;
    let g = Geometry::new(ins, &y.shape)?;
    let (s, d, t, e) = (g.s, g.d, g.t, g.e);
    let (qv, kv, vv) = (
        input(ins, 0, "Q")?.as_slice::<f32>()?,
        input(ins, 1, "Kt")?.as_slice::<f32>()?,
        input(ins, 2, "V")?.as_slice::<f32>()?,
    );
    let batch = g.batch;
    if qv.len() != batch * s * d || kv.len() != batch * d * t || vv.len() != batch * t * e {
        return Err(KernelError::Shape("attention operand lengths"));
    }
    let mask = match ins.get(3).and_then(|m| m.as_ref()) {
        Some(m) => Some(m.as_slice::<f32>()?),
        None => None,
    };
    let yv = y.as_slice_mut::<f32>()?;
    let row: &mut [f32] = bytemuck::try_cast_slice_mut(ws).map_err(|_| KernelError::Workspace)?;
    let row = row.get_mut(..t).ok_or(KernelError::Workspace)?;
    isa::with_simd(
        #[inline(always)]
        || -> Result<(), KernelError> {
            for b in 0..batch {
                let ops = (
                    &qv[b * s * d..(b + 1) * s * d],
                    &kv[b * d * t..(b + 1) * d * t],
                    &vv[b * t * e..(b + 1) * t * e],
                );
                g.attend(p, b, ops, mask, &mut yv[b * s * e..(b + 1) * s * e], row)?;
            }
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use ge_runtime::format::DType;

    use super::*;

    fn b(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn matches_unfused_reference() {
        // S=2, D=2, T=3, E=1; numpy reference: softmax(q@kt*0.5 + mask) @ v
        let (qb, kb, vb, mb) = (
            b(&[1.0, 0.0, 0.5, -1.0]),
            b(&[1.0, 0.0, 2.0, 0.0, 1.0, -1.0]),
            b(&[1.0, 2.0, 3.0]),
            b(&[0.0, 0.0, -1e4]),
        );
        let sh = |d: &[usize]| Shape::new(d).unwrap();
        let ins = [
            Some(TensorRef {
                dtype: DType::F32,
                shape: sh(&[2, 2]),
                data: &qb,
            }),
            Some(TensorRef {
                dtype: DType::F32,
                shape: sh(&[2, 3]),
                data: &kb,
            }),
            Some(TensorRef {
                dtype: DType::F32,
                shape: sh(&[3, 1]),
                data: &vb,
            }),
            Some(TensorRef {
                dtype: DType::F32,
                shape: sh(&[3]),
                data: &mb,
            }),
        ];
        let mut out = [0u8; 8];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: sh(&[2, 1]),
            data: &mut out,
        }];
        let mut ws = [0u64; 2];
        run_attention(
            &AttentionParams {
                scale: 0.5,
                reserved: 0,
            },
            &ins,
            &mut outs,
            bytemuck::cast_slice_mut(&mut ws),
        )
        .unwrap();
        let got: Vec<f32> = out
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        // row0 scores [0.5, 0, -inf] → p=[0.6225,0.3775] → 1.3775; row1 [0.25,-0.5,..] → [0.6792,0.3208] → 1.3208
        assert!(
            (got[0] - 1.377_540_7).abs() < 1e-5 && (got[1] - 1.320_821_3).abs() < 1e-5,
            "{got:?}"
        );
    }
}
