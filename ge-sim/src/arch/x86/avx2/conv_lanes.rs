//! Convolution with output channels in the vector lanes (AVX2): the host path of k × k convs
//! on AVX2 CPUs. A register tile holds 16 output channels (two registers) of 4 output
//! pixels; each tap is two weight loads and four input broadcasts, every pixel read from
//! its own place in the direct path's padded band ([`crate::ops::conv::direct`]). The pixels of a tile
//! are any 4 consecutive outputs of the plane, across row ends, so no lane is wasted on
//! narrow rows: YOLO's 40-, 20- and 10-wide stages ran their 16-wide row tiles 12–60% empty
//! (10-wide and strided narrow rows on im2col). The tile is transposed back into the output
//! planes (4 pixels of two channels per register) with the bias, residual and activation
//! applied on the way. 1 × 1 convs keep the GEMM, whose packed input panels beat per-pixel
//! broadcasts from many planes (measured 5–50% slower here).
//!
//! Values: the same K blocks as the GEMM/direct tiles ([`k_block`]), each output's taps
//! multiplied and added in (channel, kd, kh, kw) order by one FMA each, then the same
//! epilogue in the same order, so every output is bitwise the direct and im2col paths' value
//! (tested). The weights are repacked per band, K block and block of output channels into
//! `[kc][16]` panels in the workspace, from ONNX or the compiler's 6-row panel order:
//! O(M·K) per band, against the band's O(M·K·pixels) multiply-adds.
//!
//! Cost: O(input · rows re-read at band borders) to fill bands, O(M·K·output) multiply-adds.

use core::arch::x86_64::*;

use crate::arch::tile::{MR, TileEp, finish};
use crate::arch::x86::avx2::gemm::acts as apply_acts;
use crate::ops::KernelError;
use crate::ops::conv::direct::{self, Fill, Group, Layout};
use crate::ops::conv::lanes::{LANES, panel_blocks, ws_len};
use crate::ops::conv::{Geo, bad};
use crate::ops::gemm::{SendPtr, k_block};
use crate::threads::Parallel;

/// Output pixels per tile (8 accumulators: enough independent chains for the FMA pipes,
/// ~99% of the FMA peak on Zen 1 with the operands in L1).
const PIX: usize = 4;

/// `y = act(W ⋆ x + bias + residual)` for one group, split between the slots of `par` by
/// tile of 4 pixels (each running every block of 16 output channels whose panels are held).
/// The caller has checked that the CPU has AVX2 and FMA.
pub(crate) fn run(
    geo: &Geo,
    lay: &Layout,
    g: Group<'_>,
    ws: &mut [f32],
    par: &dyn Parallel,
) -> Result<(), KernelError> {
    let k = geo.cg * geo.kprod;
    let yp = geo.small_plane;
    g.check(geo)?;
    let ws = ws
        .get_mut(..ws_len(geo, lay))
        .ok_or(KernelError::Workspace)?;
    let (band, rest) = ws.split_at_mut(lay.buf);
    let (offs, panels) = rest.split_at_mut(k);
    let offs: &mut [u32] = bytemuck::cast_slice_mut(offs);
    let kb = k_block(k);
    let max_off = direct::tap_offsets(geo, lay, offs);
    let [small0, small1, small2] = geo.small;
    let blocks = geo.mg.div_ceil(LANES);
    let held = panel_blocks(geo, kb);
    let yptr = SendPtr(g.y.as_mut_ptr());
    let pptr = SendPtr(panels.as_mut_ptr());
    let w = Weights { w: g.w, geo, k };
    for o0 in 0..small0 {
        let mut pc = 0;
        while pc < k {
            let kc = kb.min(k - pc);
            let last = pc + kc >= k;
            let mut r0 = 0;
            while r0 < small1 {
                let out0 = (o0 * small1 + r0) * small2;
                // The band's pixels (flat output indices `out0 + f`) are read at band row
                // `f / w` (rows `s1·wp` apart) and column `f mod w`.
                let chans = pc / geo.kprod..((pc + kc - 1) / geo.kprod + 1).min(geo.cg);
                Fill {
                    geo,
                    lay,
                    g: &g,
                    o0,
                    r0,
                }
                .band(chans, band, par);
                let (rows, x, step) = (lay.band.min(small1 - r0), &*band, geo.s[1] * lay.wp);
                let pixels = rows * small2;
                // The last pixel's base plus the farthest tap must be inside the band.
                if max_off + (rows - 1) * step + small2 > x.len() {
                    return Err(bad("conv lanes layout"));
                }
                let tiles = pixels.div_ceil(PIX);
                let mut ob0 = 0;
                while ob0 < blocks {
                    let obs = ob0..(ob0 + held).min(blocks);
                    // This block's panels, split between the slots.
                    let n = obs.len();
                    let slots = par.threads().min(n).max(1);
                    par.run(slots, &|s| {
                        for i in s * n / slots..(s + 1) * n / slots {
                            // SAFETY: slot `s` alone writes panel `i` (`n ≤ held` panels of
                            // `kc·16` in the workspace).
                            let out = unsafe {
                                core::slice::from_raw_parts_mut(
                                    pptr.get().add(i * kc * LANES),
                                    kc * LANES,
                                )
                            };
                            w.panel(obs.start + i, pc, kc, out);
                        }
                    });
                    let panels: &[f32] = &panels[..n * kc * LANES];
                    let slots = par.threads().min(tiles).max(1);
                    let body = |s: usize| {
                        for t in s * tiles / slots..(s + 1) * tiles / slots {
                            let f0 = t * PIX;
                            let np = (pixels - f0).min(PIX);
                            // One division per tile: the next pixels step along the row
                            // and wrap to the next band row.
                            let (mut r, mut c) = (f0 / small2, f0 % small2);
                            let mut bases = [r * step + c; PIX];
                            for b in bases.iter_mut().take(np).skip(1) {
                                c += 1;
                                if c == small2 {
                                    (r, c) = (r + 1, 0);
                                }
                                *b = r * step + c;
                            }
                            for (i, ob) in obs.clone().enumerate() {
                                let m0 = ob * LANES;
                                let at = m0 * yp + out0 + f0;
                                let ep = g.tile_ep(yp, m0, at, pc > 0, last);
                                // SAFETY: panel `i` holds `kc·16` values; every `x[bases[j] +
                                // offs[pc + p]]` is inside `x` (checked above: the largest
                                // base plus the largest offset); outputs `m0..m0 + no` ×
                                // `f0..f0 + np` (`at + l·yp + j`) are inside `y` (and the
                                // residual) and written by this unit only within this K
                                // block; AVX2 and FMA were checked by the caller.
                                unsafe {
                                    tile(
                                        kc,
                                        panels[i * kc * LANES..].as_ptr(),
                                        x.as_ptr(),
                                        &bases,
                                        offs[pc..].as_ptr(),
                                        yptr.get().add(at),
                                        yp,
                                        np,
                                        (geo.mg - m0).min(LANES),
                                        &ep,
                                    );
                                }
                            }
                        }
                    };
                    if slots == 1 {
                        body(0);
                    } else {
                        par.run(slots, &body);
                    }
                    ob0 = obs.end;
                }
                r0 += rows;
            }
            pc += kc;
        }
    }
    Ok(())
}

/// One group's weights, `M/g` filters of `K` taps, in ONNX order or the compiler's 6-row
/// panels ([`ge_runtime::format::WeightLayout::Panels`]).
struct Weights<'a> {
    w: &'a [f32],
    geo: &'a Geo,
    k: usize,
}

impl Weights<'_> {
    /// Filters `ob·16..` (zeros past `M/g`), taps `pc..pc + kc`, as `[kc][16]`: whole
    /// filter rows (ONNX order) or whole tap rows of the 6-filter panels copied at a time.
    /// O(kc·16).
    fn panel(&self, ob: usize, pc: usize, kc: usize, out: &mut [f32]) {
        let (geo, k) = (self.geo, self.k);
        let m0 = ob * LANES;
        let n = (geo.mg - m0).min(LANES);
        let out = &mut out[..kc * LANES];
        if n < LANES {
            out.fill(0.0);
        }
        if !geo.packed {
            for l in 0..n {
                let row = &self.w[(m0 + l) * k + pc..][..kc];
                for (v, lanes) in row.iter().zip(out.chunks_exact_mut(LANES)) {
                    lanes[l] = *v;
                }
            }
            return;
        }
        // Panels of MR filters ([K][rows]) overlapping filters m0..m0 + n.
        let mut m = m0;
        while m < m0 + n {
            let q = m / MR * MR;
            let rows = (geo.mg - q).min(MR);
            let (from, to) = (m - q, (m0 + n - q).min(rows));
            let base = q * k;
            for (p, lanes) in out.chunks_exact_mut(LANES).enumerate() {
                let src = &self.w[base + (pc + p) * rows..][from..to];
                lanes[m - m0..m - m0 + src.len()].copy_from_slice(src);
            }
            m = q + to;
        }
    }
}

/// One tile: `acc[j][l] = Σ_{p<kc} x[bases[j] + offs[p]] · w[p·16 + l]`, stored through the
/// epilogue (the tiles' [`TileEp`], its rows the output channels, `alpha` 1) at
/// `c[l·ldc + j]` for pixels `j < np` and channels `l < no`.
///
/// # Safety
/// `w` holds `kc·16` values; `x[bases[j] + offs[p]]` readable for `j < 4`, `p < kc`;
/// `c[l·ldc + j]` writable (and readable) for `l < no`, `j < np`, with `ep.res` (rows
/// `ep.ldr = ldc` apart) covering the same elements and `ep.bias` `no` values, where not
/// null; `1 ≤ np ≤ 4`, `1 ≤ no ≤ 16`; AVX2 and FMA.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile(
    kc: usize,
    w: *const f32,
    x: *const f32,
    bases: &[usize; PIX],
    offs: *const u32,
    c: *mut f32,
    ldc: usize,
    np: usize,
    no: usize,
    ep: &TileEp,
) {
    let z = _mm256_setzero_ps();
    let (mut a00, mut a01, mut a10, mut a11) = (z, z, z, z);
    let (mut a20, mut a21, mut a30, mut a31) = (z, z, z, z);
    // SAFETY: (whole loop) step `p < kc` reads `w[p·16..p·16 + 16]` and one value at each
    // `x + bases[j] + offs[p]`, per the contract.
    unsafe {
        let (x0, x1, x2, x3) = (
            x.add(bases[0]),
            x.add(bases[1]),
            x.add(bases[2]),
            x.add(bases[3]),
        );
        let mut wp = w;
        for p in 0..kc {
            let o = *offs.add(p) as usize;
            let w0 = _mm256_loadu_ps(wp);
            let w1 = _mm256_loadu_ps(wp.add(8));
            let b = _mm256_broadcast_ss(&*x0.add(o));
            a00 = _mm256_fmadd_ps(b, w0, a00);
            a01 = _mm256_fmadd_ps(b, w1, a01);
            let b = _mm256_broadcast_ss(&*x1.add(o));
            a10 = _mm256_fmadd_ps(b, w0, a10);
            a11 = _mm256_fmadd_ps(b, w1, a11);
            let b = _mm256_broadcast_ss(&*x2.add(o));
            a20 = _mm256_fmadd_ps(b, w0, a20);
            a21 = _mm256_fmadd_ps(b, w1, a21);
            let b = _mm256_broadcast_ss(&*x3.add(o));
            a30 = _mm256_fmadd_ps(b, w0, a30);
            a31 = _mm256_fmadd_ps(b, w1, a31);
            wp = wp.add(LANES);
        }
    }
    // Each register of channels 0–7 (8–15) for pixels 0–3 becomes four registers of two
    // channels' 4 pixels: [l | l + 4] (8 + l | 12 + l).
    let t = [transpose(a00, a10, a20, a30), transpose(a01, a11, a21, a31)];
    // SAFETY: forwarded contract.
    unsafe {
        if np == PIX && no == LANES {
            for (v, regs) in t.iter().enumerate() {
                let mut s = *regs;
                for (i, s) in s.iter_mut().enumerate() {
                    *s = sums_pair(*s, c, ldc, v * 8 + i, ep);
                }
                // Four registers at once: SiLU's chains overlap.
                for (i, &s) in apply_acts(s, ep.act).iter().enumerate() {
                    let l = v * 8 + i;
                    _mm256_storeu2_m128(c.add((l + 4) * ldc), c.add(l * ldc), s);
                }
            }
        } else {
            store_partial(&t, c, ldc, np, no, ep);
        }
    }
}

/// Rows `a..d` (pixels) of 8 channels → per 128-bit half a 4 × 4 transpose: register `i`
/// holds channel `i` (low half) and `i + 4` (high half), pixels 0–3 each.
#[inline(always)]
fn transpose(a: __m256, b: __m256, c: __m256, d: __m256) -> [__m256; 4] {
    // SAFETY: register-only AVX operations (the callers run with AVX2 enabled).
    unsafe {
        let t0 = _mm256_unpacklo_ps(a, b);
        let t1 = _mm256_unpackhi_ps(a, b);
        let t2 = _mm256_unpacklo_ps(c, d);
        let t3 = _mm256_unpackhi_ps(c, d);
        [
            _mm256_shuffle_ps::<0x44>(t0, t2),
            _mm256_shuffle_ps::<0xEE>(t0, t2),
            _mm256_shuffle_ps::<0x44>(t1, t3),
            _mm256_shuffle_ps::<0xEE>(t1, t3),
        ]
    }
}

/// The sums of channels `l` and `l + 4` (4 pixels each) of a full tile before the
/// activation, in the tiles' order: `c + acc`, `+ bias`, `+ residual`.
///
/// # Safety
/// As [`tile`] with `np = 4`, `no = 16`; AVX2 on the caller.
#[inline(always)]
unsafe fn sums_pair(v: __m256, c: *const f32, ldc: usize, l: usize, ep: &TileEp) -> __m256 {
    // SAFETY: rows `l` and `l + 4` (4 values each) of C, the residual and the bias are
    // inside them per the contract.
    unsafe {
        let (lo, hi) = (c.add(l * ldc), c.add((l + 4) * ldc));
        let mut v = v;
        if ep.add {
            v = _mm256_add_ps(_mm256_loadu2_m128(hi, lo), v);
        }
        if !ep.bias.is_null() {
            let (b0, b1) = (*ep.bias.add(l), *ep.bias.add(l + 4));
            v = _mm256_add_ps(v, _mm256_set_m128(_mm_set1_ps(b1), _mm_set1_ps(b0)));
        }
        if !ep.res.is_null() {
            let (r0, r1) = (ep.res.add(l * ep.ldr), ep.res.add((l + 4) * ep.ldr));
            v = _mm256_add_ps(v, _mm256_loadu2_m128(r1, r0));
        }
        v
    }
}

/// A partial tile (the plane's last pixels, or the group's last channels): the sums through
/// a stack tile, then element by element the tiles' scalar epilogue.
///
/// # Safety
/// As [`tile`].
unsafe fn store_partial(
    t: &[[__m256; 4]; 2],
    c: *mut f32,
    ldc: usize,
    np: usize,
    no: usize,
    ep: &TileEp,
) {
    // sums[l][j]: channel l, pixel j.
    let mut sums = [[0.0f32; PIX]; LANES];
    for (v, regs) in t.iter().enumerate() {
        for (i, &r) in regs.iter().enumerate() {
            let mut lanes = [0.0f32; 8];
            // SAFETY: an unaligned store into a local array of 8.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), r) };
            sums[v * 8 + i].copy_from_slice(&lanes[..4]);
            sums[v * 8 + i + 4].copy_from_slice(&lanes[4..]);
        }
    }
    for (l, row) in sums.iter().enumerate().take(no) {
        for (j, &s) in row.iter().enumerate().take(np) {
            // SAFETY: element (l, j) of C, the bias's `l` and the residual's `l·ldr + j`
            // are inside them per the contract.
            unsafe { finish(ep, s, c.add(l * ldc + j), l, j) };
        }
    }
}
