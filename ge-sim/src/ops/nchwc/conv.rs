//! Direct 2-D convolution on blocked channels ([`ChannelLayout`]): no im2col, no packing at
//! run time. A register tile holds up to 4 output-channel blocks (64 channels, the weight
//! group's four registers per tap) of up to 6 consecutive output pixels (a tile may wrap to
//! the next output row); each
//! tap of each input channel is one weight load per block and one broadcast per pixel, the
//! weights pre-packed by the compiler so that the taps of one input channel are contiguous
//! ([`blocked_weight_index`]). Taps that fall in the padding read a block of zeros, so
//! border pixels run the same loop.
//!
//! Work is cut into bands of [`BAND_PIXELS`] output pixels of one weight group (the unit
//! of threading). In a band the input channels are walked in chunks whose weights fit in
//! L1 ([`CHUNK_BYTES`]): every tile of the band accumulates one chunk (partial sums parked
//! in the output, which stays in L2) before the next chunk's weights are read, so each
//! weight comes from L2 once per band instead of once per tile; the next chunk's weights are
//! prefetched to L2 while the tiles of this one run, each tile a slice spread over its
//! taps. Bias, residual and a clamp (ReLU, ReLU6) are applied in the SIMD tiles' registers
//! after the last chunk; other activations, and the other paths, run them over the band
//! afterwards.
//!
//! Values: each output is `Σ x·w` over (input channel block, kernel row, kernel column,
//! channel in block) in that order, one multiply-add each (FMA on AVX-512 and AVX2, which
//! agree bitwise; a multiply then an add on the portable path: the two differ by
//! rounding), then bias, residual and the
//! activation — whatever the tile, chunk, band or thread it falls in (parking a partial
//! sum in memory is exact), so results do not depend on the thread count.
//!
//! Cost: O(N·Cout·OH·OW·Cin·KH·KW) multiply-adds; no workspace.

use ge_runtime::format::{BLOCK, ChannelLayout, GROUP_BLOCKS};

use crate::arch::isa::{self, Isa};
use crate::ops::KernelError;
use crate::ops::gemm::micro::{TileAct, act_scalar};
use crate::threads::Parallel;

/// Most pixels per tile (4 blocks × 6 pixels = 24 accumulators of 32 zmm registers). A
/// pointwise conv's group of 2–3 blocks once took wider tiles (`24 / blocks` pixels); with
/// ge-sim in one codegen unit LLVM kept those tiles' accumulators on the stack, storing each
/// after every FMA (SqueezeNet's squeeze layers 2.4× slower), and 6-pixel tiles now run them
/// as fast as the wide ones did: SqueezeNet 0.915×, Inception v1 0.981×, yolov8n_320 0.964×.
pub(crate) const PIXELS: usize = 6;

/// Output pixels of one band: 1,024 × 64 channels × 4 B = 256 KB of partial sums, in L2
/// between chunks. A band reads its weight group's weights once (chunk by chunk, from L2)
/// and its input rows plus the window's halo, so longer bands read both less often: 1 thread,
/// against 256 pixels, ResNet-50 0.961×, DenseNet-121 0.901×, SqueezeNet 0.962×, yolov8n_320
/// 0.945×, VGG-19's 3 × 3 convs at 56 × 56 26.5 → 23.0 ms; 2,048 (512 KB of sums) lost again
/// on ResNet-50 (1.013×) and DenseNet-121 (1.028×).
const BAND_PIXELS: usize = 1024;

/// Weight bytes of one input-channel chunk: most of a 48 KB L1 data cache, the rest left to
/// the input pixels and the output tile.
const CHUNK_BYTES: usize = 36 * 1024;
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
    pub(crate) fn cb(&self) -> usize {
        ge_runtime::format::input_block(self.layout)
    }

    /// A 1×1 conv at stride 1 without padding: output pixel `q` reads input pixel `q`, so a
    /// tile's pixels lie at one stride in the flat plane whatever rows they span.
    fn pointwise(&self) -> bool {
        self.kernel == [1, 1] && self.stride == [1, 1] && self.pad == [0, 0]
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

    /// Checks that the operands hold what the shapes ask, `in_per_filter` input channels
    /// read by each output channel (`cin` for one group, 1 for a depthwise conv); the
    /// output's length.
    pub(crate) fn check_operands(
        &self,
        ops: &Operands<'_>,
        y: &[f32],
        in_per_filter: usize,
    ) -> Result<usize, KernelError> {
        let [kh, kw] = self.kernel;
        let y_len = self.n * self.cout * self.oh * self.ow;
        if ops.x.len() < self.n * self.cin * self.h * self.w
            || ops.w.len() < self.cout * in_per_filter * kh * kw
            || y.len() < y_len
            || ops.bias.is_some_and(|b| b.len() < self.cout)
            || ops.residual.is_some_and(|r| r.len() < y_len)
        {
            return Err(KernelError::Shape(
                "blocked conv: operand shorter than its shape",
            ));
        }
        Ok(y_len)
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
pub(crate) struct Tile {
    /// Image `n`'s input.
    pub x: *const f32,
    /// The weight group's first value.
    pub w: *const f32,
    /// The input blocks this pass accumulates; a tile with `cibs.0 > 0` resumes from the
    /// partial sums in `y`.
    pub cibs: (usize, usize),
    /// Output block 0 of the group at the tile's first pixel; block `f` at `+ f·plane`.
    pub y: *mut f32,
    /// Floats between consecutive output blocks.
    pub plane: usize,
    /// The tile's first pixel, `oh·OW + ow`.
    pub q0: usize,
    /// A slice of the next chunk's weights, `(first, floats)`, that the tile prefetches to
    /// L2 spread over its taps (`prefetch::Spread`; the portable tile ignores it).
    pub ahead: (*const f32, usize),
    /// The band epilogue of this tile, applied in registers before the store (the last
    /// chunk of a conv whose activation is a clamp or none), or `None`.
    pub end: Option<TileEnd>,
}

/// What [`Tile::end`] adds: `act(sum + bias + residual)` in [`finish`]'s order, so the
/// values are the band epilogue's.
#[derive(Clone, Copy)]
pub(crate) struct TileEnd {
    /// Bias of the group's first channel, or null.
    pub bias: *const f32,
    /// Residual at the tile's `y` offsets, or null.
    pub res: *const f32,
    pub act: TileAct,
}

impl TileEnd {
    /// The activation as a clamp, none as the clamp to [-∞, ∞] (every value stays, a NaN
    /// too): the tiles pass it to `act`, which then inlines one arm, not every
    /// activation's code once per accumulator. The band only gives tiles a clamp or none.
    #[inline(always)]
    pub(crate) fn clamp(&self) -> TileAct {
        match self.act {
            c @ TileAct::Clamp { .. } => c,
            _ => TileAct::Clamp {
                lo: f32::NEG_INFINITY,
                hi: f32::INFINITY,
            },
        }
    }
}

/// The epilogue of one band of one weight group: `y = act(y + bias + residual)` over `fb`
/// blocks × `px` pixels.
#[derive(Clone, Copy)]
pub(crate) struct BandEnd {
    /// Output block 0 at the band's first pixel; block `f` at `+ f·plane`.
    pub y: *mut f32,
    /// Residual at the same offsets as `y`, or null.
    pub res: *const f32,
    /// Bias of the group's first channel, or null.
    pub bias: *const f32,
    pub plane: usize,
    pub fb: usize,
    pub px: usize,
    pub act: TileAct,
}

/// Where the pixels of a tile read one kernel row.
enum Row {
    /// Every pixel's kernel row lies in the padding: the tile skips it.
    Padding,
    /// Every tap inside the input: tap `j` of pixel `p` at
    /// `base + (j·dilation + p·stride)·cb` (the tile's pixels in one input row).
    Strided(*const f32),
    /// Taps one by one ([`TileTaps::tap`]).
    Mixed,
}

/// Where the pixels of a tile read one tap.
enum Tap {
    /// Pixel `p` at `base + p·stride·cb` (the tile's pixels in one input row).
    Strided(*const f32),
    /// Per-pixel addresses (borders, rows wrapping, strides above 2) in the walker's
    /// `pixels` ([`ZEROS`] in the padding).
    Pixels,
}

/// The taps of one tile: the walk every tile build shares ([`TileTaps::each_tap`]).
pub(crate) struct TileTaps<'a, const N: usize> {
    geo: &'a Geometry,
    x: *const f32,
    px: usize,
    /// Output row and column of each pixel.
    oh: [usize; N],
    ow: [usize; N],
    /// Every pixel in one output row: taps may be [`Tap::Strided`].
    flat: bool,
    pointwise: bool,
    /// A 1×1 kernel without padding (any stride): every input block's tap is the first
    /// block's a plane further.
    unpadded_1x1: bool,
    /// The per-pixel addresses of the last [`Tap::Pixels`].
    pixels: [*const f32; N],
}

impl<'a, const N: usize> TileTaps<'a, N> {
    /// The walk of a tile of `px` stored pixels computed as `N ≥ px` (the kernel's width).
    #[inline(always)]
    pub(crate) fn new(geo: &'a Geometry, t: &Tile, px: usize) -> Self {
        let mut oh = [0; N];
        let mut ow = [0; N];
        // One division per tile, then a step per pixel.
        let (mut h, mut w) = (t.q0 / geo.ow, t.q0 % geo.ow);
        for p in 0..N {
            (oh[p], ow[p]) = (h, w);
            // Pixels past `px` repeat the last (read, never stored).
            if p + 1 < px {
                w += 1;
                if w == geo.ow {
                    (h, w) = (h + 1, 0);
                }
            }
        }
        let pointwise = geo.pointwise();
        TileTaps {
            geo,
            x: t.x,
            px,
            oh,
            ow,
            flat: oh[0] == oh[px - 1],
            pointwise,
            unpadded_1x1: geo.kernel == [1, 1] && geo.pad == [0, 0],
            pixels: [ZEROS.as_ptr(); N],
        }
    }

    /// Kernel row `i` of input block `cib` (not of a pointwise conv: [`Self::each_tap`]).
    #[inline(always)]
    fn row(&self, cib: usize, i: usize) -> Row {
        let geo = self.geo;
        let cb = geo.cb();
        if !self.flat || self.px < N {
            // Taps one by one (also for a tile computing pixels it does not store: only a
            // pointwise conv's reads past its own pixels are checked to be in place).
            return Row::Mixed;
        }
        let Some(ih) = tap_row(geo, self.oh[0], i) else {
            return Row::Padding;
        };
        let span = (geo.kernel[1] - 1) * geo.dilation[1];
        let iw0 = (self.ow[0] * geo.stride[1]).wrapping_sub(geo.pad[1]);
        let last = self.ow[self.px - 1] * geo.stride[1] + span;
        if geo.stride[1] <= 2 && iw0 < geo.w && last >= geo.pad[1] && last - geo.pad[1] < geo.w {
            Row::Strided(self.x.wrapping_add(((cib * geo.h + ih) * geo.w + iw0) * cb))
        } else {
            Row::Mixed
        }
    }

    /// Tap (`i`, `j`) of input block `cib`, in kernel row `row` (from [`Self::row`], not
    /// [`Row::Padding`]).
    #[inline(always)]
    fn tap(&mut self, row: &Row, cib: usize, i: usize, j: usize) -> Tap {
        let geo = self.geo;
        let cb = geo.cb();
        if let Row::Strided(base) = *row {
            return Tap::Strided(base.wrapping_add(j * geo.dilation[1] * cb));
        }
        if self.flat
            && self.px == N
            && geo.stride[1] <= 2
            && let Some(ih) = tap_row(geo, self.oh[0], i)
        {
            let last = self.ow[self.px - 1] * geo.stride[1] + j * geo.dilation[1];
            let iw0 = (self.ow[0] * geo.stride[1] + j * geo.dilation[1]).wrapping_sub(geo.pad[1]);
            if iw0 < geo.w && last >= geo.pad[1] && last - geo.pad[1] < geo.w {
                return Tap::Strided(self.x.wrapping_add(((cib * geo.h + ih) * geo.w + iw0) * cb));
            }
        }
        for p in 0..N {
            self.pixels[p] = match tap_row(geo, self.oh[p], i) {
                Some(ih) => tap_pixel(geo, self.x, cib, ih, self.ow[p], j),
                None => ZEROS.as_ptr(),
            };
        }
        Tap::Pixels
    }

    /// The walk over the taps of input blocks `cibs` (`CB` channels each) that every tile
    /// shares: `step(x, w)` per tap outside the padding, pixel `p`'s `CB` channels at
    /// `x[p]` (in place: no tap is copied; ZEROS in the padding), the tap's weights at `w`
    /// in rows of `width` floats from `w0` (the tile's first block of input block 0).
    /// Callers mark `step` `#[inline(always)]`: a third call site once left SqueezeNet's
    /// tiles out of line (1.8× slower).
    ///
    /// # Safety
    /// The tile's taps and weights are readable (the kernels' contract).
    #[inline(always)]
    pub(crate) unsafe fn each_tap<const CB: usize>(
        &mut self,
        cibs: (usize, usize),
        w0: *const f32,
        width: usize,
        mut step: impl FnMut(&[*const f32; N], *const f32),
    ) {
        let [kh, kw] = self.geo.kernel;
        let s_px = self.geo.stride[1] * CB;
        let mut wp = w0.wrapping_add(cibs.0 * kh * kw * CB * width);
        if self.unpadded_1x1 && cibs.0 < cibs.1 {
            // One tap per input block, the blocks a plane apart: the first block's tap
            // found once, the others a plane further (SqueezeNet 7% faster than walking
            // `row` and `tap` per block).
            let plane = self.geo.h * self.geo.w * CB;
            let mut pix = if self.pointwise {
                // A tile computing more pixels than it stores (`px < N`) reads copies of
                // its last pixel, not the pixels after it (past the plane's end on the
                // last tile).
                let q = self.oh[0] * self.geo.ow + self.ow[0];
                let at = self.x.wrapping_add(cibs.0 * plane + q * CB);
                core::array::from_fn(|p| at.wrapping_add(p.min(self.px - 1) * CB))
            } else {
                match self.row(cibs.0, 0) {
                    Row::Padding => [ZEROS.as_ptr(); N],
                    row => match self.tap(&row, cibs.0, 0, 0) {
                        Tap::Strided(at) => core::array::from_fn(|p| at.wrapping_add(p * s_px)),
                        Tap::Pixels => self.pixels,
                    },
                }
            };
            // A tap outside the input (only a malformed shape puts one there) reads ZEROS
            // in every block: the walk below.
            if !pix.contains(&ZEROS.as_ptr()) {
                for _ in cibs.0..cibs.1 {
                    step(&pix, wp);
                    for x in &mut pix {
                        *x = x.wrapping_add(plane);
                    }
                    wp = wp.wrapping_add(CB * width);
                }
                return;
            }
        }
        for cib in cibs.0..cibs.1 {
            for i in 0..kh {
                let row = self.row(cib, i);
                if let Row::Padding = row {
                    wp = wp.wrapping_add(kw * CB * width);
                    continue;
                }
                for j in 0..kw {
                    let pix = match self.tap(&row, cib, i, j) {
                        Tap::Strided(at) => core::array::from_fn(|p| at.wrapping_add(p * s_px)),
                        Tap::Pixels => self.pixels,
                    };
                    step(&pix, wp);
                    wp = wp.wrapping_add(CB * width);
                }
            }
        }
    }
}

/// `y = act(W ⋆ x + bias + residual)` on blocked channels, split between the slots of `par`
/// by band (of one image and weight group).
pub fn run(
    geo: &Geometry,
    ops: &Operands<'_>,
    y: &mut [f32],
    par: &dyn Parallel,
) -> Result<(), KernelError> {
    run_on(geo, ops, y, par, isa::isa())
}

/// [`run`] on the tiles of `isa` (a class the CPU supports: tests compare them).
pub(crate) fn run_on(
    geo: &Geometry,
    ops: &Operands<'_>,
    y: &mut [f32],
    par: &dyn Parallel,
    isa: Isa,
) -> Result<(), KernelError> {
    geo.check()?;
    // A conv along H of width-1 planes (a 1-D conv exported as k×1): the same bytes read as
    // one row along W, where tiles take consecutive pixels of a row instead of wrapping.
    let swapped;
    let geo = if geo.w == 1 && geo.ow == 1 && geo.kernel[1] == 1 && geo.pad[1] == 0 {
        swapped = Geometry {
            h: 1,
            w: geo.h,
            oh: 1,
            ow: geo.oh,
            kernel: [1, geo.kernel[0]],
            stride: [1, geo.stride[0]],
            dilation: [1, geo.dilation[0]],
            pad: [0, geo.pad[0]],
            ..*geo
        };
        &swapped
    } else {
        geo
    };
    let [kh, kw] = geo.kernel;
    let y_len = geo.check_operands(ops, y, geo.cin)?;
    if y_len == 0 {
        return Ok(());
    }
    let groups = (geo.cout / BLOCK).div_ceil(GROUP_BLOCKS);
    let units = geo.n * groups * bands(geo);
    let yp = crate::ops::gemm::SendPtr(y.as_mut_ptr());
    split_bands(units, y_len * geo.cin * kh * kw, par, |u| {
        // SAFETY: bands are disjoint; every tile of band `u` stays inside the validated
        // extents.
        unsafe { band(geo, ops, yp.get(), u, isa) };
    });
    Ok(())
}

/// Runs `band(u)` for every `u < units`, in contiguous runs split between the slots of
/// `par` (one slot below [`PAR_MIN_MACS`] multiply-adds): which band a value falls in does
/// not depend on the thread count.
pub(crate) fn split_bands(
    units: usize,
    macs: usize,
    par: &dyn Parallel,
    band: impl Fn(usize) + Sync,
) {
    let slots = if macs < PAR_MIN_MACS {
        1
    } else {
        par.threads().min(units)
    };
    let body = |s: usize| {
        for u in s * units / slots..(s + 1) * units / slots {
            band(u);
        }
    };
    if slots <= 1 {
        body(0);
    } else {
        par.run(slots, &body);
    }
}

/// Bands per image and weight group (fixed by the shape: not by the thread count).
fn bands(geo: &Geometry) -> usize {
    (geo.oh * geo.ow).div_ceil(BAND_PIXELS)
}

/// Pixel `k` of `n` split into `parts` as evenly as they go (the first of part `k`).
fn split(n: usize, parts: usize, k: usize) -> usize {
    k * n / parts
}

/// Band `u` (image, weight group, band): for each chunk of input channels, every tile of
/// at most [`PIXELS`] pixels (split as evenly as the band allows: no tile narrow enough
/// to stall on FMA latency), then the band's epilogue unless the tiles applied it.
///
/// # Safety
/// `y` holds the output; the operands were validated by [`run`].
unsafe fn band(geo: &Geometry, ops: &Operands<'_>, y: *mut f32, u: usize, isa: Isa) {
    let (groups, nb) = ((geo.cout / BLOCK).div_ceil(GROUP_BLOCKS), bands(geo));
    let (img, g, b) = (u / (groups * nb), u / nb % groups, u % nb);
    let ohw = geo.oh * geo.ow;
    let (q_start, q_end) = (split(ohw, nb, b), split(ohw, nb, b + 1));
    let [kh, kw] = geo.kernel;
    let co0 = g * GROUP_BLOCKS * BLOCK;
    let fb = (geo.cout - co0).min(GROUP_BLOCKS * BLOCK) / BLOCK;
    let plane = ohw * BLOCK;
    let out0 = img * geo.cout * ohw + co0 * ohw + q_start * BLOCK;
    let (cb, cibs) = (geo.cb(), geo.cin / geo.cb());
    let chunk = (CHUNK_BYTES / (kh * kw * cb * fb * BLOCK * 4)).clamp(1, cibs.max(1));
    let px_total = q_end - q_start;
    let tiles = px_total.div_ceil(PIXELS);
    // A clamp (or no activation) is two instructions: it runs in the tile's registers on
    // the last chunk, not in a second pass over the band (which re-read the band's sums
    // from L2).
    let in_tile = crate::arch::kernels::blocked_tile_ends(isa)
        && cibs > 0
        && matches!(ops.act, TileAct::None | TileAct::Clamp { .. });
    let bias = ops.bias.map_or(core::ptr::null(), |b| b[co0..].as_ptr());
    let x = ops.x[img * geo.cin * geo.h * geo.w..].as_ptr();
    let w = ops.w[co0 * geo.cin * kh * kw..].as_ptr();
    let mut c0 = 0;
    let step = kh * kw * cb * fb * BLOCK;
    while c0 < cibs {
        let c1 = (c0 + chunk).min(cibs);
        // The weights after this chunk's (the next chunk, or the next group's first),
        // prefetched to L2 a slice per tile (spread over the tile's taps): a chunk read
        // cold from L3 or memory stalled the chunk's first tile (ResNet-50 reads 102 MB of
        // weights once a run: ~10% of its time).
        let next = co0 * geo.cin * kh * kw + c1 * step;
        let ahead = (chunk * step).min(ops.w.len().saturating_sub(next));
        let per_tile = ahead.div_ceil(tiles).next_multiple_of(16);
        for t in 0..tiles {
            let from = (t * per_tile).min(ahead);
            let (p0, p1) = (split(px_total, tiles, t), split(px_total, tiles, t + 1));
            let tile = Tile {
                ahead: (
                    ops.w.as_ptr().wrapping_add(next + from),
                    per_tile.min(ahead - from),
                ),
                x,
                w,
                cibs: (c0, c1),
                y: y.wrapping_add(out0 + p0 * BLOCK),
                plane,
                q0: q_start + p0,
                end: (in_tile && c1 == cibs).then(|| TileEnd {
                    bias,
                    res: ops
                        .residual
                        .map_or(core::ptr::null(), |res| res[out0 + p0 * BLOCK..].as_ptr()),
                    act: ops.act,
                }),
            };
            // SAFETY: the tile's `fb` blocks × `p1 - p0` pixels are inside the band; the
            // weights of group `g` and the input image are inside the validated operands.
            unsafe { dispatch(geo, &tile, fb, p1 - p0, isa) };
        }
        c0 = c1;
    }
    if in_tile {
        return;
    }
    let end = BandEnd {
        y: y.wrapping_add(out0),
        res: ops
            .residual
            .map_or(core::ptr::null(), |res| res[out0..].as_ptr()),
        bias,
        plane,
        fb,
        px: px_total,
        act: ops.act,
    };
    // SAFETY: the band's `fb` blocks × `px` pixels of the output (and residual).
    unsafe { finish(&end, cibs == 0, isa) };
}

/// The band epilogue on `isa` (`zero`: no input channels, the sums are zero).
///
/// # Safety
/// As [`band`], for this band.
pub(crate) unsafe fn finish(e: &BandEnd, zero: bool, isa: Isa) {
    if !zero && e.bias.is_null() && e.res.is_null() && e.act == TileAct::None {
        // The raw sums are the outputs.
        return;
    }
    // SAFETY: forwarded.
    if !zero && unsafe { crate::arch::kernels::blocked_finish(e, isa) } {
        return;
    }
    for f in 0..e.fb {
        for i in 0..e.px * BLOCK {
            let at = f * e.plane + i;
            // SAFETY: inside the band's blocks (contract).
            unsafe {
                let mut v = if zero { 0.0 } else { *e.y.add(at) };
                if !e.bias.is_null() {
                    v += *e.bias.add(f * BLOCK + i % BLOCK);
                }
                if !e.res.is_null() {
                    v += *e.res.add(at);
                }
                *e.y.add(at) = act_scalar(e.act, v);
            }
        }
    }
}

/// The tile build for `fb` blocks × `px` pixels on `isa`.
///
/// # Safety
/// As [`band`], for this tile.
unsafe fn dispatch(geo: &Geometry, t: &Tile, fb: usize, px: usize, isa: Isa) {
    // SAFETY: forwarded.
    if unsafe { crate::arch::kernels::blocked_tile(geo, t, fb, px, isa) } {
        return;
    }
    // SAFETY: forwarded.
    unsafe { portable(geo, t, fb, px) };
}

/// The input row that output row `oh` reads at kernel row `i`; `None` when it lies in the
/// padding (every pixel of the tile skips the kernel row).
#[inline(always)]
pub(crate) fn tap_row(geo: &Geometry, oh: usize, i: usize) -> Option<usize> {
    let ih = (oh * geo.stride[0] + i * geo.dilation[0]).checked_sub(geo.pad[0])?;
    (ih < geo.h).then_some(ih)
}

/// The input address of pixel `ow` at kernel column `j` in row `ih` of input block `cib`,
/// or [`ZEROS`] in the padding.
#[inline(always)]
pub(crate) fn tap_pixel(
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

/// The portable tile: the same order of operations as the SIMD ones, without FMA.
///
/// # Safety
/// As [`band`], for this tile.
unsafe fn portable(geo: &Geometry, t: &Tile, fb: usize, px: usize) {
    // SAFETY: forwarded contract.
    unsafe {
        if geo.cb() == BLOCK {
            portable_cb::<BLOCK>(geo, t, fb, px);
        } else {
            portable_cb::<1>(geo, t, fb, px);
        }
    }
}

/// [`portable`] on input blocks of `CB` channels.
///
/// # Safety
/// As [`portable`], `CB` the geometry's input block.
unsafe fn portable_cb<const CB: usize>(geo: &Geometry, t: &Tile, fb: usize, px: usize) {
    let width = fb * BLOCK;
    let mut acc = [[[0.0f32; BLOCK]; GROUP_BLOCKS]; PIXELS];
    let at = |p: usize, f: usize, l: usize| f * t.plane + p * BLOCK + l;
    if t.cibs.0 > 0 {
        for (p, a) in acc.iter_mut().enumerate().take(px) {
            for (f, blk) in a.iter_mut().enumerate().take(fb) {
                for (l, v) in blk.iter_mut().enumerate() {
                    // SAFETY: inside the band (contract).
                    *v = unsafe { *t.y.add(at(p, f, l)) };
                }
            }
        }
    }
    let mut taps = TileTaps::<PIXELS>::new(geo, t, px);
    // SAFETY: the tile's taps and weights (contract).
    unsafe {
        taps.each_tap::<CB>(
            t.cibs,
            t.w,
            width,
            #[inline(always)]
            |pix, wp| {
                for c in 0..CB {
                    for (p, a) in acc.iter_mut().enumerate().take(px) {
                        // `c < CB` channels of a tap's pixel are readable.
                        let xv = *pix[p].add(c);
                        for (f, blk) in a.iter_mut().enumerate().take(fb) {
                            for (l, v) in blk.iter_mut().enumerate() {
                                // The tap's `CB` rows of `width` weights.
                                *v += xv * *wp.add(c * width + f * BLOCK + l);
                            }
                        }
                    }
                }
            },
        )
    };
    for (p, a) in acc.iter().enumerate().take(px) {
        for (f, blk) in a.iter().enumerate().take(fb) {
            for (l, &v) in blk.iter().enumerate() {
                // SAFETY: inside the band (contract).
                unsafe { *t.y.add(at(p, f, l)) = v };
            }
        }
    }
}
