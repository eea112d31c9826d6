//! Typed Rust bindings for a compiled model, shared by the `ge_model!` macro and
//! [`crate::Builder`] (build.rs).
//!
//! From a compiled blob's [`Interface`] (I/O names, dtypes, shapes, arena size) and the
//! [`Bindings`] settings, [`generate`] emits one module:
//!
//! ```text
//! pub mod digits {
//!     pub static BLOB: &[u8]                    the .om blob, 64-byte aligned (include_bytes_aligned!)
//!     pub const ARENA_BYTES: usize              arena the model needs (64-aligned buffer)
//!     pub const INPUT_X_SHAPE: [usize; 4]       one shape const per input / output
//!     pub type Arena = ge::Arena<ARENA_BYTES>   heap-free arena (stack, field or static)
//!     pub type StaticArena = ...                for a `static`
//!     pub struct Inputs  { pub x: [[[[f32; 8]; 8]; 1]; 1] }
//!     pub struct Outputs { pub logits: [[f32; 10]; 1], ... }
//!     pub struct Digits<'a>                     binds an arena; run / run_slices / run_bytes
//!     pub static KERNELS: &[KernelEntry]        the kernels the model runs, all the device links
//!     pub fn model() / pub fn device()
//! }
//! ```
//!
//! The generated code is `no_std`, allocation-free, documented and rustfmt-clean (see
//! [`generate_source`]); it names items only through the facade crate path
//! ([`Bindings::crate_path`], `::ge` by default), which re-exports `ge_runtime` and `ge_sim`.

pub mod cache;
mod device;
mod gears;
mod interface;
pub mod names;
mod notes;
mod tensors;

use std::path::{Path, PathBuf};

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use ge_sim::Profile;

pub use device::{DeviceSpec, parse_profile, resolve_device};
pub use interface::{GearIo, Interface, IoSpec};
pub use notes::{findings, report_notes};

use crate::error::{CompileError, Result};
use crate::options::CompileOptions;

/// How to generate the bindings of one model.
#[derive(Clone, Debug)]
pub struct Bindings {
    /// Module name (snake case).
    pub module: String,
    /// Model type name (upper camel case).
    pub type_name: String,
    /// Visibility of the module: `""`, `"pub"`, `"pub(crate)"`, …
    pub vis: String,
    /// Path of the facade crate the generated code names items through (`::ge`).
    pub crate_path: String,
    /// Absolute path of the `.om` blob to embed.
    pub blob_path: PathBuf,
    /// Absolute paths of files rustc must track (`include_bytes!` into an unused const), so
    /// that touching them re-expands the macro. Empty for build.rs output, where
    /// `cargo:rerun-if-changed` does this.
    pub tracked: Vec<PathBuf>,
    /// The model path as the user wrote it (for docs).
    pub source: String,
    /// The options the blob was compiled with (for docs and the device profile).
    pub options: CompileOptions,
    /// The device's core limit (`--cores`; 0 = all).
    pub max_cores: u32,
    /// Host-dispatched launches instead of sink mode (`--host-dispatch`).
    pub host_dispatch: bool,
    /// Extra doc lines for the module (e.g. from [`report_notes`]).
    pub notes: Vec<String>,
}

impl Bindings {
    /// Bindings named after `name` (a file stem or a type name): module `snake_case(name)`,
    /// type `UpperCamelCase(name)`, private, through `::ge`.
    pub fn new(name: &str, blob_path: impl Into<PathBuf>) -> Bindings {
        Bindings {
            module: names::snake_case(name),
            type_name: names::camel_case(name),
            vis: String::new(),
            crate_path: "::ge".into(),
            blob_path: blob_path.into(),
            tracked: Vec::new(),
            source: name.to_string(),
            options: CompileOptions::default(),
            max_cores: 0,
            host_dispatch: false,
            notes: Vec::new(),
        }
    }
}

fn parse_tokens(what: &str, s: &str) -> Result<TokenStream> {
    s.parse::<TokenStream>()
        .map_err(|e| CompileError::Option(format!("{what} '{s}' is not valid Rust: {e}")))
}

fn path_str(p: &Path) -> Result<String> {
    p.to_str()
        .map(str::to_string)
        .ok_or_else(|| CompileError::Option(format!("path {} is not UTF-8", p.display())))
}

fn usize_lit(n: usize) -> Literal {
    Literal::usize_unsuffixed(n)
}

/// `104,857,600 bytes (100.0 MiB)`: a size as docs state it.
fn byte_size(bytes: usize) -> String {
    let digits = bytes.to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    if bytes < 1 << 20 {
        return format!("{grouped} bytes");
    }
    format!(
        "{grouped} bytes, {:.1} MiB",
        bytes as f64 / f64::from(1 << 20)
    )
}

/// Width doc text is wrapped to.
const DOC_WIDTH: usize = 88;

/// Doc attributes for `text`, each paragraph wrapped at word boundaries.
fn doc(text: impl AsRef<str>) -> TokenStream {
    let mut lines: Vec<String> = Vec::new();
    for para in text.as_ref().lines() {
        let mut cur = String::new();
        for word in para.split(' ') {
            if !cur.is_empty() && cur.len() + 1 + word.len() > DOC_WIDTH {
                lines.push(std::mem::take(&mut cur));
            }
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(word);
        }
        lines.push(cur);
    }
    let attrs = lines.iter().map(|l| {
        let l = if l.is_empty() {
            String::new()
        } else {
            format!(" {l}")
        };
        quote!(#[doc = #l])
    });
    quote!(#(#attrs)*)
}

/// `[[f32; 8]; 8]` for shape `[8, 8]`; the scalar element type for rank 0.
fn array_type(elem: &TokenStream, shape: &[usize]) -> TokenStream {
    shape.iter().rev().fold(elem.clone(), |t, &d| {
        let d = usize_lit(d);
        quote!([#t; #d])
    })
}

fn profile_tokens(krate: &TokenStream, p: &Profile) -> TokenStream {
    for (builtin, name) in [
        (Profile::EDGE, "EDGE"),
        (Profile::DATACENTER, "DATACENTER"),
        (Profile::TINY, "TINY"),
        (Profile::CORTEX_M, "CORTEX_M"),
    ] {
        if *p == builtin {
            let id = format_ident!("{name}");
            return quote!(#krate::Profile::#id);
        }
    }
    let (name, bf16) = (p.name, p.bf16);
    let f = [
        p.rate_period_cycles,
        p.cores,
        p.clock_mhz,
        p.cube_macs_per_cycle,
        p.fp32_cube_divisor,
        p.int8_cube_multiplier,
        p.vector_ops_per_cycle,
        p.fp16_vector_ops_per_cycle,
        p.gm_bytes_per_cycle,
        p.task_overhead_cycles,
        p.launch_overhead_ns,
        p.unified_buffer_bytes,
        p.l1_bytes,
        p.l0ab_bytes,
        p.l0c_bytes,
    ]
    .map(Literal::u32_unsuffixed);
    let [
        period,
        cores,
        clock,
        cube,
        div,
        int8,
        vector,
        vector16,
        gm,
        task,
        launch,
        ub,
        l1,
        l0ab,
        l0c,
    ] = f;
    quote! {
        #krate::Profile {
            name: #name,
            rate_period_cycles: #period,
            cores: #cores,
            clock_mhz: #clock,
            cube_macs_per_cycle: #cube,
            fp32_cube_divisor: #div,
            int8_cube_multiplier: #int8,
            vector_ops_per_cycle: #vector,
            fp16_vector_ops_per_cycle: #vector16,
            bf16: #bf16,
            gm_bytes_per_cycle: #gm,
            task_overhead_cycles: #task,
            launch_overhead_ns: #launch,
            unified_buffer_bytes: #ub,
            l1_bytes: #l1,
            l0ab_bytes: #l0ab,
            l0c_bytes: #l0c,
        }
    }
}

fn options_summary(o: &CompileOptions) -> String {
    let precision = o.precision.name();
    let mut s = format!(
        "opt level {:?}, precision {precision}, device `{}`",
        o.opt_level, o.device.name
    );
    for (name, dims) in &o.input_shapes {
        s += &format!(", input shape {name}:{dims:?}");
    }
    for (name, t) in &o.input_values {
        s += &format!(
            ", input {name} frozen to a {} {:?} value",
            t.dtype.name(),
            t.dims
        );
    }
    if !o.gears.is_empty() {
        s += &format!(", gears {:?} (pad {:?})", o.gears, o.gear_pad);
    }
    if !o.memory_reuse {
        s += ", memory reuse off";
    }
    if let Some(f) = &o.fusion_switch {
        s += &format!(", fusion switch {}", f.display());
    }
    if let Some(f) = &o.keep_dtype {
        s += &format!(", keep-dtype list {}", f.display());
    }
    if let Some(f) = &o.modify_mixlist {
        s += &format!(", mixlist changes {}", f.display());
    }
    if let Some(d) = o.io_dtype {
        s += &format!(", inputs and outputs in {}", d.name());
    }
    s
}

/// `KernelEntry::of(KernelId::new(OpKind::Conv, DType::F32, KernelVariant::Plain))` for
/// every kernel; an unknown number is an internal error (the blob loaded, so it has none).
fn kernel_entries(krate: &TokenStream, kernels: &[(u16, u8, u8)]) -> Result<Vec<TokenStream>> {
    use ge_runtime::format::KernelId;
    kernels
        .iter()
        .map(|&(op, dtype, variant)| {
            let id = KernelId { op, dtype, variant };
            let (Some(kind), Some(dtype), Some(variant)) = (id.kind(), id.dtype(), id.variant())
            else {
                return Err(CompileError::Model(format!(
                    "internal error: unknown kernel {op}/{dtype}/{variant}"
                )));
            };
            let kind = format_ident!("{}", kind.name());
            let dtype = format_ident!("{dtype:?}");
            let variant = format_ident!("{variant:?}");
            let f = quote!(#krate::runtime::format);
            Ok(quote! {
                #krate::KernelEntry::of(#f::KernelId::new(
                    #f::OpKind::#kind,
                    #f::DType::#dtype,
                    #f::KernelVariant::#variant,
                ))
            })
        })
        .collect()
}

/// The model type's `run` (and, with gears, `run_shaped`): typed tensors in, the device's
/// report out. `batch`: generic over the batch `N`; `gears` without `batch`: generic over a
/// gear's `Inputs` (see [`gears`]).
fn run_method(
    krate: &TokenStream,
    ins: &[tensors::Io],
    outs: &[tensors::Io],
    batch: bool,
    gears: bool,
) -> TokenStream {
    let (run_in, run_out) = tensors::byte_views(krate, ins, outs);
    let session = quote! {
        let device = #krate::DeviceRef(&mut self.device);
        let mut session = #krate::Session::new(&self.model, &mut *self.arena, device)?;
    };
    let run = if batch {
        let n_in = usize_lit(ins.len());
        let shapes = ins.iter().map(|i| {
            if i.batched {
                let dims = i.spec.shape[1..].iter().map(|&d| usize_lit(d));
                quote!(&[N, #(#dims),*])
            } else {
                let c = &i.shape_const;
                quote!(&#c)
            }
        });
        quote! {
            /// Runs a batch of `N` (1 to [`MAX_BATCH`]): on the gear of batch `N`, or zero-padded
            /// on the next larger gear, with the outputs cut back to `N` items. Returns the
            /// device's report (simulated time, cycles, traffic, launches, tasks).
            pub fn run<const N: usize>(
                &mut self,
                inputs: &Inputs<N>,
                outputs: &mut Outputs<N>,
            ) -> Result<#krate::RunReport, #krate::Error>
            where
                Batch<N>: Fits,
            {
                let shapes: [&[usize]; #n_in] = [#(#shapes),*];
                #session
                let (report, gear) =
                    session.run_shaped(&[#(#run_in),*], &shapes, &mut [#(#run_out),*])?;
                debug_assert_eq!(gear, <Batch<N> as Fits>::GEAR);
                Ok(report)
            }
        }
    } else if gears {
        quote! {
            /// Runs the gear whose `Inputs` these are (e.g. `h48_w320::Inputs`), exactly, and
            /// returns the device's report (simulated time, cycles, traffic, launches, tasks).
            pub fn run<I: Gear>(
                &mut self,
                inputs: &I,
                outputs: &mut I::Outputs,
            ) -> Result<#krate::RunReport, #krate::Error> {
                let (ins, mut outs) = I::io(inputs, outputs);
                #session
                session.run_gear(I::GEAR, &ins, &mut outs)
            }
        }
    } else {
        quote! {
            /// Runs the model: reads `inputs`, writes `outputs`, returns the device's
            /// report (simulated time, cycles, traffic, launches, tasks).
            pub fn run(
                &mut self,
                inputs: &Inputs,
                outputs: &mut Outputs,
            ) -> Result<#krate::RunReport, #krate::Error> {
                self.run_bytes(&[#(#run_in),*], &mut [#(#run_out),*])
            }
        }
    };
    if !gears {
        return run;
    }
    quote! {
        #run

        /// Runs raw inputs of shapes `shapes` (C order, the inputs' dtypes) on the smallest
        /// gear they fit, zero-padded at the end of each smaller dim where the blob allows it
        /// (the batch of batch gears; any dim when compiled with `pad = spatial`); outputs
        /// are cut back to the actual batch, else have the gear's shapes. Returns the report
        /// and the gear's index.
        pub fn run_shaped(
            &mut self,
            inputs: &[&[u8]],
            shapes: &[&[usize]],
            outputs: &mut [&mut [u8]],
        ) -> Result<(#krate::RunReport, usize), #krate::Error> {
            #session
            session.run_shaped(inputs, shapes, outputs)
        }
    }
}

/// The bindings module for `iface` as tokens.
pub fn generate(iface: &Interface, b: &Bindings) -> Result<TokenStream> {
    let krate = parse_tokens("crate path", &b.crate_path)?;
    let vis = parse_tokens("visibility", &b.vis)?;
    let module = format_ident!("{}", b.module);
    let ty = format_ident!("{}", b.type_name);
    let blob_path = path_str(&b.blob_path)?;
    let tracked = b
        .tracked
        .iter()
        .map(|p| path_str(p))
        .collect::<Result<Vec<_>>>()?;

    // One name per input and output, unique across both (they meet as run_slices
    // parameters and shape consts).
    let all: Vec<&str> = iface
        .inputs
        .iter()
        .chain(&iface.outputs)
        .map(|s| s.name.as_str())
        .collect();
    let field_names = names::unique_snake(&all, &[]);
    let (in_names, out_names) = field_names.split_at(iface.inputs.len());

    let mut ins = tensors::ios(&iface.inputs, in_names, "INPUT");
    let mut outs = tensors::ios(&iface.outputs, out_names, "OUTPUT");
    let batches = gears::batch_form(iface, &b.options.gears, &mut ins, &mut outs);
    let (gear_items, gear_lines) = match &batches {
        Some(bs) => (gears::batch_items(bs, &b.source), Vec::new()),
        None if !iface.gears.is_empty() => {
            gears::per_gear_items(&krate, iface, &b.options.gears, (in_names, out_names))
        }
        None => (TokenStream::new(), Vec::new()),
    };

    let source = &b.source;
    let io_line = |v: &[tensors::Io]| {
        v.iter()
            .map(|i| format!("`{}` ({})", i.spec.name, i.spec.describe()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut module_doc = format!(
        "Bindings for `{source}` (graph `{}`), compiled by ge at `cargo build` time.\n\n\
         Inputs: {}.\n\nOutputs: {}.\n\nOptions: {}.",
        iface.model_name,
        if ins.is_empty() {
            "none".into()
        } else {
            io_line(&ins)
        },
        if outs.is_empty() {
            "none".into()
        } else {
            io_line(&outs)
        },
        options_summary(&b.options),
    );
    for n in &b.notes {
        module_doc += &format!("\n\n{n}");
    }
    if let Some(bs) = &batches {
        module_doc += &format!(
            "\n\nBatch gears {bs:?}: [`Inputs`] and [`Outputs`] take the batch `N` (1 to \
             [`MAX_BATCH`]) as a const parameter; a batch between gears runs zero-padded on the \
             next gear. The shapes above are the largest gear's."
        );
    } else if !gear_lines.is_empty() {
        module_doc += "\n\nGears (one module each; `run` takes a gear's `Inputs`):";
        for l in &gear_lines {
            module_doc += &format!("\n- {l}");
        }
        module_doc += "\n\nThe shapes above are the largest gear's.";
    }
    module_doc += &format!(
        "\n\nUse [`{ty}`] with an [`Arena`] ({}: `Arena::boxed()` or a [`StaticArena`] for a big \
         model; or any `&mut [u8]` of [`ARENA_BYTES_UNALIGNED`] bytes), fill [`Inputs`], and \
         call [`{ty}::run`].",
        byte_size(iface.arena_bytes)
    );
    let module_doc = doc(module_doc);

    let shape_consts = tensors::shape_consts(&ins, &outs);
    let n_in = usize_lit(ins.len());
    let n_out = usize_lit(outs.len());
    let in_name_lits = ins.iter().map(|i| i.spec.name.as_str());
    let out_name_lits = outs.iter().map(|i| i.spec.name.as_str());

    let slice_params = ins
        .iter()
        .map(|i| {
            let (f, e) = (&i.field, &i.elem);
            quote!(#f: &[#e])
        })
        .chain(outs.iter().map(|o| {
            let (f, e) = (&o.field, &o.elem);
            quote!(#f: &mut [#e])
        }));
    let slice_in = ins.iter().map(|i| {
        let f = &i.field;
        quote!(#krate::bytes::of_slice(#f))
    });
    let slice_out = outs.iter().map(|o| {
        let f = &o.field;
        quote!(#krate::bytes::of_slice_mut(#f))
    });
    let slice_doc = doc(format!(
        "Runs on flat, C-order element slices, in model order (zero-copy: inputs are read \
         in place): {}. A slice of the wrong length gives an error.",
        ins.iter()
            .chain(&outs)
            .map(|i| format!("`{}` ({} elements)", i.field, i.spec.numel()))
            .collect::<Vec<_>>()
            .join(", ")
    ));

    let profile = profile_tokens(&krate, &b.options.device);
    let max_cores = Literal::u32_unsuffixed(b.max_cores);
    let mode = if b.host_dispatch {
        quote!(#krate::LaunchMode::HostDispatched)
    } else {
        quote!(#krate::LaunchMode::Sink)
    };
    let arena_bytes = usize_lit(iface.arena_bytes);
    let kernels = kernel_entries(&krate, &iface.kernels)?;
    let tracked_doc = tracked.iter().map(|p| {
        let d = doc(format!("Makes rustc rebuild when `{p}` changes."));
        quote! {
            #d
            const _: &[u8] = ::core::include_bytes!(#p);
        }
    });
    let arena_doc = doc(format!(
        "A 64-byte aligned arena of exactly [`ARENA_BYTES`] ({}). `Arena::new()` builds it by \
         value: as a local, on the stack (in a debug build even inside `Box::new`), which \
         suits a small model only. `Arena::boxed()` (feature `alloc`, part of the default \
         `std`) allocates it zeroed on the heap without touching the stack, and \
         [`StaticArena`] puts it in `.bss`.",
        byte_size(iface.arena_bytes)
    ));
    let structs = if iface.gears.is_empty() || batches.is_some() {
        let batch = batches.is_some();
        let i = tensors::tensor_struct(&krate, "Inputs", &ins, batch);
        let o = tensors::tensor_struct(&krate, "Outputs", &outs, batch);
        quote!(#i #o)
    } else {
        TokenStream::new()
    };
    let run = run_method(
        &krate,
        &ins,
        &outs,
        batches.is_some(),
        !iface.gears.is_empty(),
    );
    let type_doc = doc(format!(
        "`{source}` bound to an arena and a simulated device; [`{ty}::run`] runs it without \
         allocating. Generic over the device's task observer (none by default)."
    ));

    Ok(quote! {
        #module_doc
        #[allow(dead_code)]
        #vis mod #module {
            /// The compiled `.om` blob, embedded and 64-byte aligned so weights are used in place.
            pub static BLOB: &[u8] = #krate::include_bytes_aligned!(64, #blob_path);

            #(#tracked_doc)*

            /// Arena bytes the model needs in a 64-byte aligned buffer (such as [`Arena`]).
            pub const ARENA_BYTES: usize = #arena_bytes;

            /// Arena bytes that suffice for a buffer of any alignment (e.g. a `Vec<u8>`).
            pub const ARENA_BYTES_UNALIGNED: usize = ARENA_BYTES + #krate::ALIGN - 1;

            #shape_consts

            /// ONNX names of the inputs, in model order.
            pub const INPUT_NAMES: [&str; #n_in] = [#(#in_name_lits),*];

            /// ONNX names of the outputs, in model order.
            pub const OUTPUT_NAMES: [&str; #n_out] = [#(#out_name_lits),*];

            /// The device profile the model was compiled for.
            pub const PROFILE: #krate::Profile = #profile;

            /// Most AI cores a task may use (0 = all).
            pub const MAX_CORES: u32 = #max_cores;

            #arena_doc
            pub type Arena = #krate::Arena<ARENA_BYTES>;

            /// An [`Arena`] for a `static` (in `.bss`): `static A: StaticArena =
            /// StaticArena::new();` then `A.take()` once. Nothing is built on the stack.
            /// (Not on targets without compare-and-swap atomics, such as Cortex-M0+.)
            #[cfg(target_has_atomic = "8")]
            pub type StaticArena = #krate::StaticArena<ARENA_BYTES>;

            #structs

            #gear_items

            /// Validates the embedded blob (checksums, every offset and id).
            pub fn model() -> Result<#krate::Model<'static>, #krate::Error> {
                #krate::Model::from_bytes(BLOB)
            }

            /// The kernels the model runs (op kind, output element type, variant). The
            /// device of [`device()`] dispatches through these alone, so a binary that runs
            /// the model only through it links no other kernel.
            pub static KERNELS: &[#krate::KernelEntry] = &[#(#kernels),*];

            /// The simulated device the model was compiled for ([`PROFILE`], [`MAX_CORES`])
            /// with the model's [`KERNELS`].
            pub fn device() -> #krate::SimDevice {
                let kernels = #krate::KernelSet::only(KERNELS);
                let mut device = #krate::SimDevice::with_kernels(PROFILE, kernels);
                device.max_cores = MAX_CORES;
                device.mode = #mode;
                device
            }

            #type_doc
            pub struct #ty<'a, O: #krate::sim::Observer = #krate::sim::NoObserver> {
                model: #krate::Model<'static>,
                arena: &'a mut [u8],
                device: #krate::SimDevice<O>,
            }

            impl<'a> #ty<'a> {
                /// Validates the blob and binds `arena` (at least [`ARENA_BYTES`] when
                /// 64-byte aligned, [`ARENA_BYTES_UNALIGNED`] otherwise) on [`device()`].
                pub fn new(arena: &'a mut [u8]) -> Result<Self, #krate::Error> {
                    Self::with_device(arena, device())
                }
            }

            impl<'a, O: #krate::sim::Observer> #ty<'a, O> {
                /// Validates the blob and binds `arena` on `device`.
                pub fn with_device(
                    arena: &'a mut [u8],
                    mut device: #krate::SimDevice<O>,
                ) -> Result<Self, #krate::Error> {
                    let model = model()?;
                    // Binding once checks the arena's size now rather than at the first run.
                    #krate::Session::new(&model, &mut *arena, #krate::DeviceRef(&mut device))?;
                    Ok(#ty { model, arena, device })
                }

                #run

                #slice_doc
                #[allow(clippy::too_many_arguments)]
                pub fn run_slices(
                    &mut self,
                    #(#slice_params),*
                ) -> Result<#krate::RunReport, #krate::Error> {
                    self.run_bytes(&[#(#slice_in),*], &mut [#(#slice_out),*])
                }

                /// Runs on raw bytes: `inputs[i]` / `outputs[i]` hold input / output `i`
                /// (C order, little-endian, the tensor's dtype). Inputs are read in place.
                pub fn run_bytes(
                    &mut self,
                    inputs: &[&[u8]],
                    outputs: &mut [&mut [u8]],
                ) -> Result<#krate::RunReport, #krate::Error> {
                    let device = #krate::DeviceRef(&mut self.device);
                    let mut session = #krate::Session::new(&self.model, &mut *self.arena, device)?;
                    session.run(inputs, outputs)
                }

                /// The validated model (I/O descriptors, tasks, metadata).
                pub fn model(&self) -> &#krate::Model<'static> {
                    &self.model
                }

                /// The device.
                pub fn device(&self) -> &#krate::SimDevice<O> {
                    &self.device
                }

                /// The device, mutably (e.g. to switch launch modes between runs).
                pub fn device_mut(&mut self) -> &mut #krate::SimDevice<O> {
                    &mut self.device
                }

                /// Runs the kernels on `host` — e.g. `ge::host_threads(2)` (the `std`
                /// feature's persistent thread pool); outputs are bitwise the same whatever
                /// the thread count.
                pub fn with_host(mut self, host: #krate::sim::threads::Host) -> Self {
                    self.device.host = host;
                    self
                }
            }
        }
    })
}

/// Formats generated tokens as source (prettyplease: rustfmt-compatible output).
pub fn format(tokens: TokenStream) -> Result<String> {
    let file: syn::File = syn::parse2(tokens)
        .map_err(|e| CompileError::Model(format!("internal error: generated code: {e}")))?;
    Ok(prettyplease::unparse(&file))
}

/// The bindings module as formatted source, with a header saying where it came from.
pub fn generate_source(iface: &Interface, b: &Bindings) -> Result<String> {
    Ok(format!(
        "// @generated by {} from `{}`. Do not edit.\n\n{}",
        crate::PRODUCER,
        b.source,
        format(generate(iface, b)?)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ge_runtime::format::DType;

    fn iface() -> Interface {
        Interface {
            model_name: "g".into(),
            inputs: vec![IoSpec {
                name: "Input:0".into(),
                dtype: DType::F32 as u8,
                shape: vec![1, 3, 2],
            }],
            outputs: vec![
                IoSpec {
                    name: "input_0".into(),
                    dtype: DType::I64 as u8,
                    shape: vec![],
                },
                IoSpec {
                    name: "mask".into(),
                    dtype: DType::Bool as u8,
                    shape: vec![4],
                },
            ],
            arena_bytes: 128,
            blob_bytes: 1000,
            tasks: 2,
            kernels: vec![(5, 1, 0), (2, 1, 1)],
            gears: Vec::new(),
        }
    }

    #[test]
    fn source_is_typed_and_documented() {
        let mut b = Bindings::new("my-model", "/tmp/x.om");
        b.vis = "pub".into();
        b.tracked = vec!["/tmp/x.onnx".into()];
        let src = generate_source(&iface(), &b).unwrap();
        assert!(src.contains("pub mod my_model {"), "{src}");
        assert!(src.contains("pub struct MyModel<'a"), "{src}");
        assert!(src.contains("pub input_0: [[[f32; 2]; 3]; 1],"), "{src}");
        // Collision with the input's snake name, scalar output, bool as u8.
        assert!(src.contains("pub input_0_2: i64,"), "{src}");
        assert!(src.contains("pub mask: [u8; 4],"), "{src}");
        assert!(src.contains("ONNX name `Input:0`"), "{src}");
        assert!(src.contains("pub const INPUT_INPUT_0_SHAPE: [usize; 3] = [1, 3, 2];"));
        assert!(src.contains("pub const OUTPUT_INPUT_0_2_SHAPE: [usize; 0] = [];"));
        assert!(src.contains("pub const ARENA_BYTES: usize = 128;"));
        // Zeroable (and `boxed()`) through the facade's macro, sizes in the docs.
        assert!(
            src.contains("::ge::__zeroable!(Inputs { input_0 });"),
            "{src}"
        );
        assert!(
            src.contains("::ge::__zeroable!(Outputs { input_0_2, mask });"),
            "{src}"
        );
        assert!(
            src.contains("of exactly [`ARENA_BYTES`] (128 bytes)"),
            "{src}"
        );
        assert!(
            src.contains("The model's inputs: 24 bytes of tensors."),
            "{src}"
        );
        assert!(
            src.contains("The model's outputs: 12 bytes of tensors."),
            "{src}"
        );
        assert!(src.contains("include_bytes_aligned!(64, \"/tmp/x.om\")"));
        assert!(src.contains("::core::include_bytes!(\"/tmp/x.onnx\")"));
        assert!(src.contains("::ge::Profile::EDGE"));
        assert!(src.contains("input_0: [[[0.0; 2]; 3]; 1]"), "{src}");
        // The kernel set: Conv f32, Binary f32 in place; the device dispatches through it.
        assert!(src.contains("OpKind::Conv,"), "{src}");
        assert!(src.contains("DType::F32,"), "{src}");
        assert!(src.contains("KernelVariant::InPlace,"), "{src}");
        assert!(src.contains("KernelSet::only(KERNELS)"), "{src}");
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(byte_size(0), "0 bytes");
        assert_eq!(byte_size(13_376), "13,376 bytes");
        assert_eq!(byte_size(104_857_600), "104,857,600 bytes, 100.0 MiB");
    }

    #[test]
    fn custom_profile_and_crate_path() {
        let mut b = Bindings::new("m", "/tmp/x.om");
        b.crate_path = "crate::ge".into();
        b.options.device.name = "edge4";
        b.options.device.cores = 4;
        b.host_dispatch = true;
        let src = generate_source(&iface(), &b).unwrap();
        assert!(src.contains("name: \"edge4\""), "{src}");
        assert!(src.contains("cores: 4,"), "{src}");
        assert!(
            src.contains("crate::ge::LaunchMode::HostDispatched"),
            "{src}"
        );
    }
}
