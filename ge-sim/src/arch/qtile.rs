//! The int8 tile contract's dispatch: which build of the `MR × NR` int8 tile runs — the
//! portable one (`ops::gemm_i8::tile`, `ops::gemm_i8::conv::quads_tile`), AVX2's, or
//! AVX-512's with or without VNNI — and which epilogue finishes it (the scalar one in
//! `ops::gemm_i8::Columns::store`, AVX2's eight lanes, AVX-512's sixteen). Every build
//! gives the same integers and bytes. Off x86-64 only the portable builds exist: [`Wide`]
//! has no values there, and every entry here says "not done".

use super::isa::Isa;
use crate::ops::gemm_i8::conv::QuadGeo;
use crate::ops::gemm_i8::{Act, Columns, MR, NR, QGemm, QOut};

/// Whether the x86 tiles can ever run: with `std` (detected at run time) or when the
/// target enables AVX2. Otherwise their arms are dead code and firmware does not link them.
#[cfg(target_arch = "x86_64")]
pub(crate) const X86_TILES: bool = cfg!(any(feature = "std", target_feature = "avx2"));

/// Proof that the AVX-512 int8 tile (VNNI when `vnni`) and its vector epilogue run here
/// for an output: only [`wide`] makes one.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Wide {
    vnni: bool,
}

/// Proof that the AVX-512 int8 tile runs here: off x86-64 it has no values.
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy)]
pub(crate) enum Wide {}

/// The AVX-512 tile and epilogue for `out` on `isa`, when they compute it (an i32 output,
/// or 8-bit in one vector form for every column); `None`: the tile and epilogue of
/// [`tile_on`] and `Columns::store`.
#[inline]
pub(crate) fn wide(isa: Isa, out: &QOut<'_>) -> Option<Wide> {
    #[cfg(target_arch = "x86_64")]
    if X86_TILES && isa == Isa::Avx512 && wide_epilogue(out) {
        return Some(Wide {
            vnni: super::x86::avx512::qgemm::has_vnni(),
        });
    }
    let _ = (isa, out);
    None
}

/// Whether the AVX-512 epilogue computes this output: i32, or requantized in one vector
/// form for every column (onnxruntime's f32 or TFLite's fixed point).
#[cfg(target_arch = "x86_64")]
pub(crate) fn wide_epilogue(out: &QOut<'_>) -> bool {
    match out {
        QOut::I32 { .. } => true,
        QOut::U8 { q, .. } | QOut::I8 { q, .. } => crate::ops::gemm_i8::vector_form(q.rq),
    }
}

/// One GEMM tile on AVX-512 (VNNI when the CPU has it), stored by the vector epilogue: the
/// same integers and the same requantization as [`tile_on`] and `Columns::store`.
///
/// # Safety
/// As [`tile_on`] with `bp` one packed panel; `out` passed `Columns::check_out`.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) unsafe fn wide_gemm_block<A: Act>(
    w: Wide,
    g: &QGemm<'_, A>,
    off: &[usize; MR],
    bp: &[i8],
    rowsum: &[i32; MR],
    i0: usize,
    mr: usize,
    j0: usize,
    out: &mut QOut<'_>,
) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the contract covers the tile's reads and the store's writes; `w` proves
    // AVX-512 F/BW/VL (and VNNI when `w.vnni`) and that `out` passed `wide_epilogue`.
    unsafe {
        use super::x86::{avx2::qgemm as avx2, avx512::qgemm as avx512};
        let acc = if w.vnni && mr == 1 {
            avx512::row_vnni(g.k, g.a.as_ptr(), off[0], bp.as_ptr())
        } else if w.vnni {
            avx512::tile_vnni(g.k, g.a.as_ptr(), off, bp.as_ptr())
        } else {
            avx512::rows(&avx2::tile(g.k, g.a.as_ptr(), off, bp.as_ptr()))
        };
        avx512::store_wide(&g.columns(), &acc, rowsum, i0, mr, j0, out);
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (g, off, bp, rowsum, i0, mr, j0, out);
        match w {}
    }
}

/// One conv tile of channel or row quads read in place from the copy `a` on AVX-512 (VNNI
/// when the CPU has it), stored by the vector epilogue.
///
/// # Safety
/// As [`quads_tile_on`]; `out` passed `Columns::check_out`.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) unsafe fn wide_quads_block(
    w: Wide,
    a: *const u8,
    off: &[usize; MR],
    geo: QuadGeo,
    bp: *const i8,
    cols: &Columns<'_>,
    rowsum: &[i32; MR],
    i0: usize,
    mr: usize,
    j0: usize,
    out: &mut QOut<'_>,
) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as above; `w` proves AVX-512 F/BW/VL (and VNNI when `w.vnni`) and that `out`
    // passed `wide_epilogue`.
    unsafe {
        use super::x86::{avx2, avx512};
        let acc = if w.vnni {
            avx512::qconv_quads::tile(a, off, geo, bp)
        } else {
            avx512::qgemm::rows(&avx2::qconv_quads::tile(a, off, geo, bp))
        };
        avx512::qgemm::store_wide(cols, &acc, rowsum, i0, mr, j0, out);
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, off, geo, bp, cols, rowsum, i0, mr, j0, out);
        match w {}
    }
}

/// The tile of rows `off` on `isa` (`mr` of them real: the others repeat the first, and
/// are left zero when `mr` is 1 on x86).
///
/// # Safety
/// As `ops::gemm_i8::tile::tile`; `isa` must be supported by the CPU.
#[inline]
pub(crate) unsafe fn tile_on<A: Act>(
    isa: Isa,
    k: usize,
    a: *const A,
    off: &[usize; MR],
    mr: usize,
    bp: *const i8,
) -> [[i32; NR]; MR] {
    match isa {
        // One row (a dense layer at batch 1): the row tile, whose other rows are zero.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma | Isa::Avx512 if X86_TILES && mr == 1 => {
            // SAFETY: forwarded contract for row 0; the ISA was detected.
            unsafe { super::x86::avx2::qgemm::row(k, a, off[0], bp) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma | Isa::Avx512 if X86_TILES => {
            // SAFETY: forwarded contract; the ISA was detected.
            unsafe { super::x86::avx2::qgemm::tile(k, a, off, bp) }
        }
        _ => {
            let _ = mr;
            // SAFETY: forwarded contract.
            unsafe { crate::ops::gemm_i8::tile::tile(k, a, off, bp) }
        }
    }
}

/// The quad conv tile of rows `off` of the copy `a` on `isa`: AVX2's where the CPU has it,
/// else the portable one.
///
/// # Safety
/// As `ops::gemm_i8::conv::quads_tile`; `isa` must be supported by the CPU.
#[inline]
pub(crate) unsafe fn quads_tile_on(
    isa: Isa,
    a: *const u8,
    off: &[usize; MR],
    geo: QuadGeo,
    bp: *const i8,
) -> [[i32; NR]; MR] {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: forwarded contract; AVX2 was detected.
        Isa::Avx2Fma | Isa::Avx512 if X86_TILES => unsafe {
            super::x86::avx2::qconv_quads::tile(a, off, geo, bp)
        },
        // SAFETY: forwarded contract.
        _ => unsafe { crate::ops::gemm_i8::conv::quads_tile(a, off, geo, bp) },
    }
}

/// `Columns::store`'s requantized 8-bit store on AVX2, eight lanes at a time: either vector
/// form and no weight zero point; `false`: not done (another case, or no such build).
#[inline]
pub(crate) fn store_q8(
    isa: Isa,
    cols: &Columns<'_>,
    acc: &[[i32; NR]; MR],
    i0: usize,
    mr: usize,
    j0: usize,
    out: &mut QOut<'_>,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::ops::gemm_i8::vector_form;
        let nr = NR.min(cols.n - j0);
        if cols.zb.iter().all(|&z| z == 0) && X86_TILES && isa != Isa::Portable {
            let target = match &mut *out {
                QOut::U8 { c, ldc, q } => Some((c.as_mut_ptr(), *ldc, *q, (0, 255))),
                QOut::I8 { c, ldc, q } => {
                    Some((c.as_mut_ptr().cast::<u8>(), *ldc, *q, (-128, 127)))
                }
                QOut::I32 { .. } => None,
            };
            if let Some((c, ldc, q, (lo, hi))) = target
                && vector_form(q.rq)
            {
                let corr: [i32; NR] =
                    core::array::from_fn(|t| if t < nr { cols.corr[j0 + t] } else { 0 });
                let half = |h: usize| {
                    let from = if q.rq.len() == 1 { 0 } else { j0 + 8 * h };
                    q.rq.get(from..).filter(|r| !r.is_empty()).unwrap_or(q.rq)
                };
                // SAFETY: `check_out` proved rows `i0..i0 + mr` hold columns `j0..j0 + nr`;
                // AVX2 was detected (the ISA is not portable); `vector_form` holds.
                unsafe {
                    let at = c.add(i0 * ldc + j0);
                    let rq = [half(0), half(1)];
                    super::x86::avx2::qgemm::store_q8(
                        acc,
                        mr,
                        nr,
                        &corr,
                        rq,
                        (q.zp, lo, hi),
                        at,
                        ldc,
                    );
                }
                return true;
            }
        }
        false
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (isa, cols, acc, i0, mr, j0, out);
        false
    }
}

/// Which kernel computes a few-output-channel quad conv with positions in the lanes:
/// VNNI's sixteen positions or AVX2's eight. Only [`positions_kernel`] makes one; no values
/// off x86-64.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct PositionsKernel {
    vnni: bool,
}

/// Which kernel computes positions in the lanes: off x86-64 there is none.
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy)]
pub(crate) enum PositionsKernel {}

/// The positions-in-lanes kernel `isa` has (VNNI on AVX-512, else AVX2's), if any.
pub(crate) fn positions_kernel(isa: Isa) -> Option<PositionsKernel> {
    #[cfg(target_arch = "x86_64")]
    return match isa {
        Isa::Avx512 if super::x86::avx512::qgemm::has_vnni() => {
            Some(PositionsKernel { vnni: true })
        }
        Isa::Avx512 | Isa::Avx2Fma => Some(PositionsKernel { vnni: false }),
        Isa::Portable => None,
    };
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        None
    }
}

/// A band of a few-output-channel quad conv with positions in the lanes, straight into the
/// output planes (`plane` bytes apart); `false`: not done (its operands do not fit), the
/// caller runs the tiles.
pub(crate) fn positions(
    kernel: PositionsKernel,
    run: &crate::ops::gemm_i8::conv::Positions<'_>,
    y: &mut [u8],
    plane: usize,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `kernel.vnni` only when VNNI and AVX-512 F/BW/VL were detected, else AVX2 was.
    unsafe {
        if kernel.vnni {
            super::x86::avx512::qconv_quads::positions(run, y, plane)
        } else {
            super::x86::avx2::qconv_quads::positions(run, y, plane)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (run, y, plane);
        match kernel {}
    }
}

/// One group of a 1 × 1 int8 conv with pixels in the lanes on the widest kernel the CPU
/// has (VNNI's with AVX-512 VNNI, else AVX2's); `false` (nothing written) when the slices
/// do not fit the geometry or the CPU has neither.
pub(crate) fn pointwise_group(g: &crate::ops::gemm_i8::pointwise::Group<'_>, y: &mut [u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    return match super::isa::isa() {
        // SAFETY: the ISA (and VNNI) were detected.
        Isa::Avx512 if super::x86::avx512::qgemm::has_vnni() => unsafe {
            super::x86::avx512::pointwise::run_group(g, y)
        },
        // SAFETY: AVX-512 implies AVX2; the ISA was detected.
        Isa::Avx512 | Isa::Avx2Fma => unsafe { super::x86::avx2::pointwise::run_group(g, y) },
        Isa::Portable => false,
    };
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (g, y);
        false
    }
}

/// Whether this CPU runs [`pointwise_group`]'s kernels (x86-64 with AVX2 or AVX-512 on).
pub(crate) fn pointwise_available() -> bool {
    cfg!(target_arch = "x86_64") && super::isa::isa() != Isa::Portable
}

/// Whether the int8 depthwise conv's vector kernels run here (AVX-512, else AVX2 in two
/// eight-lane halves).
#[inline]
pub(crate) fn depthwise_vectors() -> bool {
    cfg!(target_arch = "x86_64") && super::isa::isa() != Isa::Portable
}

/// One batch of an int8 depthwise conv with channels in the lanes (sixteen a vector on
/// AVX-512, eight on AVX2); `false`: not done (the operands do not fit, or no such build).
#[inline]
pub(crate) fn depthwise_lanes(
    planes: &crate::ops::gemm_i8::conv::Planes<'_>,
    ws: &mut [f32],
    y: &mut [u8],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: each build runs only when `isa()` (detected) is its class.
    unsafe {
        match super::isa::isa() {
            Isa::Avx512 => super::x86::avx512::depthwise_q8::lanes(planes, ws, y),
            Isa::Avx2Fma => super::x86::avx2::depthwise_q8::lanes(planes, ws, y),
            Isa::Portable => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (planes, ws, y);
        false
    }
}

/// A depthwise band's requantizer and output range on the chosen ISA's vectors (built once
/// per channel and kept on the stack): only [`BandRq::new`] makes one, when the ISA has the
/// vector band; no values off x86-64.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum BandRq {
    /// AVX-512 F/BW/VL.
    Wide(
        super::x86::avx512::requant::Rq16,
        super::x86::avx512::requant::Q8Range,
    ),
    /// AVX2 and FMA.
    Avx2(
        super::x86::avx2::requant::Rq8,
        super::x86::avx2::requant::Q8Range8,
    ),
}

/// A depthwise band's vector requantizer: off x86-64 there is none.
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy)]
pub(crate) enum BandRq {}

impl BandRq {
    /// `rq` and the output range `zp`, `lo..=hi` on the chosen ISA's vectors; `None` when
    /// the ISA has no vector band or `rq` is in neither vector form.
    #[inline(always)]
    pub(crate) fn new(
        rq: crate::ops::gemm_i8::Requant,
        zp: i32,
        lo: i32,
        hi: i32,
    ) -> Option<BandRq> {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: each build runs only when `isa()` (detected) is its class.
        unsafe {
            use super::x86::{avx2::requant as r8, avx512::requant as r16};
            match super::isa::isa() {
                Isa::Avx512 => {
                    r16::Rq16::splat(rq).map(|r| BandRq::Wide(r, r16::Q8Range::new(zp, lo, hi)))
                }
                Isa::Avx2Fma => {
                    r8::Rq8::splat(rq).map(|r| BandRq::Avx2(r, r8::Q8Range8::new(zp, lo, hi)))
                }
                Isa::Portable => None,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (rq, zp, lo, hi);
            None
        }
    }
}

/// One band of one channel of an int8 depthwise conv in vector registers, requantized by
/// `rq`; `false`: not done (the band does not fit `buf` or `y`).
#[inline(always)]
pub(crate) fn depthwise_band(
    rq: BandRq,
    band: &crate::ops::gemm_i8::conv::DwBand<'_>,
    buf: &mut [f32],
    y: &mut [u8],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `BandRq::Wide` is only made when AVX-512 F/BW/VL were detected,
    // `BandRq::Avx2` when AVX2 and FMA were.
    unsafe {
        match rq {
            BandRq::Wide(r, range) => super::x86::avx512::depthwise_q8::run(band, r, range, buf, y),
            BandRq::Avx2(r, range) => super::x86::avx2::depthwise_q8::run(band, r, range, buf, y),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (band, buf, y);
        match rq {}
    }
}

/// `out[t] = requantize(acc[t] + corr − zb·sum[t])` over a run of f32 sums on AVX-512 (either
/// vector form of `rq`); `false`: not done (another ISA, or `rq` in neither form).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn requant_run(
    rq: crate::ops::gemm_i8::Requant,
    acc: &[f32],
    sum: &[f32],
    corr: i32,
    zb: i32,
    zp: i32,
    range: (i32, i32),
    out: &mut [u8],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if super::isa::isa() == Isa::Avx512
        // SAFETY: AVX-512 F/BW/VL were detected (`isa()`).
        && let Some(r16) = unsafe { super::x86::avx512::requant::Rq16::splat(rq) }
    {
        // SAFETY: as above.
        unsafe { super::x86::avx512::qgemm::requant_run(acc, sum, corr, zb, r16, zp, range, out) };
        return true;
    }
    let _ = (rq, acc, sum, corr, zb, zp, range, out);
    false
}
