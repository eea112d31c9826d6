//! Owned, 64-byte aligned blob storage for hosts (std): read a file or copy bytes so that
//! [`crate::Model::from_bytes`] can use weights in place. With the `mmap` feature,
//! [`AlignedBlob::open`] maps the file instead (pages are aligned).

use std::vec::Vec;

use crate::format::ALIGN;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Chunk([u8; ALIGN]);

enum Storage {
    Heap(Vec<Chunk>, usize),
    #[cfg(feature = "mmap")]
    Mapped(memmap2::Mmap),
}

/// A blob whose first byte is 64-byte aligned.
pub struct AlignedBlob(Storage);

impl AlignedBlob {
    /// Copies `bytes` into aligned storage.
    pub fn from_bytes(bytes: &[u8]) -> AlignedBlob {
        let mut v = std::vec![Chunk([0; ALIGN]); bytes.len().div_ceil(ALIGN)];
        let flat: &mut [u8] = bytemuck_chunks(&mut v);
        flat[..bytes.len()].copy_from_slice(bytes);
        AlignedBlob(Storage::Heap(v, bytes.len()))
    }

    /// Maps (with `mmap`) or reads the file at `path`.
    pub fn open(path: &std::path::Path) -> std::io::Result<AlignedBlob> {
        #[cfg(feature = "mmap")]
        {
            let f = std::fs::File::open(path)?;
            // SAFETY: the map is read-only; a concurrent writer to the file could change the
            // bytes under us, which the checksums in `Model::from_bytes` then report.
            let map = unsafe { memmap2::Mmap::map(&f)? };
            Ok(AlignedBlob(Storage::Mapped(map)))
        }
        #[cfg(not(feature = "mmap"))]
        {
            Ok(AlignedBlob::from_bytes(&std::fs::read(path)?))
        }
    }

    /// The blob's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Storage::Heap(v, len) => {
                let flat: &[u8] = chunks_bytes(v);
                &flat[..*len]
            }
            #[cfg(feature = "mmap")]
            Storage::Mapped(m) => m,
        }
    }
}

fn bytemuck_chunks(v: &mut [Chunk]) -> &mut [u8] {
    // SAFETY: `Chunk` is `repr(C)` plain bytes with no padding.
    unsafe { core::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), v.len() * ALIGN) }
}

fn chunks_bytes(v: &[Chunk]) -> &[u8] {
    // SAFETY: as above.
    unsafe { core::slice::from_raw_parts(v.as_ptr().cast::<u8>(), v.len() * ALIGN) }
}
