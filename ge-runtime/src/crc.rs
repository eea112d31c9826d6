//! CRC-32 (IEEE 802.3, as zlib and crc32fast compute it) of the blob checksums.
//!
//! With the `fast-crc` feature (implied by `std`) this is crc32fast: SIMD where the target
//! has it, else a 16 KiB slice-by-16 table. Without it, a 64-byte nibble table: the same
//! values at ~1 byte per cycle and a few hundred bytes of code, so firmware does not carry
//! 16 KiB of table to check a blob of a few KiB once at start-up. We keep a run-time check
//! (rather than trusting a blob validated at build time) because it also guards blobs read
//! from storage and flash that decays.

/// A running CRC-32.
#[derive(Clone, Debug)]
pub struct Crc32 {
    #[cfg(feature = "fast-crc")]
    inner: crc32fast::Hasher,
    #[cfg(not(feature = "fast-crc"))]
    state: u32,
}

/// CRC-32 of every nibble value, reflected polynomial 0xEDB88320.
#[cfg(any(test, not(feature = "fast-crc")))]
const NIBBLES: [u32; 16] = {
    let mut t = [0u32; 16];
    let mut i = 0;
    while i < 16 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 4 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// Continues the (inverted) CRC `c` over `bytes`, a nibble at a time.
#[cfg(any(test, not(feature = "fast-crc")))]
fn nibble_update(mut c: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        c ^= u32::from(b);
        c = NIBBLES[(c & 15) as usize] ^ (c >> 4);
        c = NIBBLES[(c & 15) as usize] ^ (c >> 4);
    }
    c
}

impl Crc32 {
    /// An empty CRC.
    pub fn new() -> Crc32 {
        Crc32 {
            #[cfg(feature = "fast-crc")]
            inner: crc32fast::Hasher::new(),
            #[cfg(not(feature = "fast-crc"))]
            state: !0,
        }
    }

    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        #[cfg(feature = "fast-crc")]
        self.inner.update(bytes);
        #[cfg(not(feature = "fast-crc"))]
        {
            self.state = nibble_update(self.state, bytes);
        }
    }

    /// The CRC of everything added.
    pub fn finalize(self) -> u32 {
        #[cfg(feature = "fast-crc")]
        return self.inner.finalize();
        #[cfg(not(feature = "fast-crc"))]
        return !self.state;
    }
}

impl Default for Crc32 {
    fn default() -> Self {
        Crc32::new()
    }
}

/// CRC-32 of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut c = Crc32::new();
    c.update(bytes);
    c.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nibble_table_matches_the_standard_crc() {
        // The check value of CRC-32/ISO-HDLC.
        assert_eq!(!nibble_update(!0, b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        let data: [u8; 1000] = core::array::from_fn(|i| (i * 7 + i / 13) as u8);
        let mut split = Crc32::new();
        split.update(&data[..333]);
        split.update(&data[333..]);
        let whole = split.finalize();
        assert_eq!(whole, !nibble_update(!0, &data));
        assert_eq!(whole, crc32(&data));
    }
}
