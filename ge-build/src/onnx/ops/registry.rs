//! The operator registry: one [`OpEntry`] per (domain, op type), declared by the family module
//! that imports it (`pub const OPS: &[OpEntry]`, one line per op). Dispatch, the opset check,
//! [`supported`], the operator table and `docs/OPERATORS.md` all read it, so an op is added
//! in exactly one place and a misspelled or duplicated entry fails a test instead of falling
//! through to a default.

use std::collections::HashMap;
use std::sync::OnceLock;

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use crate::error::Result;

/// The newest default-domain opset the importers know (onnx 1.23).
pub const MAX_OPSET: i64 = 28;
/// The oldest opset ge imports.
pub const MIN_OPSET: i64 = 7;

/// The default ONNX domain (also spelled `ai.onnx`).
pub const DEFAULT_DOMAIN: &str = "";
/// onnxruntime's contrib-op domain (ops its optimizer and quantizer write). Its nodes import
/// at the model's default-domain opset (the contrib domain has a single opset, 1).
pub const MICROSOFT: &str = "com.microsoft";

/// How an op is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lowering {
    /// A device kernel (task).
    Kernel,
    /// Rewritten into other supported ops at import.
    Decomposed,
    /// Evaluated while compiling (its outputs depend only on shapes or constants).
    Constant,
}

/// How a node of an entry is imported.
#[derive(Clone, Copy)]
pub enum Importer {
    /// A function of the node alone (attributes, input types, shapes, constants).
    Node(fn(&NodeCtx<'_>) -> Result<Imported>),
    /// A sequence op: resolved by [`crate::onnx::sequence::Sequences`], which keeps the
    /// compile-time sequences of the whole graph.
    Sequence,
}

/// One registered op.
#[derive(Clone, Copy)]
pub struct OpEntry {
    pub domain: &'static str,
    pub op: &'static str,
    /// First opset of the domain whose semantics the importer implements.
    pub since: i64,
    /// Last opset it is defined in (the op was removed after it).
    pub until: i64,
    /// Element types documented as supported (the importer checks the details).
    pub dtypes: &'static [DType],
    pub lowering: Lowering,
    pub note: &'static str,
    pub import: Importer,
}

impl OpEntry {
    const fn new(
        op: &'static str,
        since: i64,
        dtypes: &'static [DType],
        lowering: Lowering,
        import: Importer,
    ) -> OpEntry {
        OpEntry {
            domain: DEFAULT_DOMAIN,
            op,
            since,
            until: MAX_OPSET,
            dtypes,
            lowering,
            note: "",
            import,
        }
    }

    /// An op that becomes a device task.
    pub const fn kernel(
        op: &'static str,
        since: i64,
        dtypes: &'static [DType],
        import: fn(&NodeCtx<'_>) -> Result<Imported>,
    ) -> OpEntry {
        OpEntry::new(op, since, dtypes, Lowering::Kernel, Importer::Node(import))
    }

    /// An op rewritten into other ops at import.
    pub const fn decomposed(
        op: &'static str,
        since: i64,
        dtypes: &'static [DType],
        import: fn(&NodeCtx<'_>) -> Result<Imported>,
    ) -> OpEntry {
        OpEntry::new(
            op,
            since,
            dtypes,
            Lowering::Decomposed,
            Importer::Node(import),
        )
    }

    /// An op evaluated while compiling.
    pub const fn constant(
        op: &'static str,
        since: i64,
        dtypes: &'static [DType],
        import: fn(&NodeCtx<'_>) -> Result<Imported>,
    ) -> OpEntry {
        OpEntry::new(
            op,
            since,
            dtypes,
            Lowering::Constant,
            Importer::Node(import),
        )
    }

    /// A sequence op (resolved at compile time by the sequence resolver).
    pub const fn sequence(op: &'static str, since: i64) -> OpEntry {
        OpEntry::new(op, since, ANY, Lowering::Constant, Importer::Sequence)
    }

    /// The last opset that defines the op.
    pub const fn until(mut self, until: i64) -> OpEntry {
        self.until = until;
        self
    }

    /// A note for the operator table (restrictions, how it is lowered).
    pub const fn note(mut self, note: &'static str) -> OpEntry {
        self.note = note;
        self
    }

    /// The entry in another domain.
    pub const fn in_domain(mut self, domain: &'static str) -> OpEntry {
        self.domain = domain;
        self
    }

    /// True when the entry covers a node imported at `opset` of its domain. An op available
    /// since [`MIN_OPSET`] or earlier has no lower bound (older models keep importing).
    pub fn covers(&self, opset: i64) -> bool {
        (self.since <= MIN_OPSET || opset >= self.since) && opset <= self.until
    }
}

impl std::fmt::Debug for OpEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpEntry")
            .field("domain", &self.domain)
            .field("op", &self.op)
            .field("since", &self.since)
            .field("until", &self.until)
            .field("lowering", &self.lowering)
            .finish()
    }
}

/// Element-type sets the entries name.
pub mod dtypes {
    use ge_runtime::format::DType::{self, *};

    pub const FLOAT: &[DType] = &[F32, F64, F16, Bf16];
    pub const INT: &[DType] = &[I8, I16, I32, I64, U8, U16, U32, U64];
    pub const UINT: &[DType] = &[U8, U16, U32, U64];
    pub const NUM: &[DType] = &[F32, F64, F16, Bf16, I8, I16, I32, I64, U8, U16, U32, U64];
    pub const ANY: &[DType] = &[
        F32, F64, F16, Bf16, I8, I16, I32, I64, U8, U16, U32, U64, Bool,
    ];
    pub const BOOL: &[DType] = &[Bool];
    pub const INT_BOOL: &[DType] = &[I8, I16, I32, I64, U8, U16, U32, U64, Bool];
    /// 8-bit integer operands of the integer matmul/conv ops.
    pub const QUANT8: &[DType] = &[U8, I8];
    /// What DequantizeLinear reads (int32 only dequantized) or passes through.
    pub const DEQUANT: &[DType] = &[F32, F64, F16, Bf16, U8, I8, U16, I16, I32];
    /// QuantizeLinear's float inputs and integer outputs.
    pub const QUANT_OUT: &[DType] = &[F32, F64, F16, Bf16, U8, I8, U16, I16];
    pub const DYN_QUANT: &[DType] = &[F32, U8];
}
pub use dtypes::ANY;

/// Every family's entries.
const FAMILIES: &[&[OpEntry]] = &[
    super::attention::OPS,
    super::bits::OPS,
    super::causal_conv::OPS,
    super::col2im::OPS,
    super::contrib::OPS,
    super::conv::OPS,
    super::crop_pad::OPS,
    super::decomp::OPS,
    super::det::OPS,
    super::dft::OPS,
    super::einsum::OPS,
    super::elementwise::OPS,
    super::grid::OPS,
    super::index::OPS,
    super::linear_attn::OPS,
    super::loops::OPS,
    super::math::OPS,
    super::norm::OPS,
    super::onehot::OPS,
    super::qlinear::OPS,
    super::quant::OPS,
    super::recurrent::OPS,
    super::resize::OPS,
    super::reverse::OPS,
    super::rotary::OPS,
    super::scan::OPS,
    super::select::OPS,
    super::shape::OPS,
    super::tensor_scatter::OPS,
    super::training::OPS,
    super::unpool::OPS,
    super::window::OPS,
    crate::onnx::sequence::OPS,
];

/// Every registered entry, in family order.
pub fn entries() -> impl Iterator<Item = &'static OpEntry> {
    FAMILIES.iter().flat_map(|f| f.iter())
}

/// The default domain's two spellings map to one.
fn canonical(domain: &str) -> &str {
    if domain == "ai.onnx" {
        DEFAULT_DOMAIN
    } else {
        domain
    }
}

fn index() -> &'static HashMap<(&'static str, &'static str), &'static OpEntry> {
    static INDEX: OnceLock<HashMap<(&'static str, &'static str), &'static OpEntry>> =
        OnceLock::new();
    INDEX.get_or_init(|| entries().map(|e| ((e.domain, e.op), e)).collect())
}

/// The entry for `op_type` in `domain`. O(1).
pub fn lookup(domain: &str, op_type: &str) -> Option<&'static OpEntry> {
    index().get(&(canonical(domain), op_type)).copied()
}

/// The domains that have entries besides the default one.
pub fn other_domains() -> Vec<&'static str> {
    let mut d: Vec<&'static str> = entries()
        .map(|e| e.domain)
        .filter(|d| *d != DEFAULT_DOMAIN)
        .collect();
    d.sort_unstable();
    d.dedup();
    d
}

/// Every default-domain op type, sorted.
pub fn supported() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = entries()
        .filter(|e| e.domain == DEFAULT_DOMAIN)
        .map(|e| e.op)
        .collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_registered_once() {
        let mut seen = std::collections::HashSet::new();
        for e in entries() {
            assert!(
                seen.insert((e.domain, e.op)),
                "{}::{} is registered twice",
                e.domain,
                e.op
            );
        }
        assert_eq!(seen.len(), index().len());
    }

    #[test]
    fn entries_are_well_formed() {
        for e in entries() {
            assert!(
                !e.op.is_empty() && e.op.chars().all(|c| c.is_ascii_alphanumeric()),
                "bad op name {:?}",
                e.op
            );
            assert!(
                e.op.starts_with(|c: char| c.is_ascii_uppercase()),
                "{}",
                e.op
            );
            assert!(
                MIN_OPSET <= e.since.max(MIN_OPSET) && e.since <= e.until && e.until <= MAX_OPSET,
                "{}: opsets {}..={}",
                e.op,
                e.since,
                e.until
            );
            assert!(!e.dtypes.is_empty(), "{}: no dtypes", e.op);
        }
    }

    #[test]
    fn lookup_knows_both_spellings_of_the_default_domain() {
        assert!(lookup("", "Relu").is_some());
        assert!(lookup("ai.onnx", "Relu").is_some());
        assert!(lookup("", "Relux").is_none());
        assert!(lookup("com.example", "Relu").is_none());
    }
}
