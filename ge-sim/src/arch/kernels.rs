//! The ISA kernels `ops` calls, named on every target (the table of hand-written builds):
//! each entry runs the chosen ISA's build when there is one and says so — `true`, `Some`,
//! a count of elements done — and otherwise does nothing, for the caller to run its
//! portable code. Off x86-64 every entry is "nothing", so `ops` needs no `cfg`.

#[cfg(target_arch = "x86_64")]
use super::isa::{Isa, isa};
#[cfg(feature = "std")]
use super::tile::TileAct;

/// The blocked conv's input prologue `xt = act(x · scale + shift)` on AVX-512 (16 channels a
/// register) for the activations that build takes (none, clamps, leaky, HardSwish);
/// `false`: not done here. O(input).
#[cfg(feature = "std")]
pub(crate) fn blocked_prologue(
    x: &[f32],
    scale: &[f32],
    shift: &[f32],
    act: TileAct,
    xt: &mut [f32],
    plane: usize,
) -> bool {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if isa() == Isa::Avx512
        && matches!(
            act,
            TileAct::None | TileAct::Clamp { .. } | TileAct::Leaky { .. } | TileAct::HardSwish
        )
    {
        // SAFETY: `isa()` returns AVX-512 only where the CPU has it.
        unsafe { super::x86::avx512::blocked_conv::prologue(x, scale, shift, act, xt, plane) };
        return true;
    }
    let _ = (x, scale, shift, act, xt, plane);
    false
}

/// Whether this build has the conv with output channels in lanes (AVX2; std x86-64): the
/// planner sizes its workspace only then.
pub(crate) const CONV_LANES: bool = cfg!(all(feature = "std", target_arch = "x86_64"));

/// Whether this build has the depthwise conv in channel blocks (AVX-512; std x86-64).
pub(crate) const DEPTHWISE_BLOCKS: bool = cfg!(all(feature = "std", target_arch = "x86_64"));

/// One group of a conv with output channels in the lanes on band layout `lay`, where the
/// CPU has AVX2 and FMA; `None`: no such build here.
#[cfg(feature = "std")]
pub(crate) fn conv_lanes(
    geo: &crate::ops::conv::Geo,
    lay: &crate::ops::conv::direct::Layout,
    g: crate::ops::conv::direct::Group<'_>,
    ws: &mut [f32],
    par: &dyn crate::threads::Parallel,
) -> Option<Result<(), crate::ops::KernelError>> {
    #[cfg(target_arch = "x86_64")]
    if isa() != Isa::Portable {
        return Some(super::x86::avx2::conv_lanes::run(geo, lay, g, ws, par));
    }
    let _ = (geo, lay, g, ws, par);
    None
}

/// One block of `≤ 16` channels of a depthwise conv in channel blocks, where the CPU has
/// AVX-512; `false`: no such build here (nothing written).
///
/// # Safety
/// As `arch::x86::avx512::depthwise::block`'s operands (the CPU is checked here).
#[cfg(feature = "std")]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn depthwise_block(
    geo: &crate::ops::conv::Geo,
    lay: &crate::ops::conv::depthwise_blocks::Layout,
    x: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    res: Option<&[f32]>,
    act: TileAct,
    y: &mut [f32],
    buf: &mut [f32],
    first: bool,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if isa() == Isa::Avx512 {
        // SAFETY: the CPU has AVX-512 (`isa()`); the operands are the caller's contract.
        unsafe {
            super::x86::avx512::depthwise::block(geo, lay, x, w, bias, res, act, y, buf, first)
        };
        return true;
    }
    let _ = (geo, lay, x, w, bias, res, act, y, buf, first);
    false
}

/// `p0[j] = src[2j]`, `p1[j] = src[2j + 1]` for the whole groups of eight pairs, with AVX2
/// shuffles where the CPU has them; returns the pairs done (0: none, the caller copies).
#[inline(always)]
pub(crate) fn split_pairs(src: &[f32], p0: &mut [f32], p1: &mut [f32]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if isa() != Isa::Portable && src.len() >= 2 * p0.len() && p1.len() >= p0.len() {
        // SAFETY: `isa()` names only classes the CPU has, all with AVX2; `p0.len()` pairs
        // fit every slice (checked).
        return unsafe {
            super::x86::avx2::split_pairs::split_pairs(
                &src[..2 * p0.len()],
                p0,
                &mut p1[..p0.len()],
            )
        };
    }
    let _ = (src, p0, p1);
    0
}

/// `y = sigmoid(x)` (or `x · sigmoid(x)` with `times_x`; in place when `x` is `None`) on
/// AVX-512 or AVX2 where the CPU has them (std builds); `false`: not done, `y` untouched.
#[inline]
pub(crate) fn sigmoid(x: Option<&[f32]>, y: &mut [f32], times_x: bool) -> bool {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    {
        if isa() == Isa::Avx512 {
            let (n, dst) = (y.len(), y.as_mut_ptr());
            let src = match x {
                Some(x) if x.len() == n => x.as_ptr(),
                Some(_) => return false,
                // In place: one pointer for both (a read pointer taken from `y` before its
                // write pointer would not be valid for reads after it).
                None => dst.cast_const(),
            };
            // SAFETY: `n` values readable from `src` and writable at `dst` (the same slice or
            // one of equal length); the CPU has AVX-512 (the chosen class).
            unsafe { super::x86::avx512::sigmoid::map(src, dst, n, times_x) };
            return true;
        }
        match x {
            Some(x) => super::x86::avx2::sigmoid::map(x, y, times_x),
            None => super::x86::avx2::sigmoid::map_in_place(y, times_x),
        }
    }
    #[cfg(not(all(feature = "std", target_arch = "x86_64")))]
    {
        let _ = (x, y, times_x);
        false
    }
}

/// Whether this build has an equal-shape TFLite int8 Add kernel ([`qadd_i8`]).
pub(crate) const QADD_I8: bool = cfg!(target_arch = "x86_64");

/// TFLite's int8 Add of equal-shape operands, sixteen lanes on AVX-512, eight on AVX2;
/// `false`: not done (no such build, or the lengths differ).
pub(crate) fn qadd_i8(
    p: &ge_runtime::format::QBinaryParams,
    a: &[i8],
    b: &[i8],
    y: &mut [i8],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `isa()` returned the ISA (its features detected; AVX-512 implies AVX2).
    unsafe {
        match isa() {
            Isa::Avx512 => super::x86::avx512::requant::qadd_i8(p, a, b, y),
            Isa::Avx2Fma => super::x86::avx2::requant::qadd_i8(p, a, b, y),
            Isa::Portable => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (p, a, b, y);
        false
    }
}

/// onnxruntime's QLinearAdd of equal-length int8 operands, eight at a time on AVX2 (and
/// wider); `false`: not done (no such build, or the lengths differ).
pub(crate) fn qlinear_add_i8(
    k: &crate::ops::qlinear_add::AddF32,
    a: &[i8],
    b: &[i8],
    out: &mut [i8],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if a.len() == out.len() && b.len() == out.len() && isa() != Isa::Portable {
        // SAFETY: `isa()` detected AVX2 and FMA; the three slices have one length.
        unsafe { super::x86::avx2::qlinear_add::add_i8(k, a, b, out) };
        return true;
    }
    let _ = (k, a, b, out);
    false
}

/// Adds `(f32(x[c·plane + i]) − zp) · scale` to `a[c]` for eight planes and the positions
/// of whole steps of eight, on AVX2 where the CPU has it; returns the positions summed (0:
/// none, the caller sums them all).
#[inline]
pub(crate) fn plane_sums8(
    x: &[u8],
    signed: bool,
    plane: usize,
    zp: f32,
    scale: f32,
    a: &mut [f32; 8],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if isa() != Isa::Portable {
        // SAFETY: the ISA was detected, and every x86 class above portable has AVX2.
        return unsafe { super::x86::avx2::plane_sums::sums8(x, signed, plane, zp, scale, a) };
    }
    let _ = (x, signed, plane, zp, scale, a);
    0
}

/// A 2-D max pool on whole rows of vectors (AVX-512 or AVX2; std builds); `false`: not
/// done, the caller folds the windows.
#[inline]
pub(crate) fn max_pool_2d(x: &[f32], y: &mut [f32], ax: &[crate::ops::pool::Axis; 3]) -> bool {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    return super::x86::window2d::max_pool(x, y, ax);
    #[cfg(not(all(feature = "std", target_arch = "x86_64")))]
    {
        let _ = (x, y, ax);
        false
    }
}

/// A 2-D average pool on whole rows of vectors (AVX-512 or AVX2; std builds); `false`: not
/// done, the caller folds the windows.
#[inline]
pub(crate) fn avg_pool_2d(
    x: &[f32],
    y: &mut [f32],
    ax: &[crate::ops::pool::Axis; 3],
    include_pad: bool,
) -> bool {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    return super::x86::window2d::avg_pool(x, y, ax, include_pad);
    #[cfg(not(all(feature = "std", target_arch = "x86_64")))]
    {
        let _ = (x, y, ax, include_pad);
        false
    }
}

/// `y[p] = max of plane p` in AVX2 registers where the CPU has them (std builds); `false`:
/// not done, the caller folds the planes. O(input).
#[inline]
pub(crate) fn max_planes(x: &[f32], y: &mut [f32], plane: usize) -> bool {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if isa() != Isa::Portable {
        // SAFETY: every x86 class above portable includes AVX2 (`isa()` only returns
        // classes the CPU has).
        unsafe { super::x86::avx2::max_planes::max_planes(x, y, plane) };
        return true;
    }
    let _ = (x, y, plane);
    false
}

/// Whether the fp16 conversions run on F16C: the CPU has it and the kernels' ISA is not
/// forced to the portable one (`GE_ISA=portable`). Std builds.
#[cfg(feature = "std")]
pub(crate) fn f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    return isa() != Isa::Portable && std::is_x86_feature_detected!("f16c");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Widens the whole 8-element blocks of little-endian fp16 `src` into `dst` with F16C;
/// returns how many it did. Only after [`f16c`] said yes; `src` holds 2 bytes per `dst`
/// element.
#[cfg(feature = "std")]
pub(crate) fn widen_f16(src: &[u8], dst: &mut [f32]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if f16c() && src.len() >= 2 * dst.len() {
        return super::x86::f16c::widen(src, dst);
    }
    let _ = (src, dst);
    0
}

/// Narrows the whole 8-element blocks of `src` into little-endian fp16 `dst` with F16C
/// (round to nearest even); returns how many it did. `dst` holds 2 bytes per `src` element.
#[cfg(feature = "std")]
pub(crate) fn narrow_f16(src: &[f32], dst: &mut [u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if f16c() && dst.len() >= 2 * src.len() {
        return super::x86::f16c::narrow(src, dst);
    }
    let _ = (src, dst);
    0
}

/// The blocked conv's band epilogue on AVX-512 or AVX2 (`isa`, the chosen class); `false`:
/// not done, the caller runs its scalar loop.
///
/// # Safety
/// As `ops::nchwc::conv::finish` for this band (its sums present, not zero).
#[cfg(feature = "std")]
#[inline(always)]
pub(crate) unsafe fn blocked_finish(
    e: &crate::ops::nchwc::conv::BandEnd,
    isa: super::isa::Isa,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    match isa {
        // SAFETY: forwarded; the CPU has AVX-512 (`isa()` only returns supported classes).
        Isa::Avx512 => unsafe { super::x86::avx512::blocked_conv::finish(e) },
        // SAFETY: forwarded; the CPU has AVX2 and FMA.
        Isa::Avx2Fma => unsafe { super::x86::avx2::blocked_conv::finish(e) },
        Isa::Portable => return false,
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (e, isa);
    cfg!(target_arch = "x86_64")
}

/// The blocked conv's register tile (`fb` output blocks × `px` pixels) on AVX-512 or AVX2
/// (`isa`, the chosen class); `false`: not done, the caller runs the portable tile.
///
/// # Safety
/// As `ops::nchwc::conv::band`, for this tile.
#[cfg(feature = "std")]
#[inline(always)]
pub(crate) unsafe fn blocked_tile(
    geo: &crate::ops::nchwc::conv::Geometry,
    t: &crate::ops::nchwc::conv::Tile,
    fb: usize,
    px: usize,
    isa: super::isa::Isa,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    match isa {
        // SAFETY: forwarded; the CPU has AVX-512 (`isa()` only returns supported classes).
        Isa::Avx512 => unsafe { super::x86::avx512::blocked_conv::tile(geo, t, fb, px) },
        // SAFETY: forwarded; the CPU has AVX2 and FMA.
        Isa::Avx2Fma => unsafe { super::x86::avx2::blocked_conv::tile(geo, t, fb, px) },
        Isa::Portable => return false,
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (geo, t, fb, px, isa);
    cfg!(target_arch = "x86_64")
}

/// The blocked depthwise conv's rows on AVX-512 or AVX2 (`isa`, the chosen class); `false`:
/// not done, the caller runs them on plain arrays.
///
/// # Safety
/// As `Rows::run`'s contract for these rows.
#[cfg(feature = "std")]
#[inline(always)]
pub(crate) unsafe fn blocked_depthwise_rows(
    rows: &crate::ops::nchwc::depthwise::Rows<'_>,
    isa: super::isa::Isa,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    match isa {
        // SAFETY: forwarded; the CPU runs `isa`.
        Isa::Avx512 => unsafe { super::x86::vec16::rows_avx512(rows) },
        // SAFETY: forwarded; the CPU runs `isa`.
        Isa::Avx2Fma => unsafe { super::x86::vec16::rows_avx2(rows) },
        Isa::Portable => return false,
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (rows, isa);
    cfg!(target_arch = "x86_64")
}

/// The whole 16 × 16 blocks of the byte transpose `dst[j·ldd + i] = src[i·lds + j]` (`rows ×
/// cols`), with SSE2 where the target has it; returns the rows and columns they cover
/// (`(0, 0)`: none, the caller transposes every byte). The slices hold the extents.
#[inline]
pub(crate) fn transpose_blocks16(
    src: &[u8],
    lds: usize,
    dst: &mut [u8],
    ldd: usize,
    rows: usize,
    cols: usize,
) -> (usize, usize) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        let (full_r, full_c) = (rows / 16 * 16, cols / 16 * 16);
        if full_r > 0
            && full_c > 0
            && src.len() >= (full_r - 1) * lds + full_c
            && dst.len() >= (full_c - 1) * ldd + full_r
        {
            for i0 in (0..full_r).step_by(16) {
                for j0 in (0..full_c).step_by(16) {
                    // SAFETY: rows `i0..i0 + 16` of src hold 16 bytes from `j0`, rows
                    // `j0..j0 + 16` of dst 16 from `i0` (checked); SSE2 is enabled.
                    unsafe {
                        super::x86::sse2::transpose16(
                            src.as_ptr().add(i0 * lds + j0),
                            lds,
                            dst.as_mut_ptr().add(j0 * ldd + i0),
                            ldd,
                        )
                    };
                }
            }
            return (full_r, full_c);
        }
    }
    let _ = (src, lds, dst, ldd, rows, cols);
    (0, 0)
}

/// `out[4t + u] = lines[u][t] ^ mask` (`pad` for a missing line) for the whole groups of
/// sixteen columns, with SSE2 where the target has it; returns the columns done (0: none).
/// Each present line holds `out.len() / 4` bytes.
#[inline]
pub(crate) fn interleave4(lines: [Option<&[u8]>; 4], pad: u8, mask: u8, out: &mut [u8]) -> usize {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    return super::x86::sse2::interleave4(lines, pad, mask, out);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        let _ = (lines, pad, mask, out);
        0
    }
}

/// Whether the blocked conv's tiles (hand-written on AVX2 and AVX-512) run here and apply
/// a clamp in registers on their last chunk: the ISAs whose blocked layout pays.
#[inline]
pub(crate) fn blocked_tile_ends(isa: super::isa::Isa) -> bool {
    cfg!(target_arch = "x86_64") && isa != super::isa::Isa::Portable
}

/// Whether a k × k conv takes the lanes path (output channels in the lanes) over the row
/// tiles here: on AVX2, whose row tiles have no compressing store for narrow rows.
#[cfg(feature = "std")]
#[inline]
pub(crate) fn conv_lanes_preferred() -> bool {
    #[cfg(target_arch = "x86_64")]
    return isa() == Isa::Avx2Fma;
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether a depthwise conv takes the channel blocks over the band here: on AVX-512.
#[cfg(feature = "std")]
#[inline]
pub(crate) fn depthwise_blocks_preferred() -> bool {
    #[cfg(target_arch = "x86_64")]
    return isa() == Isa::Avx512;
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Independent 16-output chunks the depthwise band keeps in flight: eight fill AVX-512's
/// 32 registers, four (eight ymm) AVX2's and the portable build's.
#[inline]
pub(crate) fn depthwise_chunks() -> usize {
    #[cfg(target_arch = "x86_64")]
    if isa() == Isa::Avx512 {
        return 8;
    }
    4
}
