//! A small ONNX model builder for tests: graphs written in Rust, encoded with our own prost
//! schema, with seeded random float weights (never all-zero).

use ge_build::onnx::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorShapeProto,
    TypeProto, ValueInfoProto, attribute_proto::AttributeType, tensor_shape_proto, type_proto,
};
use ge_build::tensor::{TensorData, encode_tensor};
use ge_runtime::format::DType;
use prost::Message;

/// An attribute value.
pub enum Attr {
    I(i64),
    F(f32),
    Is(Vec<i64>),
    S(&'static str),
    /// A tensor attribute (ConstantOfShape's `value`).
    T(TensorData),
}

/// Builds one graph.
pub struct ModelBuilder {
    graph: GraphProto,
    opset: i64,
    seed: u64,
}

fn value_info(name: &str, dtype: DType, shape: &[usize]) -> ValueInfoProto {
    let dims = shape
        .iter()
        .map(|&d| tensor_shape_proto::Dimension {
            value: Some(tensor_shape_proto::dimension::Value::DimValue(d as i64)),
            denotation: None,
        })
        .collect();
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(dtype as i32),
                shape: Some(TensorShapeProto { dim: dims }),
            })),
            denotation: None,
        }),
        ..Default::default()
    }
}

impl ModelBuilder {
    /// A new model importing the default domain at `opset`.
    pub fn new(opset: i64) -> Self {
        ModelBuilder {
            graph: GraphProto {
                name: Some("test".into()),
                ..Default::default()
            },
            opset,
            seed: 0x5eed,
        }
    }

    /// A float32 graph input.
    pub fn input(&mut self, name: &str, shape: &[usize]) -> &mut Self {
        self.graph.input.push(value_info(name, DType::F32, shape));
        self
    }

    /// A float32 graph output (shape as declared; ge infers its own).
    pub fn output(&mut self, name: &str, shape: &[usize]) -> &mut Self {
        self.graph.output.push(value_info(name, DType::F32, shape));
        self
    }

    fn next(&mut self) -> f32 {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        (self.seed >> 40) as f32 / (1u64 << 24) as f32
    }

    /// A float initializer of uniform values in `[lo, hi)`.
    pub fn weight(&mut self, name: &str, shape: &[usize], lo: f32, hi: f32) -> &mut Self {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|_| lo + (hi - lo) * self.next()).collect();
        self.constant(name, shape, &v)
    }

    /// A float initializer with the given values.
    pub fn constant(&mut self, name: &str, shape: &[usize], v: &[f32]) -> &mut Self {
        let d = TensorData {
            dtype: DType::F32,
            dims: shape.to_vec(),
            bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        };
        self.graph.initializer.push(encode_tensor(name, &d));
        self
    }

    /// An initializer holding `data` (any element type).
    pub fn tensor(&mut self, name: &str, data: TensorData) -> &mut Self {
        self.graph.initializer.push(encode_tensor(name, &data));
        self
    }

    /// An int64 initializer.
    pub fn ints(&mut self, name: &str, v: &[i64]) -> &mut Self {
        let d = TensorData {
            dtype: DType::I64,
            dims: vec![v.len()],
            bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        };
        self.graph.initializer.push(encode_tensor(name, &d));
        self
    }

    /// A scalar int64 initializer (a Gather index that drops the axis).
    pub fn scalar_int(&mut self, name: &str, v: i64) -> &mut Self {
        let d = TensorData {
            dtype: DType::I64,
            dims: vec![],
            bytes: v.to_le_bytes().to_vec(),
        };
        self.graph.initializer.push(encode_tensor(name, &d));
        self
    }

    /// A node.
    pub fn node(
        &mut self,
        op: &str,
        inputs: &[&str],
        outputs: &[&str],
        attrs: &[(&str, Attr)],
    ) -> &mut Self {
        let attribute = attrs
            .iter()
            .map(|(k, v)| {
                let mut a = AttributeProto {
                    name: Some((*k).into()),
                    ..Default::default()
                };
                match v {
                    Attr::I(i) => {
                        a.i = Some(*i);
                        a.r#type = Some(AttributeType::Int as i32);
                    }
                    Attr::F(f) => {
                        a.f = Some(*f);
                        a.r#type = Some(AttributeType::Float as i32);
                    }
                    Attr::Is(v) => {
                        a.ints = v.clone();
                        a.r#type = Some(AttributeType::Ints as i32);
                    }
                    Attr::S(s) => {
                        a.s = Some(s.as_bytes().to_vec());
                        a.r#type = Some(AttributeType::String as i32);
                    }
                    Attr::T(t) => {
                        a.t = Some(encode_tensor("value", t));
                        a.r#type = Some(AttributeType::Tensor as i32);
                    }
                }
                a
            })
            .collect();
        let name = format!("{op}_{}", self.graph.node.len());
        self.graph.node.push(NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            name: Some(name),
            op_type: Some(op.into()),
            attribute,
            ..Default::default()
        });
        self
    }

    /// Puts the last node added in `domain` (e.g. `com.microsoft`), imported at opset 1.
    pub fn in_domain(&mut self, domain: &str) -> &mut Self {
        if let Some(n) = self.graph.node.last_mut() {
            n.domain = Some(domain.into());
        }
        self
    }

    /// The encoded model.
    pub fn build(&self) -> Vec<u8> {
        let mut opset_import = vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(self.opset),
        }];
        let mut domains: Vec<&str> = self
            .graph
            .node
            .iter()
            .map(|n| n.domain())
            .filter(|d| !d.is_empty())
            .collect();
        domains.sort_unstable();
        domains.dedup();
        for d in domains {
            opset_import.push(OperatorSetIdProto {
                domain: Some(d.into()),
                version: Some(1),
            });
        }
        let m = ModelProto {
            ir_version: Some(8),
            opset_import,
            producer_name: Some("ge-tests".into()),
            graph: Some(self.graph.clone()),
            ..Default::default()
        };
        m.encode_to_vec()
    }
}
