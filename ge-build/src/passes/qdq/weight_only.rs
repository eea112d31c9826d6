//! Weight-only int8 kept int8: `Cast(W) · s` — an int8/uint8 constant matrix widened by a
//! Cast and scaled per row, per column or per tensor, as weight-only exporters write it
//! (MiniLM's: 30,522 × 384 word embeddings scaled per row, every linear layer per column) —
//! read by
//! - a Gather along rows: becomes `Cast(Gather(W, idx)) · Gather(s, idx)` (`· s` when `s`
//!   is not per row), so a run widens only the rows it picks;
//! - a MatMul as its B (`[K, N]`, `s` per column or per tensor): becomes the internal node
//!   `MatMul(A, W, s)` in ge's internal domain ([`crate::onnx::weight_only`]): a GemmW8
//!   task, a GEMM that dequantizes W while packing it.
//!
//! The same holds for a QDQ model's weights that no selector fuses —
//! `DequantizeLinear(W, s)` with no zero point, per tensor or per column, e.g. a dense
//! layer whose output is not quantized (onnxruntime runs those in float, and so does ge, on
//! the same `float(w)·s`).
//!
//! Either way the blob stores W as int8, and every weight the kernels use is still
//! `float(w) · s` of the same `w` and `s` (the Gather's outputs are bitwise the same).
//! Runs at import with [`super::recognize`], at every opt level (constant folding would
//! otherwise widen W before any pass sees it). Cost: one pass to index producers and
//! consumers, then O(1) per Gather or MatMul: O(nodes + edges).

use std::collections::{HashMap, HashSet};

use super::replace::int_attr;
use super::{attr_i, code, is_op};
use crate::onnx::proto::{AttributeProto, GraphProto, NodeProto, TensorProto};
use crate::onnx::weight_only::{DOMAIN, GEMM_W8};
use crate::tensor::decode_tensor;

/// ONNX's FLOAT element type code.
const FLOAT: i32 = 1;

/// `nodes` (the graph's, or [`super::recognize`]'s) with every weight-only Gather and
/// MatMul rewritten, or `None` when there is none.
pub fn rewrite(gp: &GraphProto, nodes: &[NodeProto]) -> Option<Vec<NodeProto>> {
    let ix = Index::new(gp, nodes);
    let mut replaced: HashMap<usize, Vec<NodeProto>> = HashMap::new();
    let mut removed: HashSet<usize> = HashSet::new();
    for (i, n) in nodes.iter().enumerate() {
        let Some((new, sc)) = gather(&ix, n).or_else(|| matmul(&ix, n)) else {
            continue;
        };
        removed.extend(sc.nodes);
        replaced.insert(i, new);
    }
    if replaced.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(nodes.len() + 2 * replaced.len());
    for (i, n) in nodes.iter().enumerate() {
        if let Some(r) = replaced.remove(&i) {
            out.extend(r);
        } else if !removed.contains(&i) {
            out.push(n.clone());
        }
    }
    Some(out)
}

/// Producers, use counts, graph outputs and initializers of the node list.
struct Index<'g> {
    nodes: &'g [NodeProto],
    producer: HashMap<&'g str, usize>,
    uses: HashMap<&'g str, usize>,
    outputs: HashSet<&'g str>,
    inits: HashMap<&'g str, &'g TensorProto>,
}

/// `Cast(w) · s` and the two nodes computing it (the one DequantizeLinear twice for a QDQ
/// model's weights).
struct Scaled<'g> {
    w: &'g TensorProto,
    s: &'g TensorProto,
    nodes: [usize; 2],
}

/// How `s` scales a `[rows, cols]` W.
#[derive(PartialEq)]
enum Scale {
    /// One value, or one per column.
    Columns,
    /// One per row (`[rows, 1]`).
    Rows,
}

impl<'g> Index<'g> {
    fn new(gp: &'g GraphProto, nodes: &'g [NodeProto]) -> Index<'g> {
        let mut producer = HashMap::new();
        let mut uses: HashMap<&str, usize> = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            for o in n.output.iter().filter(|o| !o.is_empty()) {
                producer.insert(o.as_str(), i);
            }
            for v in n.input.iter().filter(|v| !v.is_empty()) {
                *uses.entry(v.as_str()).or_default() += 1;
            }
        }
        Index {
            nodes,
            producer,
            uses,
            outputs: gp.output.iter().map(|o| o.name()).collect(),
            inits: gp.initializer.iter().map(|t| (t.name(), t)).collect(),
        }
    }

    /// True for a value read once and not a graph output: its producer can go.
    fn private(&self, v: &str) -> bool {
        self.uses.get(v) == Some(&1) && !self.outputs.contains(v)
    }

    /// `v` as `Cast(W) · s` (either operand order), W a 2-D int8/uint8 initializer cast to
    /// float, s a float initializer; both intermediate values private. Or the same weights as
    /// a QDQ model writes them ([`Index::dequantized`]).
    fn scaled(&self, v: &str) -> Option<Scaled<'g>> {
        if let Some(sc) = self.dequantized(v) {
            return Some(sc);
        }
        let &m = self.producer.get(v)?;
        let mul = &self.nodes[m];
        if !is_op(mul, "Mul") || mul.input.len() != 2 || !self.private(v) {
            return None;
        }
        let cast_of = |x: &str| {
            let &c = self.producer.get(x)?;
            let cn = &self.nodes[c];
            let w = *self.inits.get(cn.input.first()?.as_str())?;
            let int8 = matches!(w.data_type, Some(code::INT8 | code::UINT8));
            (is_op(cn, "Cast")
                && attr_i(cn, "to") == Some(FLOAT.into())
                && int8
                && w.dims.len() == 2
                && self.private(x))
            .then_some((c, w))
        };
        let ((c, w), s) = match (cast_of(&mul.input[0]), cast_of(&mul.input[1])) {
            (Some(cw), None) => (cw, &mul.input[1]),
            (None, Some(cw)) => (cw, &mul.input[0]),
            _ => return None,
        };
        let s = *self.inits.get(s.as_str())?;
        (s.data_type == Some(FLOAT)).then_some(Scaled {
            w,
            s,
            nodes: [m, c],
        })
    }
}

impl<'g> Index<'g> {
    /// `v` as `DequantizeLinear(W, s[, z])` — a QDQ model's weights outside any group its
    /// selectors fuse (tf2onnx's dense layer: `MatMul` then a bias `Add`, which onnxruntime
    /// runs in float) — where the result is `float(w) · s` exactly as `Cast(W) · s` gives
    /// it: W a 2-D int8/uint8 initializer, s float32 per tensor or per column (`axis` 1, not
    /// blocked), the zero point absent or all zeros (`(w − 0)·s` is `float(w)·s`), and the
    /// dequantized value private. Per-row scales and non-zero zero points are left to the
    /// float path.
    fn dequantized(&self, v: &str) -> Option<Scaled<'g>> {
        let &d = self.producer.get(v)?;
        let dq = &self.nodes[d];
        if !is_op(dq, "DequantizeLinear") || !self.private(v) {
            return None;
        }
        let w = *self.inits.get(dq.input.first()?.as_str())?;
        let s = *self.inits.get(dq.input.get(1)?.as_str())?;
        let int8 = matches!(w.data_type, Some(code::INT8 | code::UINT8));
        if !int8 || w.dims.len() != 2 || s.data_type != Some(FLOAT) {
            return None;
        }
        if attr_i(dq, "block_size").is_some_and(|b| b != 0) {
            return None;
        }
        let scales: i64 = s.dims.iter().product();
        let axis = attr_i(dq, "axis").unwrap_or(1);
        if scales != 1 && !(matches!(axis, 1 | -1) && s.dims == [w.dims[1]]) {
            return None;
        }
        if let Some(z) = dq.input.get(2).filter(|z| !z.is_empty()) {
            let z = *self.inits.get(z.as_str())?;
            let zeros = decode_tensor(z, None).ok()?.to_f64_vec().ok()?;
            if z.data_type != w.data_type || zeros.iter().any(|&x| x != 0.0) {
                return None;
            }
        }
        Some(Scaled {
            w,
            s,
            nodes: [d, d],
        })
    }
}

impl Scaled<'_> {
    fn scale(&self) -> Option<Scale> {
        let (rows, cols) = (self.w.dims[0], self.w.dims[1]);
        match self.s.dims.as_slice() {
            [] | [1] | [1, 1] => Some(Scale::Columns),
            [d] | [1, d] if *d == cols => Some(Scale::Columns),
            [r, 1] if *r == rows => Some(Scale::Rows),
            _ => None,
        }
    }
}

/// `Gather(Cast(W) · s, idx)` along rows → `Cast(Gather(W, idx)) · s'`.
fn gather<'g>(ix: &Index<'g>, g: &NodeProto) -> Option<(Vec<NodeProto>, Scaled<'g>)> {
    if !is_op(g, "Gather") || attr_i(g, "axis").unwrap_or(0) != 0 {
        return None;
    }
    let (data, idx, out) = (g.input.first()?, g.input.get(1)?, g.output.first()?);
    let sc = ix.scaled(data)?;
    let per_row = sc.scale()? == Scale::Rows;
    let name = g.name.clone().unwrap_or_else(|| out.clone());
    let (rows, wide) = (
        format!("{name}:int8_rows"),
        format!("{name}:int8_rows_float"),
    );
    let axis0 = || vec![int_attr("axis", 0)];
    let mut new = vec![
        node(
            "Gather",
            &[sc.w.name(), idx],
            &rows,
            &format!("{name}:int8"),
            axis0(),
        ),
        node(
            "Cast",
            &[&rows],
            &wide,
            &format!("{name}:widen"),
            vec![int_attr("to", FLOAT.into())],
        ),
    ];
    let scales = if per_row {
        let v = format!("{name}:row_scales");
        new.push(node(
            "Gather",
            &[sc.s.name(), idx],
            &v,
            &format!("{name}:scales"),
            axis0(),
        ));
        v
    } else {
        sc.s.name().to_string()
    };
    new.push(node(
        "Mul",
        &[&wide, &scales],
        out,
        &format!("{name}:scale"),
        vec![],
    ));
    Some((new, sc))
}

/// `MatMul(A, Cast(W) · s)`, s per column or per tensor → the internal `MatMul(A, W, s)`
/// (the MatMul's name and op type: keep-dtype lists and reports still find it).
fn matmul<'g>(ix: &Index<'g>, mm: &NodeProto) -> Option<(Vec<NodeProto>, Scaled<'g>)> {
    if !is_op(mm, "MatMul") {
        return None;
    }
    let (a, b, out) = (mm.input.first()?, mm.input.get(1)?, mm.output.first()?);
    let sc = ix.scaled(b)?;
    if sc.scale()? != Scale::Columns {
        return None;
    }
    let name = mm.name.clone().unwrap_or_else(|| out.clone());
    let mut n = node(GEMM_W8, &[a, sc.w.name(), sc.s.name()], out, &name, vec![]);
    n.domain = Some(DOMAIN.into());
    Some((vec![n], sc))
}

fn node(
    op: &str,
    inputs: &[&str],
    output: &str,
    name: &str,
    attribute: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.to_string()],
        name: Some(name.to_string()),
        op_type: Some(op.to_string()),
        attribute,
        ..NodeProto::default()
    }
}
