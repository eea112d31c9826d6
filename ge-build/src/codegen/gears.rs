//! Typed bindings for a model with gears (`gears(…)` in `ge_model!`, the Builder's
//! `dynamic_batch` / `dynamic_image_size` / `dynamic_dims`).
//!
//! Two forms, chosen by what the gears vary:
//!
//! - **Batch gears** (every tensor either fixed or `[item; b]` with the gear's batch `b`):
//!   one `Inputs<const N: usize>` / `Outputs<const N: usize>` pair whose batched fields are
//!   `[item; N]`, and `run::<N>` for any batch up to the largest gear. The batch is part of
//!   the type, so code reads like the single-shape bindings (`Inputs::<4>::zeroed()`), a
//!   batch between gears runs padded on the next gear with outputs of exactly `N` items, and
//!   a batch above every gear is a type error (`Batch<N>: Fits` is implemented for `1..=`
//!   the largest batch only, each naming the gear it runs on).
//! - **Other gears** (image sizes, ND dims, or batch gears whose outputs do not scale with
//!   the batch): one module per gear (`h48_w320`, `gear1`, …) with that gear's exact
//!   `Inputs`, `Outputs` and shape consts, and one `run` taking any gear's `Inputs`
//!   (trait `Gear`). Output shapes there are not a function of the gear dims that stable
//!   Rust can compute in a type (an OCR width of 320 may give 80 time steps), and padding a
//!   spatial dim changes results, so the typed API runs exact gears only; padding (opted in
//!   with `pad = spatial`) goes through the untyped `run_shaped`.
//!
//! Generation is O(gears × tensors × rank + largest batch).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::tensors::{self, Io};
use super::{Interface, IoSpec, doc, usize_lit};
use crate::gears::GearSpec;

/// Marks the batched tensors of `ins` / `outs` and returns the gears' batch sizes (smallest
/// first) when the gears are batch gears every tensor of which is fixed or `[item; b]`;
/// `None` (nothing marked) otherwise.
pub(super) fn batch_form(
    iface: &Interface,
    spec: &GearSpec,
    ins: &mut [Io],
    outs: &mut [Io],
) -> Option<Vec<usize>> {
    if !matches!(spec, GearSpec::Batch(_)) || iface.gears.is_empty() {
        return None;
    }
    let shapes = |k: usize, i: usize| -> &[usize] {
        let g = &iface.gears[k];
        match i.checked_sub(g.inputs.len()) {
            None => &g.inputs[i],
            Some(o) => &g.outputs[o],
        }
    };
    let n = ins.len() + outs.len();
    let last = iface.gears.len() - 1;
    let mut batches: Option<Vec<usize>> = None;
    let mut batched = vec![false; n];
    for (i, b) in batched.iter_mut().enumerate() {
        let top = shapes(last, i);
        if (0..=last).all(|k| shapes(k, i) == top) {
            continue;
        }
        let per_gear: Option<Vec<usize>> = (0..=last)
            .map(|k| {
                let s = shapes(k, i);
                (s.len() == top.len() && !s.is_empty() && s[1..] == top[1..]).then(|| s[0])
            })
            .collect();
        let per_gear = per_gear?;
        if batches.get_or_insert_with(|| per_gear.clone()) != &per_gear {
            return None;
        }
        *b = true;
    }
    let (bi, bo) = batched.split_at(ins.len());
    for (io, &b) in ins.iter_mut().zip(bi).chain(outs.iter_mut().zip(bo)) {
        io.batched = b;
    }
    batches
}

/// `GEARS`, `MAX_BATCH`, `Batch<N>` and `Fits` (implemented for `1..=MAX_BATCH`).
pub(super) fn batch_items(batches: &[usize], source: &str) -> TokenStream {
    let max = batches.last().copied().unwrap_or(0);
    let list = batches
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let k = usize_lit(batches.len());
    let lits = batches.iter().map(|&b| usize_lit(b));
    let max_lit = usize_lit(max);
    let impls = (1..=max).map(|n| {
        let gear = batches.iter().position(|&b| b >= n).unwrap_or(0);
        let (n, gear) = (usize_lit(n), usize_lit(gear));
        quote!(impl Fits for Batch<#n> { const GEAR: usize = #gear; })
    });
    let message = format!(
        "`{{Self}}` fits no gear of `{source}`: its batch gears are {list}, so a batch runs \
         from 1 to {max}"
    );
    let label = format!("a batch of 1 to {max}");
    let note =
        format!("a batch above {max} needs a larger gear: add it to `gears(batch = [{list}])`");
    let batch_doc = doc(format!(
        "A batch size as a type: [`Inputs`], [`Outputs`] and `run` take a batch `N` with \
         `Batch<N>: Fits`, which holds for 1 to [`MAX_BATCH`] ({max}). A batch between gears \
         runs on the next larger gear, zero-padded, with outputs of exactly `N` items."
    ));
    quote! {
        /// The batch size of each gear, smallest first.
        pub const GEARS: [usize; #k] = [#(#lits),*];

        /// The largest batch a run takes (the largest gear's).
        pub const MAX_BATCH: usize = #max_lit;

        #batch_doc
        pub struct Batch<const N: usize>;

        /// Implemented by `Batch<N>` for every batch a gear takes (1 to [`MAX_BATCH`]).
        #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
        pub trait Fits {
            /// The gear a batch of this size runs on (index into [`GEARS`]).
            const GEAR: usize;
        }

        #(#impls)*
    }
}

/// The module name of gear `k`: `batch4`, `h48_w320`, else `gear3`.
fn gear_name(iface: &Interface, spec: &GearSpec, k: usize) -> String {
    let g = &iface.gears[k];
    match spec {
        GearSpec::Batch(bs) => {
            if let Some(b) = g
                .inputs
                .iter()
                .find_map(|s| s.first().filter(|b| bs.contains(b)))
            {
                return format!("batch{b}");
            }
        }
        GearSpec::ImageSize(hws) => {
            for s in g.inputs.iter().filter(|s| s.len() == 4) {
                if let Some([h, w]) = hws
                    .iter()
                    .find(|[h, w]| (s[2], s[3]) == (*h, *w) || (s[1], s[2]) == (*h, *w))
                {
                    return format!("h{h}_w{w}");
                }
            }
        }
        _ => {}
    }
    format!("gear{k}")
}

/// One module per gear with its exact tensors, the `Gear` trait they implement, and a
/// summary line per gear for the module docs.
pub(super) fn per_gear_items(
    krate: &TokenStream,
    iface: &Interface,
    spec: &GearSpec,
    names: (&[String], &[String]),
) -> (TokenStream, Vec<String>) {
    let with_shapes = |specs: &[IoSpec], shapes: &[Vec<usize>]| -> Vec<IoSpec> {
        specs
            .iter()
            .zip(shapes)
            .map(|(s, d)| IoSpec {
                shape: d.clone(),
                ..s.clone()
            })
            .collect()
    };
    let n_in = usize_lit(iface.inputs.len());
    let n_out = usize_lit(iface.outputs.len());
    let mut lines = Vec::new();
    let modules = iface.gears.iter().enumerate().map(|(k, g)| {
        let name = gear_name(iface, spec, k);
        let module = format_ident!("{name}");
        let ins = tensors::ios(&with_shapes(&iface.inputs, &g.inputs), names.0, "INPUT");
        let outs = tensors::ios(&with_shapes(&iface.outputs, &g.outputs), names.1, "OUTPUT");
        let shape_line = |v: &[Io]| {
            v.iter()
                .map(|i| format!("`{}` {:?}", i.spec.name, i.spec.shape))
                .collect::<Vec<_>>()
                .join(", ")
        };
        lines.push(format!(
            "[`{name}`]: gear {k}, inputs {}; outputs {}.",
            shape_line(&ins),
            shape_line(&outs)
        ));
        let module_doc = doc(format!(
            "Gear {k} of the model: its exact inputs {} and outputs {}. Pass its [`Inputs`] \
             to the model's `run`.",
            shape_line(&ins),
            shape_line(&outs)
        ));
        let consts = tensors::shape_consts(&ins, &outs);
        let inputs = tensors::tensor_struct(krate, "Inputs", &ins, false);
        let outputs = tensors::tensor_struct(krate, "Outputs", &outs, false);
        let (in_bytes, out_bytes) = tensors::byte_views(krate, &ins, &outs);
        let k = usize_lit(k);
        quote! {
            #module_doc
            pub mod #module {
                /// This gear's index in the blob.
                pub const GEAR: usize = #k;

                #consts
                #inputs
                #outputs

                impl super::Gear for Inputs {
                    type Outputs = Outputs;
                    const GEAR: usize = GEAR;
                    fn io<'v>(
                        inputs: &'v Self,
                        outputs: &'v mut Outputs,
                    ) -> ([&'v [u8]; #n_in], [&'v mut [u8]; #n_out]) {
                        ([#(#in_bytes),*], [#(#out_bytes),*])
                    }
                }
            }
        }
    });
    let modules: Vec<_> = modules.collect();
    let items = quote! {
        /// The `Inputs` of one gear (a module per gear): the model's `run` takes any of them
        /// with that gear's `Outputs` and runs that gear, exactly.
        pub trait Gear {
            /// The same gear's outputs.
            type Outputs;
            /// The gear's index in the blob.
            const GEAR: usize;
            /// Byte views of the inputs and outputs, in model order.
            fn io<'v>(
                inputs: &'v Self,
                outputs: &'v mut Self::Outputs,
            ) -> ([&'v [u8]; #n_in], [&'v mut [u8]; #n_out]);
        }

        #(#modules)*
    };
    (items, lines)
}
