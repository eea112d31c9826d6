//! The format's versioning policy per task: the first format version that may hold a task,
//! from its kind and what its parameter record asks for.

use super::*;

/// The first format version that may hold a task of `op` with parameter record `params`:
/// the kind's [`OpKind::since_version`], or 5 for a Conv whose weights are pre-packed and a
/// `QGemm`/`QConv` that requantizes in f32, 7 for a `Fused` program with 8-bit I/O, 8 for a
/// record that applies [`UnaryOp::Silu`], 9 for blocked channels ([`ChannelLayout`]), 12
/// for TFLite requantization ([`QGEMM_OUT_Q8_TFLITE`]), 13 for quad conv weights
/// ([`QCONV_LAYOUT_MASK`]), 14 for onnxruntime's Add as a `QBinary` ([`QBINARY_ADD_F32`]).
pub fn task_since_version(op: OpKind, params: &[u8]) -> u32 {
    let first = u32_at(params, 0);
    // `op`, the first field of QBinary's record.
    if op == OpKind::QBinary && first == QBINARY_ADD_F32 {
        return 14;
    }
    // `out`, the first field of QGemm's, QConv's and (through its conv) QConvFused's
    // records: the output kind in its low byte, QConv's weight layout above.
    if matches!(op, OpKind::QConv | OpKind::QConvFused) && first & QCONV_LAYOUT_MASK != 0 {
        return 13;
    }
    if matches!(op, OpKind::QGemm | OpKind::QConv | OpKind::QConvFused)
        && first & 0xff == QGEMM_OUT_Q8_TFLITE
    {
        return 12;
    }
    // Blocked channels: bits 16.. of a Conv's `spatial` (its first field, with blocked
    // weights from bit 8) or a pool's (its second).
    let blocked = match op {
        OpKind::Conv => first >> 16 != 0 || (first >> 8) & 0xff >= WeightLayout::Blocked as u32,
        OpKind::Pool | OpKind::GlobalPool => u32_at(params, 4) >> 16 != 0,
        _ => false,
    };
    if blocked {
        return 9;
    }
    if applies_silu(op, params) {
        return 8;
    }
    let trans_b = core::mem::offset_of!(GemmParams, trans_b);
    if op == OpKind::GemmW8 && u32_at(params, trans_b) & GEMM_B_PANELS != 0 {
        return 10;
    }
    let newer = match op {
        // `spatial`, the record's first field, holds the weight layout from bit 8 on.
        OpKind::Conv => first >> 8 != 0,
        // `out`, both records' first field.
        OpKind::QGemm | OpKind::QConv => first & 0xff == QGEMM_OUT_Q8_F32,
        // `reserved`, the fourth field.
        OpKind::Fused => {
            if u32_at(params, 12) & FUSED_8BIT_IO != 0 {
                return 7;
            }
            false
        }
        _ => false,
    };
    if newer { 5 } else { op.since_version() }
}

/// True when the record `params` of `op` applies [`UnaryOp::Silu`]: as its activation (or a
/// Conv's prologue), or in a vector program's instructions. A reader older than version 8
/// would refuse the op number at run time; the version makes it refuse the blob at load.
/// Out of line: the runtime runs it on every task at load, and firmware pays for its code.
#[inline(never)]
pub(super) fn applies_silu(op: OpKind, params: &[u8]) -> bool {
    use core::mem::offset_of;
    // Where the record holds an `Activation`'s op number (a Conv a second one: its
    // prologue); vector programs are scanned instead.
    let (at, also) = match op {
        OpKind::Unary => (offset_of!(UnaryParams, act), None),
        OpKind::Binary | OpKind::Variadic => (offset_of!(BinaryParams, act), None),
        OpKind::Conv => (
            offset_of!(ConvParams, act),
            Some(offset_of!(ConvParams, prologue)),
        ),
        OpKind::ConvTranspose => (offset_of!(ConvParams, act), None),
        OpKind::Gemm | OpKind::GemmW8 | OpKind::GemmPacked => (offset_of!(GemmParams, act), None),
        OpKind::BatchNorm | OpKind::InstanceNorm => (offset_of!(NormParams, act), None),
        OpKind::LayerNorm => (offset_of!(LayerNormParams, act), None),
        OpKind::Fused => return program_applies_silu(params, 0),
        OpKind::QConvFused => {
            return program_applies_silu(params, offset_of!(QConvFusedParams, program));
        }
        _ => return false,
    };
    let silu = UnaryOp::Silu as u32;
    u32_at(params, at) == silu || also.is_some_and(|p| u32_at(params, p) == silu)
}

/// The little-endian u32 at byte `at` of a record (0 past its end).
pub(super) fn u32_at(params: &[u8], at: usize) -> u32 {
    params
        .get(at..at + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// True when the [`FusedParams`] at byte `at` of `params` has a Silu instruction.
pub(super) fn program_applies_silu(params: &[u8], at: usize) -> bool {
    use core::mem::offset_of;
    let count = u32_at(params, at + offset_of!(FusedParams, instr_count)) as usize;
    let first = at + offset_of!(FusedParams, instrs);
    (0..count.min(MAX_FUSED_INSTRS)).any(|i| {
        // `VInstr::op`, the instruction's first field.
        let o = first + i * size_of::<VInstr>();
        params
            .get(o..o + 2)
            .is_some_and(|b| u32::from(u16::from_le_bytes([b[0], b[1]])) == UnaryOp::Silu as u32)
    })
}
