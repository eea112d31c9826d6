//! Direct 2-D convolution on blocked channels ([`ChannelLayout`]): no im2col, no packing at
//! run time. A register tile holds up to 4 output-channel blocks (64 channels, the weight
//! group's four registers per tap) of up to 6 pixels of one output row; each tap of each
//! input channel is one weight load per block and one broadcast per pixel, the weights
//! pre-packed by the compiler so that the taps of one input channel are contiguous
//! ([`blocked_weight_index`]). Taps that fall in the padding read a block of zeros, so border
//! pixels run the same loop; rows whose kernel row lies wholly in the padding skip it.
//!
//! Values: each output is `Σ x·w` over (input channel block, kernel row, kernel column,
//! channel in block) in that order, one multiply-add each (FMA on AVX-512, a multiply then
//! an add on the portable path: the two differ by rounding), then bias, residual and the
//! activation — whatever the tile, row or thread it falls in, so results do not depend on
//! the thread count.
//!
//! Cost: O(N·Cout·OH·OW·Cin·KH·KW) multiply-adds; no workspace.

use ge_runtime::format::{BLOCK, ChannelLayout, GROUP_BLOCKS};

use crate::kernels::KernelError;
use crate::kernels::gemm::micro::{TileAct, act_scalar};
use crate::kernels::isa::{self, Isa};
use crate::threads::Parallel;

/// Most pixels of one output row per tile (4 blocks × 6 pixels = 24 accumulators).
const PIXELS: usize = 4;
/// Below this many multiply-adds a conv runs on one thread.
const PAR_MIN_MACS: usize = 1 << 18;

/// Zeros read by the taps that fall in the padding (one block of channels).
static ZEROS: [f32; BLOCK] = [0.0; BLOCK];

/// A blocked conv's shapes.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub n: usize,
    pub cin: usize,
    /// Input height and width.
    pub h: usize,
    pub w: usize,
    pub cout: usize,
    pub oh: usize,
    pub ow: usize,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    pub pad: [usize; 2],
    pub layout: ChannelLayout,
}

impl Geometry {
    /// Channels per input block: 16 on a blocked input, 1 on a plain one.
    pub(super) fn cb(&self) -> usize {
        ge_runtime::format::input_block(self.layout)
    }

    /// Checks what the kernel relies on; the caller has checked the tensors' lengths.
    pub fn check(&self) -> Result<(), KernelError> {
        let bad = |m| Err(KernelError::Shape(m));
        if !self.layout.blocked_output() {
            return bad("blocked conv: its output must be blocked");
        }
        if !self.cout.is_multiple_of(BLOCK) || !self.cin.is_multiple_of(self.cb()) {
            return bad("blocked conv: channels are not a multiple of the block");
        }
        if self.stride.contains(&0) || self.dilation.contains(&0) || self.kernel.contains(&0) {
            return bad("blocked conv: zero kernel, stride or dilation");
        }
        for a in 0..2 {
            let span = (self.kernel[a] - 1) * self.dilation[a];
            let out = if a == 0 { self.oh } else { self.ow };
            let inp = if a == 0 { self.h } else { self.w };
            if out > 0 && (out - 1) * self.stride[a] > inp + 2 * self.pad[a] + span {
                return bad("blocked conv: output larger than the padded input");
            }
        }
        Ok(())
    }
}

/// The tensors of one blocked conv.
pub struct Operands<'a> {
    pub x: &'a [f32],
    /// [`ge_runtime::format::WeightLayout::Blocked`] order.
    pub w: &'a [f32],
    pub bias: Option<&'a [f32]>,
    /// Blocked like the output.
    pub residual: Option<&'a [f32]>,
    pub act: TileAct,
}

/// One tile's pointers and extents.
#[derive(Clone, Copy)]
pub(super) struct Tile {
    /// Image `n`'s input.
    pub x: *const f32,
    /// The weight group's first value.
    pub w: *const f32,
    /// Output block 0 of the group at pixel (oh, ow0); block `f` at `+ f·plane`.
    pub y: *mut f32,
    /// Residual at the same offsets as `y`, or null.
    pub res: *const f32,
    /// Bias of the group's first channel, or null.
    pub bias: *const f32,
    /// Floats between consecutive output blocks.
    pub plane: usize,
    pub oh: usize,
    pub ow0: usize,
    pub act: TileAct,
}

/// `y = act(W ⋆ x + bias + residual)` on blocked channels, split between the slots of `par`
/// by output row (of one image and weight group).
pub fn run(
    geo: &Geometry,
    ops: &Operands<'_>,
    y: &mut [f32],
    par: &dyn Parallel,
) -> Result<(), KernelError> {
    run_on(geo, ops, y, par, isa::isa())
}

/// [`run`] on the tiles of `isa` (a class the CPU supports: tests compare them).
pub(super) fn run_on(
    geo: &Geometry,
    ops: &Operands<'_>,
    y: &mut [f32],
    par: &dyn Parallel,
    isa: Isa,
) -> Result<(), KernelError> {
    geo.check()?;
    let [kh, kw] = geo.kernel;
    let x_len = geo.n * geo.cin * geo.h * geo.w;
    let y_len = geo.n * geo.cout * geo.oh * geo.ow;
    if ops.x.len() < x_len
        || ops.w.len() < geo.cout * geo.cin * kh * kw
        || y.len() < y_len
        || ops.bias.is_some_and(|b| b.len() < geo.cout)
        || ops.residual.is_some_and(|r| r.len() < y_len)
    {
        return Err(KernelError::Shape(
            "blocked conv: operand shorter than its shape",
        ));
    }
    if y_len == 0 {
        return Ok(());
    }
    let groups = (geo.cout / BLOCK).div_ceil(GROUP_BLOCKS);
    let rows = geo.n * groups * geo.oh;
    let macs = y_len * geo.cin * kh * kw;
    let slots = if macs < PAR_MIN_MACS {
        1
    } else {
        par.threads().min(rows)
    };
    let yp = crate::kernels::gemm::SendPtr(y.as_mut_ptr());
    let body = |s: usize| {
        for r in s * rows / slots..(s + 1) * rows / slots {
            // SAFETY: rows are disjoint between slots; every tile of row `r` stays inside
            // the validated extents.
            unsafe { row(geo, ops, yp.get(), r, isa) };
        }
    };
    if slots <= 1 {
        body(0);
    } else {
        par.run(slots, &body);
    }
    Ok(())
}

/// Row `r` (image, weight group, output row) in tiles of at most [`PIXELS`] pixels, split
/// as evenly as the row allows (7 → 4 + 3: no tile narrow enough to stall on FMA latency).
///
/// # Safety
/// `y` holds the output; the operands were validated by [`run`].
unsafe fn row(geo: &Geometry, ops: &Operands<'_>, y: *mut f32, r: usize, isa: Isa) {
    let groups = (geo.cout / BLOCK).div_ceil(GROUP_BLOCKS);
    let (img, rest) = (r / (groups * geo.oh), r % (groups * geo.oh));
    let (g, oh) = (rest / geo.oh, rest % geo.oh);
    let [kh, kw] = geo.kernel;
    let co0 = g * GROUP_BLOCKS * BLOCK;
    let fb = (geo.cout - co0).min(GROUP_BLOCKS * BLOCK) / BLOCK;
    let plane = geo.oh * geo.ow * BLOCK;
    let out0 = img * geo.cout * geo.oh * geo.ow + co0 * geo.oh * geo.ow + oh * geo.ow * BLOCK;
    let tiles = geo.ow.div_ceil(PIXELS);
    let mut ow0 = 0;
    for t in 0..tiles {
        let px =
            (geo.ow - ow0) / (tiles - t) + usize::from(!(geo.ow - ow0).is_multiple_of(tiles - t));
        let off = out0 + ow0 * BLOCK;
        let tile = Tile {
            x: ops.x[img * geo.cin * geo.h * geo.w..].as_ptr(),
            w: ops.w[co0 * geo.cin * kh * kw..].as_ptr(),
            y: y.wrapping_add(off),
            res: ops
                .residual
                .map_or(core::ptr::null(), |res| res[off..].as_ptr()),
            bias: ops.bias.map_or(core::ptr::null(), |b| b[co0..].as_ptr()),
            plane,
            oh,
            ow0,
            act: ops.act,
        };
        // SAFETY: the tile's `fb` blocks × `px` pixels are inside the output row; the
        // weights of group `g` and the input image are inside the validated operands.
        unsafe { dispatch(geo, &tile, fb, px, isa) };
        ow0 += px;
    }
}

/// The tile build for `fb` blocks × `px` pixels on `isa`.
///
/// # Safety
/// As [`row`], for this tile.
unsafe fn dispatch(geo: &Geometry, t: &Tile, fb: usize, px: usize, isa: Isa) {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if isa == Isa::Avx512 {
        // SAFETY: forwarded; the CPU has AVX-512 (`isa()` only returns supported classes).
        unsafe { super::conv_avx512::tile(geo, t, fb, px) };
        return;
    }
    let _ = isa;
    // SAFETY: forwarded.
    unsafe { portable(geo, t, fb, px) };
}

/// The input row that output row `oh` reads at kernel row `i`; `None` when it lies in the
/// padding (every pixel of the tile skips the kernel row).
#[inline(always)]
pub(super) fn tap_row(geo: &Geometry, oh: usize, i: usize) -> Option<usize> {
    let ih = (oh * geo.stride[0] + i * geo.dilation[0]).checked_sub(geo.pad[0])?;
    (ih < geo.h).then_some(ih)
}

/// The input address of pixel `ow` at kernel column `j` in row `ih` of input block `cib`,
/// or [`ZEROS`] in the padding.
#[inline(always)]
pub(super) fn tap_pixel(
    geo: &Geometry,
    x: *const f32,
    cib: usize,
    ih: usize,
    ow: usize,
    j: usize,
) -> *const f32 {
    let cb = geo.cb();
    match (ow * geo.stride[1] + j * geo.dilation[1]).checked_sub(geo.pad[1]) {
        Some(iw) if iw < geo.w => x.wrapping_add(((cib * geo.h + ih) * geo.w + iw) * cb),
        _ => ZEROS.as_ptr(),
    }
}

/// The portable tile: the same order of operations as the AVX-512 one, without FMA.
///
/// # Safety
/// As [`row`], for this tile.
unsafe fn portable(geo: &Geometry, t: &Tile, fb: usize, px: usize) {
    let cb = geo.cb();
    let [kh, kw] = geo.kernel;
    let width = fb * BLOCK;
    let mut acc = [[[0.0f32; BLOCK]; GROUP_BLOCKS]; PIXELS];
    let mut wp = t.w;
    for cib in 0..geo.cin / cb {
        for i in 0..kh {
            let Some(ih) = tap_row(geo, t.oh, i) else {
                wp = wp.wrapping_add(kw * cb * width);
                continue;
            };
            for j in 0..kw {
                let pix: [*const f32; PIXELS] = core::array::from_fn(|p| {
                    tap_pixel(geo, t.x, cib, ih, t.ow0 + p.min(px - 1), j)
                });
                for c in 0..cb {
                    for (p, a) in acc.iter_mut().enumerate().take(px) {
                        // SAFETY: `c < cb` channels of a pixel (or of ZEROS) are readable.
                        let xv = unsafe { *pix[p].add(c) };
                        for (f, blk) in a.iter_mut().enumerate().take(fb) {
                            for (l, v) in blk.iter_mut().enumerate() {
                                // SAFETY: step (cib, i, j, c)'s `width` weights.
                                *v += xv * unsafe { *wp.add(c * width + f * BLOCK + l) };
                            }
                        }
                    }
                }
                wp = wp.wrapping_add(cb * width);
            }
        }
    }
    for (p, a) in acc.iter().enumerate().take(px) {
        for (f, blk) in a.iter().enumerate().take(fb) {
            for (l, &v) in blk.iter().enumerate() {
                let at = f * t.plane + p * BLOCK + l;
                let mut v = v;
                if !t.bias.is_null() {
                    // SAFETY: the group's `fb·BLOCK` biases.
                    v += unsafe { *t.bias.add(f * BLOCK + l) };
                }
                if !t.res.is_null() {
                    // SAFETY: laid out like the output.
                    v += unsafe { *t.res.add(at) };
                }
                // SAFETY: inside the output row (contract).
                unsafe { *t.y.add(at) = act_scalar(t.act, v) };
            }
        }
    }
}
