//! The build.rs helper, in the style of `prost-build` / `tonic-build`: compile models into
//! `OUT_DIR` with typed bindings to `include!`.
//!
//! ```no_run
//! // build.rs (in `fn main`)
//! ge_build::Builder::new()
//!     .input_shape("x", [1, 1, 8, 8])
//!     .model("models/digits.onnx")
//!     .compile()
//!     .unwrap_or_else(|e| panic!("{e}"));
//! ```
//!
//! ```ignore
//! // src/main.rs: the bindings of every model, one module each (`digits::Digits`, …)
//! include!(concat!(env!("OUT_DIR"), "/ge_models.rs"));
//! ```
//!
//! For each model, `OUT_DIR` gets `<module>.om` (the blob the bindings embed) and
//! `<module>.report.json` (the compile report, as `ge compile --report` writes it). Cargo is
//! told to rerun the script when a model (or a profile / fusion switch file) changes, and
//! notable findings ([`crate::codegen::findings`]) become `cargo:warning=` lines.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::codegen::{self, Bindings, Interface};
use crate::error::CompileError;
use crate::options::{CompileOptions, OptLevel, Precision};
use crate::report::Report;

/// Why a build-script compile failed; names the model.
#[derive(Debug)]
pub struct BuildError {
    /// The model concerned, if any.
    pub model: Option<PathBuf>,
    pub source: CompileError,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.model {
            Some(m) => write!(f, "ge: {}: {}", m.display(), self.source),
            None => write!(f, "ge: {}", self.source),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// One model a [`Builder`] compiled.
#[derive(Clone, Debug)]
pub struct BuiltModel {
    /// The model file as given.
    pub path: PathBuf,
    /// Module and type names in the bindings.
    pub module: String,
    pub type_name: String,
    pub blob_path: PathBuf,
    pub report_path: PathBuf,
    pub report: Report,
    pub interface: Interface,
    /// What was printed as `cargo:warning=`.
    pub findings: Vec<String>,
}

/// Compiles ONNX models from a build script. Options apply to every model of the builder;
/// use one builder per option set (with distinct [`Builder::bindings_file`] names).
#[derive(Clone, Debug)]
pub struct Builder {
    models: Vec<(Option<String>, PathBuf)>,
    options: CompileOptions,
    input_values: Vec<(String, PathBuf)>,
    device: Option<String>,
    max_cores: u32,
    host_dispatch: bool,
    vis: String,
    crate_path: String,
    out_dir: Option<PathBuf>,
    bindings_file: String,
    cargo_output: bool,
    /// An invalid option combination, reported by [`Builder::compile`].
    option_error: Option<String>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// Default options (O2, fp32, the `edge` device), public modules named after the model
    /// files, bindings in `$OUT_DIR/ge_models.rs` naming items through `::ge`.
    pub fn new() -> Builder {
        Builder {
            models: Vec::new(),
            options: CompileOptions::default(),
            input_values: Vec::new(),
            device: None,
            max_cores: 0,
            host_dispatch: false,
            vis: "pub".into(),
            crate_path: "::ge".into(),
            out_dir: None,
            bindings_file: "ge_models.rs".into(),
            cargo_output: true,
            option_error: None,
        }
    }

    /// Adds a model (relative paths are taken from `CARGO_MANIFEST_DIR`); its module and
    /// type are named after the file (`resnet50.onnx` → `resnet50::Resnet50`).
    pub fn model(mut self, path: impl AsRef<Path>) -> Self {
        self.models.push((None, path.as_ref().to_path_buf()));
        self
    }

    /// Adds a model under a type name (`"Digits"` → `digits::Digits`).
    pub fn model_as(mut self, name: &str, path: impl AsRef<Path>) -> Self {
        self.models
            .push((Some(name.to_string()), path.as_ref().to_path_buf()));
        self
    }

    /// Fixes an input's shape (symbolic dims), like `--input-shape NAME:D1,D2,…`.
    pub fn input_shape(mut self, name: &str, dims: impl Into<Vec<usize>>) -> Self {
        self.options
            .input_shapes
            .insert(name.to_string(), dims.into());
        self
    }

    /// `--input-value NAME=FILE`: freezes a graph input to the tensor in `file` (`.npy`, or
    /// a `TensorProto` `.pb`; relative to `CARGO_MANIFEST_DIR`); the compiled model no
    /// longer takes that input.
    pub fn input_value(mut self, name: &str, file: impl AsRef<Path>) -> Self {
        self.input_values
            .push((name.to_string(), file.as_ref().to_path_buf()));
        self
    }

    /// `--input-shape NAME:-1,…`: an input shape where `None` marks a dim the gears set
    /// (even one the model file fixes).
    pub fn gear_input(mut self, name: &str, dims: impl Into<Vec<Option<usize>>>) -> Self {
        self.options
            .gear_inputs
            .insert(name.to_string(), dims.into());
        self
    }

    /// `--dynamic-batch 1,2,4,8`: one gear per batch size (dim 0 of every input whose dim 0
    /// is symbolic). Gear kinds are mutually exclusive.
    pub fn dynamic_batch(self, batches: impl Into<Vec<usize>>) -> Self {
        self.gears(crate::GearSpec::Batch(batches.into()))
    }

    /// `--dynamic-image-size "H,W;H,W"`: one gear per `[H, W]`.
    pub fn dynamic_image_size(self, sizes: impl Into<Vec<[usize; 2]>>) -> Self {
        self.gears(crate::GearSpec::ImageSize(sizes.into()))
    }

    /// `--dynamic-dims "NAME:D1,D2;NAME:D1,D2"`.
    pub fn dynamic_dims(self, spec: &str) -> Self {
        match crate::GearSpec::parse_dims(spec) {
            Ok(g) => self.gears(g),
            Err(e) => self.refuse(e),
        }
    }

    /// `--gear-pad batch|spatial`: which dims `Session::run` may zero-pad up to a gear.
    pub fn gear_pad(mut self, pad: crate::GearPad) -> Self {
        self.options.gear_pad = pad;
        self
    }

    fn gears(mut self, spec: crate::GearSpec) -> Self {
        match crate::gears::set_gears(&mut self.options.gears, spec) {
            Ok(()) => self,
            Err(e) => self.refuse(e),
        }
    }

    fn refuse(mut self, e: CompileError) -> Self {
        self.option_error.get_or_insert(match e {
            CompileError::Option(m) => m,
            e => e.to_string(),
        });
        self
    }

    /// `--opt-level`.
    pub fn opt_level(mut self, level: OptLevel) -> Self {
        self.options.opt_level = level;
        self
    }

    /// `--precision`.
    pub fn precision(mut self, precision: Precision) -> Self {
        self.options.precision = precision;
        self
    }

    /// `--int8-rounding onnx|tflite`: whose arithmetic int8 models follow (onnxruntime's by
    /// default; TFLite Micro's gives a model converted from TFLite its TFLM outputs).
    pub fn int8_rounding(mut self, rounding: crate::Int8Rounding) -> Self {
        self.options.int8_rounding = rounding;
        self
    }

    /// `--keep-dtype FILE`: nodes or op types kept in their original dtype (relative to
    /// `CARGO_MANIFEST_DIR`).
    pub fn keep_dtype(mut self, path: impl AsRef<Path>) -> Self {
        self.options.keep_dtype = Some(path.as_ref().to_path_buf());
        self
    }

    /// Quantizes the model before compiling it (post-training static quantization, as
    /// `ge quantize --calib DIR` does with its defaults: MinMax ranges, per-tensor weights,
    /// uint8 activations) on the samples in `calib_dir` (relative to the crate); the int8
    /// model is what compiles. [`Builder::quantize_with`] takes the other options.
    pub fn quantize(self, calib_dir: impl AsRef<Path>) -> Self {
        self.quantize_with(calib_dir, crate::quantize::QuantizeOptions::default())
    }

    /// [`Builder::quantize`] with `ge quantize`'s options (method, per-channel weights,
    /// symmetric activations, excluded nodes).
    pub fn quantize_with(
        mut self,
        calib_dir: impl AsRef<Path>,
        options: crate::quantize::QuantizeOptions,
    ) -> Self {
        self.options.quantize = Some(crate::QuantizeSpec {
            calib: calib_dir.as_ref().to_path_buf(),
            options,
        });
        self
    }

    /// `--modify-mixlist FILE.json`: edits to the mixed-precision op lists (relative to
    /// `CARGO_MANIFEST_DIR`).
    pub fn modify_mixlist(mut self, path: impl AsRef<Path>) -> Self {
        self.options.modify_mixlist = Some(path.as_ref().to_path_buf());
        self
    }

    /// `--device`: `edge`, `datacenter`, `tiny`, or a JSON profile file (relative to
    /// `CARGO_MANIFEST_DIR`).
    pub fn device(mut self, device: &str) -> Self {
        self.device = Some(device.to_string());
        self
    }

    /// `--cores`: most AI cores a task may use (0 = all).
    pub fn cores(mut self, cores: u32) -> Self {
        self.max_cores = cores;
        self
    }

    /// `--host-dispatch`: one launch per task instead of sink mode.
    pub fn host_dispatch(mut self, on: bool) -> Self {
        self.host_dispatch = on;
        self
    }

    /// `--memory-reuse on|off`.
    pub fn memory_reuse(mut self, on: bool) -> Self {
        self.options.memory_reuse = on;
        self
    }

    /// `--fusion-switch FILE.json` (relative to `CARGO_MANIFEST_DIR`).
    pub fn fusion_switch(mut self, path: impl AsRef<Path>) -> Self {
        self.options.fusion_switch = Some(path.as_ref().to_path_buf());
        self
    }

    /// Resource limits (`--max-nodes`, `--max-tensor-bytes`, `--max-weight-bytes`,
    /// `--max-arena-bytes`): a model over one fails the build naming it.
    pub fn limits(mut self, limits: crate::Limits) -> Self {
        self.options.limits = limits;
        self
    }

    /// All compile options at once (replaces the ones set so far).
    pub fn options(mut self, options: CompileOptions) -> Self {
        self.options = options;
        self
    }

    /// Visibility of the generated modules (`"pub"` by default; `""` for private).
    pub fn visibility(mut self, vis: &str) -> Self {
        self.vis = vis.to_string();
        self
    }

    /// Path of the `ge` facade crate in the including crate (`::ge` by default).
    pub fn crate_path(mut self, path: &str) -> Self {
        self.crate_path = path.to_string();
        self
    }

    /// Output directory (default `$OUT_DIR`).
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Name of the bindings file in the output directory (default `ge_models.rs`).
    pub fn bindings_file(mut self, name: &str) -> Self {
        self.bindings_file = name.to_string();
        self
    }

    /// Whether to print `cargo:` lines (default on; off for use outside build scripts).
    pub fn cargo_output(mut self, on: bool) -> Self {
        self.cargo_output = on;
        self
    }

    /// Compiles `paths` (prost-build style); see [`Builder::compile`].
    pub fn compile_models<P: AsRef<Path>>(
        mut self,
        paths: &[P],
    ) -> Result<Vec<BuiltModel>, BuildError> {
        for p in paths {
            self = self.model(p);
        }
        self.compile()
    }

    /// Compiles every model and writes the blobs, reports and the bindings file.
    pub fn compile(self) -> Result<Vec<BuiltModel>, BuildError> {
        let err = |model: Option<&Path>, source: CompileError| BuildError {
            model: model.map(Path::to_path_buf),
            source,
        };
        if let Some(e) = &self.option_error {
            return Err(err(None, CompileError::Option(e.clone())));
        }
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or_else(|| {
                    err(
                        None,
                        CompileError::Option(
                            "OUT_DIR is not set: call Builder::compile from a build script, \
                         or set Builder::out_dir"
                                .into(),
                        ),
                    )
                })?,
        };
        let base = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        let mut options = self.options.clone();
        let mut rerun: Vec<PathBuf> = Vec::new();
        if let Some(spec) = &self.device {
            let d = codegen::resolve_device(spec, &base).map_err(|e| err(None, e))?;
            options.device = d.profile;
            rerun.extend(d.file);
        }
        for (name, file) in &self.input_values {
            let file = base.join(file);
            let t = crate::tensor::read_tensor_file(&file).map_err(|e| {
                err(
                    None,
                    CompileError::Option(format!("{}: {e}", file.display())),
                )
            })?;
            options.input_values.insert(name.clone(), t);
            rerun.push(file);
        }
        for f in [
            &mut options.fusion_switch,
            &mut options.keep_dtype,
            &mut options.modify_mixlist,
        ]
        .into_iter()
        .flatten()
        {
            *f = base.join(&*f);
            rerun.push(f.clone());
        }
        if let Some(q) = &mut options.quantize {
            q.calib = base.join(&q.calib);
            rerun.push(q.calib.clone());
        }
        std::fs::create_dir_all(&out_dir).map_err(|e| {
            err(
                None,
                CompileError::Io {
                    path: out_dir.clone(),
                    source: e,
                },
            )
        })?;

        let mut built: Vec<BuiltModel> = Vec::new();
        let mut sources = Vec::new();
        for (name, path) in &self.models {
            let full = base.join(path);
            rerun.push(full.clone());
            let name = match name {
                Some(n) => n.clone(),
                None => full
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("model")
                    .to_string(),
            };
            let mut b = Bindings::new(&name, PathBuf::new());
            if let Some(other) = built.iter().find(|m| m.module == b.module) {
                return Err(err(
                    Some(path),
                    CompileError::Option(format!(
                        "module `{}` is also the name of {}; use Builder::model_as",
                        b.module,
                        other.path.display()
                    )),
                ));
            }
            let compiled = crate::compile_file(&full, &options).map_err(|e| err(Some(path), e))?;
            let io = |e: std::io::Error, p: &Path| {
                err(
                    Some(path),
                    CompileError::Io {
                        path: p.to_path_buf(),
                        source: e,
                    },
                )
            };
            let blob_path = out_dir.join(format!("{}.om", b.module));
            std::fs::write(&blob_path, &compiled.blob).map_err(|e| io(e, &blob_path))?;
            let report_path = out_dir.join(format!("{}.report.json", b.module));
            let report_text = serde_json::to_string_pretty(&compiled.report)
                .map_err(|e| err(Some(path), CompileError::Model(e.to_string())))?;
            std::fs::write(&report_path, report_text).map_err(|e| io(e, &report_path))?;

            let interface = Interface::from_blob(&compiled.blob).map_err(|e| err(Some(path), e))?;
            b.blob_path = blob_path.clone();
            b.vis = self.vis.clone();
            b.crate_path = self.crate_path.clone();
            b.source = path.display().to_string();
            b.options = options.clone();
            b.max_cores = self.max_cores;
            b.host_dispatch = self.host_dispatch;
            b.notes = codegen::report_notes(&compiled.report);
            let tokens = codegen::generate(&interface, &b).map_err(|e| err(Some(path), e))?;
            sources.push(tokens);
            let findings = codegen::findings(&compiled.report, &b);
            built.push(BuiltModel {
                path: path.clone(),
                module: b.module,
                type_name: b.type_name,
                blob_path,
                report_path,
                report: compiled.report,
                interface,
                findings,
            });
        }

        let all = sources.into_iter().collect::<proc_macro2::TokenStream>();
        let text = format!(
            "// @generated by {} (ge_build::Builder) from {}. Do not edit.\n\n{}",
            crate::PRODUCER,
            built
                .iter()
                .map(|m| format!("`{}`", m.path.display()))
                .collect::<Vec<_>>()
                .join(", "),
            codegen::format(all).map_err(|e| err(None, e))?
        );
        let bindings = out_dir.join(&self.bindings_file);
        std::fs::write(&bindings, text).map_err(|e| {
            err(
                None,
                CompileError::Io {
                    path: bindings.clone(),
                    source: e,
                },
            )
        })?;

        if self.cargo_output {
            for p in &rerun {
                println!("cargo:rerun-if-changed={}", p.display());
            }
            for m in &built {
                for f in &m.findings {
                    println!("cargo:warning=ge: {}: {f}", m.path.display());
                }
            }
        }
        Ok(built)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/digits/models/digits.onnx")
    }

    #[test]
    fn writes_blob_report_and_bindings() {
        let out = std::env::temp_dir().join(format!("ge-builder-test-{}", std::process::id()));
        let built = Builder::new()
            .out_dir(&out)
            .cargo_output(false)
            .input_shape("x", [1, 1, 8, 8])
            .memory_reuse(false)
            .model(digits())
            .model_as("Other", digits())
            .compile()
            .unwrap();
        assert_eq!(built.len(), 2);
        assert_eq!(built[0].module, "digits");
        assert_eq!(built[1].type_name, "Other");
        assert!(built[0].findings[0].contains("memory reuse is off"));
        let src = std::fs::read_to_string(out.join("ge_models.rs")).unwrap();
        assert!(src.contains("pub mod digits {"));
        assert!(src.contains("pub mod other {"));
        assert!(out.join("digits.om").is_file());
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("digits.report.json")).unwrap())
                .unwrap();
        assert!(report["memory"]["arena_bytes"].as_u64().unwrap() > 0);
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn errors_name_the_model() {
        let out = std::env::temp_dir().join(format!("ge-builder-err-{}", std::process::id()));
        let e = Builder::new()
            .out_dir(&out)
            .cargo_output(false)
            .model(digits())
            .compile()
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("digits.onnx") && msg.contains("symbolic"),
            "{msg}"
        );
        let e = Builder::new()
            .out_dir(&out)
            .cargo_output(false)
            .model(digits())
            .model(digits())
            .input_shape("x", [1, 1, 8, 8])
            .compile()
            .unwrap_err();
        assert!(e.to_string().contains("model_as"), "{e}");
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn limits_refuse_a_model_naming_the_limit() {
        let out = std::env::temp_dir().join(format!("ge-builder-lim-{}", std::process::id()));
        let build = |limits: crate::Limits| {
            Builder::new()
                .out_dir(&out)
                .cargo_output(false)
                .input_shape("x", [1, 1, 8, 8])
                .limits(limits)
                .model(digits())
                .compile()
        };
        let mut l = crate::Limits::DEFAULT;
        l.set("max_nodes", "3").unwrap();
        let e = build(l).unwrap_err().to_string();
        assert!(
            e.contains("over the limit of 3") && e.contains("max-nodes"),
            "{e}"
        );
        let mut l = crate::Limits::DEFAULT;
        l.set("max-arena-bytes", "1K").unwrap();
        let e = build(l).unwrap_err().to_string();
        assert!(e.contains("max-arena-bytes"), "{e}");
        let mut l = crate::Limits::DEFAULT;
        l.set("max_tensor_bytes", "64").unwrap();
        assert!(build(l).is_err());
        assert!(build(crate::Limits::DEFAULT).is_ok());
        assert!(l.set("max_nodes", "0").is_err() && l.set("max_cats", "1").is_err());
        let _ = std::fs::remove_dir_all(&out);
    }
}
