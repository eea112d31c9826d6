//! The structured fuzzer (issue 59 item 2): valid-but-hostile ONNX graphs built from ge's op
//! registry and the onnx package's operator schemas (`corpus/op_schemas/schemas.json`,
//! written by `tools/gen_op_schemas.py`), compiled with small limits and, when they compile,
//! loaded and run. Every op ge imports is drawn, at an opset both define, with its inputs as
//! the schema declares them (single, optional, variadic; an allowed element type) and its
//! attributes drawn from edge cases: shapes and values 0, 1, −1, huge, 2^31 ± 1, overflowing
//! products, NaN and ±Inf constants, empty tensors. A compile or run error is fine; a panic,
//! abort, hang or out-of-memory is a bug.
//!
//! The choices come from a [`Choices`] stream: a fuzzer's input bytes (the cargo-fuzz target
//! `fuzz/fuzz_targets/structured.rs`), or a seed (the bounded CI test
//! `tests/tests/structured_fuzz.rs`, whose failures name the seed that rebuilds the graph).

use std::sync::OnceLock;

use ge_build::onnx::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto, attribute_proto::AttributeType,
    tensor_shape_proto, type_proto,
};
use ge_build::{CompileOptions, OptLevel, compile_bytes};
use prost::Message;

use crate::fuzz::{FUZZ_LIMITS, load_and_run};

/// One operator schema (one `since_version`) as `tools/gen_op_schemas.py` writes it.
#[derive(Clone, Debug)]
pub struct Schema {
    pub domain: String,
    pub op: String,
    pub since: i64,
    pub inputs: Vec<Input>,
    pub outputs: usize,
    pub attributes: Vec<Attribute>,
}

/// A formal input: how many it takes and which element types it allows.
#[derive(Clone, Debug)]
pub struct Input {
    pub option: String,
    pub types: Vec<String>,
}

/// An attribute's name, type (`INT`, `INTS`, `FLOAT`, …) and whether it is required.
#[derive(Clone, Debug)]
pub struct Attribute {
    pub name: String,
    pub ty: String,
    pub required: bool,
}

/// The schemas of the ops ge imports, with the opsets to draw for each.
pub struct Catalog {
    /// (schema, lowest opset, highest opset) with ge's importer and this schema both
    /// defined on the range.
    pub entries: Vec<(Schema, i64, i64)>,
}

/// The schema file the corpus generator writes.
pub fn schema_path() -> std::path::PathBuf {
    crate::corpus("op_schemas").join("schemas.json")
}

impl Catalog {
    /// Parses the schema file and keeps the schemas of ops ge's registry imports.
    pub fn load(json: &str) -> Result<Catalog, String> {
        let v: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        let list = v["schemas"].as_array().ok_or("no schemas")?;
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        let mut all: Vec<Schema> = list
            .iter()
            .map(|s| Schema {
                domain: text(&s["domain"]),
                op: text(&s["op"]),
                since: s["since"].as_i64().unwrap_or(1),
                inputs: s["inputs"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|i| Input {
                                option: text(&i["option"]),
                                types: i["types"]
                                    .as_array()
                                    .map(|t| t.iter().map(text).collect())
                                    .unwrap_or_default(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                outputs: s["outputs"].as_u64().unwrap_or(1) as usize,
                attributes: s["attributes"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|x| Attribute {
                                name: text(&x["name"]),
                                ty: text(&x["type"]),
                                required: x["required"].as_bool().unwrap_or(false),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        all.sort_by(|a, b| (&a.domain, &a.op, a.since).cmp(&(&b.domain, &b.op, b.since)));
        let mut entries = Vec::new();
        for (i, s) in all.iter().enumerate() {
            let domain = if s.domain.is_empty() {
                ""
            } else {
                s.domain.as_str()
            };
            let Some(e) = ge_build::onnx::registry::lookup(domain, &s.op) else {
                continue;
            };
            // This schema holds from its since to the next version's since − 1.
            let next = all
                .get(i + 1)
                .filter(|n| n.op == s.op && n.domain == s.domain)
                .map_or(i64::MAX, |n| n.since - 1);
            let max = if domain.is_empty() {
                ge_build::onnx::registry::MAX_OPSET
            } else {
                5
            };
            let lo = s
                .since
                .max(e.since)
                .max(if domain.is_empty() { 7 } else { 1 });
            let hi = next.min(e.until).min(max);
            if lo <= hi {
                entries.push((s.clone(), lo, hi));
            }
        }
        if entries.is_empty() {
            return Err("no schema of an op ge imports".into());
        }
        Ok(Catalog { entries })
    }

    /// The catalog of the corpus's schema file, loaded once per process.
    pub fn shared() -> Result<&'static Catalog, String> {
        static C: OnceLock<Result<Catalog, String>> = OnceLock::new();
        C.get_or_init(|| {
            let p = schema_path();
            let json = std::fs::read_to_string(&p).map_err(|e| {
                format!(
                    "{}: {e} (python3 tools/gen_corpus.py writes it)",
                    p.display()
                )
            })?;
            Catalog::load(&json)
        })
        .as_ref()
        .map_err(Clone::clone)
    }
}

/// The stream of choices a graph is built from: the fuzzer's bytes, then a xorshift
/// generator seeded from them (so a short input still builds a whole graph).
pub struct Choices<'a> {
    data: &'a [u8],
    pos: usize,
    rng: u64,
}

impl<'a> Choices<'a> {
    /// Choices read from `data`.
    pub fn bytes(data: &'a [u8]) -> Choices<'a> {
        let seed = data.iter().fold(0x9e37_79b9_7f4a_7c15u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        Choices {
            data,
            pos: 0,
            rng: seed | 1,
        }
    }

    /// Choices of seed `seed` alone.
    pub fn seed(seed: u64) -> Choices<'static> {
        Choices {
            data: &[],
            pos: 0,
            rng: seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1,
        }
    }

    fn next(&mut self) -> u32 {
        if self.pos + 4 <= self.data.len() {
            let b = &self.data[self.pos..self.pos + 4];
            self.pos += 4;
            return u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 32) as u32
    }

    /// A number in `0..n` (0 for `n` 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { self.next() as usize % n }
    }

    /// True one time in `n`.
    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn pick<'b, T>(&mut self, v: &'b [T]) -> &'b T {
        &v[self.below(v.len())]
    }
}

/// Dimensions: mostly small, sometimes empty, sometimes hostile.
const SMALL_DIMS: [usize; 8] = [1, 1, 2, 3, 4, 5, 8, 16];
const HOSTILE_DIMS: [usize; 7] = [
    0,
    65_536,
    (1 << 31) - 1,
    (1 << 31) + 1,
    1 << 40,
    3_000_000,
    1 << 62,
];
/// Integer attribute and constant values.
const INTS: [i64; 16] = [
    0,
    1,
    -1,
    2,
    3,
    4,
    -2,
    7,
    16,
    100_000,
    (1 << 31) - 1,
    (1 << 31) + 1,
    -(1 << 31),
    i64::MAX,
    i64::MIN,
    1 << 40,
];
/// Float attribute and constant values.
const FLOATS: [f32; 12] = [
    0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    1e-7,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    3.4e38,
    -0.0,
    1e-45,
];
/// Strings attributes take (valid for some op, hostile for the rest).
const STRINGS: [&str; 20] = [
    "",
    "constant",
    "nearest",
    "linear",
    "cubic",
    "NOTSET",
    "SAME_UPPER",
    "SAME_LOWER",
    "VALID",
    "reflect",
    "edge",
    "half_pixel",
    "asymmetric",
    "align_corners",
    "floor",
    "DCR",
    "CRD",
    "max",
    "tanh",
    "\u{0}\u{ff}",
];

/// The ONNX element type number of a schema type name, for those the fuzzer makes.
fn elem_type(name: &str) -> Option<i32> {
    Some(match name {
        "float" => 1,
        "uint8" => 2,
        "int8" => 3,
        "int32" => 6,
        "int64" => 7,
        "bool" => 9,
        "float16" => 10,
        "double" => 11,
        _ => return None,
    })
}

/// Bytes per element of `elem`.
fn elem_size(elem: i32) -> usize {
    match elem {
        2 | 3 | 9 => 1,
        10 => 2,
        1 | 6 => 4,
        _ => 8,
    }
}

fn shape(c: &mut Choices<'_>) -> Vec<usize> {
    let rank = *c.pick(&[0usize, 1, 1, 2, 2, 3, 4, 4, 5]);
    (0..rank)
        .map(|_| {
            if c.one_in(12) {
                *c.pick(&HOSTILE_DIMS)
            } else {
                *c.pick(&SMALL_DIMS)
            }
        })
        .collect()
}

/// A constant's bytes: `n` values of `elem` drawn from the edge cases.
fn values(c: &mut Choices<'_>, elem: i32, n: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(n * elem_size(elem));
    for _ in 0..n {
        let i = *c.pick(&INTS);
        let f = *c.pick(&FLOATS);
        match elem {
            1 => b.extend_from_slice(&f.to_le_bytes()),
            11 => b.extend_from_slice(&f64::from(f).to_le_bytes()),
            10 => b.extend_from_slice(&half::f16::from_f32(f).to_le_bytes()),
            2 | 3 => b.push(i as u8),
            9 => b.push(u8::from(i & 1 == 1)),
            6 => b.extend_from_slice(&(i as i32).to_le_bytes()),
            _ => b.extend_from_slice(&i.to_le_bytes()),
        }
    }
    b
}

fn value_info(name: &str, elem: Option<i32>, dims: Option<&[usize]>) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.into()),
        r#type: elem.map(|elem| TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(elem),
                shape: dims.map(|d| TensorShapeProto {
                    dim: d
                        .iter()
                        .map(|&x| tensor_shape_proto::Dimension {
                            value: Some(tensor_shape_proto::dimension::Value::DimValue(
                                i64::try_from(x).unwrap_or(i64::MAX),
                            )),
                            denotation: None,
                        })
                        .collect(),
                }),
            })),
            denotation: None,
        }),
        ..Default::default()
    }
}

fn attribute(c: &mut Choices<'_>, a: &Attribute) -> Option<AttributeProto> {
    let mut p = AttributeProto {
        name: Some(a.name.clone()),
        ..Default::default()
    };
    let list = |c: &mut Choices<'_>| c.below(6);
    match a.ty.as_str() {
        "INT" => {
            p.i = Some(*c.pick(&INTS));
            p.r#type = Some(AttributeType::Int as i32);
        }
        "INTS" => {
            p.ints = (0..list(c)).map(|_| *c.pick(&INTS)).collect();
            p.r#type = Some(AttributeType::Ints as i32);
        }
        "FLOAT" => {
            p.f = Some(*c.pick(&FLOATS));
            p.r#type = Some(AttributeType::Float as i32);
        }
        "FLOATS" => {
            p.floats = (0..list(c)).map(|_| *c.pick(&FLOATS)).collect();
            p.r#type = Some(AttributeType::Floats as i32);
        }
        "STRING" => {
            p.s = Some(c.pick(&STRINGS).as_bytes().to_vec());
            p.r#type = Some(AttributeType::String as i32);
        }
        "STRINGS" => {
            p.strings = (0..list(c))
                .map(|_| c.pick(&STRINGS).as_bytes().to_vec())
                .collect();
            p.r#type = Some(AttributeType::Strings as i32);
        }
        "TENSOR" => {
            let elem = *c.pick(&[1, 7, 6, 3, 9]);
            let dims = if c.one_in(3) {
                vec![]
            } else {
                vec![c.below(3)]
            };
            let n = dims.iter().product();
            p.t = Some(TensorProto {
                dims: dims.iter().map(|&d| d as i64).collect(),
                data_type: Some(elem),
                raw_data: Some(values(c, elem, n)),
                ..Default::default()
            });
            p.r#type = Some(AttributeType::Tensor as i32);
        }
        _ => return None,
    }
    Some(p)
}

/// Builds one graph of one to three nodes from `c`: each an op of `cat` at an opset it
/// holds (the graph's opset is the first node's), its inputs graph inputs of hostile
/// shapes or small constants of edge values (or the previous node's output), its
/// attributes from the edge cases. Returns the encoded model and a one-line description.
pub fn build(cat: &Catalog, c: &mut Choices<'_>) -> (Vec<u8>, String) {
    let (first, lo, hi) = c.pick(&cat.entries).clone();
    let opset = lo + c.below((hi - lo + 1) as usize) as i64;
    let mut g = GraphProto {
        name: Some("structured".into()),
        ..Default::default()
    };
    let mut desc = Vec::new();
    let mut prev: Option<String> = None;
    let nodes = 1 + c.below(3);
    for k in 0..nodes {
        let schema = if k == 0 {
            first.clone()
        } else {
            // A later node: any op whose schema holds at the graph's opset (same domain).
            let fits: Vec<&(Schema, i64, i64)> = cat
                .entries
                .iter()
                .filter(|(s, l, h)| s.domain == first.domain && *l <= opset && opset <= *h)
                .collect();
            if fits.is_empty() {
                break;
            }
            fits[c.below(fits.len())].0.clone()
        };
        let mut inputs = Vec::new();
        for (j, inp) in schema.inputs.iter().enumerate() {
            let count = match inp.option.as_str() {
                "optional" if c.one_in(2) => {
                    inputs.push(String::new());
                    continue;
                }
                "variadic" => 1 + c.below(3),
                _ => 1,
            };
            let types: Vec<i32> = inp.types.iter().filter_map(|t| elem_type(t)).collect();
            let Some(&elem) = types.get(c.below(types.len())) else {
                inputs.push(String::new());
                continue;
            };
            for v in 0..count {
                if j == 0
                    && v == 0
                    && let Some(p) = prev.take()
                {
                    inputs.push(p);
                    continue;
                }
                let name = format!("n{k}_i{j}_{v}");
                let dims = shape(c);
                let numel = dims
                    .iter()
                    .try_fold(1usize, |a, &d| a.checked_mul(d))
                    .unwrap_or(usize::MAX);
                if numel <= 64 && !c.one_in(3) {
                    g.initializer.push(TensorProto {
                        name: Some(name.clone()),
                        dims: dims.iter().map(|&d| d as i64).collect(),
                        data_type: Some(elem),
                        raw_data: Some(values(c, elem, numel)),
                        ..Default::default()
                    });
                } else {
                    g.input.push(value_info(&name, Some(elem), Some(&dims)));
                }
                inputs.push(name);
            }
        }
        let mut attribute = Vec::new();
        for a in &schema.attributes {
            if (a.required || c.one_in(2))
                && let Some(p) = self::attribute(c, a)
            {
                attribute.push(p);
            }
        }
        let outputs: Vec<String> = (0..schema.outputs.max(1))
            .map(|o| format!("n{k}_o{o}"))
            .collect();
        desc.push(format!(
            "{}{}",
            schema.op,
            if k == 0 {
                format!("@{opset}")
            } else {
                String::new()
            }
        ));
        prev = outputs.first().cloned();
        g.node.push(NodeProto {
            input: inputs,
            output: outputs.clone(),
            name: Some(format!("n{k}")),
            op_type: Some(schema.op.clone()),
            domain: (!schema.domain.is_empty()).then(|| schema.domain.clone()),
            attribute,
            ..Default::default()
        });
        if k + 1 == nodes {
            for o in &outputs {
                g.output.push(value_info(o, None, None));
            }
        }
    }
    let mut opset_import = vec![OperatorSetIdProto {
        domain: Some(first.domain.clone()),
        version: Some(opset),
    }];
    if !first.domain.is_empty() {
        opset_import.push(OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(ge_build::onnx::registry::MAX_OPSET),
        });
    }
    let m = ModelProto {
        ir_version: Some(8),
        opset_import,
        producer_name: Some("ge-structured-fuzz".into()),
        graph: Some(g),
        ..Default::default()
    };
    (m.encode_to_vec(), desc.join(" → "))
}

/// Most simulated operations (vector ops plus multiply-accumulates) of a graph the fuzzer
/// runs after compiling it.
pub const MAX_RUN_WORK: u64 = 200_000_000;

/// What one graph did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Refused by the compiler with an error.
    Refused,
    /// Compiled, then loaded and run (or refused by the loader or session).
    Compiled,
}

/// Compiles the graph `c` builds and runs it ([`run_model`] on the rest of `c`). Panics
/// (the fuzzer's crash) only where ge has a bug.
pub fn compile_and_run(cat: &Catalog, c: &mut Choices<'_>) -> Outcome {
    let (model, _) = build(cat, c);
    run_model(&model, c)
}

/// Compiles `model` (at an opt level from `c`) with the fuzz limits and, when it compiles,
/// loads and runs it on zero inputs.
pub fn run_model(model: &[u8], c: &mut Choices<'_>) -> Outcome {
    let opt_level = *c.pick(&[OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3]);
    let mut limits: ge_build::Limits = FUZZ_LIMITS.into();
    let _ = limits.set("max_fold_bytes", "4M");
    let opts = CompileOptions {
        opt_level,
        limits,
        ..CompileOptions::default()
    };
    match compile_bytes(model, None, &opts) {
        Ok(compiled) => {
            // Run it unless the simulator predicts more work than a fuzz case affords (a
            // legal LRN over 65,536 channels is 10^11 operations): that is its cost, not a
            // hang.
            let blob = ge_runtime::AlignedBlob::from_bytes(&compiled.blob);
            let work = ge_runtime::Model::from_bytes(blob.as_bytes())
                .map(|m| {
                    let r = ge_sim::SimDevice::default().predict(&m);
                    r.vector_ops.saturating_add(r.cube_macs)
                })
                .unwrap_or(0);
            if work <= MAX_RUN_WORK {
                load_and_run(&compiled.blob);
            }
            Outcome::Compiled
        }
        Err(_) => Outcome::Refused,
    }
}
