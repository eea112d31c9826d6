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
