//! The arguments of `ge_model!`:
//!
//! ```text
//! ge_model!( [VIS] [Name =] "path.onnx" (, OPTION)* [,] )
//! OPTION := opt_level = 0..3 | "O2" | O2
//!         | precision = "force_fp32" | "allow_mix_precision" | force_fp16 | …
//!         | device = "edge" | edge | "profile.json"
//!         | cores = N
//!         | host_dispatch = true | false
//!         | memory_reuse = true | false | "on" | "off"
//!         | fusion_switch = "switch.json"
//!         | max_nodes = N | max_tensor_bytes = N | "64M" | max_weight_bytes = … | max_arena_bytes = …
//!         | input_shape(NAME = [D1, D2, …], "name:0" = […], …)
//!         | input_value(NAME = "value.npy", …)        (or a TensorProto .pb file)
//!         | crate = path::to::ge
//! ```

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, Lit, LitInt, LitStr, Token, Visibility};

/// Options `ge_model!` understands (the CLI's compile flags, in macro form).
pub const OPTIONS: &[&str] = &[
    "opt_level",
    "precision",
    "device",
    "cores",
    "host_dispatch",
    "memory_reuse",
    "fusion_switch",
    "max_nodes",
    "max_tensor_bytes",
    "max_weight_bytes",
    "max_arena_bytes",
    "input_shape",
    "input_value",
    "crate",
];

/// An option's value as written.
pub enum Value {
    Lit(Lit),
    Ident(Ident),
    Path(syn::Path),
}

impl Value {
    pub fn span(&self) -> Span {
        match self {
            Value::Lit(l) => l.span(),
            Value::Ident(i) => i.span(),
            Value::Path(p) => p
                .segments
                .last()
                .map_or_else(Span::call_site, |s| s.ident.span()),
        }
    }

    /// A string-like value: a string literal, an identifier, or an integer literal.
    pub fn text(&self) -> Option<String> {
        match self {
            Value::Lit(Lit::Str(s)) => Some(s.value()),
            Value::Lit(Lit::Int(i)) => Some(i.base10_digits().to_string()),
            Value::Ident(i) => Some(i.to_string()),
            _ => None,
        }
    }
}

/// One `input_shape` entry.
pub struct ShapeArg {
    pub name: String,
    pub span: Span,
    pub dims: Vec<usize>,
}

/// One `input_value` entry.
pub struct ValueArg {
    pub name: String,
    pub span: Span,
    pub file: LitStr,
}

/// One option.
pub struct OptArg {
    pub key: Ident,
    pub value: Option<Value>,
    pub shapes: Vec<ShapeArg>,
    pub values: Vec<ValueArg>,
}

/// Everything between the parentheses.
pub struct Args {
    pub vis: Visibility,
    pub name: Option<Ident>,
    pub path: LitStr,
    pub options: Vec<OptArg>,
}

/// An input name: an identifier or a string literal.
fn parse_input_name(input: ParseStream) -> syn::Result<(String, Span)> {
    let (name, span) = if input.peek(LitStr) {
        let s: LitStr = input.parse()?;
        (s.value(), s.span())
    } else {
        let i = input.call(Ident::parse_any)?;
        (i.to_string(), i.span())
    };
    input.parse::<Token![=]>()?;
    Ok((name, span))
}

fn parse_value(input: ParseStream) -> syn::Result<ValueArg> {
    let (name, span) = parse_input_name(input)?;
    Ok(ValueArg {
        name,
        span,
        file: input.parse()?,
    })
}

fn parse_shape(input: ParseStream) -> syn::Result<ShapeArg> {
    let (name, span) = parse_input_name(input)?;
    let content;
    syn::bracketed!(content in input);
    let dims = content.parse_terminated(LitInt::parse, Token![,])?;
    let dims = dims
        .iter()
        .map(|d| d.base10_parse::<usize>())
        .collect::<syn::Result<Vec<_>>>()?;
    Ok(ShapeArg { name, span, dims })
}

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let vis: Visibility = input.parse()?;
        let name = if input.peek(Ident) && input.peek2(Token![=]) {
            let n: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            Some(n)
        } else {
            None
        };
        if !input.peek(LitStr) {
            return Err(input.error(
                "expected the model's path as a string literal, e.g. \
                 `ge_model!(\"models/digits.onnx\")` or `ge_model!(pub Digits = \"models/digits.onnx\")`",
            ));
        }
        let path: LitStr = input.parse()?;
        let mut options: Vec<OptArg> = Vec::new();
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key = input.call(Ident::parse_any)?;
            let name = key.to_string();
            if !OPTIONS.contains(&name.as_str()) {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "unknown option `{name}`; ge_model! takes {}",
                        OPTIONS.join(", ")
                    ),
                ));
            }
            if options.iter().any(|o| o.key == key) {
                return Err(syn::Error::new(
                    key.span(),
                    format!("option `{name}` is given twice"),
                ));
            }
            if name == "input_shape" {
                let content;
                syn::parenthesized!(content in input);
                let shapes = content.parse_terminated(parse_shape, Token![,])?;
                options.push(OptArg {
                    key,
                    value: None,
                    shapes: shapes.into_iter().collect(),
                    values: Vec::new(),
                });
                continue;
            }
            if name == "input_value" {
                let content;
                syn::parenthesized!(content in input);
                let values = content.parse_terminated(parse_value, Token![,])?;
                options.push(OptArg {
                    key,
                    value: None,
                    shapes: Vec::new(),
                    values: values.into_iter().collect(),
                });
                continue;
            }
            input.parse::<Token![=]>()?;
            let value = if name == "crate" {
                Value::Path(input.call(syn::Path::parse_mod_style)?)
            } else if input.peek(Ident) {
                Value::Ident(input.parse()?)
            } else {
                Value::Lit(input.parse()?)
            };
            options.push(OptArg {
                key,
                value: Some(value),
                shapes: Vec::new(),
                values: Vec::new(),
            });
        }
        Ok(Args {
            vis,
            name,
            path,
            options,
        })
    }
}
