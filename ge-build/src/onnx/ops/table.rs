//! The supported-operator table, read off the [`registry`](super::registry): per (domain, op
//! type), the opsets and element types ge compiles and how it lowers them.
//! `docs/OPERATORS.md` is generated from it (`ge ops --markdown`); a test keeps the checked-in
//! file current.

use ge_runtime::format::DType;

use super::registry::{DEFAULT_DOMAIN, OpEntry, entries};
pub use super::registry::{Lowering, MAX_OPSET, MIN_OPSET};

/// One row of the table.
#[derive(Clone, Debug)]
pub struct OpSupport {
    /// `ai.onnx` for the default domain.
    pub domain: &'static str,
    pub op: &'static str,
    pub first_opset: i64,
    pub last_opset: i64,
    pub dtypes: Vec<DType>,
    pub lowering: Lowering,
    pub note: &'static str,
}

impl From<&OpEntry> for OpSupport {
    fn from(e: &OpEntry) -> OpSupport {
        OpSupport {
            domain: if e.domain == DEFAULT_DOMAIN {
                "ai.onnx"
            } else {
                e.domain
            },
            op: e.op,
            first_opset: e.since.max(MIN_OPSET),
            last_opset: e.until,
            dtypes: e.dtypes.to_vec(),
            lowering: e.lowering,
            note: e.note,
        }
    }
}

/// The table, sorted by domain (the default first), then op type.
pub fn table() -> Vec<OpSupport> {
    let mut rows: Vec<OpSupport> = entries().map(OpSupport::from).collect();
    rows.sort_by(|a, b| {
        (a.domain != "ai.onnx", a.domain, a.op).cmp(&(b.domain != "ai.onnx", b.domain, b.op))
    });
    rows
}

fn short(d: DType) -> &'static str {
    match d {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::F16 => "f16",
        DType::Bf16 => "bf16",
        DType::I8 => "i8",
        DType::I16 => "i16",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::U8 => "u8",
        DType::U16 => "u16",
        DType::U32 => "u32",
        DType::U64 => "u64",
        DType::Bool => "bool",
    }
}

/// `docs/OPERATORS.md`.
pub fn markdown() -> String {
    let rows = table();
    let default = rows.iter().filter(|r| r.domain == "ai.onnx").count();
    let mut s = String::new();
    s.push_str("# Supported ONNX operators\n\n");
    s.push_str("Generated from the operator registry (`ge-build/src/onnx/ops/registry.rs`; each\n");
    s.push_str("family module declares its ops) by `ge ops --markdown > docs/OPERATORS.md`;\n");
    s.push_str("`cargo test` fails when this file is stale.\n\n");
    s.push_str(&format!(
        "Default domain (`ai.onnx`), opsets {MIN_OPSET} to {MAX_OPSET}; {default} op types ({} entries in all domains).\n",
        rows.len()
    ));
    s.push_str("A node whose opset is outside its op's range is refused, naming the range.\n");
    s.push_str(
        "`com.microsoft` rows are onnxruntime's contrib ops (what its optimizer and quantizers\n",
    );
    s.push_str(
        "write); they are checked against onnxruntime on the models of `tools/gen_contrib_models.py`.\n",
    );
    s.push_str(
        "Shapes are static: inputs that decide shapes (axes, pads, sizes, repeats…) must be\n",
    );
    s.push_str(
        "constants or fixed at compile time. Anything else fails at compile time naming the\n",
    );
    s.push_str(
        "node, op type, opset and reason. f16/bf16 are computed in f32 and rounded per op.\n\n",
    );
    s.push_str("| domain | op | opsets | dtypes | lowering | notes |\n|---|---|---|---|---|---|\n");
    for r in rows {
        let dts: Vec<&str> = r.dtypes.iter().map(|&d| short(d)).collect();
        let low = match r.lowering {
            Lowering::Kernel => "kernel",
            Lowering::Decomposed => "decomposed",
            Lowering::Constant => "compile time",
        };
        // The other domains have one version (1); their nodes import at the model's
        // default-domain opset, whose range is shown beside it.
        let opsets = if r.domain == "ai.onnx" {
            format!("{}–{}", r.first_opset, r.last_opset)
        } else {
            format!("1 (ai.onnx {}–{})", r.first_opset, r.last_opset)
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            r.domain,
            r.op,
            opsets,
            dts.join(" "),
            low,
            r.note
        ));
    }
    s
}
