//! Value histograms of one activation over the calibration set, and the clipping ranges the
//! `percentile` and `entropy` methods pick from them. A histogram spans the range the min/max
//! pass found, so two passes over the samples build it exactly (no rebinning).

/// Bins of a histogram (as onnxruntime's calibrators use).
pub const BINS: usize = 2048;
/// The quantized bins the entropy method compares against (8 bits: 128 magnitudes).
const LEVELS: usize = 128;

/// A histogram of values in `[lo, hi]`, or of magnitudes in `[0, hi]` (`abs`).
#[derive(Clone, Debug)]
pub struct Histogram {
    lo: f32,
    hi: f32,
    abs: bool,
    bins: Vec<u64>,
}

impl Histogram {
    /// A histogram of the values (`abs = false`, over `[lo, hi]`) or of their magnitudes
    /// (over `[0, max(|lo|, |hi|)]`).
    pub fn new(lo: f32, hi: f32, abs: bool) -> Histogram {
        let (lo, hi) = if abs {
            (0.0, lo.abs().max(hi.abs()))
        } else {
            (lo, hi)
        };
        Histogram {
            lo,
            hi,
            abs,
            bins: vec![0; BINS],
        }
    }

    fn width(&self) -> f32 {
        (self.hi - self.lo) / BINS as f32
    }

    /// Counts `values` (non-finite ones are ignored). O(values).
    pub fn add(&mut self, values: &[f32]) {
        let w = self.width();
        for &v in values.iter().filter(|v| v.is_finite()) {
            let v = if self.abs { v.abs() } else { v };
            let b = if w > 0.0 {
                (((v - self.lo) / w) as usize).min(BINS - 1)
            } else {
                0
            };
            self.bins[b] += 1;
        }
    }

    /// The range keeping the central `p` percent of the values (`p/100` of the mass below the
    /// upper end, `1 − p/100` below the lower end); for magnitudes, `±` the `p`-th
    /// percentile. O(bins).
    pub fn percentile_range(&self, p: f64) -> (f32, f32) {
        let total: u64 = self.bins.iter().sum();
        let at = |q: f64| -> f32 {
            let want = q * total as f64;
            let mut acc = 0u64;
            for (i, &c) in self.bins.iter().enumerate() {
                acc += c;
                if acc as f64 >= want {
                    return self.lo + (i + 1) as f32 * self.width();
                }
            }
            self.hi
        };
        let q = p / 100.0;
        if self.abs {
            let t = at(q);
            (-t, t)
        } else {
            (
                self.lo + (at(1.0 - q) - self.lo - self.width()).max(0.0),
                at(q),
            )
        }
    }

    /// `±` the magnitude threshold whose histogram, clipped there and quantized to 128
    /// levels, is closest in Kullback–Leibler divergence to the unclipped one (TensorRT's
    /// entropy calibration; the histogram must be of magnitudes). O(bins²).
    pub fn entropy_range(&self) -> (f32, f32) {
        // The zero bin (a Relu's output is mostly exact zeros, which 8 bits hold exactly)
        // counts as its neighbour, as NVIDIA's pytorch-quantization does, so that it does not
        // dominate the divergence and pull the threshold down; not for discrete values (an
        // empty neighbour), whose zeros are as real as their other values.
        let mut bins = self.bins.clone();
        if bins[1] > 0 {
            bins[0] = bins[1];
        }
        if bins.iter().all(|&c| c == 0) {
            return (0.0, 0.0);
        }
        let mut best = (f64::INFINITY, BINS);
        for i in LEVELS..=BINS {
            let mut p: Vec<f64> = bins[..i].iter().map(|&c| c as f64).collect();
            p[i - 1] += bins[i..].iter().sum::<u64>() as f64;
            let mut q = vec![0f64; i];
            for j in 0..LEVELS {
                let (s, e) = (
                    j * i / LEVELS,
                    ((j + 1) * i / LEVELS).max(j * i / LEVELS + 1),
                );
                let mass: f64 = bins[s..e].iter().map(|&c| c as f64).sum();
                let nonzero = p[s..e].iter().filter(|&&x| x > 0.0).count();
                if nonzero > 0 {
                    for k in s..e {
                        if p[k] > 0.0 {
                            q[k] = mass / nonzero as f64;
                        }
                    }
                }
            }
            let (ps, qs): (f64, f64) = (p.iter().sum(), q.iter().sum());
            if qs <= 0.0 {
                continue;
            }
            let kl: f64 = p
                .iter()
                .zip(&q)
                .filter(|(x, _)| **x > 0.0)
                .map(|(x, y)| {
                    let (x, y) = (x / ps, (y / qs).max(1e-12));
                    x * (x / y).ln()
                })
                .sum();
            if kl < best.0 {
                best = (kl, i);
            }
        }
        let t = if self.abs {
            best.1 as f32 * self.width()
        } else {
            self.hi
        };
        (-t, t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_clips_outliers_and_entropy_clips_a_long_tail() {
        let mut v: Vec<f32> = (0..10_000).map(|i| (i % 100) as f32 / 100.0).collect();
        v.push(50.0);
        let mut h = Histogram::new(0.0, 50.0, false);
        h.add(&v);
        let (lo, hi) = h.percentile_range(99.9);
        assert!(lo.abs() < 0.05 && hi > 0.9 && hi < 1.1, "{lo} {hi}");
        assert_eq!(h.percentile_range(100.0).1, 50.0);
        let mut m = Histogram::new(-50.0, 50.0, true);
        let neg: Vec<f32> = v.iter().map(|x| -x).collect();
        m.add(&v);
        m.add(&neg);
        let (lo, hi) = m.entropy_range();
        assert_eq!(lo, -hi);
        assert!(hi > 0.9 && hi < 5.0, "{hi}");
    }
}
