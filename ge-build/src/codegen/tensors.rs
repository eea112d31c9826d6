//! The tensor structs of the bindings (`Inputs`, `Outputs`) and their shape consts, shared
//! by a single-shape model, a batch-gear model (structs generic over the batch `N`) and the
//! per-gear modules of other gears.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::{IoSpec, array_type, byte_size, doc, parse_tokens, usize_lit};

/// One input or output as the generated code names and types it.
pub(super) struct Io {
    pub spec: IoSpec,
    pub field: Ident,
    pub shape_const: Ident,
    pub elem: TokenStream,
    /// Dim 0 is the batch const parameter `N` (batch gears) rather than `spec.shape[0]`.
    pub batched: bool,
}

impl Io {
    /// The field's type: nested arrays, `[…; N]` outermost when batched.
    pub fn ty(&self) -> TokenStream {
        if self.batched {
            let inner = array_type(&self.elem, &self.spec.shape[1..]);
            return quote!([#inner; N]);
        }
        array_type(&self.elem, &self.spec.shape)
    }

    /// All zeros of [`Io::ty`].
    pub fn zero(&self) -> TokenStream {
        let zero = match self.spec.rust_elem() {
            "f32" | "f64" => quote!(0.0),
            _ => quote!(0),
        };
        let (outer, dims) = match self.batched {
            true => (Some(quote!(N)), &self.spec.shape[1..]),
            false => (None, &self.spec.shape[..]),
        };
        let v = dims.iter().rev().fold(zero, |v, &d| {
            let d = usize_lit(d);
            quote!([#v; #d])
        });
        match outer {
            Some(n) => quote!([#v; #n]),
            None => v,
        }
    }
}

/// `specs` named `names` (snake case, unique); `kind` prefixes the shape consts (`INPUT`).
pub(super) fn ios(specs: &[IoSpec], names: &[String], kind: &str) -> Vec<Io> {
    specs
        .iter()
        .zip(names)
        .map(|(spec, n)| Io {
            spec: spec.clone(),
            field: format_ident!("{n}"),
            shape_const: format_ident!("{}_{}_SHAPE", kind, n.to_ascii_uppercase()),
            elem: parse_tokens("type", spec.rust_elem()).unwrap_or_default(),
            batched: false,
        })
        .collect()
}

/// Byte views of `inputs.<field>` and `outputs.<field>` (the typed `run`'s arguments), in
/// model order.
pub(super) fn byte_views(
    krate: &TokenStream,
    ins: &[Io],
    outs: &[Io],
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let i = ins.iter().map(|i| {
        let f = &i.field;
        quote!(#krate::bytes::of(&inputs.#f))
    });
    let o = outs.iter().map(|o| {
        let f = &o.field;
        quote!(#krate::bytes::of_mut(&mut outputs.#f))
    });
    (i.collect(), o.collect())
}

/// `pub const INPUT_X_SHAPE: [usize; 4] = […];` for every input and output.
pub(super) fn shape_consts(ins: &[Io], outs: &[Io]) -> TokenStream {
    let all = ins
        .iter()
        .map(|i| (i, "Input"))
        .chain(outs.iter().map(|o| (o, "Output")));
    let consts = all.map(|(i, kind)| {
        let c = &i.shape_const;
        let rank = usize_lit(i.spec.shape.len());
        let dims = i.spec.shape.iter().map(|&d| usize_lit(d));
        let batch = if i.batched {
            " (the largest gear's; dim 0 is the batch)"
        } else {
            ""
        };
        let d = doc(format!(
            "{kind} `{}`: {}{batch}.",
            i.spec.name,
            i.spec.describe()
        ));
        quote! {
            #d
            pub const #c: [usize; #rank] = [#(#dims),*];
        }
    });
    quote!(#(#consts)*)
}

/// `pub struct Inputs { … }` (or `Outputs`) with `zeroed()`, `Default`, `Zeroable` and
/// `boxed()`. `batch`: generic over the batch, `Inputs<const N: usize>` bounded by
/// `Batch<N>: Fits` (a batch no gear takes is a type error).
pub(super) fn tensor_struct(krate: &TokenStream, name: &str, v: &[Io], batch: bool) -> TokenStream {
    let ident = format_ident!("{name}");
    let (what, kind) = match name {
        "Inputs" => ("inputs", "Input"),
        _ => ("outputs", "Output"),
    };
    let fields = v.iter().map(|i| {
        let (f, t) = (&i.field, i.ty());
        let d = doc(format!(
            "{kind} `{}`: {}, C order (ONNX name `{}`).",
            i.spec.name,
            i.spec.describe(),
            i.spec.name
        ));
        quote!(#d pub #f: #t,)
    });
    let zeros = v.iter().map(|i| {
        let (f, z) = (&i.field, i.zero());
        quote!(#f: #z,)
    });
    let idents = v.iter().map(|i| &i.field);
    let bytes: usize = v
        .iter()
        .map(|i| i.spec.numel() * i.spec.dtype().size())
        .sum();
    let per = if batch { " at the largest batch" } else { "" };
    let struct_doc = doc(format!(
        "The model's {what}: {}{per} of tensors. `{name}::zeroed()` builds them by value (as \
         a local, on the stack); `{name}::boxed()` (feature `alloc`, part of the default \
         `std`) allocates them zeroed on the heap without touching the stack, and \
         `ge::StaticCell::new({name}::zeroed())` puts them in a `static`.",
        byte_size(bytes),
    ));
    let zeroed_doc = doc(
        "All zeros, by value: on the stack as a local (in a debug build even inside \
         `Box::new`); `boxed()` never is. Const, so it can initialize a `static`.",
    );
    let (generics, ty, bound, zeroable) = if batch {
        (
            quote!(<const N: usize>),
            quote!(#ident<N>),
            quote!(where Batch<N>: Fits),
            quote!(#krate::__zeroable!(#ident<const N: usize> where Batch<N>: Fits { #(#idents),* });),
        )
    } else {
        (
            quote!(),
            quote!(#ident),
            quote!(),
            quote!(#krate::__zeroable!(#ident { #(#idents),* });),
        )
    };
    quote! {
        #struct_doc
        #[derive(Clone, Debug, PartialEq)]
        pub struct #ident #generics #bound {
            #(#fields)*
        }

        #zeroable

        impl #generics #ty #bound {
            #zeroed_doc
            pub const fn zeroed() -> Self {
                #ident { #(#zeros)* }
            }
        }

        impl #generics Default for #ty #bound {
            fn default() -> Self {
                Self::zeroed()
            }
        }
    }
}
