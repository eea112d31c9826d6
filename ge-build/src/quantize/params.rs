//! Scales and zero points: activations from a calibrated range, weights symmetric int8 (per
//! tensor or per channel), biases int32 at `s_input · s_weight`. Values are rounded half to
//! even, as ONNX's QuantizeLinear rounds. O(elements).

use serde::Serialize;

/// The quantization of one activation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ActParams {
    pub scale: f32,
    pub zero_point: i32,
    /// int8 (symmetric, zero point 0) rather than uint8.
    pub signed: bool,
}

/// The parameters of an activation whose values lie in `[lo, hi]`: uint8 over the range
/// widened to hold 0 (`scale = (hi − lo)/255`, zero point `round(−lo/scale)`), or with
/// `symmetric` int8 over `±max(|lo|, |hi|)` (`scale = max/127`, zero point 0). An empty
/// range gets scale 1 (a zero scale is malformed).
pub fn activation(lo: f32, hi: f32, symmetric: bool) -> ActParams {
    let (lo, hi) = (lo.min(0.0), hi.max(0.0));
    if symmetric {
        let m = lo.abs().max(hi);
        return ActParams {
            scale: if m > 0.0 { m / 127.0 } else { 1.0 },
            zero_point: 0,
            signed: true,
        };
    }
    let scale = if hi > lo { (hi - lo) / 255.0 } else { 1.0 };
    ActParams {
        scale,
        zero_point: ((-lo / scale).round_ties_even() as i32).clamp(0, 255),
        signed: false,
    }
}

/// Symmetric int8 weights and their scales (one per slice along `axis`, or one).
#[derive(Clone, Debug)]
pub struct QuantWeights {
    pub values: Vec<i8>,
    pub scales: Vec<f32>,
}

/// Quantizes `w` (shape `dims`) to int8 in `[−127, 127]`, one scale per index of `axis`
/// (`Some`) or one for the tensor (`None`): `scale = max|w| / 127` (1 for an all-zero slice).
pub fn weights(w: &[f32], dims: &[usize], axis: Option<usize>) -> QuantWeights {
    let (channels, inner) = match axis {
        Some(a) => (dims[a], dims[a + 1..].iter().product::<usize>()),
        None => (1, w.len().max(1)),
    };
    let channel = |i: usize| (i / inner.max(1)) % channels.max(1);
    let mut max = vec![0f32; channels.max(1)];
    for (i, x) in w.iter().enumerate() {
        let c = channel(i);
        max[c] = max[c].max(x.abs());
    }
    let scales: Vec<f32> = max
        .iter()
        .map(|&m| if m > 0.0 { m / 127.0 } else { 1.0 })
        .collect();
    let values = w
        .iter()
        .enumerate()
        .map(|(i, x)| {
            (x / scales[channel(i)])
                .round_ties_even()
                .clamp(-127.0, 127.0) as i8
        })
        .collect();
    QuantWeights { values, scales }
}

/// The int32 bias and its scales (`s_input · s_weight[c]`, one per weight scale).
pub fn bias(b: &[f32], input_scale: f32, weight_scales: &[f32]) -> (Vec<i32>, Vec<f32>) {
    let scales: Vec<f32> = if weight_scales.len() == 1 {
        vec![input_scale * weight_scales[0]]
    } else {
        weight_scales.iter().map(|s| input_scale * s).collect()
    };
    let values = b
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let s = scales[if scales.len() == 1 { 0 } else { i }];
            (f64::from(*x) / f64::from(s))
                .round_ties_even()
                .clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32
        })
        .collect();
    (values, scales)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activation_weight_and_bias_parameters() {
        let a = activation(-1.0, 3.0, false);
        assert_eq!((a.scale, a.zero_point, a.signed), (4.0 / 255.0, 64, false));
        assert_eq!(activation(0.5, 2.55, false).zero_point, 0);
        assert_eq!(activation(0.0, 0.0, false).scale, 1.0);
        let s = activation(-2.54, 1.0, true);
        assert_eq!((s.scale, s.zero_point), (0.02, 0));
        // Per channel along axis 0 of [2, 3]: each row's max maps to 127.
        let q = weights(&[1.0, -0.5, 0.25, 0.0, 0.0, -2.0], &[2, 3], Some(0));
        assert_eq!(q.scales, vec![1.0 / 127.0, 2.0 / 127.0]);
        assert_eq!(q.values, vec![127, -64, 32, 0, 0, -127]);
        // Along axis 1 of [2, 2] (a MatMul's columns).
        let q = weights(&[1.0, 4.0, -2.0, 0.0], &[2, 2], Some(1));
        assert_eq!(q.scales, vec![2.0 / 127.0, 4.0 / 127.0]);
        assert_eq!(q.values, vec![64, 127, -127, 0]);
        assert_eq!(weights(&[0.0, 0.0], &[2], None).scales, vec![1.0]);
        let (v, s) = bias(&[0.5, -1.0], 0.5, &[0.25, 1.0]);
        assert_eq!((v, s), (vec![4, -2], vec![0.125, 0.5]));
    }
}
