//! Constant / reflect / edge / wrap padding (negative pads crop).
//!
//! Negative pads first crop the input (as onnxruntime does); the positive pads then extend the
//! cropped view, reflect / edge / wrap reading from that view with numpy's semantics (pads larger
//! than the view repeat the reflection / wrap).

use ge_runtime::format::{DType, MAX_RANK, PadMode, PadParams, TensorMut, TensorRef};

use super::copy::checked_len;
use super::{KernelError, KernelResult, input, output};

/// One axis: output length, positive begin pad, and the cropped input window `[lo, lo + len)`.
#[derive(Clone, Copy, Default)]
struct Axis {
    out: usize,
    pad: usize,
    lo: usize,
    len: usize,
}

impl Axis {
    /// Input index for output index `o`, or `None` for the constant fill.
    fn source(&self, o: usize, mode: PadMode) -> Option<usize> {
        let t = o as i64 - self.pad as i64;
        let l = self.len as i64;
        let j = if (0..l).contains(&t) {
            t
        } else {
            match mode {
                PadMode::Constant => return None,
                PadMode::Edge => t.clamp(0, l - 1),
                PadMode::Wrap => t.rem_euclid(l),
                PadMode::Reflect => {
                    if l == 1 {
                        0
                    } else {
                        let period = 2 * (l - 1);
                        let m = t.rem_euclid(period);
                        if m >= l { period - m } else { m }
                    }
                }
            }
        };
        Some(self.lo + j as usize)
    }
}

/// The constant fill value as the bytes of one element of `dtype`.
pub fn fill_bytes(value: f64, dtype: DType) -> [u8; 8] {
    let mut b = [0u8; 8];
    match dtype {
        DType::F32 => b[..4].copy_from_slice(&(value as f32).to_le_bytes()),
        DType::F64 => b.copy_from_slice(&value.to_le_bytes()),
        DType::F16 => b[..2].copy_from_slice(&f32_to_f16(value as f32).to_le_bytes()),
        DType::Bf16 => b[..2].copy_from_slice(&f32_to_bf16(value as f32).to_le_bytes()),
        DType::U8 => b[0] = value as u8,
        DType::I8 => b[0] = value as i8 as u8,
        DType::Bool => b[0] = (value != 0.0) as u8,
        DType::U16 => b[..2].copy_from_slice(&(value as u16).to_le_bytes()),
        DType::I16 => b[..2].copy_from_slice(&(value as i16).to_le_bytes()),
        DType::I32 => b[..4].copy_from_slice(&(value as i32).to_le_bytes()),
        DType::U32 => b[..4].copy_from_slice(&(value as u32).to_le_bytes()),
        DType::I64 => b.copy_from_slice(&(value as i64).to_le_bytes()),
        DType::U64 => b.copy_from_slice(&(value as u64).to_le_bytes()),
    }
    b
}

/// IEEE half bits of `v`, rounding to nearest even.
pub fn f32_to_f16(v: f32) -> u16 {
    let x = v.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let man = x & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let mut r = m >> shift;
        let rem = m & ((1u32 << shift) - 1);
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1; // a carry into the exponent is the correct rounding (up to infinity)
    }
    sign | r as u16
}

/// bfloat16 bits of `v`, rounding to nearest even.
pub fn f32_to_bf16(v: f32) -> u16 {
    let x = v.to_bits();
    if v.is_nan() {
        return ((x >> 16) as u16) | 0x40;
    }
    ((x as u64 + 0x7fff + ((x >> 16) & 1) as u64) >> 16) as u16
}

/// Pads (or crops) every axis by `begin`/`end`; any dtype.
pub fn run_pad(
    p: &PadParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
) -> KernelResult {
    let x = input(ins, 0, "pad input")?;
    let y = output(outs, 0, "pad output")?;
    let mode = PadMode::from_u32(p.mode).ok_or(KernelError::BadParams("unknown pad mode"))?;
    if x.dtype != y.dtype {
        return Err(KernelError::Shape("pad changes the dtype"));
    }
    let rank = x.shape.rank();
    if y.shape.rank() != rank {
        return Err(KernelError::Shape("pad changes the rank"));
    }
    checked_len(&x.shape, x.dtype, x.data.len())?;
    let total = checked_len(&y.shape, y.dtype, y.data.len())?;
    let es = x.dtype.size();
    if rank == 0 {
        y.data.copy_from_slice(x.data);
        return Ok(());
    }
    let mut axes = [Axis::default(); MAX_RANK];
    for (i, axis) in axes.iter_mut().enumerate().take(rank) {
        let (d, o) = (x.shape.dims()[i] as i64, y.shape.dims()[i] as i64);
        let (b, e) = (p.begin[i], p.end[i]);
        let lo = b
            .checked_neg()
            .ok_or(KernelError::BadParams("pad out of range"))?
            .max(0);
        let hi_crop = e
            .checked_neg()
            .ok_or(KernelError::BadParams("pad out of range"))?
            .max(0);
        let len = d
            .checked_sub(lo)
            .and_then(|v| v.checked_sub(hi_crop))
            .filter(|&v| v >= 0);
        let len = len.ok_or(KernelError::BadParams(
            "negative pads crop more than the axis",
        ))?;
        if d.checked_add(b).and_then(|v| v.checked_add(e)) != Some(o) {
            return Err(KernelError::Shape(
                "pad output shape does not match the pads",
            ));
        }
        if len == 0 && o > 0 && mode != PadMode::Constant {
            return Err(KernelError::BadParams(
                "cannot reflect/edge/wrap-pad an empty axis",
            ));
        }
        *axis = Axis {
            out: o as usize,
            pad: b.max(0) as usize,
            lo: lo as usize,
            len: len as usize,
        };
    }
    if total == 0 {
        return Ok(());
    }
    let fill = fill_bytes(p.value, x.dtype);
    let fill = &fill[..es];
    let mut in_strides = x.shape.strides();
    // Trailing axes left as they are join the element: a pad of [1, 172, 273, 1] along
    // axis 2 copies rows of 273 values, not 47,000 rows of one (basic-pitch's harmonic
    // stacking: 575 µs per Pad, 10 ns a value).
    let kept = axes[..rank]
        .iter()
        .rev()
        .take_while(|a| a.pad == 0 && a.lo == 0 && a.len == a.out)
        .count();
    if kept == rank {
        y.data.copy_from_slice(&x.data[..y.data.len()]);
        return Ok(());
    }
    let rank = rank - kept;
    let inner = in_strides[rank - 1];
    for s in &mut in_strides[..rank] {
        *s /= inner;
    }
    let es = es * inner;
    let last = axes[rank - 1];
    let row_bytes = last.out * es;
    let mut index = [0usize; MAX_RANK];
    for row in y.data.chunks_exact_mut(row_bytes) {
        // Source row offset (elements) from the outer axes, or constant.
        let mut src = Some(0usize);
        for a in 0..rank - 1 {
            src = match (src, axes[a].source(index[a], mode)) {
                (Some(s), Some(j)) => Some(s + j * in_strides[a]),
                _ => None,
            };
        }
        match src {
            None => fill_with(row, fill),
            Some(base) => {
                // middle: a contiguous run of the cropped input row
                let mid = (last.pad.min(last.out), (last.pad + last.len).min(last.out));
                if mid.1 > mid.0 {
                    let s = (base + last.lo) * es;
                    let n = (mid.1 - mid.0) * es;
                    row[mid.0 * es..mid.1 * es].copy_from_slice(&x.data[s..s + n]);
                }
                for o in (0..mid.0).chain(mid.1..last.out) {
                    let dst = &mut row[o * es..(o + 1) * es];
                    match last.source(o, mode) {
                        None => fill_with(dst, fill),
                        Some(j) => {
                            let s = (base + j) * es;
                            dst.copy_from_slice(&x.data[s..s + es]);
                        }
                    }
                }
            }
        }
        // advance the outer odometer
        let mut a = rank - 1;
        while a > 0 {
            a -= 1;
            index[a] += 1;
            if index[a] < axes[a].out {
                break;
            }
            index[a] = 0;
        }
    }
    Ok(())
}

/// `dst` as repeats of one element's bytes.
fn fill_with(dst: &mut [u8], fill: &[u8]) {
    for e in dst.chunks_exact_mut(fill.len()) {
        e.copy_from_slice(fill);
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use ge_runtime::format::Shape;
    use std::vec::Vec;

    fn pad(
        x: &[f32],
        xd: &[usize],
        mode: PadMode,
        b: &[i64],
        e: &[i64],
        v: f64,
    ) -> Result<Vec<f32>, KernelError> {
        let mut p = PadParams {
            mode: mode as u32,
            reserved: 0,
            begin: [0; MAX_RANK],
            end: [0; MAX_RANK],
            value: v,
        };
        p.begin[..b.len()].copy_from_slice(b);
        p.end[..e.len()].copy_from_slice(e);
        let yd: Vec<usize> = xd
            .iter()
            .zip(b.iter().zip(e))
            .map(|(&d, (&b, &e))| (d as i64 + b + e).max(0) as usize)
            .collect();
        let mut y = std::vec![0f32; yd.iter().product()];
        let ins = [Some(TensorRef {
            dtype: DType::F32,
            shape: Shape::new(xd).unwrap(),
            data: bytemuck::cast_slice(x),
        })];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&yd).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_pad(&p, &ins, &mut outs)?;
        Ok(y)
    }

    #[test]
    fn numpy_modes() {
        let x = [1.0f32, 2.0, 3.0];
        // np.pad([1,2,3], (4,5), mode)
        assert_eq!(
            pad(&x, &[3], PadMode::Constant, &[2], &[1], 9.0).unwrap(),
            [9., 9., 1., 2., 3., 9.]
        );
        assert_eq!(
            pad(&x, &[3], PadMode::Edge, &[2], &[1], 0.0).unwrap(),
            [1., 1., 1., 2., 3., 3.]
        );
        assert_eq!(
            pad(&x, &[3], PadMode::Reflect, &[4], &[5], 0.0).unwrap(),
            [1., 2., 3., 2., 1., 2., 3., 2., 1., 2., 3., 2.]
        );
        assert_eq!(
            pad(&x, &[3], PadMode::Wrap, &[4], &[5], 0.0).unwrap(),
            [3., 1., 2., 3., 1., 2., 3., 1., 2., 3., 1., 2.]
        );
    }

    #[test]
    fn two_d_and_crop() {
        // x = [[1,2],[3,4]]; np.pad(x, ((1,0),(0,2)), 'reflect') = [[3,4,3,4],[1,2,1,2],[3,4,3,4]]
        let x = [1.0f32, 2., 3., 4.];
        assert_eq!(
            pad(&x, &[2, 2], PadMode::Reflect, &[1, 0], &[0, 2], 0.0).unwrap(),
            [3., 4., 3., 4., 1., 2., 1., 2., 3., 4., 3., 4.]
        );
        // constant, outer axis padded
        assert_eq!(
            pad(&x, &[2, 2], PadMode::Constant, &[1, 1], &[0, 0], -1.0).unwrap(),
            [-1., -1., -1., -1., 1., 2., -1., 3., 4.]
        );
        // crop: x[:, 1:] then edge-pad 1 at the end of axis 1
        let x: Vec<f32> = (0..6).map(|v| v as f32).collect(); // [2,3]
        assert_eq!(
            pad(&x, &[2, 3], PadMode::Edge, &[0, -1], &[0, 1], 0.0).unwrap(),
            [1., 2., 2., 4., 5., 5.]
        );
        assert_eq!(
            pad(&x, &[2, 3], PadMode::Constant, &[-1, -1], &[0, -1], 0.0).unwrap(),
            [4.]
        );
        assert!(pad(&x, &[2, 3], PadMode::Constant, &[0, -4], &[0, 1], 0.0).is_err());
    }

    /// Trailing axes without pads join the element: every mode, with crops, against the
    /// same pads applied to each 1-D fiber along the padded axis.
    #[test]
    fn trailing_unpadded_axes() {
        let xd = [2, 5, 3, 2];
        let x: Vec<f32> = (0..60).map(|v| v as f32 * 0.5 - 7.0).collect();
        for mode in [
            PadMode::Constant,
            PadMode::Edge,
            PadMode::Reflect,
            PadMode::Wrap,
        ] {
            for (b, e) in [(2, 3), (0, 4), (-1, 2), (3, -2), (7, 6)] {
                let got = pad(&x, &xd, mode, &[0, b, 0, 0], &[0, e, 0, 0], 1.5).unwrap();
                let out = (5 + b + e) as usize;
                let mut want = std::vec![0f32; 2 * out * 6];
                for i in 0..2 {
                    for k in 0..6 {
                        let fiber: Vec<f32> = (0..5).map(|j| x[(i * 5 + j) * 6 + k]).collect();
                        let padded = pad(&fiber, &[5], mode, &[b], &[e], 1.5).unwrap();
                        for (j, v) in padded.into_iter().enumerate() {
                            want[(i * out + j) * 6 + k] = v;
                        }
                    }
                }
                assert_eq!(got, want, "{mode:?} {b} {e}");
            }
        }
        // Nothing padded: a copy.
        assert_eq!(
            pad(&x, &xd, PadMode::Reflect, &[0; 4], &[0; 4], 0.0).unwrap(),
            x
        );
    }

    #[test]
    fn fill_value_dtypes() {
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(-2.5), 0xc100);
        assert_eq!(f32_to_f16(65504.0), 0x7bff);
        assert_eq!(f32_to_f16(1e6), 0x7c00);
        assert_eq!(f32_to_f16(5.960_464_5e-8), 0x0001);
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert_eq!(f32_to_bf16(-3.0), 0xc040);
        let x = [1i64, 2];
        let mut y = [0i64; 3];
        let mut p = PadParams {
            mode: 1,
            reserved: 0,
            begin: [0; MAX_RANK],
            end: [0; MAX_RANK],
            value: -7.0,
        };
        p.end[0] = 1;
        let ins = [Some(TensorRef {
            dtype: DType::I64,
            shape: Shape::new(&[2]).unwrap(),
            data: bytemuck::cast_slice(&x),
        })];
        let mut outs = [TensorMut {
            dtype: DType::I64,
            shape: Shape::new(&[3]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_pad(&p, &ins, &mut outs).unwrap();
        assert_eq!(y, [1, 2, -7]);
    }

    /// Random descriptions must give a result or an error, never a panic.
    #[test]
    fn malformed_never_panics() {
        let mut seed = 9u32;
        let mut r = |n: u32| {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            ((seed >> 8) % n.max(1)) as usize
        };
        let mut oks = 0;
        for _ in 0..3000 {
            let rank = r(4);
            let xd: Vec<usize> = (0..rank).map(|_| r(4)).collect();
            let mut p = PadParams {
                mode: r(6) as u32,
                reserved: 0,
                begin: [0; MAX_RANK],
                end: [0; MAX_RANK],
                value: 2.0,
            };
            let mut yd = Vec::new();
            for (a, &d) in xd.iter().enumerate() {
                p.begin[a] = r(9) as i64 - 4;
                p.end[a] = r(9) as i64 - 4;
                let o = d as i64 + p.begin[a] + p.end[a];
                yd.push(if r(8) == 0 || o < 0 { r(6) } else { o as usize });
            }
            if r(50) == 0 {
                p.begin[0] = i64::MIN;
            }
            let dt = [DType::F32, DType::I64, DType::U8, DType::F16][r(4)];
            let (xs, ys) = (Shape::new(&xd).unwrap(), Shape::new(&yd).unwrap());
            let xb = std::vec![0u64; xs.numel()];
            let mut yb = std::vec![0u64; ys.numel()];
            let xbytes: &[u8] = bytemuck::cast_slice(&xb);
            let ybytes: &mut [u8] = bytemuck::cast_slice_mut(&mut yb);
            let ins = [Some(TensorRef {
                dtype: dt,
                shape: xs,
                data: &xbytes[..xs.numel() * dt.size()],
            })];
            let mut outs = [TensorMut {
                dtype: dt,
                shape: ys,
                data: &mut ybytes[..ys.numel() * dt.size()],
            }];
            oks += usize::from(run_pad(&p, &ins, &mut outs).is_ok());
        }
        assert!(oks > 500, "only {oks} well-formed cases ran");
    }
}
