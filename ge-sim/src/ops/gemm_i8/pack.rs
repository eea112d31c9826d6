//! The compile-time side of the int8 GEMM: int8 weights (B) packed into the layout the tiles
//! read, and the zero points folded into a per-column i32 bias correction. Both run once when
//! a model is compiled; the blob keeps the weights int8 (packing only reorders them).

use super::{KernelError, NR};

/// Bytes of packed B for `k × n`: `⌈n / NR⌉` panels of `NR` columns, each holding `⌈k / 2⌉`
/// k-pairs; padding is zero. `None` on overflow.
pub fn packed_len(k: usize, n: usize) -> Option<usize> {
    n.div_ceil(NR)
        .checked_mul(NR)?
        .checked_mul(k.div_ceil(2).checked_mul(2)?)
}

/// Packs `B[kk][j] = b[kk·rs + j·cs]` (`k × n`; a row-major MatMul weight has `rs = n,
/// cs = 1`, a `[N, K]` Gemm/conv weight `rs = 1, cs = k`) into `out`.
///
/// Layout: panel `p` (columns `p·NR..`) starts at `p·NR·kp` (`kp` = k rounded up to even);
/// inside it, k-pair `q` is `2·NR` bytes `[B[2q][j], B[2q+1][j]]` for `j < NR`. One 32-byte
/// load is then the pair of 16 columns, which the tiles widen to i16 for `vpmaddwd`.
/// O(k·n).
pub fn pack_b(
    b: &[i8],
    k: usize,
    n: usize,
    rs: usize,
    cs: usize,
    out: &mut [i8],
) -> Result<(), KernelError> {
    let len = packed_len(k, n).ok_or(KernelError::Shape("packed int8 weight too large"))?;
    let out = out
        .get_mut(..len)
        .ok_or(KernelError::Shape("packed int8 weight buffer too small"))?;
    if k > 0 && n > 0 {
        let last = (k - 1)
            .checked_mul(rs)
            .zip((n - 1).checked_mul(cs))
            .and_then(|(x, y)| x.checked_add(y));
        if !matches!(last, Some(l) if l < b.len()) {
            return Err(KernelError::Shape("int8 weight smaller than k × n"));
        }
    }
    let kp = k.div_ceil(2) * 2;
    for (p, panel) in out.chunks_exact_mut(NR * kp.max(1)).enumerate() {
        panel.fill(0);
        for (q, pair) in panel.chunks_exact_mut(2 * NR).enumerate().take(kp / 2) {
            for j in 0..NR.min(n.saturating_sub(p * NR)) {
                let col = (p * NR + j) * cs;
                for h in 0..2 {
                    let kk = 2 * q + h;
                    if kk < k {
                        pair[2 * j + h] = b[kk * rs + col];
                    }
                }
            }
        }
    }
    Ok(())
}

/// The per-column i32 correction that folds the zero points in at compile time:
/// `Σ_k (a−za)(B−zb_j) + bias_j = Σ_k a·B + corr_j − zb_j·Σ_k a`, with
/// `corr_j = bias_j − za·Σ_k B[k][j] + k·za·zb_j`. `zb` has 1 (per tensor) or `n` (per
/// column) values, `bias` none or `n`. The run-time term `zb_j·Σ_k a` is only computed when
/// some `zb_j ≠ 0` (onnxruntime's int8 weights are symmetric, so usually never).
/// Errors when a correction does not fit in i32. O(k·n).
#[allow(clippy::too_many_arguments)]
pub fn fold_zero_points(
    b: &[i8],
    k: usize,
    n: usize,
    rs: usize,
    cs: usize,
    za: i32,
    zb: &[i32],
    bias: Option<&[i32]>,
    out: &mut [i32],
) -> Result<(), KernelError> {
    if !(zb.len() == 1 || zb.len() == n) {
        return Err(KernelError::Shape("weight zero points: need 1 or n values"));
    }
    if bias.is_some_and(|v| v.len() != n) || out.len() < n {
        return Err(KernelError::Shape("bias / correction: need n values"));
    }
    for (j, o) in out.iter_mut().enumerate().take(n) {
        let mut colsum = 0i64;
        for kk in 0..k {
            let v = b
                .get(kk * rs + j * cs)
                .ok_or(KernelError::Shape("int8 weight smaller than k × n"))?;
            colsum += i64::from(*v);
        }
        let zbj = i64::from(zb[if zb.len() == 1 { 0 } else { j }]);
        let za = i64::from(za);
        let v = bias.map_or(0, |b| i64::from(b[j])) - za * colsum + k as i64 * za * zbj;
        *o = i32::try_from(v)
            .map_err(|_| KernelError::Shape("zero-point correction overflows i32"))?;
    }
    Ok(())
}
