//! A convolution's geometry: shapes and hyper-parameters normalized to three spatial axes
//! (unit axes first), validated against the tensors.

use super::*;

/// Shapes and hyper-parameters, normalized to 3 spatial axes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geo {
    pub(crate) n: usize,
    pub(crate) c: usize,
    pub(crate) m: usize,
    pub(crate) g: usize,
    pub(crate) cg: usize,
    pub(crate) mg: usize,
    pub(crate) big: [usize; 3],
    pub(crate) small: [usize; 3],
    pub(crate) k: [usize; 3],
    pub(crate) s: [usize; 3],
    pub(crate) d: [usize; 3],
    pub(crate) pb: [usize; 3],
    pub(crate) kprod: usize,
    pub(crate) big_plane: usize,
    pub(crate) small_plane: usize,
    /// The weights are in [`WeightLayout::Panels`] order (pre-packed by the compiler).
    pub(crate) packed: bool,
}

pub(crate) fn bad(m: &'static str) -> KernelError {
    KernelError::Shape(m)
}

pub(super) fn geometry(
    p: &ConvParams,
    transpose: bool,
    x: &Shape,
    w: &Shape,
    y: &Shape,
) -> Result<Geo, KernelError> {
    let sp = p.rank();
    if !(1..=3).contains(&sp) {
        return Err(KernelError::BadParams(
            "conv spatial rank must be 1, 2 or 3",
        ));
    }
    let packed = match p.weight_layout() {
        Some(WeightLayout::Oihw) => false,
        Some(WeightLayout::Panels) if !transpose => true,
        _ => {
            return Err(KernelError::BadParams(
                "conv weight layout unknown to this runtime (or packed for a ConvTranspose)",
            ));
        }
    };
    if x.rank() != sp + 2 || w.rank() != sp + 2 || y.rank() != sp + 2 {
        return Err(bad("conv tensors must have rank spatial + 2"));
    }
    let (xd, wd, yd) = (x.dims(), w.dims(), y.dims());
    let g = p.group as usize;
    if g == 0 {
        return Err(KernelError::BadParams("conv group is zero"));
    }
    let (n, c) = (xd[0], xd[1]);
    if yd[0] != n || c % g != 0 {
        return Err(bad("conv batch or channel/group mismatch"));
    }
    let cg = c / g;
    let (m, mg) = if transpose {
        if wd[0] != c {
            return Err(bad("conv_transpose weight channels differ from the input"));
        }
        (
            wd[1]
                .checked_mul(g)
                .ok_or(bad("conv channel count overflows"))?,
            wd[1],
        )
    } else {
        if wd[1] != cg || wd[0] % g != 0 {
            return Err(bad("conv weight shape does not match channels/group"));
        }
        (wd[0], wd[0] / g)
    };
    if yd[1] != m {
        return Err(bad("conv output channels do not match the weights"));
    }
    let off = 3 - sp;
    let mut geo = Geo {
        n,
        c,
        m,
        g,
        cg,
        mg,
        big: [1; 3],
        small: [1; 3],
        k: [1; 3],
        s: [1; 3],
        d: [1; 3],
        pb: [0; 3],
        kprod: 1,
        big_plane: 1,
        small_plane: 1,
        packed,
    };
    for i in 0..sp {
        let a = off + i;
        let k = wd[2 + i];
        let (s, d) = (p.stride[i] as usize, p.dilation[i] as usize);
        let (pb, pe) = (p.pad_begin[i] as u128, p.pad_end[i] as u128);
        if p.kernel[i] != 0 && p.kernel[i] as usize != k {
            return Err(KernelError::BadParams(
                "conv kernel shape differs from the weights",
            ));
        }
        if s == 0 || d == 0 || k == 0 {
            return Err(KernelError::BadParams(
                "conv stride, dilation and kernel must be positive",
            ));
        }
        let (xi, yi) = (xd[2 + i] as u128, yd[2 + i] as u128);
        let span = (d as u128) * (k as u128 - 1) + 1;
        if transpose {
            // y = s·(x − 1) + output_padding + span − pb − pe
            let full = if xi == 0 {
                0
            } else {
                s as u128 * (xi - 1) + p.output_padding[i] as u128 + span
            };
            if xi == 0 || full < pb + pe || full - pb - pe != yi {
                return Err(bad(
                    "conv_transpose output size does not match the parameters",
                ));
            }
            geo.big[a] = yd[2 + i];
            geo.small[a] = xd[2 + i];
        } else {
            let total = xi + pb + pe;
            if total < span || (total - span) / s as u128 + 1 != yi {
                return Err(bad("conv output size does not match the parameters"));
            }
            geo.big[a] = xd[2 + i];
            geo.small[a] = yd[2 + i];
        }
        geo.k[a] = k;
        geo.s[a] = s;
        geo.d[a] = d;
        geo.pb[a] = p.pad_begin[i] as usize;
    }
    move_unit_axes_first(&mut geo);
    let prod = |v: [usize; 3]| {
        v.iter()
            .try_fold(1usize, |acc, &x| acc.checked_mul(x))
            .ok_or(bad("conv size overflows"))
    };
    geo.kprod = prod(geo.k)?;
    geo.big_plane = prod(geo.big)?;
    geo.small_plane = prod(geo.small)?;
    Ok(geo)
}

/// Moves the spatial axes that do nothing (extent 1 in and out, kernel 1, no padding) in
/// front of the others, keeping the others' order. Such an axis adds no element, so the
/// memory layout is the same either way; what changes is which axis the kernels see as the
/// row: a `[N, C, H, 1]` conv with a `k × 1` kernel (a 1-D conv exported along H, as magika's)
/// becomes one with rows of H outputs, which the direct path tiles, instead of H rows of
/// one output each. O(1).
pub(super) fn move_unit_axes_first(geo: &mut Geo) {
    let unit = |g: &Geo, a: usize| g.big[a] == 1 && g.small[a] == 1 && g.k[a] == 1 && g.pb[a] == 0;
    // A stable partition of three axes: two bubble passes of adjacent swaps.
    for _ in 0..2 {
        for a in 1..3 {
            if unit(geo, a) && !unit(geo, a - 1) {
                for v in [
                    &mut geo.big,
                    &mut geo.small,
                    &mut geo.k,
                    &mut geo.s,
                    &mut geo.d,
                    &mut geo.pb,
                ] {
                    v.swap(a - 1, a);
                }
            }
        }
    }
    for a in 0..3 {
        if unit(geo, a) {
            // A unit axis's stride and dilation never act (one output, one tap).
            (geo.s[a], geo.d[a]) = (1, 1);
        }
    }
}
