//! `sgemm`: the BLAS-shaped entry (row-major, leading dimensions, transposes) over the driver
//! or, for one row, the GEMV.

use super::*;

/// `C = alpha · op(A) · op(B) (+ C if accumulate)`, row-major with leading dimensions.
/// `op(A)` is `m × k` (A stored `k × m` when `trans_a`), `op(B)` is `k × n`.
/// `ws` needs [`sgemm_ws_len`]`(m, n, k)` elements. Operand extents are validated.
#[allow(clippy::too_many_arguments)]
pub fn sgemm(
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    lda: usize,
    trans_a: bool,
    b: &[f32],
    ldb: usize,
    trans_b: bool,
    accumulate: bool,
    c: &mut [f32],
    ldc: usize,
    ws: &mut [f32],
) -> Result<(), KernelError> {
    sgemm_on(
        m, n, k, alpha, a, lda, trans_a, b, ldb, trans_b, accumulate, c, ldc, ws, &Serial,
    )
}

/// [`sgemm`] split between the slots of `par`.
#[allow(clippy::too_many_arguments)]
pub fn sgemm_on(
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    lda: usize,
    trans_a: bool,
    b: &[f32],
    ldb: usize,
    trans_b: bool,
    accumulate: bool,
    c: &mut [f32],
    ldc: usize,
    ws: &mut [f32],
    par: &dyn Parallel,
) -> Result<(), KernelError> {
    if trans_a {
        check_operand(a.len(), k, m, lda)?
    } else {
        check_operand(a.len(), m, k, lda)?
    }
    if trans_b {
        check_operand(b.len(), n, k, ldb)?
    } else {
        check_operand(b.len(), k, n, ldb)?
    }
    check_operand(c.len(), m, n, ldc)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                c[i * ldc..i * ldc + n].fill(0.0);
            }
        }
        return Ok(());
    }
    if m == 1 {
        let inc_a = if trans_a { lda } else { 1 };
        gemv_row(
            n,
            k,
            alpha,
            a,
            inc_a,
            b,
            ldb,
            trans_b,
            accumulate,
            &mut c[..n],
        );
        return Ok(());
    }
    let (rs, cs) = if trans_a { (1, lda) } else { (lda, 1) };
    let ep = Epilogue {
        alpha,
        residual: None,
        accumulate,
        row_bias: None,
        act: TileAct::None,
    };
    let src = MatB {
        b,
        ld: ldb,
        trans: trans_b,
    };
    gemm_packed(
        m,
        n,
        k,
        a,
        ALayout::Strided { rs, cs },
        &src,
        c,
        ldc,
        &ep,
        ws,
        par,
    )
}
