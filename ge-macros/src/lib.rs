//! `ge_model!`: compile an ONNX model while `cargo build` runs and get typed bindings.
//!
//! Use it through the `ge` facade crate (`ge::ge_model!`), which also provides the runtime
//! items the generated code names (`::ge::Model`, `::ge::Arena`, …).
//!
//! ```ignore
//! ge::ge_model!("models/resnet50.onnx");                 // mod resnet50 { pub struct Resnet50 … }
//! ge::ge_model!(pub Digits = "models/digits.onnx",       // pub mod digits { pub struct Digits … }
//!     opt_level = 2,
//!     input_shape(x = [1, 1, 8, 8]));
//! ```
//!
//! Paths are relative to the invoking crate's `CARGO_MANIFEST_DIR`. Options are the CLI's
//! compile flags: `opt_level` (0–3 or "O0".."O3"), `precision` ("force_fp32", "allow_mix_precision", …), `quantize` ("calib/dir": post-training int8 before the compile), `device`
//! ("edge", "datacenter", "tiny", "cortex-m" or a profile JSON file), `cores`, `host_dispatch`,
//! `memory_reuse`, `fusion_switch` (a JSON file), the limits `max_nodes`, `max_tensor_bytes`,
//! `max_weight_bytes`, `max_arena_bytes` (an integer, or a string with a K/M/G suffix; a
//! model over one is a compile error), `max_fold_bytes` (the largest value folded at compile
//! time, default 64M: a larger one runs as a task), `input_shape(NAME = [dims], …)` (quote
//! names that are not identifiers: `"data:0" = [1, 3]`), `input_value(NAME = "v.npy", …)`
//! (freezes an input to a tensor file, `.npy` or `TensorProto` `.pb`, like
//! `--input-value`), `gears(batch = [1, 4, 8])` / `gears(image_size = [[48, 320], [48, 960]])`
//! / `gears(x = [[1, 3, 48, 320], [1, 3, 48, 960]])` (several static shapes in one blob,
//! optionally `pad = spatial`; `-1` in `input_shape` marks a dim the gears set; the typed
//! bindings per kind of gears are described in `ge_build::codegen`'s `gears` module), and
//! `crate = path` (where the `ge` facade is, `::ge` by default).
//!
//! The macro is thin: it parses the arguments, asks `ge-build`'s cache for the compiled
//! blob (`target/ge-cache/`, keyed by a digest of the model bytes, the options and the
//! compiler build; written atomically), and emits `ge_build::codegen`'s module. The blob is
//! embedded with `include_bytes_aligned!(64, …)`; the model file is also `include_bytes!`d
//! into an unused constant, which makes rustc (and so cargo) rebuild when it changes.
//! Errors (missing file, unparsable model, unsupported op, bad option, unset symbolic dim)
//! are `compile_error!`s at the argument responsible. `GE_MACRO_TIMING=1` prints each
//! expansion's cache hit or miss and time to stderr.
//!
//! The compiler runs inside rustc as part of this proc macro, built with cargo's
//! `build-override` profile: opt-level 0 in dev and release unless the using workspace says
//! otherwise (a dependency cannot). Small models compile in milliseconds either way; a big
//! one's first expansion is about 10× slower than `ge compile` (the light ResNet-50: 24.5 s
//! in a debug build, 2.5 s optimized; `docs/BENCHMARKS.md`). For large models, optimize it
//! in the using workspace:
//!
//! ```toml
//! [profile.dev.build-override]
//! opt-level = 3
//! [profile.release.build-override]
//! opt-level = 3
//! ```
#![forbid(unsafe_code)]

mod args;
mod expand;

use proc_macro::TokenStream;

/// Compiles an ONNX model at build time and expands to a module of typed bindings; see the
/// crate documentation.
#[proc_macro]
pub fn ge_model(input: TokenStream) -> TokenStream {
    let args = syn::parse_macro_input!(input as args::Args);
    let ctx = expand::Context::from_env();
    match expand::expand(&args, &ctx) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::Instant;

    use ge_build::codegen::cache::Cache;
    use quote::quote;

    use crate::args::Args;
    use crate::expand::{Context, expand};

    fn ctx(cache: &Path) -> Context {
        Context {
            manifest_dir: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
            cache: Cache::new(cache),
            timing: false,
        }
    }

    fn expand_str(tokens: proc_macro2::TokenStream, ctx: &Context) -> Result<String, String> {
        let args: Args = syn::parse2(tokens).map_err(|e| e.to_string())?;
        expand(&args, ctx)
            .map(|t| t.to_string())
            .map_err(|e| e.to_string())
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ge-macros-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// Expansion time on a cache miss and a hit (the "cache hit < 50 ms" target). Run with
    /// `cargo test --release -p ge-macros expansion_time -- --nocapture` to see the figures.
    #[test]
    fn expansion_time() {
        let dir = tmp("timing");
        let ctx = ctx(&dir);
        let call = quote!(pub Digits = "../examples/digits/models/digits.onnx",
            opt_level = 2, input_shape(x = [1, 1, 8, 8]));
        let t = Instant::now();
        let miss = expand_str(call.clone(), &ctx).unwrap();
        let miss_ms = t.elapsed().as_secs_f64() * 1e3;
        let mut hits = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let hit = expand_str(call.clone(), &ctx).unwrap();
            hits.push(t.elapsed().as_secs_f64() * 1e3);
            assert_eq!(hit, miss);
        }
        hits.sort_by(f64::total_cmp);
        println!(
            "ge_model! digits expansion: miss {miss_ms:.2} ms, hit median {:.3} ms (max {:.3} ms)",
            hits[2], hits[4]
        );
        assert!(hits[2] < 50.0, "cache hit took {} ms", hits[2]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The same on a large model when the corpus is present (ResNet-50, ~100 MB).
    #[test]
    fn expansion_time_large_model() {
        let model =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/light/resnet50/model.onnx");
        if !model.is_file() {
            println!("skipped: {} not generated", model.display());
            return;
        }
        let dir = tmp("timing-large");
        let ctx = ctx(&dir);
        let call = quote!("../corpus/light/resnet50/model.onnx", opt_level = 0);
        let t = Instant::now();
        expand_str(call.clone(), &ctx).unwrap();
        let miss_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        expand_str(call, &ctx).unwrap();
        let hit_ms = t.elapsed().as_secs_f64() * 1e3;
        println!("ge_model! resnet50 expansion: miss {miss_ms:.1} ms, hit {hit_ms:.3} ms");
        assert!(hit_ms < 50.0, "cache hit took {hit_ms} ms");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn names_and_options() {
        let dir = tmp("names");
        let ctx = ctx(&dir);
        let out = expand_str(
            quote!(
                "../examples/digits/models/digits.onnx",
                input_shape(x = [1, 1, 8, 8]),
                device = tiny,
                cores = 1,
                host_dispatch = true,
                memory_reuse = "off"
            ),
            &ctx,
        )
        .unwrap();
        assert!(out.contains("mod digits"), "{out}");
        assert!(out.contains("struct Digits"), "{out}");
        assert!(out.contains("Profile :: TINY"), "{out}");
        assert!(out.contains("HostDispatched"), "{out}");
        let out = expand_str(
            quote!(pub(crate) MyNet = "../examples/digits/models/digits.onnx",
                input_shape("x" = [1, 1, 8, 8]), crate = crate::ge),
            &ctx,
        )
        .unwrap();
        assert!(out.contains("pub (crate) mod my_net"), "{out}");
        assert!(out.contains("struct MyNet"), "{out}");
        assert!(out.contains("crate :: ge :: Arena"), "{out}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn input_value_freezes_an_input() {
        let dir = tmp("value");
        std::fs::create_dir_all(&dir).unwrap();
        let npy = dir.join("x.npy");
        let t = ge_build::tensor::TensorData {
            dtype: ge_runtime::format::DType::F32,
            dims: vec![1, 1, 8, 8],
            bytes: vec![0; 256],
        };
        ge_build::tensor::write_npy(&npy, &t).unwrap();
        let npy = npy.to_str().unwrap();
        let ctx = ctx(&dir.join("cache"));
        let out = expand_str(
            quote!("../examples/digits/models/digits.onnx", input_value(x = #npy)),
            &ctx,
        )
        .unwrap();
        assert!(out.contains("INPUT_NAMES : [& str ; 0]"), "{out}");
        assert!(out.contains(npy), "the value file is tracked: {out}");
        let e = expand_str(
            quote!(
                "../examples/digits/models/digits.onnx",
                input_value(x = "none.npy")
            ),
            &ctx,
        )
        .unwrap_err();
        assert!(e.contains("bad `input_value` for `x`"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn diagnostics() {
        let dir = tmp("diag");
        let ctx = ctx(&dir);
        let digits = "../examples/digits/models/digits.onnx";
        let cases = [
            (quote!("nope.onnx"), "cannot read model `nope.onnx`"),
            (quote!(#digits), "add `input_shape(x = [N, 1, 8, 8])`"),
            (quote!(#digits, input_shape(y = [1])), "no such graph input"),
            (quote!(#digits, opt_level = 7), "bad `opt_level`"),
            (quote!(#digits, precision = "fp64"), "bad `precision`"),
            (quote!(#digits, device = "gpu"), "bad `device`"),
            (quote!(#digits, cores = 0), "positive integer"),
            (quote!(#digits, max_nodes = "many"), "bad `max_nodes`"),
            (
                quote!(#digits, input_shape(x = [1, 1, 8, 8]), max_nodes = 3),
                "over the limit of 3",
            ),
            (
                quote!(#digits, input_shape(x = [1, 1, 8, 8]), max_arena_bytes = "1K"),
                "max-arena-bytes",
            ),
            (
                quote!(#digits, quantize = "no/calib"),
                "bad `quantize`: no directory",
            ),
            (quote!(#digits, color = 1), "unknown option `color`"),
            (quote!(#digits, cores = 1, cores = 2), "given twice"),
            (quote!(Cargo.toml), "expected the model's path"),
            (quote!("Cargo.toml"), "not a valid ONNX model"),
            (
                quote!(#digits, input_shape(x = [1, 1, 8, 8]), precision = fp16),
                "did you mean 'force_fp16'",
            ),
        ];
        for (call, want) in cases {
            let e = expand_str(call.clone(), &ctx).unwrap_err();
            assert!(e.contains(want), "{call}: {e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
