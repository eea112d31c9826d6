//! Typed views of the numbered fields of the parameter records. The records store op codes
//! as `u32` (they are the blob's bytes); code that inspects them compares typed values, so a
//! wrong variant is a type error and an unknown code reads as `None` instead of a number.

use super::ops::{
    Activation, BinaryOp, BinaryParams, PadMode, PadParams, PoolKind, PoolParams, ReduceOp,
    ReduceParams, SoftmaxKind, SoftmaxParams, UnaryOp,
};

impl Activation {
    /// The fused unary function, `None` for no activation (code 0) or an unknown code.
    pub const fn unary_op(&self) -> Option<UnaryOp> {
        UnaryOp::from_u32(self.op)
    }

    /// True when no activation is fused.
    pub const fn is_none(&self) -> bool {
        self.op == 0
    }
}

impl BinaryParams {
    /// The binary function.
    pub const fn binary_op(&self) -> Option<BinaryOp> {
        BinaryOp::from_u32(self.op)
    }

    /// True for `op` without a fused activation.
    pub fn is_plain(&self, op: BinaryOp) -> bool {
        self.binary_op() == Some(op) && self.act.is_none()
    }
}

impl PoolParams {
    /// Max, average or Lp pooling.
    pub const fn pool_kind(&self) -> Option<PoolKind> {
        PoolKind::from_u32(self.kind)
    }
}

impl SoftmaxParams {
    /// Softmax, LogSoftmax or Hardmax.
    pub const fn softmax_kind(&self) -> Option<SoftmaxKind> {
        SoftmaxKind::from_u32(self.kind)
    }
}

impl ReduceParams {
    /// The reduction.
    pub const fn reduce_op(&self) -> Option<ReduceOp> {
        ReduceOp::from_u32(self.op)
    }
}

impl PadParams {
    /// The padding mode.
    pub const fn pad_mode(&self) -> Option<PadMode> {
        PadMode::from_u32(self.mode)
    }
}
