//! Copies of at most sixteen bytes without a call: the kernels move rows of a few pixels
//! (kws's planes are five wide), where `copy_from_slice`'s variable length becomes a
//! `memmove` call per row — 14% of kws's AVX2 time went to them.

/// `dst[..n] = src[..n]` for `n = min(dst.len(), src.len(), 16)`, as one 16-, 8-, 4-, 2- and
/// 1-byte move each at most (no loop the compiler turns back into `memmove`).
#[inline(always)]
pub fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len()).min(16);
    let (d, s) = (&mut dst[..n], &src[..n]);
    if n == 16 {
        d.copy_from_slice(&s[..16]);
        return;
    }
    let mut o = 0;
    macro_rules! part {
        ($w:literal) => {
            if n & $w != 0 {
                d[o..o + $w].copy_from_slice(&s[o..o + $w]);
                o += $w;
            }
        };
    }
    part!(8);
    part!(4);
    part!(2);
    part!(1);
    let _ = o;
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_length_copies_exactly_its_bytes() {
        let src: [u8; 20] = core::array::from_fn(|i| i as u8 + 1);
        for n in 0..=20 {
            let mut dst = [0u8; 20];
            super::copy_short(&mut dst[..n], &src);
            let m = n.min(16);
            assert_eq!(dst[..m], src[..m], "{n}");
            assert!(dst[m..].iter().all(|&b| b == 0), "{n}");
        }
    }
}
