//! TFLite Micro's int8 arithmetic, bit for bit (`--int8-rounding tflite`): what TFLM's
//! reference kernels and CMSIS-NN compute for the same int8 model, so a firmware moving from
//! TFLM gets its outputs exactly (docs/research/tflite-int8-rounding.md holds the derivation
//! and the values checked against the compiled C++).
//!
//! - [`fixed`]: gemmlowp's fixed-point primitives and `QuantizeMultiplier` (compile time);
//! - [`binary`]: the `QBinary` task (int8 Add / Mul);
//! - [`softmax`]: the `QSoftmax` task;
//! - [`mean`]: the `QMean` task;
//! - [`params`]: what TFLite's `Prepare` derives from the scales (compile time).
//!
//! The int8 average pool (raw sums rounded half away from zero) is the Pool task on 8-bit
//! data ([`super::pool`]); QConv / QGemm requantize through `Requant`'s TFLite form.

pub mod binary;
pub mod fixed;
pub mod mean;
pub mod params;
pub mod softmax;

#[cfg(test)]
mod tests;
