//! Building decompositions: an importer writes the ONNX nodes a complex op stands for (like
//! an ONNX function body) and returns them as [`Imported::Nodes`]; each is then imported
//! (typed, shape-inferred, folded) like any other node.

use ge_runtime::format::DType;

use super::super::ctx::{Imported, NodeCtx};
use super::super::proto::{AttributeProto, NodeProto};
use crate::tensor::TensorData;

/// An attribute for a generated node.
pub enum A<'s> {
    I(&'s str, i64),
    Is(&'s str, Vec<i64>),
    F(&'s str, f32),
    S(&'s str, &'s str),
    /// An attribute copied as-is (e.g. a convolution's geometry passed through).
    Raw(&'s AttributeProto),
}

impl A<'_> {
    fn proto(self) -> AttributeProto {
        let mut a = AttributeProto::default();
        match self {
            A::I(n, v) => {
                a.name = Some(n.into());
                a.r#type = Some(2);
                a.i = Some(v);
            }
            A::Is(n, v) => {
                a.name = Some(n.into());
                a.r#type = Some(7);
                a.ints = v;
            }
            A::F(n, v) => {
                a.name = Some(n.into());
                a.r#type = Some(1);
                a.f = Some(v);
            }
            A::S(n, v) => {
                a.name = Some(n.into());
                a.r#type = Some(3);
                a.s = Some(v.as_bytes().to_vec());
            }
            A::Raw(r) => return r.clone(),
        }
        a
    }
}

/// A convolution's geometry attributes.
pub const CONV_GEOMETRY: &[&str] = &[
    "auto_pad",
    "dilations",
    "group",
    "kernel_shape",
    "pads",
    "strides",
];

/// The node's attributes named in `keep`, copied as they are (a convolution's or pool's
/// geometry passed to the op it is rewritten into).
pub fn copied_attrs<'a>(ctx: &NodeCtx<'a>, keep: &[&str]) -> Vec<A<'a>> {
    ctx.node
        .attribute
        .iter()
        .filter(|a| keep.contains(&a.name()))
        .map(A::Raw)
        .collect()
}

/// A decomposition under construction: generated names are `<node>/<k>`.
pub struct Sub {
    prefix: String,
    count: usize,
    nodes: Vec<NodeProto>,
    consts: Vec<(String, TensorData)>,
}

impl Sub {
    /// Starts a decomposition of the node `ctx` imports.
    pub fn new(ctx: &NodeCtx<'_>) -> Sub {
        let first = ctx.node.output.first().map_or("", String::as_str);
        Sub {
            prefix: format!("{}#{}", ctx.name(), first),
            count: 0,
            nodes: Vec::new(),
            consts: Vec::new(),
        }
    }

    /// A fresh value name.
    pub fn fresh(&mut self) -> String {
        self.count += 1;
        format!("{}/{}", self.prefix, self.count)
    }

    /// Adds `op_type(inputs) -> outputs`; empty input names mark absent optional inputs.
    pub fn to(&mut self, op_type: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<A<'_>>) {
        let name = self.fresh();
        self.nodes.push(NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            name: Some(name),
            op_type: Some(op_type.into()),
            attribute: attrs.into_iter().map(A::proto).collect(),
            ..NodeProto::default()
        });
    }

    /// Adds a node pushed as-is (e.g. from an inlined subgraph).
    pub fn push(&mut self, node: NodeProto) {
        self.nodes.push(node);
    }

    /// Adds `op_type(inputs)` with one fresh output, returned.
    pub fn op(&mut self, op_type: &str, inputs: &[&str], attrs: Vec<A<'_>>) -> String {
        let out = self.fresh();
        self.to(op_type, inputs, &[&out], attrs);
        out
    }

    /// A constant value.
    pub fn constant(&mut self, data: TensorData) -> String {
        let name = self.fresh();
        self.consts.push((name.clone(), data));
        name
    }

    /// A constant value under a given name.
    pub fn constant_named(&mut self, name: &str, data: TensorData) {
        self.consts.push((name.to_string(), data));
    }

    /// An i64 constant of shape `dims`.
    pub fn i64s(&mut self, v: &[i64], dims: &[usize]) -> String {
        self.constant(TensorData::from_elements(DType::I64, dims.to_vec(), v).expect("sizes match"))
    }

    /// A 1-D i64 constant.
    pub fn ints(&mut self, v: &[i64]) -> String {
        self.i64s(v, &[v.len()])
    }

    /// A scalar of `dtype` holding `v` (converted).
    pub fn scalar(&mut self, dtype: DType, v: f64) -> String {
        let d = scalar_data(dtype, v);
        self.constant(d)
    }

    /// The finished decomposition.
    pub fn done(self) -> Imported {
        Imported::Nodes {
            nodes: self.nodes,
            consts: self.consts,
        }
    }
}

/// A scalar tensor of `dtype` holding `v`.
pub fn scalar_data(dtype: DType, v: f64) -> TensorData {
    let bytes: Vec<u8> = match dtype {
        DType::F32 => (v as f32).to_le_bytes().to_vec(),
        DType::F64 => v.to_le_bytes().to_vec(),
        DType::F16 => half::f16::from_f64(v).to_bits().to_le_bytes().to_vec(),
        DType::Bf16 => half::bf16::from_f64(v).to_bits().to_le_bytes().to_vec(),
        DType::I8 => (v as i8).to_le_bytes().to_vec(),
        DType::U8 => (v as u8).to_le_bytes().to_vec(),
        DType::Bool => vec![(v != 0.0) as u8],
        DType::I16 => (v as i16).to_le_bytes().to_vec(),
        DType::U16 => (v as u16).to_le_bytes().to_vec(),
        DType::I32 => (v as i32).to_le_bytes().to_vec(),
        DType::U32 => (v as u32).to_le_bytes().to_vec(),
        DType::I64 => (v as i64).to_le_bytes().to_vec(),
        DType::U64 => (v as u64).to_le_bytes().to_vec(),
    };
    TensorData {
        dtype,
        dims: Vec::new(),
        bytes,
    }
}

/// A tensor of `dtype` and shape `dims` from f64 values (converted per element).
pub fn tensor_data(dtype: DType, dims: Vec<usize>, v: &[f64]) -> TensorData {
    let mut bytes = Vec::with_capacity(v.len() * dtype.size());
    for &x in v {
        bytes.extend(scalar_data(dtype, x).bytes);
    }
    TensorData { dtype, dims, bytes }
}
