//! What an op importer sees of one ONNX node: its attributes, its inputs' types, shapes and
//! (when constant) values, and helpers that turn problems into errors naming the node.

use ge_runtime::format::DType;

use super::proto::{AttributeProto, NodeProto, TensorProto};
use crate::error::CompileError;
use crate::ir::Op;
use crate::tensor::TensorData;

/// One input of the node being imported.
#[derive(Clone, Copy, Debug)]
pub struct InputInfo<'a> {
    pub dtype: DType,
    pub shape: &'a [usize],
    /// The value, when the input is a constant (initializer or folded).
    pub data: Option<&'a TensorData>,
}

/// What an importer produces for a node.
#[allow(clippy::large_enum_variant)] // short-lived: one per node at import
#[derive(Debug)]
pub enum Imported {
    /// A kernel op reading the node inputs at `inputs` (indices into the ONNX inputs), with
    /// the outputs' dtypes and shapes.
    Op {
        op: Op,
        inputs: Vec<usize>,
        outputs: Vec<(DType, Vec<usize>)>,
        /// Constants that replace the node's inputs at these kernel-input positions (e.g. a
        /// legacy-broadcast operand reshaped at import).
        overrides: Vec<(usize, TensorData)>,
    },
    /// The node's outputs are known constants (Constant, Shape, ConstantOfShape, …).
    Constants(Vec<TensorData>),
    /// The node expands into these nodes (a decomposition into simpler ops, like an ONNX
    /// function body), reading these extra constants; together they define the node's
    /// outputs under its output names.
    Nodes {
        nodes: Vec<NodeProto>,
        consts: Vec<(String, TensorData)>,
    },
}

impl Imported {
    /// A kernel op with one output, reading the given inputs.
    pub fn one(op: Op, inputs: Vec<usize>, dtype: DType, shape: Vec<usize>) -> Imported {
        Imported::Op {
            op,
            inputs,
            outputs: vec![(dtype, shape)],
            overrides: Vec::new(),
        }
    }
}

/// The node being imported.
pub struct NodeCtx<'a> {
    pub node: &'a NodeProto,
    pub opset: i64,
    /// Whose arithmetic the int8 ops follow (`--int8-rounding`).
    pub int8_rounding: crate::Int8Rounding,
    /// The largest tensor the compile may hold (`--max-tensor-bytes`): importers that build
    /// a constant check it before allocating one.
    pub max_tensor_bytes: Option<u64>,
    /// The largest value constant folding computes (`--max-fold-bytes`): importers whose
    /// constant would be larger import a task instead.
    pub max_fold_bytes: Option<u64>,
    pub inputs: Vec<Option<InputInfo<'a>>>,
}

impl<'a> NodeCtx<'a> {
    /// The node's name (or its first output's, when unnamed).
    pub fn name(&self) -> &str {
        let n = self.node.name();
        if n.is_empty() {
            self.node.output.first().map_or("", String::as_str)
        } else {
            n
        }
    }

    /// The op type, qualified by its domain outside the default one
    /// (`com.microsoft:FusedMatMul`), so an error says which op set the node is from.
    pub fn op_type(&self) -> String {
        match self.node.domain() {
            "" | "ai.onnx" => self.node.op_type().to_string(),
            d => format!("{d}:{}", self.node.op_type()),
        }
    }

    /// An error about this node.
    pub fn err(&self, reason: impl Into<String>) -> CompileError {
        CompileError::Node {
            node: self.name().to_string(),
            op_type: self.op_type(),
            opset: self.opset,
            reason: reason.into(),
        }
    }

    /// An "unsupported" error about this node.
    pub fn unsupported(&self, reason: impl Into<String>) -> CompileError {
        CompileError::Unsupported {
            node: self.name().to_string(),
            op_type: self.op_type(),
            opset: self.opset,
            reason: reason.into(),
        }
    }

    fn attr(&self, name: &str) -> Option<&'a AttributeProto> {
        self.node.attribute.iter().find(|a| a.name() == name)
    }

    /// True when the attribute is present.
    pub fn has_attr(&self, name: &str) -> bool {
        self.attr(name).is_some()
    }

    /// An integer attribute.
    pub fn attr_i(&self, name: &str) -> Option<i64> {
        self.attr(name).and_then(|a| a.i)
    }

    /// An integer attribute with a default.
    pub fn attr_i_or(&self, name: &str, default: i64) -> i64 {
        self.attr_i(name).unwrap_or(default)
    }

    /// A float attribute with a default.
    pub fn attr_f_or(&self, name: &str, default: f32) -> f32 {
        self.attr(name).and_then(|a| a.f).unwrap_or(default)
    }

    /// A float attribute.
    pub fn attr_f(&self, name: &str) -> Option<f32> {
        self.attr(name).and_then(|a| a.f)
    }

    /// An integer-list attribute.
    pub fn attr_ints(&self, name: &str) -> Option<Vec<i64>> {
        self.attr(name).map(|a| a.ints.clone())
    }

    /// A float-list attribute.
    pub fn attr_floats(&self, name: &str) -> Option<Vec<f32>> {
        self.attr(name).map(|a| a.floats.clone())
    }

    /// A string attribute.
    pub fn attr_s(&self, name: &str) -> Option<String> {
        self.attr(name)
            .and_then(|a| a.s.as_ref())
            .map(|s| String::from_utf8_lossy(s).into_owned())
    }

    /// A string-list attribute.
    pub fn attr_strs(&self, name: &str) -> Option<Vec<String>> {
        self.attr(name).map(|a| {
            a.strings
                .iter()
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
    }

    /// A string attribute with a default.
    pub fn attr_s_or(&self, name: &str, default: &str) -> String {
        self.attr_s(name).unwrap_or_else(|| default.to_string())
    }

    /// A tensor attribute.
    pub fn attr_t(&self, name: &str) -> Option<&'a TensorProto> {
        self.attr(name).and_then(|a| a.t.as_ref())
    }

    /// Number of input slots (including absent optional ones).
    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// Input `i` if present.
    pub fn input_opt(&self, i: usize) -> Option<InputInfo<'a>> {
        self.inputs.get(i).copied().flatten()
    }

    /// Input `i`, which must be present.
    pub fn input(&self, i: usize) -> Result<InputInfo<'a>, CompileError> {
        self.input_opt(i)
            .ok_or_else(|| self.err(format!("input {i} is required but missing")))
    }

    /// The constant value of input `i` (None when absent); error when it is not constant.
    pub fn const_input(
        &self,
        i: usize,
        what: &str,
    ) -> Result<Option<&'a TensorData>, CompileError> {
        match self.input_opt(i) {
            None => Ok(None),
            Some(InputInfo { data: Some(d), .. }) => Ok(Some(d)),
            Some(_) => Err(self.unsupported(format!(
                "input {i} ({what}) must be a constant (an initializer or computable from constants): \
                 ge compiles static shapes; fix the input shape with --input-shape or fold it before export"
            ))),
        }
    }

    /// Constant input `i` as integers (None when absent).
    pub fn const_ints(&self, i: usize, what: &str) -> Result<Option<Vec<i64>>, CompileError> {
        match self.const_input(i, what)? {
            None => Ok(None),
            Some(d) => d
                .to_i64_vec()
                .map(Some)
                .map_err(|e| self.err(format!("input {i} ({what}): {e}"))),
        }
    }

    /// Constant input `i` as floats (None when absent).
    pub fn const_floats(&self, i: usize, what: &str) -> Result<Option<Vec<f64>>, CompileError> {
        match self.const_input(i, what)? {
            None => Ok(None),
            Some(d) => d
                .to_f64_vec()
                .map(Some)
                .map_err(|e| self.err(format!("input {i} ({what}): {e}"))),
        }
    }

    /// Normalizes a possibly negative axis against `rank`: the result indexes the shape, so
    /// a scalar (rank 0) has no axis.
    pub fn axis(&self, axis: i64, rank: usize) -> Result<usize, CompileError> {
        let r = rank as i64;
        let a = if axis < 0 {
            axis.saturating_add(r)
        } else {
            axis
        };
        if a < 0 || a >= r {
            return Err(self.err(format!("axis {axis} is out of range for rank {rank}")));
        }
        Ok(a as usize)
    }

    /// [`NodeCtx::axis`], but a scalar accepts axis 0 (ops defined on scalars).
    pub fn axis_or_scalar(&self, axis: i64, rank: usize) -> Result<usize, CompileError> {
        if rank == 0 && axis == 0 {
            return Ok(0);
        }
        self.axis(axis, rank)
    }
}
