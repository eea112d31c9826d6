//! The AVX-512 builds of the int8 tile and its epilogue.
//!
//! With VNNI (`vpdpbusd`: four u8·i8 products summed into each i32 lane, exact and
//! wrapping like the other paths) a k-quad of 16 columns is one instruction per row, against
//! six on AVX2. The blob's panels hold k-*pairs* (`[B[2q][j], B[2q+1][j]]`, what AVX2's
//! `vpmaddwd` reads), so two pair rows are interleaved by 16-bit units into quads as they are
//! loaded; that leaves the columns in the order 0–3, 8–11, 4–7, 12–15, which one 128-bit
//! block swap undoes at the end. Two accumulator sets (even and odd quads) keep twelve
//! independent sums in flight; integer sums do not depend on their order, so every path
//! gives the same integers. `vpdpbusd` reads its first operand unsigned: i8 activations are
//! flipped to `a + 128` (xor 0x80) and `128·Σ_k B[k][j]`, summed by one more `vpdpbusd` per
//! quad, is taken off at the end (exact in wrapping i32).
//!
//! The epilogue ([`store_tile`]) adds the folded correction and requantizes sixteen columns
//! at once ([`Rq16`]: onnxruntime's f32 form or TFLite's fixed-point one, each as the scalar
//! path computes it).

use core::arch::x86_64::*;

use super::requant::{Q8Range, Rq16};
use crate::ops::gemm_i8::{Act, Columns, MR, NR, QOut, QOutParams};

/// Pair rows `2q, 2q + 1` of a panel (`k = 4q..4q + 4`, sixteen columns) as one zmm of
/// column quads (columns 0–3, 8–11, 4–7, 12–15: [`columns_in_order`] undoes it); `two`:
/// the second pair row is in the panel (a tail of one pair reads zeros for it).
///
/// # Safety
/// The panel holds the pair rows read; the CPU supports AVX-512 F and AVX2.
#[target_feature(enable = "avx512f,avx2")]
#[inline]
unsafe fn quad_of(bp: *const i8, q: usize, two: bool) -> __m512i {
    // SAFETY: per the contract.
    unsafe {
        let r0 = _mm256_loadu_si256(bp.add(q * 4 * NR) as *const __m256i);
        let r1 = if two {
            _mm256_loadu_si256(bp.add(q * 4 * NR + 2 * NR) as *const __m256i)
        } else {
            _mm256_setzero_si256()
        };
        let lo = _mm256_unpacklo_epi16(r0, r1);
        let hi = _mm256_unpackhi_epi16(r0, r1);
        _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
    }
}

/// Four activations broadcast, i8 flipped to `a + 128` (`vpdpbusd` reads them unsigned).
#[target_feature(enable = "avx512f")]
#[inline]
fn lane_of<A: Act>(v: i32) -> __m512i {
    let av = _mm512_set1_epi32(v);
    if A::SIGNED {
        _mm512_xor_si512(av, _mm512_set1_epi32(0x8080_8080_u32 as i32))
    } else {
        av
    }
}

/// The `rest < 4` activations of a row's last quad (zeros past them: they meet the panel's
/// zero padding).
///
/// # Safety
/// `a` holds `rest` readable bytes.
#[inline]
unsafe fn tail_of(a: *const u8, rest: usize) -> i32 {
    let mut bytes = [0u8; 4];
    for (t, byte) in bytes.iter_mut().enumerate().take(rest) {
        // SAFETY: per the contract.
        *byte = unsafe { *a.add(t) };
    }
    i32::from_le_bytes(bytes)
}

/// The flip's share taken off (`bias`: `128·Σ B`, zero for u8) and the columns put back in
/// order (128-bit blocks 1 and 2 swapped).
#[target_feature(enable = "avx512f")]
#[inline]
fn columns_in_order(s: __m512i, bias: __m512i) -> __m512i {
    let s = _mm512_sub_epi32(s, bias);
    _mm512_shuffle_i32x4::<0b11_01_10_00>(s, s)
}

/// `acc[i][j] = Σ_{kk<k} a[off[i] + kk] · B[kk][j]` over one packed panel `bp` (row `i`'s
/// sixteen sums in `acc[i]`).
///
/// # Safety
/// As [`crate::ops::gemm_i8::tile::tile`]; the CPU must support AVX-512 F/BW/VL and VNNI.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2")]
pub unsafe fn tile_vnni<A: Act>(
    k: usize,
    a: *const A,
    off: &[usize; MR],
    bp: *const i8,
) -> [__m512i; MR] {
    let a = a as *const u8;
    let z = _mm512_setzero_si512();
    // Two named sets (even and odd quads): indexing one array of sets by `q & 1` kept
    // every accumulator on the stack, a load and a store around each `vpdpbusd`.
    let (mut even, mut odd) = ([z; MR], [z; MR]);
    // 128·Σ B over the quads (i8 activations only).
    let mut bias = z;
    let flip = _mm512_set1_epi32(0x8080_8080_u32 as i32);
    let quads = k / 4;
    // SAFETY: (whole body) quad `q < k/4` reads pair rows `2q, 2q + 1` (`4·NR` bytes from
    // `bp + 4q·NR`) and `a[off[i] + 4q..][..4]`, inside the panel and the rows per the
    // contract; the tail reads only the pair rows the panel holds and the `k mod 4` values
    // of each row left; the features are enabled on this function.
    unsafe {
        let step = |set: &mut [__m512i; MR], bias: &mut __m512i, q: usize| {
            let bv = quad_of(bp, q, true);
            if A::SIGNED {
                *bias = _mm512_dpbusd_epi32(*bias, flip, bv);
            }
            for (c, &o) in set.iter_mut().zip(off) {
                let av = lane_of::<A>((a.add(o + 4 * q) as *const i32).read_unaligned());
                *c = _mm512_dpbusd_epi32(*c, av, bv);
            }
        };
        let mut q = 0;
        while q + 2 <= quads {
            step(&mut even, &mut bias, q);
            step(&mut odd, &mut bias, q + 1);
            q += 2;
        }
        if q < quads {
            step(&mut even, &mut bias, q);
        }
        let rest = k - 4 * quads;
        if rest > 0 {
            // One or two pair rows left (the panel is padded with zeros to an even k), so
            // whatever the missing activation bytes become, they meet zero weights.
            let bv = quad_of(bp, quads, rest > 2);
            if A::SIGNED {
                bias = _mm512_dpbusd_epi32(bias, flip, bv);
            }
            for (c, &o) in even.iter_mut().zip(off) {
                let av = lane_of::<A>(tail_of(a.add(o + 4 * quads), rest));
                *c = _mm512_dpbusd_epi32(*c, av, bv);
            }
        }
        core::array::from_fn(|i| columns_in_order(_mm512_add_epi32(even[i], odd[i]), bias))
    }
}

/// [`tile_vnni`] for one row (a dense layer at batch 1): the same sums in `acc[0]` (the
/// other rows zero), one `vpdpbusd` a quad instead of six of which five were thrown away;
/// four accumulators keep the chain's latency hidden. ad's 640-wide layers ran 5 µs.
///
/// # Safety
/// As [`tile_vnni`] for `off[0]`; the CPU must support AVX-512 F/BW/VL and VNNI.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2")]
pub unsafe fn row_vnni<A: Act>(k: usize, a: *const A, off: usize, bp: *const i8) -> [__m512i; MR] {
    let z = _mm512_setzero_si512();
    let mut acc = [z; 4];
    let mut bias = z;
    let flip = _mm512_set1_epi32(0x8080_8080_u32 as i32);
    let quads = k / 4;
    // SAFETY: as `tile_vnni`'s body for the row at `off`: quad `q < k/4` reads pair rows
    // `2q, 2q + 1` of the panel and `a[off + 4q..][..4]`; the tail only the pair rows the
    // panel holds and the `k mod 4` values left.
    unsafe {
        let a = (a as *const u8).add(off);
        for q in 0..quads {
            let bv = quad_of(bp, q, true);
            if A::SIGNED {
                bias = _mm512_dpbusd_epi32(bias, flip, bv);
            }
            let av = lane_of::<A>((a.add(4 * q) as *const i32).read_unaligned());
            acc[q % 4] = _mm512_dpbusd_epi32(acc[q % 4], av, bv);
        }
        let rest = k - 4 * quads;
        if rest > 0 {
            let bv = quad_of(bp, quads, rest > 2);
            if A::SIGNED {
                bias = _mm512_dpbusd_epi32(bias, flip, bv);
            }
            let av = lane_of::<A>(tail_of(a.add(4 * quads), rest));
            acc[0] = _mm512_dpbusd_epi32(acc[0], av, bv);
        }
        let s = _mm512_add_epi32(
            _mm512_add_epi32(acc[0], acc[1]),
            _mm512_add_epi32(acc[2], acc[3]),
        );
        let mut out = [z; MR];
        out[0] = columns_in_order(s, bias);
        out
    }
}

/// Whether the CPU has VNNI beside AVX-512 F/BW/VL (probed with `std`).
pub fn has_vnni() -> bool {
    #[cfg(feature = "std")]
    {
        std::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(target_feature = "avx512vnni")
    }
}

/// A tile from [`crate::arch::x86::avx2::qgemm::tile`] as rows of zmm.
///
/// # Safety
/// The CPU supports AVX-512 F.
#[target_feature(enable = "avx512f")]
pub unsafe fn rows(t: &[[i32; NR]; MR]) -> [__m512i; MR] {
    // SAFETY: each row is 16 i32.
    core::array::from_fn(|i| unsafe { _mm512_loadu_si512(t[i].as_ptr() as *const __m512i) })
}

/// Where a tile's rows (sixteen or fewer results each) go: row `i` at `c + i·ldc`.
// Register values built per tile and passed by value, never stored: no box.
#[allow(clippy::large_enum_variant)]
pub enum TileOut {
    I32 {
        c: *mut i32,
        ldc: usize,
    },
    /// Requantized bytes with the range `[lo, hi]` (u8: 0–255, i8: −128–127).
    Q8 {
        c: *mut u8,
        ldc: usize,
        /// One f32 scale per column (`nr` values) or the same for all.
        scale: Scale,
        zp: i32,
        lo: i32,
        hi: i32,
    },
}

/// The requantization of a row's columns: onnxruntime's f32 scales, or TFLite's
/// multipliers and shifts ([`Rq16::Tflite`], built once per tile).
#[derive(Clone, Copy)]
#[allow(clippy::large_enum_variant)]
pub enum Scale {
    PerTensor(f32),
    Fixed(Rq16),
    /// The first column's [`crate::ops::gemm_i8::Requant`] (`mult` = the scale's bits, `shift` = 0): the
    /// scales lie every other i32.
    PerColumn(*const i32),
}

/// `acc[i] + corr` (minus `zb·rowsum[i]`) for the first `mr` rows and `nr ≤ NR` columns,
/// stored as i32 or requantized; the column constants (correction, weight zero points,
/// scales) are loaded once per tile.
///
/// # Safety
/// `corr` (and `zb` when not null) hold `nr` readable values, a per-column scale `nr`
/// requantizers; each of the `mr` output rows holds `nr` writable values; the CPU supports
/// AVX-512 F/BW/VL.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn store_tile(
    acc: &[__m512i; MR],
    rowsum: &[i32; MR],
    mr: usize,
    nr: usize,
    corr: *const i32,
    zb: *const i32,
    zb_all: Option<i32>,
    out: TileOut,
) {
    let mask: __mmask16 = if nr >= NR { !0 } else { (1u16 << nr) - 1 };
    // SAFETY: masked loads and stores touch only the `nr` columns of the `mr` rows of the
    // contract.
    unsafe {
        let corr = _mm512_maskz_loadu_epi32(mask, corr);
        let zbv = match (zb.is_null(), zb_all) {
            (false, _) => Some(_mm512_maskz_loadu_epi32(mask, zb)),
            (true, Some(z)) => Some(_mm512_set1_epi32(z)),
            (true, None) => None,
        };
        let sum = |i: usize| {
            let v = _mm512_add_epi32(acc[i], corr);
            match zbv {
                Some(zbv) => {
                    _mm512_sub_epi32(v, _mm512_mullo_epi32(zbv, _mm512_set1_epi32(rowsum[i])))
                }
                None => v,
            }
        };
        match out {
            TileOut::I32 { c, ldc } => {
                for i in 0..mr.min(MR) {
                    _mm512_mask_storeu_epi32(c.add(i * ldc), mask, sum(i));
                }
            }
            TileOut::Q8 {
                c,
                ldc,
                scale,
                zp,
                lo,
                hi,
            } => {
                let rq = match scale {
                    Scale::Fixed(r) => r,
                    Scale::PerTensor(s) => Rq16::F32(_mm512_set1_ps(s)),
                    Scale::PerColumn(p) => {
                        // (mult, shift) pairs: 2·nr i32, the even ones picked.
                        let pairs = 2 * nr.min(NR);
                        let m0: __mmask16 = if pairs >= 16 { !0 } else { (1u16 << pairs) - 1 };
                        let m1: __mmask16 = if pairs > 16 {
                            ((1u32 << (pairs - 16)) - 1) as u16
                        } else {
                            0
                        };
                        let a = _mm512_maskz_loadu_epi32(m0, p);
                        let b = _mm512_maskz_loadu_epi32(m1, p.add(16));
                        let even = _mm512_setr_epi32(
                            0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
                        );
                        Rq16::F32(_mm512_castsi512_ps(_mm512_permutex2var_epi32(a, even, b)))
                    }
                };
                let range = Q8Range::new(zp, lo, hi);
                for i in 0..mr.min(MR) {
                    let q = rq.apply(sum(i), range);
                    _mm_mask_storeu_epi8(c.add(i * ldc) as *mut i8, mask, q);
                }
            }
        }
    }
}

/// A depthwise run's requantization, sixteen lanes at a time: `out[t]` = `rq` (either
/// run-time form) of `i32(acc[t]) + corr − zb·i32(sum[t])` (the sums are exact integers in
/// f32), as [`store_tile`] computes it.
///
/// # Safety
/// The CPU supports AVX-512 F/BW/VL.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn requant_run(
    acc: &[f32],
    sum: &[f32],
    corr: i32,
    zb: i32,
    rq: Rq16,
    zp: i32,
    (lo, hi): (i32, i32),
    out: &mut [u8],
) {
    let n = acc.len().min(sum.len()).min(out.len());
    // SAFETY: each masked load and store touches lanes `t..t + len` with `t + len ≤ n`.
    unsafe {
        let (corr, zbv) = (_mm512_set1_epi32(corr), _mm512_set1_epi32(zb));
        let range = Q8Range::new(zp, lo, hi);
        for t in (0..n).step_by(16) {
            let len = 16.min(n - t);
            let mask: __mmask16 = if len == 16 { !0 } else { (1u16 << len) - 1 };
            let a = _mm512_cvttps_epi32(_mm512_maskz_loadu_ps(mask, acc.as_ptr().add(t)));
            let mut v = _mm512_add_epi32(a, corr);
            if zb != 0 {
                let sm = _mm512_cvttps_epi32(_mm512_maskz_loadu_ps(mask, sum.as_ptr().add(t)));
                v = _mm512_sub_epi32(v, _mm512_mullo_epi32(zbv, sm));
            }
            let q = rq.apply(v, range);
            _mm_mask_storeu_epi8(out.as_mut_ptr().add(t) as *mut i8, mask, q);
        }
    }
}

/// `Columns::store`'s epilogue on AVX-512: columns `j0..` (sixteen or fewer) of rows
/// `i0..i0 + mr` of `out`, for the columns `cols`.
///
/// # Safety
/// The CPU supports AVX-512 F/BW/VL; `out` passed `Columns::check_out` for at least
/// `i0 + mr` rows and `arch::qtile::wide_epilogue`; `j0 < n`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn store_wide(
    cols: &Columns<'_>,
    acc: &[core::arch::x86_64::__m512i; MR],
    rowsum: &[i32; MR],
    i0: usize,
    mr: usize,
    j0: usize,
    out: &mut QOut<'_>,
) {
    let nr = NR.min(cols.n - j0);
    // SAFETY: `check_out` proved C, `corr`, `zb` and the requantizers hold columns
    // `j0..j0 + nr` of rows `i0..i0 + mr`.
    unsafe {
        let (zb, zb_all) = match cols.zb.len() {
            0 => (core::ptr::null(), None),
            1 => (core::ptr::null(), Some(cols.zb[0])),
            _ => (cols.zb[j0..].as_ptr(), None),
        };
        let q8 = |c: *mut u8, ldc: usize, q: &QOutParams<'_>, lo: i32, hi: i32| {
            TileOut::Q8 {
                c,
                ldc,
                scale: match (q.rq.len(), q.rq[0].shift) {
                    (1, 0) => Scale::PerTensor(f32::from_bits(q.rq[0].mult as u32)),
                    (_, 0) => Scale::PerColumn(&q.rq[j0].mult),
                    // TFLite's form (`wide_epilogue`: every column's); `columns` is
                    // `None` only for mixed forms, which `wide_epilogue` excludes.
                    _ => Scale::Fixed(Rq16::columns_checked(if q.rq.len() == 1 {
                        q.rq
                    } else {
                        &q.rq[j0..]
                    })),
                },
                zp: q.zp,
                lo,
                hi,
            }
        };
        let at = |ldc: usize| i0 * ldc + j0;
        let dst = match out {
            QOut::I32 { c, ldc } => TileOut::I32 {
                c: c.as_mut_ptr().add(at(*ldc)),
                ldc: *ldc,
            },
            QOut::U8 { c, ldc, q } => q8(c.as_mut_ptr().add(at(*ldc)), *ldc, q, 0, 255),
            QOut::I8 { c, ldc, q } => q8(c.as_mut_ptr().add(at(*ldc)).cast(), *ldc, q, -128, 127),
        };
        store_tile(
            acc,
            rowsum,
            mr,
            nr,
            cols.corr[j0..].as_ptr(),
            zb,
            zb_all,
            dst,
        );
    }
}
