//! N-d convolution and transposed convolution (im2col + GEMM).
//!
//! Both ops are normalized to 3 spatial axes (leading unit axes for 1-D / 2-D) and share one
//! geometry: a "big" grid (Conv: the input; ConvTranspose: the output) and a "small" grid
//! (Conv: the output; ConvTranspose: the input) related by `big = small·stride − pad + k·dilation`.
//! Conv gathers the big grid into columns (im2col) and multiplies by the weights; ConvTranspose
//! multiplies by the transposed weights and scatter-adds the columns into the big grid
//! (col2im). Columns are processed in chunks so the workspace stays bounded. Depthwise conv and
//! 1×1 stride-1 conv take direct paths without a column buffer; every other Conv runs the
//! [`direct`] path (the GEMM tile reading a padded copy of the input), the implicit im2col
//! packing only when the direct path's offsets would not fit in 32 bits.

#[cfg(feature = "std")]
mod blocked;
mod depthwise;
#[cfg(all(feature = "std", target_arch = "x86_64"))]
use crate::arch::x86::avx512::depthwise as depthwise_avx512;
mod direct;
#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod lanes;
mod phase_split;

use ge_runtime::format::{ChannelLayout, ConvParams, Shape, TensorMut, TensorRef, WeightLayout};

use super::copy::{f32_in, f32_out};
use super::gemm::{
    ALayout, Epilogue, MatB, NR, PackB, SendPtr, WS_SLOTS, gemm_packed, gemm_packed_ws_len, sgemm,
    sgemm_ws_len, tile_act, ws_f32,
};
use super::{KernelError, KernelResult, input, output};
use crate::arch::isa;
use crate::threads::{Parallel, Serial};

/// Target size of the column buffer, in f32.
const COL_CAP: usize = 1 << 19;
/// Fewest columns per chunk (when a column is longer than `COL_CAP / MIN_COLS`).
const MIN_COLS: usize = 64;
/// Fewest multiply-adds (output elements × taps) worth splitting a depthwise conv between threads.
const PAR_MIN_TAPS: usize = 1 << 16;

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
    packed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// Depthwise conv (group == C == M): a padded, phase-split band per channel and the
    /// outputs in registers ([`depthwise`]); `None`: the row loop (3-D, or no workspace).
    Depthwise(Option<depthwise::Layout>),
    /// Depthwise conv on AVX-512: 16 channels at a time as pixel vectors
    /// ([`depthwise_avx512`]); chosen at run time over the band when the CPU has it.
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    DepthwiseBlocked(depthwise_avx512::Layout),
    /// 1×1, stride 1, unpadded conv: GEMM on the input.
    Pointwise,
    /// Conv: the register tile reading a padded band of the input in place.
    Direct(direct::Layout),
    /// Conv: GEMM on the implicit im2col matrix, packed straight from the input.
    Implicit,
    /// Conv on AVX2: output channels in the lanes, pixels broadcast from the direct path's
    /// band ([`lanes`]); chosen at run time over the direct and im2col paths.
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    Lanes(direct::Layout),
    /// ConvTranspose: GEMM then col2im over column chunks of `cols`.
    Columns { cols: usize },
}

impl Path {
    /// Whether the path applies an epilogue activation ([`tile_act`]) in registers; else
    /// it runs as a pass over the output.
    fn fuses_act(&self) -> bool {
        // The banded depthwise path applies it while copying its outputs out.
        !matches!(self, Path::Depthwise(None))
    }

    /// A depthwise path (no input prologue).
    fn depthwise(&self) -> bool {
        match self {
            Path::Depthwise(_) => true,
            #[cfg(all(feature = "std", target_arch = "x86_64"))]
            Path::DepthwiseBlocked(_) => true,
            _ => false,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Plan {
    geo: Geo,
    path: Path,
    /// Rows of the column buffer (Conv: C/g·Πk; ConvTranspose: M/g·Πk).
    rows: usize,
    /// Column-buffer f32 elements.
    col_len: usize,
    /// GEMM packing f32 elements.
    gemm_len: usize,
}

fn bad(m: &'static str) -> KernelError {
    KernelError::Shape(m)
}

fn geometry(
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
fn move_unit_axes_first(geo: &mut Geo) {
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

fn plan(
    p: &ConvParams,
    transpose: bool,
    x: &Shape,
    w: &Shape,
    y: &Shape,
) -> Result<Plan, KernelError> {
    let geo = geometry(p, transpose, x, w, y)?;
    let ovf = || bad("conv workspace overflows");
    if transpose {
        let rows = geo.mg.checked_mul(geo.kprod).ok_or_else(ovf)?;
        let cols = chunk_cols(rows, geo.small_plane);
        let col_len = rows.checked_mul(cols).ok_or_else(ovf)?;
        return Ok(Plan {
            geo,
            path: Path::Columns { cols },
            rows,
            col_len,
            gemm_len: sgemm_ws_len(rows, cols, geo.cg),
        });
    }
    let rows = geo.cg.checked_mul(geo.kprod).ok_or_else(ovf)?;
    // One channel in and out is an ordinary conv too: the direct path's one-row strips run
    // it with the pixels in the lanes, where the depthwise paths (16 channels a vector, or
    // a row loop) ran basic-pitch's 256-tap filters at 3.6 GFLOP/s.
    if geo.g == geo.c && geo.m == geo.c && geo.c > 1 {
        // The banded path is host speed for the simulator; without `std` (firmware, where
        // flash is what counts) the row loop runs instead: bitwise the same values (tested),
        // about 3 KB less code.
        let lay = if cfg!(feature = "std") {
            depthwise::layout(&geo)
        } else {
            None
        };
        // Room for the AVX-512 channel blocks too, whichever CPU runs the blob.
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        let blocked = depthwise_avx512::layout(&geo).map_or(0, |l| l.ws_len());
        #[cfg(not(all(feature = "std", target_arch = "x86_64")))]
        let blocked = 0;
        return Ok(Plan {
            geo,
            path: Path::Depthwise(lay),
            rows,
            col_len: 0,
            gemm_len: lay.map_or(0, |l| l.ws_len()).max(blocked),
        });
    }
    let gemm_len = gemm_packed_ws_len(geo.small_plane, rows);
    if geo.kprod == 1 && geo.s == [1; 3] && geo.pb == [0; 3] && geo.big == geo.small {
        return Ok(Plan {
            geo,
            path: Path::Pointwise,
            rows,
            col_len: 0,
            gemm_len,
        });
    }
    // A strided 1×1 conv reads each input value at most once: packing its columns for the
    // GEMM gathers them once per N block, where the direct path's band would copy every input
    // row and re-stream the weights for each band of a few output rows.
    let strided_pointwise = geo.kprod == 1 && geo.pb == [0; 3];
    if let Some(lay) = direct::layout(&geo).filter(|_| !strided_pointwise) {
        // Narrow rows run flat tiles where the build stores them in registers, im2col
        // elsewhere (firmware, AVX2): room for both.
        let gemm_len = if lay.narrow {
            lay.ws_len().max(gemm_len)
        } else {
            lay.ws_len()
        };
        let gemm_len = gemm_len.max(lanes_ws_len(&geo, Path::Direct(lay)));
        return Ok(Plan {
            geo,
            path: Path::Direct(lay),
            rows,
            col_len: 0,
            gemm_len,
        });
    }
    Ok(Plan {
        geo,
        path: Path::Implicit,
        rows,
        col_len: 0,
        gemm_len: gemm_len.max(lanes_ws_len(&geo, Path::Implicit)),
    })
}

/// Workspace f32 the lanes path needs where it would take a conv planned on `path`, 0
/// elsewhere: room for it whichever CPU runs the blob (firmware plans none).
fn lanes_ws_len(geo: &Geo, path: Path) -> usize {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if let Some(lay) = lanes_layout(geo, path) {
        return lanes::ws_len(geo, &lay);
    }
    let _ = (geo, path);
    0
}

/// The band the lanes path would read for a conv planned on `path` (the direct path's, or
/// for narrow strided rows planned on im2col one of its own), if the path suits the conv.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
fn lanes_layout(geo: &Geo, path: Path) -> Option<direct::Layout> {
    let lay = match path {
        Path::Direct(lay) => lay,
        Path::Implicit => direct::any_rows_layout(geo)?,
        _ => return None,
    };
    lanes::suits(geo, &lay).then_some(lay)
}

fn chunk_cols(rows: usize, plane: usize) -> usize {
    (COL_CAP / rows.max(1)).max(MIN_COLS).min(plane).max(1)
}

/// Scratch bytes Conv / ConvTranspose need (column buffer plus GEMM packing); 0 for a
/// malformed description (execution then reports the error).
pub fn conv_workspace_bytes(
    p: &ConvParams,
    transpose: bool,
    in_shapes: &[Option<Shape>],
    out_shapes: &[Shape],
) -> usize {
    let (Some(Some(x)), Some(Some(w)), Some(y)) =
        (in_shapes.first(), in_shapes.get(1), out_shapes.first())
    else {
        return 0;
    };
    if !transpose && p.channel_layout() != Some(ChannelLayout::Plain) {
        // Blocked convs read the input and weights in place; one with a prologue (its
        // scale and shift, inputs 4 and 5: a BatchNorm alone has no activation) first
        // writes the transformed input here.
        return if in_shapes.get(4).is_some_and(Option::is_some) {
            x.numel().saturating_mul(4)
        } else {
            0
        };
    }
    match plan(p, transpose, x, w, y) {
        Ok(pl) => pl.col_len.saturating_add(pl.gemm_len).saturating_mul(4),
        Err(_) => 0,
    }
}

/// Output indices `o` in `[o0, o1)` whose big-grid index `o·s + off` lies in `[0, limit)`.
fn valid_range(o0: usize, o1: usize, s: usize, off: i64, limit: usize) -> (usize, usize) {
    let s = s as i64;
    let lo = if off >= 0 { 0 } else { (-off + s - 1) / s };
    let top = limit as i64 - 1 - off;
    let hi = if top < 0 { 0 } else { top / s + 1 };
    let lo = (lo.max(0) as usize).clamp(o0, o1);
    let hi = (hi.max(0) as usize).clamp(lo, o1);
    (lo, hi)
}

/// Big-grid index of small index `o` on axis `a` at kernel tap `t`, if inside the grid.
#[inline]
fn big_index(geo: &Geo, a: usize, o: usize, t: usize) -> Option<usize> {
    let v = (o * geo.s[a] + t * geo.d[a]) as i64 - geo.pb[a] as i64;
    if v >= 0 && (v as usize) < geo.big[a] {
        Some(v as usize)
    } else {
        None
    }
}

/// Walks the column rows `r` (channel, kd, kh, kw) and, for columns `[p0, p0 + cols)`, the
/// runs along the innermost axis, calling `f(r, t, len, big_row, lo, hi, off)` where
/// `t` is the column offset of the run, `big_row` the start of the big-grid row (or `None`
/// when the run's row is outside the grid), `[lo, hi)` the sub-run (relative indices) that
/// maps inside, and `off` the big index of the run's first element (may be negative).
fn walk_columns(
    geo: &Geo,
    channels: usize,
    p0: usize,
    cols: usize,
    mut f: impl FnMut(usize, usize, usize, Option<usize>, usize, usize, i64),
) {
    let [k0, k1, k2] = geo.k;
    let [s0, s1, s2] = geo.small;
    let plane2 = s1 * s2;
    let mut r = 0;
    for ch in 0..channels {
        for t0 in 0..k0 {
            for t1 in 0..k1 {
                for t2 in 0..k2 {
                    let mut p = p0;
                    let mut t = 0;
                    while t < cols {
                        let (o0, o1, o2) = (p / plane2, (p / s2) % s1, p % s2);
                        let len = (s2 - o2).min(cols - t);
                        let row = match (
                            o0 < s0,
                            big_index(geo, 0, o0, t0),
                            big_index(geo, 1, o1, t1),
                        ) {
                            (true, Some(b0), Some(b1)) => {
                                Some((ch * geo.big[0] + b0) * geo.big[1] + b1)
                            }
                            _ => None,
                        };
                        let off = (o2 * geo.s[2] + t2 * geo.d[2]) as i64 - geo.pb[2] as i64;
                        let (lo, hi) = valid_range(
                            o2,
                            o2 + len,
                            geo.s[2],
                            t2 as i64 * geo.d[2] as i64 - geo.pb[2] as i64,
                            geo.big[2],
                        );
                        f(
                            r,
                            t,
                            len,
                            row.map(|r| r * geo.big[2]),
                            lo - o2,
                            hi - o2,
                            off,
                        );
                        p += len;
                        t += len;
                    }
                    r += 1;
                }
            }
        }
    }
}

/// Taps whose valid-output ranges are tabulated per pack call (larger kernels compute them).
const TAP_TABLE: usize = 16;

/// The implicit im2col matrix of one group's input (`cg·Πk` rows × output-plane columns),
/// packed for the GEMM straight from the input: row `r` = (channel, t0, t1, t2), column
/// `j` = output position (o0, o1, o2); out-of-input taps are zero.
struct Im2col<'a> {
    geo: &'a Geo,
    x: &'a [f32],
}

impl Im2col<'_> {
    /// Output indices on axis `a` whose input index at tap `t` lies inside the input.
    fn tap_range(&self, a: usize, t: usize) -> (usize, usize) {
        let g = self.geo;
        valid_range(
            0,
            g.small[a],
            g.s[a],
            (t * g.d[a]) as i64 - g.pb[a] as i64,
            g.big[a],
        )
    }
}

/// Zeroes columns `col..col + len` of row `p` of NR-wide panels.
#[inline(always)]
fn zero(out: &mut [f32], kc: usize, p: usize, mut col: usize, mut len: usize) {
    while len > 0 {
        let lane = col % NR;
        let take = (NR - lane).min(len);
        let at = (col / NR) * kc * NR + p * NR + lane;
        out[at..at + take].fill(0.0);
        len -= take;
        col += take;
    }
}

impl PackB for Im2col<'_> {
    fn pack(&self, pc: usize, kc: usize, jc: usize, nc: usize, out: &mut [f32]) {
        let g = self.geo;
        let [k0, k1, k2] = g.k;
        let [s0, s1, s2] = g.small;
        let plane2 = s1 * s2;
        let (st2, d2, pb2, big2) = (g.s[2], g.d[2], g.pb[2] as i64, g.big[2]);
        let mut r1 = [(0usize, 0usize); TAP_TABLE];
        let mut r2 = [(0usize, 0usize); TAP_TABLE];
        for (t, r) in r1.iter_mut().enumerate().take(k1) {
            *r = self.tap_range(1, t);
        }
        for (t, r) in r2.iter_mut().enumerate().take(k2) {
            *r = self.tap_range(2, t);
        }
        let range1 = |t: usize| {
            if t < TAP_TABLE {
                r1[t]
            } else {
                self.tap_range(1, t)
            }
        };
        let range2 = |t: usize| {
            if t < TAP_TABLE {
                r2[t]
            } else {
                self.tap_range(2, t)
            }
        };
        // Pieces: columns of one output row inside one panel (so each piece's destination
        // in a packed row is contiguous).
        let (big0, big1) = (g.big[0], g.big[1]);
        // Start of input row (ch, o0·s0 + t0·d0 − p0, o1·s1 + t1·d1 − p1), if inside.
        let row_base = |ch: usize, o0: usize, o1: usize, t0: usize, t1: usize| {
            let b0 = big_index(g, 0, o0, t0)?;
            let (lo, hi) = range1(t1);
            if o0 >= s0 || o1 < lo || o1 >= hi {
                return None;
            }
            let b1 = o1 * g.s[1] + t1 * g.d[1] - g.pb[1];
            Some(((ch * big0 + b0) * big1 + b1) * big2)
        };
        let mut j = jc;
        while j < jc + nc {
            let (o0, o1, o2) = (j / plane2, (j / s2) % s1, j % s2);
            let col = j - jc;
            let len = (s2 - o2).min(jc + nc - j).min(NR - col % NR);
            let at0 = (col / NR) * kc * NR + col % NR;
            // Decode row pc into (channel, t0, t1, t2) and walk the rows incrementally.
            let (mut ch, rem) = (pc / g.kprod, pc % g.kprod);
            let (mut t0, mut t1, mut t2) = (rem / (k1 * k2), (rem / k2) % k1, rem % k2);
            let mut base = row_base(ch, o0, o1, t0, t1);
            for p in 0..kc {
                let dst = &mut out[at0 + p * NR..at0 + p * NR + len];
                match base {
                    Some(row) => {
                        let (lo2, hi2) = range2(t2);
                        let lo = lo2.clamp(o2, o2 + len) - o2;
                        let hi = hi2.clamp(o2 + lo, o2 + len) - o2;
                        dst[..lo].fill(0.0);
                        dst[hi..].fill(0.0);
                        if hi > lo {
                            let start = row + (((o2 + lo) * st2 + t2 * d2) as i64 - pb2) as usize;
                            if st2 == 1 {
                                if hi - lo == NR {
                                    let d: &mut [f32; NR] =
                                        dst.try_into().unwrap_or_else(|_| unreachable!());
                                    let s: &[f32; NR] = self.x[start..start + NR]
                                        .try_into()
                                        .unwrap_or_else(|_| unreachable!());
                                    *d = *s;
                                } else {
                                    dst[lo..hi].copy_from_slice(&self.x[start..start + hi - lo]);
                                }
                            } else {
                                let src = &self.x[start..];
                                for (i, d) in dst[lo..hi].iter_mut().enumerate() {
                                    *d = src[i * st2];
                                }
                            }
                        }
                    }
                    None => dst.fill(0.0),
                }
                // next row
                t2 += 1;
                if t2 == k2 {
                    t2 = 0;
                    t1 += 1;
                    if t1 == k1 {
                        t1 = 0;
                        t0 += 1;
                        if t0 == k0 {
                            t0 = 0;
                            ch += 1;
                        }
                    }
                    if p + 1 < kc {
                        base = row_base(ch, o0, o1, t0, t1);
                    }
                }
            }
            j += len;
        }
        // Zero the columns of the last panel past `nc`.
        let tail = nc.next_multiple_of(NR) - nc;
        if tail > 0 {
            for p in 0..kc {
                zero(out, kc, p, nc, tail);
            }
        }
    }
}

/// Scatter-adds columns `[p0, p0 + cols)` into `y` (mg big planes).
fn col2im(geo: &Geo, col: &[f32], p0: usize, cols: usize, y: &mut [f32]) {
    let st = geo.s[2];
    walk_columns(geo, geo.mg, p0, cols, |r, t, _len, row, lo, hi, off| {
        if let Some(base) = row
            && hi > lo
        {
            let src = &col[r * cols + t + lo..r * cols + t + hi];
            let start = base + (off + (lo * st) as i64) as usize;
            if st == 1 {
                for (d, s) in y[start..start + src.len()].iter_mut().zip(src) {
                    *d += *s;
                }
            } else {
                for (j, s) in src.iter().enumerate() {
                    y[start + j * st] += *s;
                }
            }
        }
    });
}

/// One depthwise channel: `y += w ⋆ x` (y holds the bias). Output row by output row, so the
/// row stays in L1 while every tap adds into it; each element still sums its taps in
/// (t0, t1, t2) order. O(output · taps).
#[inline(always)]
fn depthwise_plane(geo: &Geo, x: &[f32], w: &[f32], y: &mut [f32]) {
    let [k0, k1, k2] = geo.k;
    let [s0, s1, s2] = geo.small;
    let st = geo.s[2];
    // Per innermost tap: the valid output columns and the input offset of the first one.
    let mut cols = [(0usize, 0usize, 0usize); TAP_TABLE];
    let col_range = |t2: usize| {
        let off = (t2 * geo.d[2]) as i64 - geo.pb[2] as i64;
        let (lo, hi) = valid_range(0, s2, st, off, geo.big[2]);
        let start = if hi > lo {
            (lo as i64 * st as i64 + off) as usize
        } else {
            0
        };
        (lo, hi, start)
    };
    for (t2, c) in cols.iter_mut().enumerate().take(k2) {
        *c = col_range(t2);
    }
    for o0 in 0..s0 {
        for o1 in 0..s1 {
            let yrow = &mut y[(o0 * s1 + o1) * s2..][..s2];
            for t0 in 0..k0 {
                let Some(b0) = big_index(geo, 0, o0, t0) else {
                    continue;
                };
                for t1 in 0..k1 {
                    let Some(b1) = big_index(geo, 1, o1, t1) else {
                        continue;
                    };
                    let xrow = &x[(b0 * geo.big[1] + b1) * geo.big[2]..][..geo.big[2]];
                    let wrow = &w[(t0 * k1 + t1) * k2..][..k2];
                    for (t2, &wv) in wrow.iter().enumerate() {
                        let (lo, hi, start) = if t2 < TAP_TABLE {
                            cols[t2]
                        } else {
                            col_range(t2)
                        };
                        if hi <= lo {
                            continue;
                        }
                        let yr = &mut yrow[lo..hi];
                        if st == 1 {
                            for (d, s) in yr.iter_mut().zip(&xrow[start..]) {
                                *d += wv * *s;
                            }
                        } else {
                            for (j, d) in yr.iter_mut().enumerate() {
                                *d += wv * xrow[start + j * st];
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Packs op(B) through `inner`, then maps every packed value of input channel `c` to
/// `act(v·scale[c] + shift[c])` — a preceding BatchNorm(+activation) applied in the cache
/// instead of as its own task. Only valid without padding (padding must stay zero). Lanes
/// past the last column are transformed too; the tile never stores them.
struct Prologue<'a> {
    inner: &'a dyn PackB,
    scale: &'a [f32],
    shift: &'a [f32],
    /// Packed rows per input channel (the kernel taps).
    rows_per_channel: usize,
    act: super::gemm::TileAct,
}

impl PackB for Prologue<'_> {
    fn pack(&self, pc: usize, kc: usize, jc: usize, nc: usize, out: &mut [f32]) {
        self.inner.pack(pc, kc, jc, nc, out);
        if kc == 0 {
            return;
        }
        let per = self.rows_per_channel.max(1);
        for panel in out[..kc * nc.next_multiple_of(NR)].chunks_exact_mut(kc * NR) {
            for (p, row) in panel.chunks_exact_mut(NR).enumerate() {
                let ch = (pc + p) / per;
                let (s, t) = (self.scale[ch], self.shift[ch]);
                for v in row {
                    *v = super::gemm::micro::act_scalar(self.act, *v * s + t);
                }
            }
        }
    }
}

struct Operands<'a> {
    x: &'a [f32],
    w: &'a [f32],
    bias: Option<&'a [f32]>,
    /// Conv only: a skip connection shaped like the output, added before the activation.
    residual: Option<&'a [f32]>,
    /// Conv only: per-input-channel scale and shift applied (with `ConvParams::prologue`)
    /// to the input while it is packed.
    prologue: Option<(&'a [f32], &'a [f32])>,
}

fn operands<'a>(ins: &[Option<TensorRef<'a>>], m: usize) -> Result<Operands<'a>, KernelError> {
    let x = f32_in(input(ins, 0, "conv input")?)?;
    let w = f32_in(input(ins, 1, "conv weights")?)?;
    let bias = match ins.get(2).and_then(|t| t.as_ref()) {
        Some(b) => {
            let b = f32_in(b)?;
            if b.len() != m {
                return Err(bad("conv bias length differs from the output channels"));
            }
            Some(b)
        }
        None => None,
    };
    let residual = match ins.get(3).and_then(|t| t.as_ref()) {
        Some(r) => Some(f32_in(r)?),
        None => None,
    };
    let prologue = match (
        ins.get(4).and_then(|t| t.as_ref()),
        ins.get(5).and_then(|t| t.as_ref()),
    ) {
        (Some(s), Some(t)) => Some((f32_in(s)?, f32_in(t)?)),
        (None, None) => None,
        _ => return Err(bad("conv prologue needs both scale and shift")),
    };
    Ok(Operands {
        x,
        w,
        bias,
        residual,
        prologue,
    })
}

fn shapes(
    ins: &[Option<TensorRef<'_>>],
    outs: &[TensorMut<'_>],
) -> Result<(Shape, Shape, Shape), KernelError> {
    let x = input(ins, 0, "conv input")?.shape;
    let w = input(ins, 1, "conv weights")?.shape;
    let y = outs
        .first()
        .ok_or(KernelError::MissingTensor("conv output"))?
        .shape;
    Ok((x, w, y))
}

/// Conv: `Y = W ⋆ X + B (+ R)`, then the fused activation.
pub fn run_conv(
    p: &ConvParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    run_conv_on(p, ins, outs, ws, &Serial)
}

/// [`run_conv`] with its GEMMs split between the slots of `par`.
pub fn run_conv_on(
    p: &ConvParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    // Firmware (no std) runs plain layouts only; its blobs are compiled with the binary.
    #[cfg(feature = "std")]
    match p.channel_layout() {
        Some(ChannelLayout::Plain) => {}
        Some(l @ (ChannelLayout::Blocked | ChannelLayout::PlainToBlocked)) => {
            return blocked::run_blocked(p, l, ins, outs, ws, par);
        }
        _ => return Err(bad("conv: unsupported channel layout")),
    }
    let (xs, wsh, ysh) = shapes(ins, outs)?;
    let mut pl = plan(p, false, &xs, &wsh, &ysh)?;
    // Blobs planned by an older ge reach std users only (firmware compiles its blob with
    // the binary), so firmware links neither fallback.
    if cfg!(feature = "std")
        && matches!(pl.path, Path::Direct(_))
        && pl.gemm_len.saturating_mul(4) > ws.len()
    {
        // A blob whose workspace was planned by an older ge keeps running: on narrower
        // bands if they fit what it planned, else on im2col (planned before the direct path
        // took this shape).
        match direct::layout_within(&pl.geo, ws.len() / 4) {
            Some(lay) => {
                pl.path = Path::Direct(lay);
                pl.gemm_len = lay.ws_len();
            }
            None => {
                pl.path = Path::Implicit;
                pl.gemm_len = gemm_packed_ws_len(pl.geo.small_plane, pl.rows);
            }
        }
    }
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if isa::isa() == isa::Isa::Avx2Fma
        && let Some(lay) = lanes_layout(&pl.geo, pl.path)
        && lanes::ws_len(&pl.geo, &lay).saturating_mul(4) <= ws.len()
    {
        // AVX2 (its tiles have no compressing store, so row tiles waste lanes on narrow
        // rows): output channels in the lanes instead.
        pl.path = Path::Lanes(lay);
        pl.gemm_len = lanes::ws_len(&pl.geo, &lay);
    }
    if cfg!(feature = "std")
        && let Path::Direct(lay) = pl.path
        && lay.narrow
        && !direct::flat_here()
    {
        // Narrow rows on row tiles would waste most lanes: im2col, which the plan left
        // room for.
        pl.path = Path::Implicit;
        pl.gemm_len = gemm_packed_ws_len(pl.geo.small_plane, pl.rows);
    }
    if cfg!(feature = "std")
        && pl.path == Path::Implicit
        && pl.gemm_len.saturating_mul(4) > ws.len()
    {
        // A strided 1×1 conv planned by an older ge, for the direct path.
        if let Some(lay) = direct::layout_within(&pl.geo, ws.len() / 4) {
            pl.path = Path::Direct(lay);
            pl.gemm_len = lay.ws_len();
        }
    }
    if cfg!(feature = "std")
        && matches!(pl.path, Path::Depthwise(Some(_)))
        && pl.gemm_len.saturating_mul(4) > ws.len()
    {
        // Likewise a depthwise conv planned with less workspace: shorter bands, else the
        // row loop.
        let lay = depthwise::layout_within(&pl.geo, ws.len() / 4);
        pl.path = Path::Depthwise(lay);
        pl.gemm_len = lay.map_or(0, |l| l.ws_len());
    }
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if matches!(pl.path, Path::Depthwise(Some(_)))
        && isa::isa() == isa::Isa::Avx512
        && let Some(lay) = depthwise_avx512::layout(&pl.geo)
        && lay.ws_len().saturating_mul(4) <= ws.len()
    {
        pl.path = Path::DepthwiseBlocked(lay);
        pl.gemm_len = lay.ws_len();
    }
    run_conv_planned(p, &pl, ins, outs, ws, par)
}

/// [`run_conv_on`] on a given plan (tests force the im2col path through it).
fn run_conv_planned(
    p: &ConvParams,
    pl: &Plan,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
    par: &dyn Parallel,
) -> KernelResult {
    let geo = pl.geo;
    let ops = operands(ins, geo.m)?;
    let y = f32_out(output(outs, 0, "conv output")?)?;
    if y.is_empty() {
        return Ok(());
    }
    if ops.residual.is_some_and(|r| r.len() != y.len()) {
        return Err(bad("conv residual differs from the output in size"));
    }
    let prologue = match ops.prologue {
        Some((scale, shift)) => {
            let padded = p.pad_begin.iter().chain(&p.pad_end).any(|&v| v != 0);
            let act = tile_act(&p.prologue).ok_or(bad("conv prologue activation"))?;
            if padded || geo.g != 1 || pl.path.depthwise() {
                return Err(bad("conv prologue needs an unpadded, ungrouped conv"));
            }
            if scale.len() != geo.c || shift.len() != geo.c {
                return Err(bad("conv prologue length differs from the input channels"));
            }
            Some((scale, shift, act))
        }
        None => None,
    };
    let gws = ws_f32(ws, pl.col_len + pl.gemm_len)?;
    let (xp, yp) = (geo.big_plane, geo.small_plane);
    let krows = pl.rows;
    let act = tile_act(&p.act);
    for b in 0..geo.n {
        let xb = &ops.x[b * geo.c * xp..(b + 1) * geo.c * xp];
        let yb = &mut y[b * geo.m * yp..(b + 1) * geo.m * yp];
        match pl.path {
            Path::Depthwise(lay) => {
                let (w, bias) = (ops.w, ops.bias);
                let yptr = SendPtr(yb.as_mut_ptr());
                let slots = par.threads().min(geo.c).clamp(1, WS_SLOTS);
                let slots = if geo.c * yp * geo.kprod < PAR_MIN_TAPS {
                    1
                } else {
                    slots
                };
                let band_len = lay.map_or(0, |l| l.slot_len());
                let bptr = SendPtr(gws.as_mut_ptr());
                let rb = ops
                    .residual
                    .map(|r| &r[b * geo.m * yp..(b + 1) * geo.m * yp]);
                let body = |s: usize| {
                    // SAFETY: slot `s` alone uses band `s` of the planned workspace
                    // (`WS_SLOTS` bands of `band_len`; `slots ≤ WS_SLOTS`).
                    let band = unsafe {
                        core::slice::from_raw_parts_mut(bptr.get().add(s * band_len), band_len)
                    };
                    let offs = lay
                        .as_ref()
                        .filter(|_| cfg!(feature = "std"))
                        .map(|l| depthwise::Offsets::new(&geo, l));
                    // One ISA switch per slot, not per channel (small planes are many).
                    isa::with_simd(
                        #[inline(always)]
                        || {
                            for ch in s * geo.c / slots..(s + 1) * geo.c / slots {
                                // SAFETY: slot `s` alone writes channels
                                // `s·c/slots..(s+1)·c/slots` of this batch's output, all
                                // inside `yb`.
                                let yc = unsafe {
                                    core::slice::from_raw_parts_mut(yptr.get().add(ch * yp), yp)
                                };
                                let bv = bias.map_or(0.0, |bv| bv[ch]);
                                let (xc, wc) = (
                                    &xb[ch * xp..(ch + 1) * xp],
                                    &w[ch * geo.kprod..(ch + 1) * geo.kprod],
                                );
                                let rc = rb.map(|r| &r[ch * yp..(ch + 1) * yp]);
                                match (&lay, &offs) {
                                    // (statically dead without std: see `plan`)
                                    (Some(l), Some(o)) if cfg!(feature = "std") => {
                                        depthwise::plane(
                                            &geo,
                                            l,
                                            o,
                                            xc,
                                            wc,
                                            bv,
                                            rc,
                                            act.unwrap_or(super::gemm::TileAct::None),
                                            yc,
                                            band,
                                            ch == s * geo.c / slots,
                                        )
                                    }
                                    _ => {
                                        yc.fill(bv);
                                        depthwise_plane(&geo, xc, wc, yc);
                                        if let Some(r) = rc {
                                            yc.iter_mut().zip(r).for_each(|(v, r)| *v += r);
                                        }
                                    }
                                }
                            }
                        },
                    );
                };
                if slots == 1 {
                    body(0);
                } else {
                    par.run(slots, &body);
                }
            }
            Path::Pointwise | Path::Implicit => {
                for g in 0..geo.g {
                    let xg = &xb[g * geo.cg * xp..(g + 1) * geo.cg * xp];
                    let wg = &ops.w[g * geo.mg * krows..(g + 1) * geo.mg * krows];
                    let yg = &mut yb[g * geo.mg * yp..(g + 1) * geo.mg * yp];
                    let ep = Epilogue {
                        alpha: 1.0,
                        accumulate: false,
                        row_bias: ops.bias.map(|bv| &bv[g * geo.mg..(g + 1) * geo.mg]),
                        residual: ops.residual.map(|r| {
                            let at = b * geo.m * yp + g * geo.mg * yp;
                            (&r[at..at + geo.mg * yp], yp)
                        }),
                        act: act.unwrap_or(super::gemm::TileAct::None),
                    };
                    let pointwise = MatB {
                        b: xg,
                        ld: xp,
                        trans: false,
                    };
                    let implicit = Im2col { geo: &geo, x: xg };
                    let mut src: &dyn PackB = if pl.path == Path::Pointwise {
                        &pointwise
                    } else {
                        &implicit
                    };
                    let with_prologue;
                    if let Some((scale, shift, act)) = prologue {
                        with_prologue = Prologue {
                            inner: src,
                            scale,
                            shift,
                            rows_per_channel: geo.kprod,
                            act,
                        };
                        src = &with_prologue;
                    }
                    let al = if geo.packed {
                        ALayout::Panels
                    } else {
                        ALayout::Strided { rs: krows, cs: 1 }
                    };
                    gemm_packed(geo.mg, yp, krows, wg, al, src, yg, yp, &ep, gws, par)?;
                }
            }
            Path::Direct(lay) => {
                for g in 0..geo.g {
                    let grp = direct_group(&geo, &ops, xb, yb, b, g, act, prologue);
                    direct::run(&geo, &lay, grp, gws, par)?;
                }
            }
            #[cfg(all(feature = "std", target_arch = "x86_64"))]
            Path::Lanes(lay) => {
                for g in 0..geo.g {
                    let grp = direct_group(&geo, &ops, xb, yb, b, g, act, prologue);
                    lanes::run(&geo, &lay, grp, gws, par)?;
                }
            }
            #[cfg(all(feature = "std", target_arch = "x86_64"))]
            Path::DepthwiseBlocked(lay) => {
                let rb = ops
                    .residual
                    .map(|r| &r[b * geo.m * yp..(b + 1) * geo.m * yp]);
                let act = act.unwrap_or(super::gemm::TileAct::None);
                depthwise_blocks(&geo, &lay, xb, &ops, rb, act, yb, gws, par);
            }
            Path::Columns { .. } => return Err(KernelError::BadParams("conv plan")),
        }
    }
    if pl.path.fuses_act() && act.is_some() {
        // applied in the GEMM's epilogue (or the depthwise blocks' store)
        return Ok(());
    }
    finish(p, y)
}

/// Group `g` of batch item `b` (input `xb`, output `yb`) as the direct and lanes paths
/// take it.
#[allow(clippy::too_many_arguments)]
fn direct_group<'a>(
    geo: &Geo,
    ops: &Operands<'a>,
    xb: &'a [f32],
    yb: &'a mut [f32],
    b: usize,
    g: usize,
    act: Option<super::gemm::TileAct>,
    prologue: Option<(&'a [f32], &'a [f32], super::gemm::TileAct)>,
) -> direct::Group<'a> {
    let (xp, yp, k) = (geo.big_plane, geo.small_plane, geo.cg * geo.kprod);
    let at = b * geo.m * yp + g * geo.mg * yp;
    direct::Group {
        x: &xb[g * geo.cg * xp..(g + 1) * geo.cg * xp],
        w: &ops.w[g * geo.mg * k..(g + 1) * geo.mg * k],
        y: &mut yb[g * geo.mg * yp..(g + 1) * geo.mg * yp],
        bias: ops.bias.map(|bv| &bv[g * geo.mg..(g + 1) * geo.mg]),
        residual: ops.residual.map(|r| &r[at..at + geo.mg * yp]),
        act: act.unwrap_or(super::gemm::TileAct::None),
        prologue,
    }
}

/// One batch of a depthwise conv on [`depthwise_avx512`]: blocks of 16 channels split
/// between thread slots (each channel's values are the same on any split).
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
fn depthwise_blocks(
    geo: &Geo,
    lay: &depthwise_avx512::Layout,
    xb: &[f32],
    ops: &Operands<'_>,
    rb: Option<&[f32]>,
    act: super::gemm::TileAct,
    yb: &mut [f32],
    gws: &mut [f32],
    par: &dyn Parallel,
) {
    use depthwise_avx512::LANES;
    let (xp, yp, taps) = (geo.big_plane, geo.small_plane, geo.kprod);
    let blocks = geo.c.div_ceil(LANES);
    let slots = if geo.c * yp * taps < PAR_MIN_TAPS {
        1
    } else {
        par.threads().min(blocks).clamp(1, WS_SLOTS)
    };
    let slot_len = lay.slot_len();
    let (yptr, bptr) = (SendPtr(yb.as_mut_ptr()), SendPtr(gws.as_mut_ptr()));
    let body = |s: usize| {
        // SAFETY: slot `s` alone uses workspace slot `s` (`WS_SLOTS` slots of `slot_len`
        // planned, `slots ≤ WS_SLOTS`).
        let buf =
            unsafe { core::slice::from_raw_parts_mut(bptr.get().add(s * slot_len), slot_len) };
        for blk in s * blocks / slots..(s + 1) * blocks / slots {
            let (c0, c1) = (blk * LANES, ((blk + 1) * LANES).min(geo.c));
            // SAFETY: slot `s` alone writes the planes of channels `c0..c1` of this batch's
            // output (its blocks), all inside `yb`.
            let y =
                unsafe { core::slice::from_raw_parts_mut(yptr.get().add(c0 * yp), (c1 - c0) * yp) };
            let first = blk == s * blocks / slots;
            // SAFETY: `Path::DepthwiseBlocked` is only planned when the CPU has AVX-512.
            unsafe {
                depthwise_avx512::block(
                    geo,
                    lay,
                    &xb[c0 * xp..c1 * xp],
                    &ops.w[c0 * taps..c1 * taps],
                    ops.bias.map(|b| &b[c0..c1]),
                    rb.map(|r| &r[c0 * yp..c1 * yp]),
                    act,
                    y,
                    buf,
                    first,
                )
            };
        }
    };
    if slots == 1 {
        body(0);
    } else {
        par.run(slots, &body);
    }
}

fn finish(p: &ConvParams, y: &mut [f32]) -> KernelResult {
    if p.act.op != 0 {
        super::unary::apply_activation(&p.act, y)?;
    }
    Ok(())
}

/// ConvTranspose: `Y = Wᵀ ⋆ X + B` (GEMM then col2im), then the fused activation.
pub fn run_conv_transpose(
    p: &ConvParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let (xs, wsh, ysh) = shapes(ins, outs)?;
    let pl = plan(p, true, &xs, &wsh, &ysh)?;
    let geo = pl.geo;
    let ops = operands(ins, geo.m)?;
    if ops.residual.is_some() {
        return Err(bad("conv_transpose takes no residual input"));
    }
    let y = f32_out(output(outs, 0, "conv_transpose output")?)?;
    if y.is_empty() {
        return Ok(());
    }
    let scratch = ws_f32(ws, pl.col_len + pl.gemm_len)?;
    let (col, gws) = scratch.split_at_mut(pl.col_len);
    let Path::Columns { cols } = pl.path else {
        return Err(KernelError::BadParams("conv_transpose plan"));
    };
    let (xp, yp) = (geo.small_plane, geo.big_plane);
    let rows = pl.rows;
    for b in 0..geo.n {
        let xb = &ops.x[b * geo.c * xp..(b + 1) * geo.c * xp];
        let yb = &mut y[b * geo.m * yp..(b + 1) * geo.m * yp];
        for (ch, yc) in yb.chunks_exact_mut(yp).enumerate() {
            yc.fill(ops.bias.map_or(0.0, |bv| bv[ch]));
        }
        for g in 0..geo.g {
            let xg = &xb[g * geo.cg * xp..(g + 1) * geo.cg * xp];
            let wg = &ops.w[g * geo.cg * rows..(g + 1) * geo.cg * rows];
            let yg = &mut yb[g * geo.mg * yp..(g + 1) * geo.mg * yp];
            for p0 in (0..xp).step_by(cols) {
                let pc = cols.min(xp - p0);
                let col = &mut col[..rows * pc];
                sgemm(
                    rows,
                    pc,
                    geo.cg,
                    1.0,
                    wg,
                    rows,
                    true,
                    &xg[p0..],
                    xp,
                    false,
                    false,
                    col,
                    pc,
                    gws,
                )?;
                col2im(&geo, col, p0, pc, yg);
            }
        }
    }
    finish(p, y)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use ge_runtime::format::{Activation, DType, UnaryOp};
    use std::vec::Vec;

    fn lcg(seed: &mut u32) -> f32 {
        *seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        (*seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
    }

    struct Case {
        x: Vec<usize>,
        w: Vec<usize>,
        group: usize,
        stride: Vec<usize>,
        dil: Vec<usize>,
        pb: Vec<usize>,
        pe: Vec<usize>,
        op: Vec<usize>,
        bias: bool,
    }

    fn params(c: &Case) -> ConvParams {
        let sp = c.x.len() - 2;
        let mut p = ConvParams {
            spatial: sp as u32,
            group: c.group as u32,
            kernel: [0; 3],
            stride: [1; 3],
            dilation: [1; 3],
            pad_begin: [0; 3],
            pad_end: [0; 3],
            output_padding: [0; 3],
            act: Activation::default(),
            prologue: Activation::default(),
        };
        for i in 0..sp {
            p.kernel[i] = c.w[2 + i] as u32;
            p.stride[i] = c.stride[i] as u32;
            p.dilation[i] = c.dil[i] as u32;
            p.pad_begin[i] = c.pb[i] as u32;
            p.pad_end[i] = c.pe[i] as u32;
            if !c.op.is_empty() {
                p.output_padding[i] = c.op[i] as u32;
            }
        }
        p
    }

    /// Naive N-d conv (up to 3 spatial) over flattened indices.
    fn naive_conv(c: &Case, x: &[f32], w: &[f32], b: Option<&[f32]>, yd: &[usize]) -> Vec<f32> {
        let sp = c.x.len() - 2;
        let pad3 = |v: &[usize], fill: usize| -> [usize; 3] {
            let mut o = [fill; 3];
            o[3 - sp..].copy_from_slice(&v[..sp]);
            o
        };
        let (xs, ks, ys) = (pad3(&c.x[2..], 1), pad3(&c.w[2..], 1), pad3(&yd[2..], 1));
        let (st, dl, pb) = (pad3(&c.stride, 1), pad3(&c.dil, 1), pad3(&c.pb, 0));
        let (n, ci, m) = (c.x[0], c.x[1], c.w[0]);
        let (cg, mg) = (ci / c.group, m / c.group);
        let mut y = std::vec![0.0f32; n * m * ys.iter().product::<usize>()];
        for bn in 0..n {
            for mo in 0..m {
                let g = mo / mg;
                for o0 in 0..ys[0] {
                    for o1 in 0..ys[1] {
                        for o2 in 0..ys[2] {
                            let mut s = b.map_or(0.0, |b| b[mo] as f64);
                            for cc in 0..cg {
                                let ch = g * cg + cc;
                                for k0 in 0..ks[0] {
                                    for k1 in 0..ks[1] {
                                        for k2 in 0..ks[2] {
                                            let i0 =
                                                (o0 * st[0] + k0 * dl[0]) as i64 - pb[0] as i64;
                                            let i1 =
                                                (o1 * st[1] + k1 * dl[1]) as i64 - pb[1] as i64;
                                            let i2 =
                                                (o2 * st[2] + k2 * dl[2]) as i64 - pb[2] as i64;
                                            if i0 < 0
                                                || i1 < 0
                                                || i2 < 0
                                                || i0 >= xs[0] as i64
                                                || i1 >= xs[1] as i64
                                                || i2 >= xs[2] as i64
                                            {
                                                continue;
                                            }
                                            let xi = (((bn * ci + ch) * xs[0] + i0 as usize)
                                                * xs[1]
                                                + i1 as usize)
                                                * xs[2]
                                                + i2 as usize;
                                            let wi = (((mo * cg + cc) * ks[0] + k0) * ks[1] + k1)
                                                * ks[2]
                                                + k2;
                                            s += x[xi] as f64 * w[wi] as f64;
                                        }
                                    }
                                }
                            }
                            y[(((bn * m + mo) * ys[0] + o0) * ys[1] + o1) * ys[2] + o2] = s as f32;
                        }
                    }
                }
            }
        }
        y
    }

    /// Naive ConvTranspose by direct scatter.
    fn naive_conv_t(c: &Case, x: &[f32], w: &[f32], b: Option<&[f32]>, yd: &[usize]) -> Vec<f32> {
        let sp = c.x.len() - 2;
        let pad3 = |v: &[usize], fill: usize| -> [usize; 3] {
            let mut o = [fill; 3];
            o[3 - sp..].copy_from_slice(&v[..sp]);
            o
        };
        let (xs, ks, ys) = (pad3(&c.x[2..], 1), pad3(&c.w[2..], 1), pad3(&yd[2..], 1));
        let (st, dl, pb) = (pad3(&c.stride, 1), pad3(&c.dil, 1), pad3(&c.pb, 0));
        let (n, ci) = (c.x[0], c.x[1]);
        let mg = c.w[1];
        let m = mg * c.group;
        let cg = ci / c.group;
        let yp: usize = ys.iter().product();
        let mut y = std::vec![0.0f64; n * m * yp];
        for bn in 0..n {
            for mo in 0..m {
                for v in &mut y[(bn * m + mo) * yp..(bn * m + mo + 1) * yp] {
                    *v = b.map_or(0.0, |b| b[mo] as f64);
                }
            }
            for ch in 0..ci {
                let g = ch / cg;
                for i0 in 0..xs[0] {
                    for i1 in 0..xs[1] {
                        for i2 in 0..xs[2] {
                            let xv =
                                x[(((bn * ci + ch) * xs[0] + i0) * xs[1] + i1) * xs[2] + i2] as f64;
                            for mm in 0..mg {
                                let mo = g * mg + mm;
                                for k0 in 0..ks[0] {
                                    for k1 in 0..ks[1] {
                                        for k2 in 0..ks[2] {
                                            let o0 =
                                                (i0 * st[0] + k0 * dl[0]) as i64 - pb[0] as i64;
                                            let o1 =
                                                (i1 * st[1] + k1 * dl[1]) as i64 - pb[1] as i64;
                                            let o2 =
                                                (i2 * st[2] + k2 * dl[2]) as i64 - pb[2] as i64;
                                            if o0 < 0
                                                || o1 < 0
                                                || o2 < 0
                                                || o0 >= ys[0] as i64
                                                || o1 >= ys[1] as i64
                                                || o2 >= ys[2] as i64
                                            {
                                                continue;
                                            }
                                            let wi = (((ch * mg + mm) * ks[0] + k0) * ks[1] + k1)
                                                * ks[2]
                                                + k2;
                                            let yi = (((bn * m + mo) * ys[0] + o0 as usize)
                                                * ys[1]
                                                + o1 as usize)
                                                * ys[2]
                                                + o2 as usize;
                                            y[yi] += xv * w[wi] as f64;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        y.iter().map(|&v| v as f32).collect()
    }

    fn out_dims(c: &Case, transpose: bool) -> Vec<usize> {
        let sp = c.x.len() - 2;
        let m = if transpose { c.w[1] * c.group } else { c.w[0] };
        let mut d = std::vec![c.x[0], m];
        for i in 0..sp {
            let span = c.dil[i] * (c.w[2 + i] - 1) + 1;
            d.push(if transpose {
                c.stride[i] * (c.x[2 + i] - 1) + c.op.get(i).copied().unwrap_or(0) + span
                    - c.pb[i]
                    - c.pe[i]
            } else {
                (c.x[2 + i] + c.pb[i] + c.pe[i] - span) / c.stride[i] + 1
            });
        }
        d
    }

    /// Runs the kernel with exactly the planned workspace and compares with the naive loop.
    fn check(c: &Case, transpose: bool) -> Path {
        let mut seed = 11;
        let x: Vec<f32> = (0..c.x.iter().product()).map(|_| lcg(&mut seed)).collect();
        let w: Vec<f32> = (0..c.w.iter().product()).map(|_| lcg(&mut seed)).collect();
        let yd = out_dims(c, transpose);
        let m = yd[1];
        let b: Vec<f32> = (0..m).map(|_| lcg(&mut seed)).collect();
        let p = params(c);
        let (xs, wsh, ys) = (
            Shape::new(&c.x).unwrap(),
            Shape::new(&c.w).unwrap(),
            Shape::new(&yd).unwrap(),
        );
        let bs = Shape::new(&[m]).unwrap();
        let nbytes = conv_workspace_bytes(
            &p,
            transpose,
            &[Some(xs), Some(wsh), c.bias.then_some(bs)],
            &[ys],
        );
        let mut ws = std::vec![0u32; nbytes / 4];
        let mut y = std::vec![0.0f32; yd.iter().product()];
        let ins = [
            Some(TensorRef {
                dtype: DType::F32,
                shape: xs,
                data: bytemuck::cast_slice(&x),
            }),
            Some(TensorRef {
                dtype: DType::F32,
                shape: wsh,
                data: bytemuck::cast_slice(&w),
            }),
            c.bias.then(|| TensorRef {
                dtype: DType::F32,
                shape: bs,
                data: bytemuck::cast_slice(&b),
            }),
        ];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: ys,
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        let ws_bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
        if transpose {
            run_conv_transpose(&p, &ins, &mut outs, ws_bytes)
        } else {
            run_conv(&p, &ins, &mut outs, ws_bytes)
        }
        .unwrap();
        let planned = plan(&p, transpose, &xs, &wsh, &ys).unwrap();
        if !transpose {
            // Weights pre-packed by the compiler give bitwise the same result on every path,
            // in a workspace planned for them, on one slot and on three.
            let (g, k) = (c.group, c.w[1..].iter().product::<usize>());
            let rows = c.w[0] / g;
            let mut wp = w.clone();
            for gi in 0..g {
                let at = gi * rows * k;
                ge_runtime::format::pack_panels(
                    &w[at..at + rows * k],
                    rows,
                    k,
                    &mut wp[at..at + rows * k],
                );
            }
            let pp = p.with_weight_layout(WeightLayout::Panels);
            let shapes = [Some(xs), Some(wsh), c.bias.then_some(bs)];
            let nb = conv_workspace_bytes(&pp, false, &shapes, &[ys]);
            assert!(nb <= nbytes, "packed weights need more workspace");
            let mut ins_p = ins;
            ins_p[1] = Some(TensorRef {
                dtype: DType::F32,
                shape: wsh,
                data: bytemuck::cast_slice(&wp),
            });
            for slots in [1, 3] {
                let mut wsp = std::vec![0u32; nb / 4];
                let mut yp = std::vec![0.0f32; y.len()];
                let mut outs_p = [TensorMut {
                    dtype: DType::F32,
                    shape: ys,
                    data: bytemuck::cast_slice_mut(&mut yp),
                }];
                let par = super::super::test_util::Slots(slots);
                let wsb: &mut [u8] = bytemuck::cast_slice_mut(&mut wsp);
                run_conv_on(&pp, &ins_p, &mut outs_p, wsb, &par).unwrap();
                assert!(
                    y.iter().zip(&yp).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "packed weights differ ({slots} slots, {:?})",
                    planned.path
                );
            }
        }
        if let Path::Direct(_) = planned.path {
            // The im2col path gives bitwise the same result (same taps, order and K blocks),
            // on one slot and on three.
            let implicit = Plan {
                path: Path::Implicit,
                gemm_len: gemm_packed_ws_len(planned.geo.small_plane, planned.rows),
                ..planned
            };
            let mut ws2 = std::vec![0u32; implicit.gemm_len];
            let mut y2 = std::vec![0.0f32; y.len()];
            let mut outs2 = [TensorMut {
                dtype: DType::F32,
                shape: ys,
                data: bytemuck::cast_slice_mut(&mut y2),
            }];
            let ws2b: &mut [u8] = bytemuck::cast_slice_mut(&mut ws2);
            run_conv_planned(&p, &implicit, &ins, &mut outs2, ws2b, &Serial).unwrap();
            assert_eq!(y, y2, "direct and im2col paths differ");
            let mut y3 = std::vec![0.0f32; y.len()];
            let mut outs3 = [TensorMut {
                dtype: DType::F32,
                shape: ys,
                data: bytemuck::cast_slice_mut(&mut y3),
            }];
            let ws_bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
            run_conv_planned(
                &p,
                &planned,
                &ins,
                &mut outs3,
                ws_bytes,
                &super::super::test_util::Slots(3),
            )
            .unwrap();
            assert_eq!(y, y3, "direct path differs between 1 and 3 slots");
        }
        let narrow_direct = match planned.path {
            Path::Implicit if planned.geo.small[2] < super::super::gemm::NR => {
                direct::layout_within(&planned.geo, usize::MAX)
            }
            _ => None,
        };
        if let Some(lay) = narrow_direct {
            // Narrow rows are planned on im2col; blobs of an older ge run them on the direct
            // path, which gives bitwise the same values on one slot and on three.
            let forced = Plan {
                path: Path::Direct(lay),
                gemm_len: lay.ws_len(),
                ..planned
            };
            for slots in [1, 3] {
                let mut wsd = std::vec![0u32; forced.gemm_len];
                let mut yd = std::vec![0.0f32; y.len()];
                let mut outsd = [TensorMut {
                    dtype: DType::F32,
                    shape: ys,
                    data: bytemuck::cast_slice_mut(&mut yd),
                }];
                let wsdb: &mut [u8] = bytemuck::cast_slice_mut(&mut wsd);
                let par = super::super::test_util::Slots(slots);
                run_conv_planned(&p, &forced, &ins, &mut outsd, wsdb, &par).unwrap();
                assert_eq!(
                    y, yd,
                    "narrow direct and im2col paths differ ({slots} slots)"
                );
            }
        }
        if let Path::Depthwise(Some(_)) = planned.path {
            // The banded depthwise path gives the row loop's values (same sums, same order).
            let rows = Plan {
                path: Path::Depthwise(None),
                gemm_len: 0,
                ..planned
            };
            let mut y2 = std::vec![0.0f32; y.len()];
            let mut outs2 = [TensorMut {
                dtype: DType::F32,
                shape: ys,
                data: bytemuck::cast_slice_mut(&mut y2),
            }];
            run_conv_planned(&p, &rows, &ins, &mut outs2, &mut [], &Serial).unwrap();
            assert_eq!(y, y2, "banded depthwise and the row loop differ");
            let mut y3 = std::vec![0.0f32; y.len()];
            let mut outs3 = [TensorMut {
                dtype: DType::F32,
                shape: ys,
                data: bytemuck::cast_slice_mut(&mut y3),
            }];
            let ws_bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
            let slots = super::super::test_util::Slots(3);
            run_conv_planned(&p, &planned, &ins, &mut outs3, ws_bytes, &slots).unwrap();
            assert_eq!(y, y3, "banded depthwise differs between 1 and 3 slots");
        }
        let bias = c.bias.then_some(&b[..]);
        let want = if transpose {
            naive_conv_t(c, &x, &w, bias, &yd)
        } else {
            naive_conv(c, &x, &w, bias, &yd)
        };
        let err = y
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(err < 1e-4, "err {err}");
        if nbytes >= 4 {
            // one float short of the plan must be refused
            let short: &mut [u8] = &mut bytemuck::cast_slice_mut::<u32, u8>(&mut ws)[..nbytes - 4];
            let mut outs = [TensorMut {
                dtype: DType::F32,
                shape: ys,
                data: bytemuck::cast_slice_mut(&mut y),
            }];
            let r = if transpose {
                run_conv_transpose(&p, &ins, &mut outs, short)
            } else {
                run_conv(&p, &ins, &mut outs, short)
            };
            let pl = plan(&p, transpose, &xs, &wsh, &ys).unwrap();
            let im2col = gemm_packed_ws_len(pl.geo.small_plane, pl.rows) * 4;
            // On AVX2 the lanes path runs a direct, pointwise or im2col plan in what it
            // needs, which may be less than the plan's other paths.
            #[cfg(all(feature = "std", target_arch = "x86_64"))]
            let lanes_fit = !transpose
                && isa::isa() == isa::Isa::Avx2Fma
                && lanes_layout(&pl.geo, pl.path)
                    .is_some_and(|lay| lanes::ws_len(&pl.geo, &lay) * 4 <= nbytes - 4);
            #[cfg(not(all(feature = "std", target_arch = "x86_64")))]
            let lanes_fit = false;
            let fallback = lanes_fit
                || match pl.path {
                    Path::Direct(_) => {
                        cfg!(feature = "std")
                            && (im2col <= nbytes - 4
                                || direct::layout_within(&pl.geo, (nbytes - 4) / 4).is_some())
                    }
                    // An im2col plan (narrow rows, strided 1×1) short of its workspace runs
                    // the direct path when that fits: the blob was planned for it.
                    Path::Implicit => {
                        cfg!(feature = "std")
                            && direct::layout_within(&pl.geo, (nbytes - 4) / 4).is_some()
                    }
                    Path::Depthwise(_) => true,
                    _ => false,
                };
            if fallback {
                // a direct plan falls back to narrower bands or to im2col when only that
                // workspace is there, an im2col one to the direct path, a depthwise one to
                // the row loop
                assert_eq!(r, Ok(()));
                let e = y
                    .iter()
                    .zip(&want)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0f32, f32::max);
                assert!(e < 1e-4, "fallback err {e}");
            } else {
                assert_eq!(r, Err(KernelError::Workspace));
            }
        }
        plan(&p, transpose, &xs, &wsh, &ys).unwrap().path
    }

    #[allow(clippy::too_many_arguments)]
    fn case(
        x: &[usize],
        w: &[usize],
        group: usize,
        stride: &[usize],
        dil: &[usize],
        pb: &[usize],
        pe: &[usize],
        bias: bool,
    ) -> Case {
        Case {
            x: x.to_vec(),
            w: w.to_vec(),
            group,
            stride: stride.to_vec(),
            dil: dil.to_vec(),
            pb: pb.to_vec(),
            pe: pe.to_vec(),
            op: Vec::new(),
            bias,
        }
    }

    #[test]
    fn conv2d_groups_dilation_stride_asymmetric_pads() {
        let c = case(
            &[2, 4, 9, 8],
            &[6, 2, 3, 2],
            2,
            &[2, 1],
            &[2, 3],
            &[1, 0],
            &[2, 3],
            true,
        );
        assert_eq!(
            check(&c, false),
            Path::Implicit,
            "narrow rows: im2col (direct compared in check)"
        );
        let c = case(
            &[1, 3, 7, 7],
            &[5, 3, 3, 3],
            1,
            &[1, 1],
            &[1, 1],
            &[1, 1],
            &[1, 1],
            false,
        );
        check(&c, false);
        let c = case(
            &[1, 3, 6, 5],
            &[4, 3, 2, 4],
            1,
            &[3, 2],
            &[1, 1],
            &[0, 2],
            &[1, 0],
            true,
        );
        check(&c, false);
    }

    #[test]
    fn conv_pointwise_and_depthwise() {
        let c = case(
            &[2, 6, 5, 7],
            &[4, 3, 1, 1],
            2,
            &[1, 1],
            &[1, 1],
            &[0, 0],
            &[0, 0],
            true,
        );
        assert_eq!(check(&c, false), Path::Pointwise);
        let c = case(
            &[2, 5, 9, 10],
            &[5, 1, 3, 3],
            5,
            &[1, 1],
            &[1, 1],
            &[1, 1],
            &[1, 1],
            true,
        );
        assert_banded(check(&c, false));
        let c = case(
            &[1, 4, 11, 10],
            &[4, 1, 5, 3],
            4,
            &[2, 3],
            &[2, 1],
            &[3, 0],
            &[1, 2],
            false,
        );
        assert_banded(check(&c, false));
        // depthwise with channel multiplier 2 goes through im2col
        let c = case(
            &[1, 3, 6, 6],
            &[6, 1, 3, 3],
            3,
            &[1, 1],
            &[1, 1],
            &[1, 1],
            &[1, 1],
            true,
        );
        // Narrow stride-1 rows are planned for flat tiles (run on AVX-512; im2col
        // elsewhere), which give the im2col values bitwise (compared in check).
        assert!(
            matches!(check(&c, false), Path::Direct(l) if l.narrow),
            "narrow rows: flat direct tiles"
        );
    }

    #[test]
    fn pads_wider_than_rows() {
        // whole column runs fall left or right of the input (pads >= width)
        check(
            &case(
                &[1, 2, 3, 2],
                &[3, 2, 2, 2],
                1,
                &[1, 1],
                &[1, 1],
                &[3, 4],
                &[3, 5],
                true,
            ),
            false,
        );
        check(
            &case(
                &[1, 2, 3, 2],
                &[2, 1, 2, 2],
                2,
                &[1, 2],
                &[1, 2],
                &[3, 4],
                &[3, 5],
                true,
            ),
            false,
        );
        check(
            &case(&[1, 3, 2], &[3, 1, 1], 3, &[1], &[1], &[4], &[4], false),
            false,
        );
        // width 1, kernel 3, pads (2, 0): the first tap's valid outputs start past the row
        check(
            &case(&[1, 2, 1], &[3, 2, 3], 1, &[1], &[1], &[2], &[0], true),
            false,
        );
        check(
            &case(
                &[1, 2, 2, 1],
                &[2, 1, 1, 3],
                2,
                &[1, 1],
                &[1, 1],
                &[0, 2],
                &[0, 0],
                true,
            ),
            false,
        );
        check(
            &case(&[1, 2, 1], &[2, 1, 3], 2, &[1], &[1], &[2], &[0], true),
            false,
        );
    }

    #[test]
    fn conv1d_and_conv3d() {
        check(
            &case(&[2, 3, 17], &[4, 3, 3], 1, &[2], &[2], &[2], &[1], true),
            false,
        );
        check(
            &case(&[1, 2, 10], &[2, 1, 4], 2, &[1], &[1], &[0], &[3], false),
            false,
        );
        check(
            &case(
                &[1, 2, 5, 6, 7],
                &[3, 2, 2, 3, 2],
                1,
                &[1, 2, 1],
                &[2, 1, 1],
                &[1, 0, 1],
                &[0, 1, 1],
                true,
            ),
            false,
        );
        check(
            &case(
                &[1, 4, 4, 5, 6],
                &[4, 1, 3, 3, 3],
                4,
                &[1, 1, 2],
                &[1, 1, 1],
                &[1, 1, 1],
                &[1, 1, 1],
                true,
            ),
            false,
        );
    }

    /// A 1-D conv exported along H (`[N, C, H, 1]`, `k × 1` kernel) runs as rows of H outputs
    /// on the direct path; unit axes with a stride, and a unit axis between two others, too.
    #[test]
    fn unit_axes_move_first() {
        let c = case(
            &[1, 16, 300, 1],
            &[24, 16, 5, 1],
            1,
            &[1, 3],
            &[1, 1],
            &[2, 0],
            &[2, 0],
            true,
        );
        assert!(matches!(check(&c, false), Path::Direct(_)));
        let c = case(
            &[2, 4, 9, 1, 40],
            &[6, 4, 3, 1, 3],
            1,
            &[2, 2, 1],
            &[1, 1, 2],
            &[1, 0, 1],
            &[0, 0, 1],
            false,
        );
        check(&c, false);
        let c = case(
            &[1, 8, 1, 64],
            &[8, 8, 1, 3],
            1,
            &[1, 1],
            &[1, 1],
            &[0, 1],
            &[0, 1],
            false,
        );
        check(&c, true);
    }

    /// One channel in and out (basic-pitch's 256-tap stride-2 filters, 1-channel heads) runs
    /// on the direct path, one-row strips on AVX-512: against the reference at every
    /// stride, with a partial strip and a bias.
    #[test]
    fn single_channel_direct() {
        for (x, w, s, pb) in [
            ([1, 1, 1, 700], [1, 1, 1, 64], [1, 2], [0, 0]),
            ([1, 1, 1, 300], [1, 1, 1, 9], [1, 1], [0, 4]),
            ([1, 1, 23, 150], [1, 1, 5, 5], [1, 1], [2, 2]),
            ([1, 1, 9, 260], [1, 1, 3, 7], [1, 3], [1, 3]),
        ] {
            let c = case(&x, &w, 1, &s, &[1, 1], &pb, &pb, true);
            let path = check(&c, false);
            if cfg!(feature = "std") {
                assert!(matches!(path, Path::Direct(_)), "{x:?} {w:?}: {path:?}");
            }
        }
    }

    /// The banded depthwise path is taken (with `std`; the row loop without).
    fn assert_banded(p: Path) {
        assert!(
            matches!(p, Path::Depthwise(l) if l.is_some() == cfg!(feature = "std")),
            "{p:?}"
        );
    }

    /// Banded depthwise: strides 2 and 3 with 5×5 and dilated taps, rows wider than a
    /// 32-column block, planes taller than one band; and bitwise the same on 3 slots.
    #[test]
    fn depthwise_bands_strides_and_slots() {
        for (x, w, s, d, pb, pe) in [
            ([1, 3, 41, 75], [3, 1, 5, 5], [2, 2], [1, 1], [2, 2], [2, 2]),
            ([2, 2, 30, 50], [2, 1, 3, 3], [3, 3], [1, 2], [1, 2], [0, 1]),
            (
                [1, 2, 400, 90],
                [2, 1, 3, 3],
                [1, 1],
                [1, 1],
                [1, 1],
                [1, 1],
            ),
            ([1, 2, 17, 9], [2, 1, 7, 7], [1, 2], [1, 1], [3, 3], [3, 3]),
            // Stride-2 rows split by whole registers and a tail (odd and even pads).
            ([1, 4, 56, 56], [4, 1, 3, 3], [2, 2], [1, 1], [1, 1], [1, 1]),
            ([1, 2, 33, 70], [2, 1, 3, 3], [2, 2], [1, 1], [0, 0], [0, 0]),
        ] {
            let c = case(&x, &w, x[1], &s, &d, &pb, &pe, true);
            assert_banded(check(&c, false));
        }
        // 8 channels × 64² outputs × 9 taps: split between slots (check compares 1 and 3)
        let c = case(
            &[1, 8, 64, 64],
            &[8, 1, 3, 3],
            8,
            &[1, 1],
            &[1, 1],
            &[1, 1],
            &[1, 1],
            true,
        );
        assert_banded(check(&c, false));
    }

    /// A depthwise case's input (with an infinity and a −0), weights, bias and residual.
    fn depthwise_data(c: &Case, yd: &[usize], mut seed: u32) -> [Vec<f32>; 4] {
        let mut draw = |n: usize| (0..n).map(|_| lcg(&mut seed)).collect::<Vec<f32>>();
        let mut xv = draw(c.x.iter().product());
        xv[5] = f32::INFINITY;
        xv[11] = -0.0;
        let wv = draw(c.w.iter().product());
        let bv = draw(c.x[1]);
        [xv, wv, bv, draw(yd.iter().product())]
    }

    /// Banded stride-1 depthwise convs with a residual, against the row loop bitwise (a SiLU
    /// within 4 ulp where the AVX-512 band applies its own form):
    /// padding on one side only, none at all, planes narrower and wider than a 16-output
    /// chunk, special values in the input; each activation (the band applies the tile ones
    /// while copying out, the row loop in a pass over the output; Tanh in a pass on both).
    #[test]
    fn banded_depthwise_with_residual_is_the_row_loop() {
        for (x, k, pb, pe) in [
            ([1, 4, 14, 14], [5, 5], [2, 2], [2, 2]),
            ([2, 3, 9, 30], [3, 5], [0, 2], [2, 1]),
            ([1, 2, 20, 40], [7, 7], [3, 3], [3, 3]),
            ([1, 2, 17, 33], [3, 3], [0, 0], [0, 0]),
        ] {
            let c = case(
                &x,
                &[x[1], 1, k[0], k[1]],
                x[1],
                &[1, 1],
                &[1, 1],
                &pb,
                &pe,
                true,
            );
            let yd = out_dims(&c, false);
            let [xv, wv, bv, rv] = depthwise_data(&c, &yd, 7);
            for op in [
                UnaryOp::Identity,
                UnaryOp::Relu,
                UnaryOp::HardSwish,
                UnaryOp::Silu,
                UnaryOp::Tanh,
            ] {
                let mut p = params(&c);
                p.act = Activation {
                    op: if op == UnaryOp::Identity {
                        0
                    } else {
                        op as u32
                    },
                    alpha: 0.0,
                    beta: 0.0,
                };
                use super::super::test_util::{shape, t, tm};
                let (xs, wsh, ys, bs) = (shape(&x), shape(&c.w), shape(&yd), shape(&[x[1]]));
                let ins = [
                    Some(t(&x, &xv)),
                    Some(t(&c.w, &wv)),
                    Some(t(&[x[1]], &bv)),
                    Some(t(&yd, &rv)),
                ];
                let nbytes =
                    conv_workspace_bytes(&p, false, &[Some(xs), Some(wsh), Some(bs)], &[ys]);
                let planned = plan(&p, false, &xs, &wsh, &ys).unwrap();
                assert!(
                    matches!(planned.path, Path::Depthwise(Some(_))),
                    "{x:?} {k:?}"
                );
                let run = |pl: &Plan, ws: &mut [u32]| {
                    let mut y = std::vec![0.0f32; rv.len()];
                    let mut outs = [tm(&yd, &mut y)];
                    let wsb: &mut [u8] = bytemuck::cast_slice_mut(ws);
                    run_conv_planned(&p, pl, &ins, &mut outs, wsb, &Serial).unwrap();
                    y
                };
                let got = run(&planned, &mut std::vec![0u32; nbytes / 4]);
                let rows = Plan {
                    path: Path::Depthwise(None),
                    gemm_len: 0,
                    ..planned
                };
                let want = run(&rows, &mut []);
                // Bitwise, but for a SiLU the AVX-512 band computes in its own form (4 ulp).
                let sigmoid = op == UnaryOp::Silu;
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(&g, &w)| super::super::test_util::same_value(g, w, sigmoid)),
                    "{x:?} k {k:?} pads {pb:?}/{pe:?} {op:?}: {got:?} vs {want:?}"
                );
            }
        }
    }

    /// AVX-512 channel blocks against the row loop bitwise, on one slot and three: channel
    /// counts off a multiple of 16, rows of several 16-pixel transposes, strides 2 and 3,
    /// dilation, one-sided and asymmetric padding, a residual, special input values.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn blocked_depthwise_is_the_row_loop() {
        if isa::isa() != isa::Isa::Avx512 {
            std::println!("skipping the AVX-512 depthwise blocks: this CPU lacks AVX-512");
            return;
        }
        use super::super::test_util::{Slots, shape, t, tm};
        for (x, k, s, d, pb, pe) in [
            ([1, 17, 14, 14], [5, 5], [1, 1], [1, 1], [2, 2], [2, 2]),
            ([2, 3, 9, 37], [3, 5], [1, 2], [1, 1], [0, 2], [2, 1]),
            ([1, 40, 20, 40], [7, 7], [1, 1], [1, 1], [3, 3], [3, 3]),
            ([1, 16, 17, 33], [3, 3], [2, 2], [1, 1], [0, 0], [0, 0]),
            ([1, 33, 11, 50], [3, 3], [3, 3], [2, 2], [1, 2], [0, 1]),
            ([1, 2, 7, 7], [1, 1], [1, 1], [1, 1], [0, 0], [0, 0]),
        ] {
            let c = case(&x, &[x[1], 1, k[0], k[1]], x[1], &s, &d, &pb, &pe, true);
            let yd = out_dims(&c, false);
            let [xv, wv, bv, rv] = depthwise_data(&c, &yd, 5);
            let p = params(&c);
            let (xs, wsh, ys) = (shape(&x), shape(&c.w), shape(&yd));
            let ins = [
                Some(t(&x, &xv)),
                Some(t(&c.w, &wv)),
                Some(t(&[x[1]], &bv)),
                Some(t(&yd, &rv)),
            ];
            let planned = plan(&p, false, &xs, &wsh, &ys).unwrap();
            let lay = depthwise_avx512::layout(&planned.geo).unwrap();
            assert!(
                lay.ws_len() <= planned.gemm_len,
                "{x:?}: blocks outgrow the plan"
            );
            let run = |pl: &Plan, slots: usize| {
                let mut ws = std::vec![0u32; pl.gemm_len];
                let mut y = std::vec![0.0f32; rv.len()];
                let mut outs = [tm(&yd, &mut y)];
                let wsb: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
                run_conv_planned(&p, pl, &ins, &mut outs, wsb, &Slots(slots)).unwrap();
                y
            };
            let rows = Plan {
                path: Path::Depthwise(None),
                gemm_len: 0,
                ..planned
            };
            let want = run(&rows, 1);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            for slots in [1, 3] {
                let blocked = Plan {
                    path: Path::DepthwiseBlocked(lay),
                    ..planned
                };
                let got = run(&blocked, slots);
                assert_eq!(
                    bits(&got),
                    bits(&want),
                    "{x:?} k {k:?} s {s:?} ({slots} slots)"
                );
            }
        }
    }

    /// The lanes path (output channels in the AVX2 lanes) gives bitwise the planned direct
    /// or pointwise path's values (a sigmoid within 4 ulp where the planned path's AVX-512
    /// epilogue computes it), on one slot and on three, with every epilogue (bias,
    /// residual, each tile activation), ONNX-order and pre-packed weights, a BatchNorm
    /// prologue, strides, dilations, groups, partial channel blocks and pixel tiles, several
    /// K blocks and bands.
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    #[test]
    fn lanes_path_is_the_planned_paths_values() {
        if !isa::Isa::Avx2Fma.supported() {
            std::println!("skipping the lanes path: this CPU lacks AVX2+FMA");
            return;
        }
        let acts = [
            Activation::default(),
            Activation {
                op: UnaryOp::Relu as u32,
                alpha: 0.0,
                beta: 0.0,
            },
            Activation {
                op: UnaryOp::LeakyRelu as u32,
                alpha: 0.1,
                beta: 0.0,
            },
            Activation {
                op: UnaryOp::HardSwish as u32,
                alpha: 0.0,
                beta: 0.0,
            },
            Activation {
                op: UnaryOp::Silu as u32,
                alpha: 0.0,
                beta: 0.0,
            },
        ];
        /// Input, weights, group, stride, dilation, pads.
        type Conv2d = (
            &'static [usize],
            &'static [usize],
            usize,
            [usize; 2],
            [usize; 2],
            [usize; 2],
        );
        let cases: [Conv2d; 11] = [
            // YOLO-like 3x3 on a 20-wide plane, 64 taps·9: three K blocks
            (&[1, 64, 20, 20], &[32, 64, 3, 3], 1, [1, 1], [1, 1], [1, 1]),
            // YOLO's downsampling 3x3/2 pad 1: stride-2 band rows split by shuffles
            (&[1, 16, 48, 48], &[32, 16, 3, 3], 1, [2, 2], [1, 1], [1, 1]),
            // odd width, pad 1: the row's last input column lands in phase 0 alone
            (&[1, 16, 27, 41], &[16, 16, 3, 3], 1, [2, 2], [1, 1], [1, 1]),
            // 40 filters: a partial channel block; 9-wide rows: pixel tiles across rows
            (&[2, 16, 11, 9], &[40, 16, 3, 3], 1, [1, 1], [1, 1], [1, 1]),
            // stride 2 both ways, 11 outputs per row (planned on im2col)
            (&[1, 24, 21, 21], &[48, 24, 3, 3], 1, [2, 2], [1, 1], [1, 1]),
            // vertical stride 2, horizontal stride 3 with dilation 2, two groups
            (&[1, 32, 30, 40], &[32, 16, 3, 3], 2, [2, 3], [1, 2], [1, 2]),
            // many rows: several bands
            (
                &[1, 32, 140, 60],
                &[16, 32, 3, 3],
                1,
                [1, 1],
                [1, 1],
                [1, 1],
            ),
            // 5x5, padding 2
            (&[1, 8, 17, 13], &[16, 8, 5, 5], 1, [1, 1], [1, 1], [2, 2]),
            // a 7x7 stride-2 stem on 3 channels (K = 147)
            (&[1, 3, 40, 40], &[16, 3, 7, 7], 1, [2, 2], [1, 1], [3, 3]),
            // dilation 2 both ways
            (&[1, 16, 24, 24], &[32, 16, 3, 3], 1, [1, 1], [2, 2], [2, 2]),
            // unpadded 3x3 (a prologue may apply)
            (&[1, 12, 16, 16], &[32, 12, 3, 3], 1, [1, 1], [1, 1], [0, 0]),
        ];
        let mut seed = 29;
        let mut vals = |n: usize| -> Vec<f32> { (0..n).map(|_| lcg(&mut seed)).collect() };
        for (xd, wd, group, stride, dil, pad) in cases {
            let c = case(xd, wd, group, &stride, &dil, &pad, &pad, true);
            let yd = out_dims(&c, false);
            let (xs, wsh, ys) = (
                Shape::new(xd).unwrap(),
                Shape::new(wd).unwrap(),
                Shape::new(&yd).unwrap(),
            );
            let m = wd[0];
            let (bs, cs) = (Shape::new(&[m]).unwrap(), Shape::new(&[xd[1]]).unwrap());
            let (x, w, b, r) = (
                vals(xs.numel()),
                vals(wsh.numel()),
                vals(m),
                vals(ys.numel()),
            );
            let (scale, shift) = (vals(xd[1]), vals(xd[1]));
            let (rows, k) = (m / group, wsh.numel() / m);
            let mut wp = w.clone();
            for gi in 0..group {
                let at = gi * rows * k;
                ge_runtime::format::pack_panels(&w[at..at + rows * k], rows, k, &mut wp[at..]);
            }
            fn t(v: &[f32], shape: Shape) -> Option<TensorRef<'_>> {
                Some(TensorRef {
                    dtype: DType::F32,
                    shape,
                    data: bytemuck::cast_slice(v),
                })
            }
            let unpadded = pad == [0, 0];
            for (ai, act) in acts.into_iter().enumerate() {
                for packed in [false, true] {
                    for extra in 0..if unpadded && group == 1 { 3 } else { 2 } {
                        // extra 1: a residual; 2: a BatchNorm(+Relu) prologue
                        let mut p = params(&c);
                        p.act = act;
                        if packed {
                            p = p.with_weight_layout(WeightLayout::Panels);
                        }
                        let mut ins = std::vec![
                            t(&x, xs),
                            t(if packed { &wp } else { &w }, wsh),
                            t(&b, bs),
                            (extra == 1).then(|| t(&r, ys)).flatten(),
                        ];
                        if extra == 2 {
                            p.prologue = acts[1];
                            ins.extend([t(&scale, cs), t(&shift, cs)]);
                        }
                        let planned = plan(&p, false, &xs, &wsh, &ys).unwrap();
                        let src = lanes_layout(&planned.geo, planned.path);
                        let src = src.unwrap_or_else(|| {
                            panic!("{xd:?} {wd:?}: not a lanes conv ({:?})", planned.path)
                        });
                        let run = |pl: &Plan, slots: usize| {
                            let mut ws = std::vec![0u32; pl.col_len + pl.gemm_len];
                            let mut y = std::vec![0.0f32; ys.numel()];
                            let mut outs = [TensorMut {
                                dtype: DType::F32,
                                shape: ys,
                                data: bytemuck::cast_slice_mut(&mut y),
                            }];
                            let par = super::super::test_util::Slots(slots);
                            let wsb: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
                            run_conv_planned(&p, pl, &ins, &mut outs, wsb, &par).unwrap();
                            y
                        };
                        let want = run(&planned, 1);
                        let lanes = Plan {
                            path: Path::Lanes(src),
                            gemm_len: lanes::ws_len(&planned.geo, &src),
                            ..planned
                        };
                        assert!(
                            lanes.gemm_len <= planned.gemm_len,
                            "lanes workspace not planned"
                        );
                        for slots in [1, 3] {
                            let got = run(&lanes, slots);
                            let sigmoid =
                                [UnaryOp::Sigmoid as u32, UnaryOp::Silu as u32].contains(&act.op);
                            let diff = got.iter().zip(&want).position(|(&g, &w)| {
                                !super::super::test_util::same_value(g, w, sigmoid)
                            });
                            assert!(
                                diff.is_none(),
                                "{xd:?} {wd:?} act {ai} packed {packed} extra {extra} \
                                 {slots} slots: lanes and {:?} differ at {diff:?}",
                                planned.path
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn direct_bands_strides_and_k_blocks() {
        // 64·9 = 576 taps: three K blocks; 70 output rows: several bands; 7 filters: a
        // partial channel panel.
        let c = case(
            &[1, 64, 70, 40],
            &[7, 64, 3, 3],
            1,
            &[1, 1],
            &[1, 1],
            &[1, 1],
            &[1, 1],
            true,
        );
        assert!(matches!(check(&c, false), Path::Direct(_)));
        // Rows 7 wide (two channel panels per pass) and 17 filters (a pair, then a partial
        // single panel); 70·9 = 630 taps: three K blocks of 210, splitting channels 23 and
        // 46 between two bands' channel ranges.
        let c = case(
            &[1, 70, 9, 7],
            &[17, 70, 3, 3],
            1,
            &[1, 1],
            &[1, 1],
            &[1, 1],
            &[1, 1],
            true,
        );
        // Narrow stride-1 rows are planned for flat tiles (run on AVX-512; im2col
        // elsewhere), which give the im2col values bitwise (compared in check).
        assert!(
            matches!(check(&c, false), Path::Direct(l) if l.narrow),
            "narrow rows: flat direct tiles"
        );
        // horizontal stride 3 (three phases) with dilation 2, vertical stride 2, groups.
        let c = case(
            &[2, 40, 30, 37],
            &[26, 20, 3, 3],
            2,
            &[2, 3],
            &[1, 2],
            &[1, 2],
            &[0, 1],
            true,
        );
        assert_eq!(
            check(&c, false),
            Path::Implicit,
            "narrow rows: im2col (direct compared in check)"
        );
        // the same strides on rows wide enough to be planned on the direct path
        let c = case(
            &[1, 8, 20, 60],
            &[10, 8, 3, 3],
            1,
            &[2, 3],
            &[1, 2],
            &[1, 2],
            &[0, 1],
            true,
        );
        assert!(matches!(check(&c, false), Path::Direct(_)));
        // rows one column wide go through im2col (the width axis is not a unit axis here)
        let c = case(
            &[1, 8, 20, 2],
            &[4, 8, 5, 2],
            1,
            &[1, 1],
            &[1, 1],
            &[2, 0],
            &[2, 0],
            true,
        );
        assert_eq!(check(&c, false), Path::Implicit);
    }

    #[test]
    fn conv_chunks_columns() {
        // C/g·Πk = 576 rows × 1600 columns exceeds COL_CAP: several column chunks
        let c = case(
            &[1, 64, 40, 40],
            &[4, 64, 3, 3],
            1,
            &[1, 1],
            &[1, 1],
            &[1, 1],
            &[1, 1],
            true,
        );
        assert!(matches!(check(&c, false), Path::Direct(_)));
    }

    #[test]
    fn conv_transpose_matches_naive() {
        let mut c = case(
            &[2, 4, 3, 4],
            &[4, 3, 3, 2],
            2,
            &[2, 3],
            &[1, 2],
            &[1, 0],
            &[0, 2],
            true,
        );
        c.op = std::vec![1, 2];
        check(&c, true);
        check(
            &case(&[1, 3, 5], &[3, 2, 4], 1, &[2], &[1], &[1], &[2], false),
            true,
        );
        check(
            &case(
                &[1, 2, 3, 3, 2],
                &[2, 1, 2, 2, 3],
                2,
                &[2, 1, 2],
                &[1, 2, 1],
                &[0, 1, 1],
                &[1, 0, 0],
                true,
            ),
            true,
        );
        check(
            &case(
                &[1, 3, 4, 4],
                &[3, 5, 1, 1],
                1,
                &[1, 1],
                &[1, 1],
                &[0, 0],
                &[0, 0],
                true,
            ),
            true,
        );
    }

    #[test]
    fn conv_known_values() {
        // ONNX Conv doc example: x = arange(25) as [1,1,5,5], w = ones[1,1,3,3], pads 1
        let x: Vec<f32> = (0..25).map(|v| v as f32).collect();
        let w = [1.0f32; 9];
        let p = params(&case(
            &[1, 1, 5, 5],
            &[1, 1, 3, 3],
            1,
            &[1, 1],
            &[1, 1],
            &[1, 1],
            &[1, 1],
            false,
        ));
        let mut y = [0.0f32; 25];
        let (xs, ws) = (
            Shape::new(&[1, 1, 5, 5]).unwrap(),
            Shape::new(&[1, 1, 3, 3]).unwrap(),
        );
        let nbytes = conv_workspace_bytes(&p, false, &[Some(xs), Some(ws)], &[xs]);
        let mut scratch = std::vec![0u32; nbytes / 4];
        let ins = [
            Some(TensorRef {
                dtype: DType::F32,
                shape: xs,
                data: bytemuck::cast_slice(&x),
            }),
            Some(TensorRef {
                dtype: DType::F32,
                shape: ws,
                data: bytemuck::cast_slice(&w),
            }),
        ];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: xs,
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        run_conv(&p, &ins, &mut outs, bytemuck::cast_slice_mut(&mut scratch)).unwrap();
        assert_eq!(
            y,
            [
                12., 21., 27., 33., 24., 33., 54., 63., 72., 51., 63., 99., 108., 117., 81., 93.,
                144., 153., 162., 111., 72., 111., 117., 123., 84.
            ]
        );
        // wrong output size is refused
        let mut y = [0.0f32; 16];
        let mut outs = [TensorMut {
            dtype: DType::F32,
            shape: Shape::new(&[1, 1, 4, 4]).unwrap(),
            data: bytemuck::cast_slice_mut(&mut y),
        }];
        assert!(run_conv(&p, &ins, &mut outs, &mut []).is_err());
    }

    /// Random (mostly malformed) descriptions must give a result or an error, never a panic.
    #[test]
    fn malformed_never_panics() {
        let mut seed = 5u32;
        let mut r = |n: u32| {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            ((seed >> 8) % n) as usize
        };
        let mut oks = 0usize;
        for _ in 0..4000 {
            let sp = 1 + r(3);
            let transpose = r(2) == 1;
            let sane = r(4) != 0;
            let (g, cg, mg) = (1 + r(2), r(3), 1 + r(2));
            let mut xd = if sane {
                std::vec![1 + r(2), g * cg]
            } else {
                std::vec![r(3), r(4)]
            };
            let mut wd = match (sane, transpose) {
                (true, false) => std::vec![g * mg, cg],
                (true, true) => std::vec![g * cg, mg],
                _ => std::vec![r(4), r(3)],
            };
            for _ in 0..sp {
                xd.push(r(6) + usize::from(sane));
                wd.push(r(4) + usize::from(sane));
            }
            let pos = |v: usize| if sane { v as u32 + 1 } else { v as u32 };
            let mut p = ConvParams {
                spatial: if r(10) == 0 { r(5) as u32 } else { sp as u32 },
                group: if sane { g as u32 } else { r(3) as u32 },
                kernel: [0; 3],
                stride: [0; 3],
                dilation: [0; 3],
                pad_begin: [0; 3],
                pad_end: [0; 3],
                output_padding: [0; 3],
                act: Activation::default(),
                prologue: Activation::default(),
            };
            for i in 0..3 {
                p.kernel[i] = if r(8) != 0 {
                    wd.get(2 + i).copied().unwrap_or(0) as u32
                } else {
                    r(4) as u32
                };
                p.stride[i] = pos(r(3));
                p.dilation[i] = pos(r(2));
                p.pad_begin[i] = r(3) as u32;
                p.pad_end[i] = r(3) as u32;
                p.output_padding[i] = r(2) as u32;
            }
            let big = u32::MAX - r(2) as u32;
            match r(40) {
                0 => p.pad_begin[r(3)] = big,
                1 => p.pad_end[r(3)] = big,
                2 => p.stride[r(3)] = big,
                3 => p.dilation[r(3)] = big,
                4 => p.kernel[r(3)] = big,
                _ => {}
            }
            // output: the consistent size when it exists, else random
            let g = (p.group as usize).max(1);
            let m = if transpose { wd[1] * g } else { wd[0] };
            let mut yd = std::vec![xd[0], if r(8) == 0 { r(4) } else { m }];
            for i in 0..sp {
                let (x, k, s, d) = (
                    xd[2 + i] as i64,
                    wd[2 + i] as i64,
                    p.stride[i].max(1) as i64,
                    p.dilation[i].max(1) as i64,
                );
                let (pb, pe) = (p.pad_begin[i] as i64, p.pad_end[i] as i64);
                let span = d * (k - 1) + 1;
                let o = if transpose {
                    s * (x - 1) + p.output_padding[i] as i64 + span - pb - pe
                } else {
                    (x + pb + pe - span) / s + 1
                };
                yd.push(if r(6) == 0 || !(0..64).contains(&o) {
                    r(5)
                } else {
                    o as usize
                });
            }
            let (xs, wsh, ys) = (
                Shape::new(&xd).unwrap(),
                Shape::new(&wd).unwrap(),
                Shape::new(&yd).unwrap(),
            );
            let bs = Shape::new(&[if r(6) == 0 { r(4) } else { m }]).unwrap();
            let short = |n: usize, r: &mut dyn FnMut(u32) -> usize| {
                if r(20) == 0 { n.saturating_sub(1) } else { n }
            };
            let x = std::vec![1.0f32; short(xs.numel(), &mut r)];
            let w = std::vec![1.0f32; short(wsh.numel(), &mut r)];
            let b = std::vec![1.0f32; bs.numel()];
            let mut y = std::vec![0.0f32; short(ys.numel(), &mut r)];
            let nb = conv_workspace_bytes(&p, transpose, &[Some(xs), Some(wsh), Some(bs)], &[ys]);
            let mut ws = std::vec![0u32; (nb / 4).saturating_sub(r(2) * r(3)).min(1 << 20)];
            let ins = [
                Some(TensorRef {
                    dtype: DType::F32,
                    shape: xs,
                    data: bytemuck::cast_slice(&x),
                }),
                Some(TensorRef {
                    dtype: DType::F32,
                    shape: wsh,
                    data: bytemuck::cast_slice(&w),
                }),
                if r(2) == 0 {
                    Some(TensorRef {
                        dtype: DType::F32,
                        shape: bs,
                        data: bytemuck::cast_slice(&b),
                    })
                } else {
                    None
                },
            ];
            let mut outs = [TensorMut {
                dtype: DType::F32,
                shape: ys,
                data: bytemuck::cast_slice_mut(&mut y),
            }];
            let wsb: &mut [u8] = bytemuck::cast_slice_mut(&mut ws);
            let res = if transpose {
                run_conv_transpose(&p, &ins, &mut outs, wsb)
            } else {
                run_conv(&p, &ins, &mut outs, wsb)
            };
            oks += usize::from(res.is_ok());
        }
        // the generator also produces well-formed cases; they must run
        assert!(oks > 500, "only {oks} well-formed cases ran");
    }
}
