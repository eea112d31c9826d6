//! From parsed arguments to the bindings module: options → cached compile (ge-build) →
//! codegen (ge-build). Every failure becomes a `compile_error!` at the offending argument.

use std::path::{Path, PathBuf};
use std::time::Instant;

use ge_build::codegen::{self, Bindings, cache::Cache};
use ge_build::{CompileError, CompileOptions, GearPad, GearSpec, OptLevel, Precision};
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

use crate::args::{Args, GearList, OptArg, Value};

/// Where the expansion happens.
pub struct Context {
    /// `CARGO_MANIFEST_DIR` of the crate invoking the macro.
    pub manifest_dir: PathBuf,
    pub cache: Cache,
    /// Print cache hits/misses and times to stderr (`GE_MACRO_TIMING=1`).
    pub timing: bool,
}

impl Context {
    /// The context of a real expansion, from the environment rustc gives proc macros.
    pub fn from_env() -> Context {
        let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        Context {
            cache: Cache::locate(&manifest_dir),
            manifest_dir,
            timing: std::env::var_os("GE_MACRO_TIMING").is_some_and(|v| v != "0"),
        }
    }
}

fn err(span: Span, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new(span, msg)
}

/// A compile error's message without the "invalid option: " prefix of option errors.
fn reason(e: CompileError) -> String {
    match e {
        CompileError::Option(m) => m,
        e => e.to_string(),
    }
}

/// Compile options with the span of each argument that set one, for diagnostics.
struct Settings {
    options: CompileOptions,
    cores: u32,
    host_dispatch: bool,
    crate_path: String,
    tracked: Vec<PathBuf>,
    precision_span: Option<Span>,
    opt_span: Option<Span>,
    fusion_span: Option<Span>,
    device_span: Option<Span>,
    shape_spans: Vec<(String, Span)>,
    gears_span: Option<Span>,
}

fn value(o: &OptArg) -> &Value {
    o.value.as_ref().expect("only input_shape has no value")
}

fn text(o: &OptArg, what: &str) -> syn::Result<String> {
    let v = value(o);
    v.text()
        .ok_or_else(|| err(v.span(), format!("`{}` takes {what}", o.key)))
}

fn boolean(o: &OptArg) -> syn::Result<bool> {
    match value(o) {
        Value::Lit(syn::Lit::Bool(b)) => Ok(b.value),
        Value::Lit(syn::Lit::Str(s)) if s.value() == "on" => Ok(true),
        Value::Lit(syn::Lit::Str(s)) if s.value() == "off" => Ok(false),
        v => Err(err(
            v.span(),
            format!("`{}` takes true or false (or \"on\" / \"off\")", o.key),
        )),
    }
}

fn settings(args: &Args, ctx: &Context) -> syn::Result<Settings> {
    let mut s = Settings {
        options: CompileOptions::default(),
        cores: 0,
        host_dispatch: false,
        crate_path: "::ge".into(),
        tracked: Vec::new(),
        precision_span: None,
        opt_span: None,
        fusion_span: None,
        device_span: None,
        shape_spans: Vec::new(),
        gears_span: None,
    };
    for o in &args.options {
        match o.key.to_string().as_str() {
            "opt_level" => {
                let v = value(o);
                let t = text(o, "0, 1, 2, 3 or \"O0\"..\"O3\"")?;
                s.options.opt_level = t
                    .parse::<OptLevel>()
                    .map_err(|e| err(v.span(), format!("bad `opt_level`: {}", reason(e))))?;
                s.opt_span = Some(v.span());
            }
            "precision" => {
                let v = value(o);
                let t = text(
                    o,
                    "a mode such as \"force_fp32\" or \"allow_mix_precision\"",
                )?;
                s.options.precision = t
                    .parse::<Precision>()
                    .map_err(|e| err(v.span(), format!("bad `precision`: {}", reason(e))))?;
                s.precision_span = Some(v.span());
            }
            "device" => {
                let v = value(o);
                let t = text(o, "edge, datacenter, tiny, cortex-m or a profile file path")?;
                let d = codegen::resolve_device(&t, &ctx.manifest_dir)
                    .map_err(|e| err(v.span(), format!("bad `device`: {}", reason(e))))?;
                s.options.device = d.profile;
                s.tracked.extend(d.file);
                s.device_span = Some(v.span());
            }
            "cores" => {
                let v = value(o);
                let n = match v {
                    Value::Lit(syn::Lit::Int(i)) => i.base10_parse::<u32>().ok(),
                    _ => None,
                };
                s.cores = n
                    .filter(|&n| n > 0)
                    .ok_or_else(|| err(v.span(), "`cores` takes a positive integer"))?;
            }
            key @ ("max_nodes" | "max_tensor_bytes" | "max_weight_bytes" | "max_arena_bytes"
            | "max_fold_bytes") => {
                let v = value(o);
                let t = text(
                    o,
                    "a positive integer (or a string with a K, M or G suffix)",
                )?;
                s.options
                    .limits
                    .set(key, &t)
                    .map_err(|e| err(v.span(), format!("bad `{key}`: {}", reason(e))))?;
            }
            "host_dispatch" => s.host_dispatch = boolean(o)?,
            "memory_reuse" => s.options.memory_reuse = boolean(o)?,
            "int8_rounding" => {
                let v = value(o);
                let t = text(o, "onnx or tflite")?;
                s.options.int8_rounding = ge_build::Int8Rounding::parse(&t).ok_or_else(|| {
                    err(
                        v.span(),
                        format!(
                            "bad `int8_rounding`: `{t}` is neither onnx (onnxruntime's \
                             arithmetic) nor tflite (TFLite Micro's)"
                        ),
                    )
                })?;
            }
            "quantize" => {
                let v = value(o);
                let t = text(o, "a calibration directory path")?;
                let p = ctx.manifest_dir.join(&t);
                if !p.is_dir() {
                    return Err(err(
                        v.span(),
                        format!(
                            "bad `quantize`: no directory `{t}` of calibration samples (paths \
                             are relative to the crate's directory, CARGO_MANIFEST_DIR)"
                        ),
                    ));
                }
                // Its files are tracked through the cache entry's dependencies.
                s.options.quantize = Some(ge_build::QuantizeSpec {
                    calib: p,
                    options: ge_build::quantize::QuantizeOptions::default(),
                });
            }
            "fusion_switch" => {
                let v = value(o);
                let t = text(o, "a JSON file path")?;
                let p = ctx.manifest_dir.join(&t);
                if !p.is_file() {
                    return Err(err(
                        v.span(),
                        format!(
                            "bad `fusion_switch`: no file `{t}` (paths are relative to the \
                             crate's directory, CARGO_MANIFEST_DIR)"
                        ),
                    ));
                }
                s.tracked.push(p.clone());
                s.options.fusion_switch = Some(p);
                s.fusion_span = Some(v.span());
            }
            "input_shape" => {
                for sh in &o.shapes {
                    if s.options.input_shapes.contains_key(&sh.name) {
                        return Err(err(
                            sh.span,
                            format!("input `{}` is given two shapes", sh.name),
                        ));
                    }
                    if s.options.gear_inputs.contains_key(&sh.name) {
                        return Err(err(
                            sh.span,
                            format!("input `{}` is given two shapes", sh.name),
                        ));
                    }
                    match sh.dims.iter().copied().collect::<Option<Vec<_>>>() {
                        Some(fixed) => s.options.input_shapes.insert(sh.name.clone(), fixed),
                        None => s.options.input_shapes.remove(&sh.name),
                    };
                    if sh.dims.contains(&None) {
                        s.options
                            .gear_inputs
                            .insert(sh.name.clone(), sh.dims.clone());
                    }
                    s.shape_spans.push((sh.name.clone(), sh.span));
                }
            }
            "gears" => {
                let g = o.gears.as_ref().expect("gears(…) parses into gears");
                let (list, span) = g.list.as_ref().ok_or_else(|| {
                    err(
                        o.key.span(),
                        "`gears` needs `batch = [B, …]`, `image_size = [[H, W], …]` or input \
                         dims (`x = [[D, …], …]`)",
                    )
                })?;
                s.options.gears = match list {
                    GearList::Batch(b) => GearSpec::Batch(b.clone()),
                    GearList::ImageSize(hw) => GearSpec::ImageSize(hw.clone()),
                    GearList::Dims(d) => {
                        GearSpec::dims(d.iter().map(|(n, _, v)| (n.clone(), v.clone())).collect())
                            .map_err(|why| err(*span, format!("bad `gears`: {why}")))?
                    }
                };
                if let GearList::Dims(d) = list {
                    s.shape_spans
                        .extend(d.iter().map(|(n, sp, _)| (n.clone(), *sp)));
                }
                if let Some((pad, sp)) = &g.pad {
                    s.options.gear_pad = pad.parse::<GearPad>().map_err(|_| {
                        err(*sp, format!("bad `pad`: '{pad}' is not batch or spatial"))
                    })?;
                }
                s.gears_span = Some(*span);
            }
            "input_value" => {
                for v in &o.values {
                    let file = v.file.value();
                    let path = ctx.manifest_dir.join(&file);
                    let t = ge_build::tensor::read_tensor_file(&path).map_err(|e| {
                        err(
                            v.file.span(),
                            format!(
                                "bad `input_value` for `{}`: {}: {e} (paths are relative to the \
                                 crate's directory, CARGO_MANIFEST_DIR)",
                                v.name,
                                path.display()
                            ),
                        )
                    })?;
                    if s.options.input_values.insert(v.name.clone(), t).is_some() {
                        return Err(err(
                            v.span,
                            format!("input `{}` is given two values", v.name),
                        ));
                    }
                    s.tracked.push(path);
                    s.shape_spans.push((v.name.clone(), v.span));
                }
            }
            "crate" => s.crate_path = value(o).to_token_stream_string(),
            other => return Err(err(o.key.span(), format!("unknown option `{other}`"))),
        }
    }
    if s.options.gears.is_empty()
        && let Some(name) = s.options.gear_inputs.keys().next()
    {
        let span = s
            .shape_spans
            .iter()
            .find(|(n, _)| n == name)
            .map_or_else(Span::call_site, |(_, sp)| *sp);
        return Err(err(
            span,
            format!("input `{name}` has -1 dims, which only gears set: add `gears(…)`"),
        ));
    }
    Ok(s)
}

trait PathString {
    fn to_token_stream_string(&self) -> String;
}

impl PathString for Value {
    fn to_token_stream_string(&self) -> String {
        match self {
            Value::Path(p) => p.to_token_stream().to_string().replace(' ', ""),
            Value::Ident(i) => i.to_string(),
            Value::Lit(l) => l.to_token_stream().to_string(),
        }
    }
}

/// Suggests the `input_shape(...)` argument for a symbolic-dimension error (whose reason
/// ends with the CLI form `--input-shape NAME:D1,D2,…`).
fn symbolic_hint(input: &str, reason: &str) -> Option<String> {
    let spec = reason.rsplit("--input-shape ").next()?;
    let (_, dims) = spec.rsplit_once(':')?;
    let dims: Vec<&str> = dims.split(',').map(str::trim).collect();
    let name = if input.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !input.starts_with(|c: char| c.is_ascii_digit())
    {
        input.to_string()
    } else {
        format!("{input:?}")
    };
    Some(format!(
        "add `input_shape({name} = [{}])` with numbers for the symbolic dims",
        dims.join(", ")
    ))
}

/// A compiler message in the macro's terms: the CLI's gear flags become `gears(…)` keys.
fn macro_terms(msg: &str) -> String {
    [
        ("--dynamic-batch", "gears(batch)"),
        ("--dynamic-image-size", "gears(image_size)"),
        ("--dynamic-dims", "gears(NAME = …)"),
        ("--gear-pad spatial", "gears(…, pad = spatial)"),
        ("--input-shape NAME:-1,...", "input_shape(NAME = [-1, …])"),
        ("--input-shape", "input_shape"),
    ]
    .iter()
    .fold(msg.to_string(), |m, (cli, mac)| m.replace(cli, mac))
}

/// Maps a compile error to a diagnostic at the argument responsible for it.
fn compile_error(e: CompileError, args: &Args, s: &Settings, model: &Path) -> syn::Error {
    let lit = args.path.value();
    let at_path = args.path.span();
    match e {
        CompileError::Io { path, source } if path == model => err(
            at_path,
            format!(
                "cannot read model `{lit}`: {source} (paths are relative to the crate's \
                 directory, CARGO_MANIFEST_DIR)"
            ),
        ),
        CompileError::Parse(msg) => {
            err(at_path, format!("`{lit}` is not a valid ONNX model: {msg}"))
        }
        CompileError::Input { input, reason } => {
            let span = s
                .shape_spans
                .iter()
                .find(|(n, _)| *n == input)
                .map_or(at_path, |(_, sp)| *sp);
            let mut msg = format!("`{lit}`: input '{input}': {}", macro_terms(&reason));
            if reason.contains("symbolic")
                && let Some(h) = symbolic_hint(&input, &reason)
            {
                msg = format!(
                    "`{lit}`: input '{input}' has symbolic dimensions; {h}\n(compiler: {reason})"
                );
            }
            err(span, msg)
        }
        CompileError::Option(msg) => {
            let m = msg.to_ascii_lowercase();
            let blame = if m.contains("--dynamic") || m.contains("gear") {
                s.gears_span.map(|sp| ("gears", sp))
            } else if m.contains("precision") {
                s.precision_span.map(|sp| ("precision", sp))
            } else if m.contains("fusion") {
                s.fusion_span.map(|sp| ("fusion_switch", sp))
            } else if m.contains("opt") && m.contains("level") {
                s.opt_span.map(|sp| ("opt_level", sp))
            } else if m.contains("device") || m.contains("profile") {
                s.device_span.map(|sp| ("device", sp))
            } else {
                None
            };
            match blame {
                Some((name, span)) => err(
                    span,
                    format!("bad `{name}` for `{lit}`: {}", macro_terms(&msg)),
                ),
                None => err(at_path, format!("`{lit}`: bad option: {msg}")),
            }
        }
        other => err(at_path, format!("`{lit}`: {other}")),
    }
}

/// Expands `ge_model!(args)`.
pub fn expand(args: &Args, ctx: &Context) -> syn::Result<TokenStream> {
    let start = Instant::now();
    let s = settings(args, ctx)?;
    let lit = args.path.value();
    let model = ctx.manifest_dir.join(&lit);
    if !model.is_file() {
        return Err(err(
            args.path.span(),
            format!(
                "cannot read model `{lit}`: no such file (paths are relative to the crate's \
                 directory, CARGO_MANIFEST_DIR)"
            ),
        ));
    }
    let entry = ctx
        .cache
        .compile(&model, &s.options)
        .map_err(|e| compile_error(e, args, &s, &model))?;

    let name = match &args.name {
        Some(n) => n.to_string(),
        None => model
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or("model")
            .to_string(),
    };
    let mut b = Bindings::new(&name, &entry.blob_path);
    if let Some(n) = &args.name {
        b.type_name = n.to_string();
    }
    b.vis = args.vis.to_token_stream().to_string();
    b.crate_path = s.crate_path.clone();
    b.tracked = std::iter::once(model.clone())
        .chain(entry.meta.dependencies.iter().cloned())
        .chain(s.tracked.iter().cloned())
        .collect();
    b.tracked.dedup();
    b.source = lit.clone();
    b.options = s.options.clone();
    b.max_cores = s.cores;
    b.host_dispatch = s.host_dispatch;
    b.notes = entry.meta.notes.clone();
    let tokens = codegen::generate(&entry.meta.interface, &b)
        .map_err(|e| err(Span::call_site(), format!("`{lit}`: {e}")))?;
    if ctx.timing {
        eprintln!(
            "ge_model!(\"{lit}\"): cache {} ({}), expanded in {:.2} ms",
            if entry.hit { "hit" } else { "miss" },
            &entry.key[..12],
            start.elapsed().as_secs_f64() * 1000.0
        );
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_from_cli_message() {
        let h = symbolic_hint(
            "x",
            "has symbolic dimension(s) N; set them with --input-shape x:N,1,8,8",
        )
        .unwrap();
        assert_eq!(
            h,
            "add `input_shape(x = [N, 1, 8, 8])` with numbers for the symbolic dims"
        );
        let h = symbolic_hint("in:0", "… --input-shape in:0:N,3").unwrap();
        assert!(h.contains("input_shape(\"in:0\" = [N, 3])"), "{h}");
    }
}
