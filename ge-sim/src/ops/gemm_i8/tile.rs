//! The `MR × NR` int8 register tile, portable build: the exact integer products the AVX2
//! build computes (integer sums do not depend on their order, so both agree bit for bit).

use super::{Act, MR, NR};

/// `acc[i][j] = Σ_{kk<k} a[off[i] + kk] · B[kk][j]` over one packed panel `bp`.
///
/// # Safety
/// `a[off[i] + kk]` readable for `i < MR`, `kk < k`; `bp` holds `NR·⌈k/2⌉·2` values.
pub unsafe fn tile<A: Act>(
    k: usize,
    a: *const A,
    off: &[usize; MR],
    bp: *const i8,
) -> [[i32; NR]; MR] {
    let mut acc = [[0i32; NR]; MR];
    for q in 0..k.div_ceil(2) {
        // SAFETY: pair `q` of the panel is in bounds per the contract.
        let b: &[i8; 2 * NR] = unsafe { &*(bp.add(q * 2 * NR) as *const [i8; 2 * NR]) };
        for (i, row) in acc.iter_mut().enumerate() {
            // SAFETY: in bounds per the contract (the second of an odd k's last pair is not read).
            let a0 = i32::from(unsafe { *a.add(off[i] + 2 * q) }.wide());
            let a1 = if 2 * q + 1 < k {
                // SAFETY: as above.
                i32::from(unsafe { *a.add(off[i] + 2 * q + 1) }.wide())
            } else {
                0
            };
            for (j, c) in row.iter_mut().enumerate() {
                let p = a0 * i32::from(b[2 * j]) + a1 * i32::from(b[2 * j + 1]);
                *c = c.wrapping_add(p);
            }
        }
    }
    acc
}
