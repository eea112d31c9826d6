//! Depthwise 2-D convolution on blocked channels ([`ChannelLayout::Blocked`]): a block's 16
//! channels of one pixel are one vector in both the input and the output, so every tap is
//! one vector multiply and add for 16 channels, read in place — no transposes, no ring of
//! padded rows (the plain layout's AVX-512 path transposes each input row in and each output
//! row out, [`crate::ops::conv`]'s `depthwise_avx512`). A blocked depthwise conv also
//! keeps a MobileNet-style body blocked end to end: before it, every depthwise conv cost a
//! reorder on each side.
//!
//! Per output row, the pixels whose taps all lie inside the input run [`PIX`] at a time
//! (then 4, 2, 1) with the kernel rows in the padding skipped; the few border pixels check
//! each tap. Work is cut into bands of about [`BAND_PIXELS`] output pixels of one block (the
//! unit of threading); the bias, residual and activation run over the band once it is
//! computed, while it is in L1 (the dense conv's band epilogue, [`super::conv`]).
//!
//! Values: each output is `Σ x·w` over the taps inside the input in row-major order from
//! zero, one FMA each on AVX-512 and AVX2 (their results agree bitwise: one code over
//! [`Vec16`]), a multiply then an add on plain arrays; then bias, residual and activation as
//! in the dense blocked conv. Independent of the thread count.
//!
//! Cost: O(N·C·OH·OW·KH·KW) multiply-adds; no workspace.

use ge_runtime::format::{BLOCK, ChannelLayout, blocked_weight_index};

use super::conv::{BandEnd, Geometry, Operands, finish, split_bands, tap_row};
use crate::arch::isa::{self, Isa};
use crate::arch::vec16::{Scalar, Vec16};
use crate::ops::KernelError;
use crate::threads::Parallel;

/// Output pixels accumulated at once (independent add chains for the two FP ports).
const PIX: usize = 8;
/// Output pixels of one band (whole rows, at least one): a block's band of sums stays in L1
/// for its epilogue.
const BAND_PIXELS: usize = 256;

/// `y = act(W ⋆ x + bias + residual)` for a depthwise conv (`C` groups of one channel) on
/// blocked channels, split between the slots of `par` by band (of one image and block).
pub fn run(
    geo: &Geometry,
    ops: &Operands<'_>,
    y: &mut [f32],
    par: &dyn Parallel,
) -> Result<(), KernelError> {
    run_on(geo, ops, y, par, isa::isa())
}

/// [`run`] compiled for `isa` (tests compare the classes).
pub(super) fn run_on(
    geo: &Geometry,
    ops: &Operands<'_>,
    y: &mut [f32],
    par: &dyn Parallel,
    isa: Isa,
) -> Result<(), KernelError> {
    geo.check()?;
    if geo.layout != ChannelLayout::Blocked || geo.cin != geo.cout {
        return Err(KernelError::Shape(
            "blocked depthwise conv: input and output must be blocked, one channel per group",
        ));
    }
    let [kh, kw] = geo.kernel;
    let y_len = geo.check_operands(ops, y, 1)?;
    if y_len == 0 {
        return Ok(());
    }
    let units = geo.n * (geo.cout / BLOCK) * bands(geo);
    let yp = crate::ops::gemm::SendPtr(y.as_mut_ptr());
    split_bands(units, y_len * kh * kw, par, |u| {
        // SAFETY: bands are disjoint; band `u` reads and writes inside the validated extents.
        unsafe { band(geo, ops, yp.get(), u, isa) };
    });
    Ok(())
}

/// Output rows of one band.
fn band_rows(geo: &Geometry) -> usize {
    (BAND_PIXELS / geo.ow.max(1)).clamp(1, geo.oh.max(1))
}

/// Bands per image and block (fixed by the shape, not by the thread count).
fn bands(geo: &Geometry) -> usize {
    geo.oh.div_ceil(band_rows(geo))
}

/// Where a block's taps are: tap `t`'s 16 weights at `w + t·stride`.
#[derive(Clone, Copy)]
struct Weights {
    w: *const f32,
    stride: usize,
}

/// Band `u` (image, block, band of output rows): its sums, then its epilogue.
///
/// # Safety
/// `y` holds the output; the operands were validated by [`run_on`].
unsafe fn band(geo: &Geometry, ops: &Operands<'_>, y: *mut f32, u: usize, isa: Isa) {
    let (blocks, nb, rows) = (geo.cout / BLOCK, bands(geo), band_rows(geo));
    let (img, blk, b) = (u / (blocks * nb), u / nb % blocks, u % nb);
    let (o0, o1) = (b * rows, ((b + 1) * rows).min(geo.oh));
    let [kh, kw] = geo.kernel;
    let dims = [geo.cout, 1, kh, kw];
    let c0 = blk * BLOCK;
    // The blocked weight order keeps a block's 16 weights of one tap together; consecutive
    // taps are one weight group's width apart (what the order's index steps by from tap 0
    // to tap 1, for any kernel).
    let first = blocked_weight_index(dims, 1, c0, 0, 0, 0);
    let wt = Weights {
        w: ops.w[first..].as_ptr(),
        stride: blocked_weight_index(dims, 1, c0, 0, 0, 1) - first,
    };
    let x = ops.x[(img * blocks + blk) * geo.h * geo.w * BLOCK..].as_ptr();
    let plane = geo.oh * geo.ow * BLOCK;
    let out0 = (img * blocks + blk) * plane + o0 * geo.ow * BLOCK;
    let yb = y.wrapping_add(out0);
    let rows = Rows {
        geo,
        x,
        wt,
        o: (o0, o1),
        cols: interior(geo),
        y: yb,
    };
    // SAFETY: the band's rows of this block; the CPU runs `isa` (`run`'s contract).
    unsafe {
        if !crate::arch::kernels::blocked_depthwise_rows(&rows, isa) {
            rows.run::<Scalar>();
        }
    }
    let end = BandEnd {
        y: yb,
        res: ops
            .residual
            .map_or(core::ptr::null(), |r| r[out0..].as_ptr()),
        bias: ops.bias.map_or(core::ptr::null(), |b| b[c0..].as_ptr()),
        plane,
        fb: 1,
        px: (o1 - o0) * geo.ow,
        act: ops.act,
    };
    // SAFETY: the band's block × `px` pixels of the output (and residual).
    unsafe { finish(&end, false, isa) };
}

/// Output rows `o.0..o.1` of one block: its input plane `x`, weights `wt`, the
/// [`interior`] columns, output row `o.0` at `y`.
pub(crate) struct Rows<'a> {
    geo: &'a Geometry,
    x: *const f32,
    wt: Weights,
    o: (usize, usize),
    cols: (usize, usize),
    y: *mut f32,
}

impl Rows<'_> {
    /// Every row on the vectors of `V`.
    ///
    /// # Safety
    /// The rows are inside the validated operands; `V`'s ISA is enabled on the caller.
    #[inline(always)]
    pub(crate) unsafe fn run<V: Vec16>(&self) {
        for o in self.o.0..self.o.1 {
            let y = self.y.wrapping_add((o - self.o.0) * self.geo.ow * BLOCK);
            // SAFETY: row `o` of this block's output plane; the taps stay in its input
            // plane (interior pixels by construction, border ones checked).
            unsafe { out_row::<V>(self, o, y) };
        }
    }
}

/// The output columns `[lo, hi)` whose taps all lie inside the input row.
fn interior(geo: &Geometry) -> (usize, usize) {
    let (sw, pw) = (geo.stride[1], geo.pad[1]);
    let span = (geo.kernel[1] - 1) * geo.dilation[1];
    let lo = pw.div_ceil(sw).min(geo.ow);
    // Last column `j` with `j·sw + span − pw ≤ w − 1`.
    let hi = match (geo.w + pw).checked_sub(span + 1) {
        Some(last) => (last / sw + 1).min(geo.ow),
        None => 0,
    };
    (lo, hi.max(lo))
}

/// Output row `o` (at `y`) of the block of `r`: border pixels tap by tap, the interior
/// [`PIX`], 4, 2, 1 at a time.
///
/// # Safety
/// As [`Rows::run`], for row `o`.
#[inline(always)]
unsafe fn out_row<V: Vec16>(r: &Rows<'_>, o: usize, y: *mut f32) {
    let (geo, x, wt) = (r.geo, r.x, r.wt);
    let (lo, hi) = r.cols;
    // SAFETY: forwarded; pixels `lo..hi` are interior.
    unsafe {
        border_run::<V>(geo, x, wt, o, 0, lo, y);
        border_run::<V>(geo, x, wt, o, hi, geo.ow, y);
        match geo.stride[1] {
            1 => interior_run::<V, 1>(geo, x, wt, o, lo, hi, y),
            2 => interior_run::<V, 2>(geo, x, wt, o, lo, hi, y),
            _ => interior_run::<V, 0>(geo, x, wt, o, lo, hi, y),
        }
    }
}

/// Interior pixels `lo..hi` of row `o`; `SW` the horizontal stride (0: read it from `geo`).
///
/// # Safety
/// As [`out_row`]; `lo..hi` within [`interior`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn interior_run<V: Vec16, const SW: usize>(
    geo: &Geometry,
    x: *const f32,
    wt: Weights,
    o: usize,
    lo: usize,
    hi: usize,
    y: *mut f32,
) {
    let mut j = lo;
    // SAFETY: forwarded.
    unsafe {
        while j + PIX <= hi {
            pixels::<V, PIX, SW>(geo, x, wt, o, j, y);
            j += PIX;
        }
        if j + 4 <= hi {
            pixels::<V, 4, SW>(geo, x, wt, o, j, y);
            j += 4;
        }
        if j + 2 <= hi {
            pixels::<V, 2, SW>(geo, x, wt, o, j, y);
            j += 2;
        }
        if j < hi {
            pixels::<V, 1, SW>(geo, x, wt, o, j, y);
        }
    }
}

/// Interior pixels `j..j + P` of row `o`: per kernel row inside the input, per tap,
/// `acc += x·w`.
///
/// # Safety
/// As [`interior_run`], for these pixels.
#[inline(always)]
unsafe fn pixels<V: Vec16, const P: usize, const SW: usize>(
    geo: &Geometry,
    x: *const f32,
    wt: Weights,
    o: usize,
    j: usize,
    y: *mut f32,
) {
    let sw = if SW == 0 { geo.stride[1] } else { SW };
    let [kh, kw] = geo.kernel;
    let dw = geo.dilation[1];
    let mut acc = [V::zero(); P];
    for i in 0..kh {
        let Some(ih) = tap_row(geo, o, i) else {
            continue;
        };
        // Pixel `j`'s first tap: inside the row (interior).
        let row = x.wrapping_add((ih * geo.w + j * sw - geo.pad[1]) * BLOCK);
        for t in 0..kw {
            // SAFETY: tap `i·kw + t` of the block's weights; pixels `j..j + P` read
            // inside input row `ih` (interior columns).
            let wv = unsafe { V::load(wt.w.wrapping_add((i * kw + t) * wt.stride)) };
            for (p, a) in acc.iter_mut().enumerate() {
                // SAFETY: as above, pixel `j + p`.
                let xv = unsafe { V::load(row.wrapping_add((p * sw + t * dw) * BLOCK)) };
                *a = V::mul_add(*a, xv, wv);
            }
        }
    }
    for (p, a) in acc.iter().enumerate() {
        // SAFETY: pixel `j + p` of the output row.
        unsafe { V::store(y.wrapping_add((j + p) * BLOCK), *a) };
    }
}

/// Border pixels `lo..hi` of row `o`, up to four at a time.
///
/// # Safety
/// As [`out_row`], for these pixels.
#[inline(always)]
unsafe fn border_run<V: Vec16>(
    geo: &Geometry,
    x: *const f32,
    wt: Weights,
    o: usize,
    lo: usize,
    hi: usize,
    y: *mut f32,
) {
    let mut j = lo;
    while j < hi {
        let n = (hi - j).min(4);
        // SAFETY: forwarded, pixels `j..j + n`.
        unsafe {
            match n {
                4 => border::<V, 4>(geo, x, wt, o, j, y),
                3 => border::<V, 3>(geo, x, wt, o, j, y),
                2 => border::<V, 2>(geo, x, wt, o, j, y),
                _ => border::<V, 1>(geo, x, wt, o, j, y),
            }
        }
        j += n;
    }
}

/// Border pixels `j..j + P` of row `o`: taps in the padding skipped pixel by pixel (the
/// pixels' sums are independent chains).
///
/// # Safety
/// As [`out_row`], for these pixels.
#[inline(always)]
unsafe fn border<V: Vec16, const P: usize>(
    geo: &Geometry,
    x: *const f32,
    wt: Weights,
    o: usize,
    j: usize,
    y: *mut f32,
) {
    let [kh, kw] = geo.kernel;
    let mut acc = [V::zero(); P];
    for i in 0..kh {
        let Some(ih) = tap_row(geo, o, i) else {
            continue;
        };
        for t in 0..kw {
            // SAFETY: tap `i·kw + t`'s weights.
            let wv = unsafe { V::load(wt.w.wrapping_add((i * kw + t) * wt.stride)) };
            for (p, a) in acc.iter_mut().enumerate() {
                let Some(iw) = ((j + p) * geo.stride[1] + t * geo.dilation[1])
                    .checked_sub(geo.pad[1])
                    .filter(|&iw| iw < geo.w)
                else {
                    continue;
                };
                // SAFETY: pixel (`ih`, `iw`) inside the input plane.
                let xv = unsafe { V::load(x.wrapping_add((ih * geo.w + iw) * BLOCK)) };
                *a = V::mul_add(*a, xv, wv);
            }
        }
    }
    for (p, a) in acc.iter().enumerate() {
        // SAFETY: pixel `j + p` of the output row.
        unsafe { V::store(y.wrapping_add((j + p) * BLOCK), *a) };
    }
}
