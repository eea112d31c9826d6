//! 1×1 stride-1 int8 convolutions with few input channels per group (ShuffleNet's grouped
//! 1×1s, a ResNet bottleneck's 64-channel ones, DS-CNN's and MobileNet's 64-channel
//! pointwise layers), pixels in lanes: a register holds consecutive positions of one output
//! channel, each lane summing the channel quads of its position against the channel's
//! weight quads broadcast. The activations are read straight from their NCHW planes (four
//! planes interleaved into channel quads once per block of positions, reused by every
//! output channel) and the results stored straight to theirs: neither the im2col transpose
//! nor the block-to-planes transpose of the GEMM path runs, which cost more than the
//! products when k is small. Same integers and the same requantization as the GEMM path
//! (tested against it). The kernels: `arch::x86::avx512::pointwise` (VNNI, sixteen
//! positions, `vpdpbusd`) and `arch::x86::avx2::pointwise` (eight positions, `vpmaddwd`).

use super::MAX_POINTWISE_CG;

/// i32 weight quads `[M][⌈cg/4⌉]` the kernel broadcasts, for `m` channels of `cg` inputs.
pub fn table_len(m: usize, cg: usize) -> Option<usize> {
    m.checked_mul(cg.div_ceil(4))
}

/// Fills `table[j][q] = B[4q..4q + 4][j]` (as one little-endian i32, zero past `k`) from the
/// packed k-pair panels of each group (`plen` bytes per group, `mg` columns, `k` rows).
pub fn fill_table(b: &[i8], plen: usize, group: usize, mg: usize, k: usize, table: &mut [i32]) {
    use super::NR;
    let (kp, kq) = (k.div_ceil(2) * 2, k.div_ceil(4));
    for gi in 0..group {
        for jj in 0..mg {
            let panel = &b[gi * plen + jj / NR * NR * kp..][..NR * kp];
            let col = 2 * (jj % NR);
            for q in 0..kq {
                let pair = |r: usize| -> [i8; 2] {
                    match panel.get(r * 2 * NR + col..r * 2 * NR + col + 2) {
                        Some(&[lo, hi]) if r < kp / 2 => [lo, hi],
                        _ => [0, 0],
                    }
                };
                let ([b0, b1], [b2, b3]) = (pair(2 * q), pair(2 * q + 1));
                if let Some(t) = table.get_mut((gi * mg + jj) * kq + q) {
                    *t = i32::from_le_bytes([b0 as u8, b1 as u8, b2 as u8, b3 as u8]);
                }
            }
        }
    }
}

/// One group's planes: `x` `[cg][hw]` (i8 read flipped to `a + 128` when `flip`), the
/// weight quads `table` `[mg][⌈cg/4⌉]`, per-channel corrections `corr` `[mg]`, weight zero
/// points `zb` (`[]`, `[1]` or `[mg]`), requantizers `rq` in the f32 form (`[1]` or `[mg]`,
/// every shift 0: `mult` holds the scale's bits), output zero point and range; `y`
/// `[mg][hw]` bytes.
pub struct Group<'a> {
    pub x: &'a [u8],
    pub hw: usize,
    pub cg: usize,
    pub mg: usize,
    pub flip: bool,
    pub table: &'a [i32],
    /// `table` is the blob's channel quads (`[⌈mg/16⌉][⌈cg/4⌉][16]`, `conv::QuadLayout`)
    /// rather than the `[mg][⌈cg/4⌉]` table [`fill_table`] writes.
    pub quads: bool,
    pub corr: &'a [i32],
    pub zb: &'a [i32],
    pub rq: &'a [super::Requant],
    pub zp: i32,
    pub lo: i32,
    pub hi: i32,
}

impl Group<'_> {
    /// Whether the slices fit the geometry (for `y_len` output bytes) and the kernels'
    /// limits: channels, table, corrections, per-tensor or per-channel zero points and
    /// requantizers, in one vector form.
    pub fn fits(&self, y_len: usize) -> bool {
        let per = |n: usize| n == 1 || n == self.mg;
        let kq = self.cg.div_ceil(4);
        self.cg != 0
            && self.cg <= MAX_POINTWISE_CG
            && self.x.len() >= self.cg * self.hw
            && y_len >= self.mg * self.hw
            && self.table.len()
                >= if self.quads {
                    self.mg.div_ceil(16) * 16 * kq
                } else {
                    self.mg * kq
                }
            && self.corr.len() >= self.mg
            && (self.zb.is_empty() || per(self.zb.len()))
            && per(self.rq.len())
            && super::vector_form(self.rq)
    }

    /// Where channel `j`'s weight quad `q` lies in `table`, in either layout.
    #[inline(always)]
    pub fn weight_index(&self, j: usize, q: usize) -> usize {
        let kq = self.cg.div_ceil(4);
        if self.quads {
            ((j / 16) * kq + q) * 16 + j % 16
        } else {
            j * kq + q
        }
    }

    /// Channel `j`'s weight quad `q` (little-endian bytes of four input channels); 0
    /// outside the table ([`Group::fits`] rules that out).
    #[inline(always)]
    pub fn weight(&self, j: usize, q: usize) -> i32 {
        self.table
            .get(self.weight_index(j, q))
            .copied()
            .unwrap_or(0)
    }
}

/// Runs one group on the widest kernel the CPU has (VNNI's with AVX-512 VNNI, else
/// AVX2's); `false` (nothing written) when the slices do not fit the geometry or the CPU
/// has neither.
pub fn run_group(g: &Group<'_>, y: &mut [u8]) -> bool {
    crate::arch::qtile::pointwise_group(g, y)
}

/// Whether this CPU runs [`run_group`]'s kernels (x86 with AVX2 or AVX-512 on).
pub fn available() -> bool {
    crate::arch::qtile::pointwise_available()
}
