//! Matrix-vector products: one row of A against op(B), and the dot product they use.

/// `c (+)= alpha · a · op(B)` for a single row `a` with element stride `inc_a`.
#[allow(clippy::too_many_arguments)]
pub(super) fn gemv_row(
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    inc_a: usize,
    b: &[f32],
    ldb: usize,
    trans_b: bool,
    accumulate: bool,
    c: &mut [f32],
) {
    // The loops vectorize at the CPU's width (the closure inlined into `with_simd`'s
    // target-feature function; not inlined, it ran at the baseline's 4 lanes); sums keep
    // their order on every ISA.
    crate::arch::isa::with_simd(
        #[inline(always)]
        || {
            if trans_b {
                for (j, cj) in c.iter_mut().enumerate() {
                    let row = &b[j * ldb..j * ldb + k];
                    let d = if inc_a == 1 {
                        dot(&a[..k], row)
                    } else {
                        row.iter().enumerate().map(|(p, v)| a[p * inc_a] * v).sum()
                    };
                    *cj = if accumulate {
                        *cj + alpha * d
                    } else {
                        alpha * d
                    };
                }
            } else {
                if !accumulate {
                    c.fill(0.0);
                }
                // Four rows of B per pass over c (a quarter of c's loads and stores); each
                // element still adds its products in row order, so the sums are the same as
                // one row at a time. Firmware (no `std`) keeps the one-row loop: less code.
                let quads = if cfg!(feature = "std") { k / 4 } else { 0 };
                for q in 0..quads {
                    let p = 4 * q;
                    let s = [0, 1, 2, 3].map(|i| alpha * a[(p + i) * inc_a]);
                    let r = [0, 1, 2, 3].map(|i| &b[(p + i) * ldb..(p + i) * ldb + n]);
                    for ((((cj, &b0), &b1), &b2), &b3) in
                        c.iter_mut().zip(r[0]).zip(r[1]).zip(r[2]).zip(r[3])
                    {
                        *cj = *cj + s[0] * b0 + s[1] * b1 + s[2] * b2 + s[3] * b3;
                    }
                }
                for p in 4 * quads..k {
                    let s = alpha * a[p * inc_a];
                    let row = &b[p * ldb..p * ldb + n];
                    for (cj, bj) in c.iter_mut().zip(row) {
                        *cj += s * *bj;
                    }
                }
            }
        },
    )
}

/// Dot product with independent partial sums so it vectorizes.
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    const L: usize = 16;
    let mut acc = [0.0f32; L];
    let (ac, ar) = a.as_chunks::<L>();
    let (bc, br) = b.as_chunks::<L>();
    for (x, y) in ac.iter().zip(bc) {
        for l in 0..L {
            acc[l] += x[l] * y[l];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ar.iter().zip(br) {
        s += x * y;
    }
    s
}

/// `c (+)= alpha · a · B` for one row `a` (element stride `inc_a`) and an int8 `B`
/// (GemmW8's: `k × n`, row-major or in the pre-packed panel order): [`gemv_row`]'s
/// arithmetic on the dequantized weights `float(w)·s` — per output, the same products
/// `(alpha·a[p])·(float(w)·s)` added in the same order (`p` ascending), so bitwise what a
/// float B holding those values gives (a QDQ dense layer's `DequantizeLinear` folded) —
/// with no workspace: the weights are read as int8 where they lie, a row (or a panel's
/// row) at a time. O(k·n).
///
/// `b.b` must hold `k·n` bytes (row-major: `(k − 1)·ld + n`); checked by the caller.
#[allow(clippy::too_many_arguments)]
pub(super) fn gemv_row_w8(
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    inc_a: usize,
    b: &super::Int8B<'_>,
    accumulate: bool,
    c: &mut [f32],
) {
    crate::arch::isa::with_simd(
        #[inline(always)]
        || {
            if !accumulate {
                c.fill(0.0);
            }
            if b.unsigned {
                w8_rows::<true>(n, k, alpha, a, inc_a, b, c);
            } else {
                w8_rows::<false>(n, k, alpha, a, inc_a, b, c);
            }
        },
    )
}

/// `float(w)` of an int8 (`U` false) or uint8 weight byte: exact, as Int8B's packing
/// computes it.
#[inline(always)]
fn wide<const U: bool>(x: u8) -> f32 {
    if U { f32::from(x) } else { f32::from(x as i8) }
}

/// The rows of [`gemv_row_w8`], for uint8 (`U`) or int8 weights; inlined into its
/// `with_simd` closure, so compiled with the ISA's features.
#[inline(always)]
fn w8_rows<const U: bool>(
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    inc_a: usize,
    b: &super::Int8B<'_>,
    c: &mut [f32],
) {
    use core::iter::repeat_n;
    use ge_runtime::format::{GEMM_B_PANEL as W, gemm_k_block};
    match (b.panels, b.scale) {
        (None, [one]) => rows_major::<U, _>(n, k, alpha, a, inc_a, b, c, repeat_n(*one, n)),
        (None, cols) => rows_major::<U, _>(n, k, alpha, a, inc_a, b, c, cols.iter().copied()),
        // Panels: per K block `pc..pc + kc`, panel `j0`'s rows are `w` bytes apart
        // from `pc·n + j0·kc` ([`ge_runtime::format::gemm_b_index`]).
        (Some(kk), scale) => {
            let kb = gemm_k_block(kk).max(1);
            for pc in (0..k).step_by(kb) {
                let kc = kb.min(k - pc);
                for j0 in (0..n).step_by(W) {
                    let w = W.min(n - j0);
                    let mut sc = [0f32; W];
                    match scale {
                        [one] => sc.fill(*one),
                        cols => sc[..w].copy_from_slice(&cols[j0..j0 + w]),
                    }
                    let cj = &mut c[j0..j0 + w];
                    let base = pc * n + j0 * kc;
                    for r in 0..kc {
                        let s = alpha * a[(pc + r) * inc_a];
                        let row = &b.b[base + r * w..][..w];
                        for ((cv, &x), &sc) in cj.iter_mut().zip(row).zip(&sc) {
                            *cv += s * (wide::<U>(x) * sc);
                        }
                    }
                }
            }
        }
    }
}

/// Row-major B (row `p` is `ld` bytes after row `p − 1`) with `scales` the column scales
/// (one repeated, or one per column): four rows per pass over c, as gemv_row (each output
/// still adds its products in row order).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn rows_major<const U: bool, S: Iterator<Item = f32> + Clone>(
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    inc_a: usize,
    b: &super::Int8B<'_>,
    c: &mut [f32],
    scales: S,
) {
    let row = |p: usize| &b.b[p * b.ld..][..n];
    let w = |x: u8, sc: f32| wide::<U>(x) * sc;
    let quads = if cfg!(feature = "std") { k / 4 } else { 0 };
    for q in 0..quads {
        let p = 4 * q;
        let s = [0, 1, 2, 3].map(|i| alpha * a[(p + i) * inc_a]);
        let (r0, r1, r2, r3) = (row(p), row(p + 1), row(p + 2), row(p + 3));
        for (((((cv, &x0), &x1), &x2), &x3), sc) in c
            .iter_mut()
            .zip(r0)
            .zip(r1)
            .zip(r2)
            .zip(r3)
            .zip(scales.clone())
        {
            *cv = *cv + s[0] * w(x0, sc) + s[1] * w(x1, sc) + s[2] * w(x2, sc) + s[3] * w(x3, sc);
        }
    }
    for p in 4 * quads..k {
        let s = alpha * a[p * inc_a];
        for ((cv, &x), sc) in c.iter_mut().zip(row(p)).zip(scales.clone()) {
            *cv += s * w(x, sc);
        }
    }
}
