//! Layer normalization over the trailing axes, with optional scale and bias broadcast to the
//! normalized shape: `y = (x − mean) / √(var + ε) · scale + bias`, then the fused activation.
//! Mean and variance accumulate in f64 (two passes) for accuracy.

use ge_runtime::format::{LayerNormParams, Shape, TensorMut, TensorRef};

use super::broadcast::broadcast_strides;
use super::unary::apply_activation;
use super::{KernelError, KernelResult, input, output, vmath};
use crate::arch::isa;

/// A scale or bias: its values and strides broadcast to the normalized shape.
type Param<'a> = Option<(&'a [f32], [usize; 8])>;

fn param<'a>(t: Option<&Option<TensorRef<'a>>>, norm: &Shape) -> Result<Param<'a>, KernelError> {
    match t.and_then(|t| t.as_ref()) {
        None => Ok(None),
        Some(t) => {
            let v = t.as_slice::<f32>()?;
            if v.len() != t.shape.numel() {
                return Err(KernelError::Shape("layer norm parameter length"));
            }
            Ok(Some((v, broadcast_strides(&t.shape, norm)?)))
        }
    }
}

/// Runs LayerNorm.
pub fn run_layer_norm(
    p: &LayerNormParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "x")?;
    let xs = x.shape;
    let axis = p.axis as usize;
    if axis >= xs.rank().max(1) {
        return Err(KernelError::BadParams("layer norm axis"));
    }
    let xv = x.as_slice::<f32>()?;
    let norm = Shape::new(&xs.dims()[axis..]).ok_or(KernelError::Shape("rank"))?;
    let n = norm.numel();
    let scale = param(ins.get(1), &norm)?;
    let bias = param(ins.get(2), &norm)?;
    let y = output(outs, 0, "y")?;
    if y.shape != xs {
        return Err(KernelError::Shape("layer norm output shape"));
    }
    let yv = y.as_slice_mut::<f32>()?;
    if xv.len() != xs.numel() || yv.len() != xv.len() || n == 0 {
        return Ok(());
    }
    // Offsets of each normalized element into scale/bias (broadcast), computed per row.
    let nd = norm.dims();
    let gather = |strides: &[usize; 8], i: usize| -> usize {
        let mut rem = i;
        let mut off = 0;
        for a in (0..nd.len()).rev() {
            off += (rem % nd[a]) * strides[a];
            rem /= nd[a];
        }
        off
    };
    let contiguous =
        |s: &Option<(&[f32], [usize; 8])>| s.as_ref().is_none_or(|(v, _)| v.len() == n);
    let fast = contiguous(&scale) && contiguous(&bias);
    isa::with_simd(
        #[inline(always)]
        || -> Result<(), KernelError> {
            for (xr, yr) in xv.chunks_exact(n).zip(yv.chunks_exact_mut(n)) {
                let mean = vmath::sum_by(xr, f64::from) / n as f64;
                let var = vmath::sum_by(xr, |v| {
                    let d = f64::from(v) - mean;
                    d * d
                }) / n as f64;
                let inv = 1.0 / libm::sqrt(var + f64::from(p.epsilon));
                for (yo, &xi) in yr.iter_mut().zip(xr) {
                    *yo = ((f64::from(xi) - mean) * inv) as f32;
                }
                if fast {
                    // Same operations as below, one vectorizable pass each.
                    if let Some((s, _)) = &scale {
                        yr.iter_mut().zip(*s).for_each(|(y, &s)| *y *= s);
                    }
                    if let Some((b, _)) = &bias {
                        yr.iter_mut().zip(*b).for_each(|(y, &b)| *y += b);
                    }
                    continue;
                }
                for (i, yo) in yr.iter_mut().enumerate() {
                    if let Some((s, st)) = &scale {
                        *yo *= *s
                            .get(gather(st, i))
                            .ok_or(KernelError::Shape("scale index"))?;
                    }
                    if let Some((b, st)) = &bias {
                        *yo += *b
                            .get(gather(st, i))
                            .ok_or(KernelError::Shape("bias index"))?;
                    }
                }
            }
            Ok(())
        },
    )?;
    if p.act.op != 0 {
        apply_activation(&p.act, yv)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use ge_runtime::format::{Activation, DType};

    use super::*;

    fn bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    #[allow(clippy::excessive_precision)]
    fn normalizes_rows_with_scale_and_bias() {
        // numpy: x=[[1,2,3,4],[2,2,2,6]]; ((x-m)/sqrt(v+1e-5))*g+b with g=[1,2,1,1], b=[0,0,1,0]
        let xb = bytes(&[1.0, 2.0, 3.0, 4.0, 2.0, 2.0, 2.0, 6.0]);
        let gb = bytes(&[1.0, 2.0, 1.0, 1.0]);
        let bb = bytes(&[0.0, 0.0, 1.0, 0.0]);
        let xs = Shape::new(&[2, 4]).unwrap();
        let ps = Shape::new(&[4]).unwrap();
        let ins = [
            Some(TensorRef {
                dtype: DType::F32,
                shape: xs,
                data: &xb,
            }),
            Some(TensorRef {
                dtype: DType::F32,
                shape: ps,
                data: &gb,
            }),
            Some(TensorRef {
                dtype: DType::F32,
                shape: ps,
                data: &bb,
            }),
        ];
        let mut out = [0u8; 32];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: xs,
            data: &mut out,
        }];
        let p = LayerNormParams {
            axis: 1,
            epsilon: 1e-5,
            act: Activation::default(),
        };
        run_layer_norm(&p, &ins, &mut outs).unwrap();
        let got: Vec<f32> = out
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let want = [
            -1.341_635_9,
            -0.894_423_9,
            1.447_211_9,
            1.341_635_9,
            -0.577_348_7,
            -1.154_697_4,
            0.422_651_3,
            1.732_046_1,
        ];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-5, "{got:?}");
        }
    }
}
