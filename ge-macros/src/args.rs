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
//!         | int8_rounding = onnx | tflite               (whose int8 arithmetic: onnxruntime's, TFLite Micro's)
//!         | fusion_switch = "switch.json"
//!         | max_nodes = N | max_tensor_bytes = N | "64M" | max_weight_bytes = … | max_arena_bytes = …
//!         | max_fold_bytes = …                        (largest value folded at compile time)
//!         | input_shape(NAME = [D1, D2, …], "name:0" = […], …)   (-1: a dim the gears set)
//!         | gears(batch = [B1, B2, …] [, pad = batch | spatial])
//!         | gears(image_size = [[H, W], [H, W], …] [, pad = …])
//!         | gears(NAME = [[D1, …], [D1, …], …], "name:0" = [[…], …] [, pad = …])
//!         | input_value(NAME = "value.npy", …)        (or a TensorProto .pb file)
//!         | quantize = "calib/dir"                     (post-training int8, as `ge quantize`)
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
    "int8_rounding",
    "fusion_switch",
    "max_nodes",
    "max_tensor_bytes",
    "max_weight_bytes",
    "max_arena_bytes",
    "max_fold_bytes",
    "input_shape",
    "input_value",
    "quantize",
    "gears",
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

/// One `input_shape` entry; `None` is a `-1` dim, which the gears set.
pub struct ShapeArg {
    pub name: String,
    pub span: Span,
    pub dims: Vec<Option<usize>>,
}

/// The gears of `gears(…)`: one kind.
pub enum GearList {
    Batch(Vec<usize>),
    ImageSize(Vec<[usize; 2]>),
    /// Per input (name, its span), its gears' dims.
    Dims(Vec<(String, Span, Vec<Vec<usize>>)>),
}

impl GearList {
    fn kind(&self) -> &'static str {
        match self {
            GearList::Batch(_) => "`batch`",
            GearList::ImageSize(_) => "`image_size`",
            GearList::Dims(_) => "input dims",
        }
    }
}

/// `gears(…)`.
pub struct GearsArg {
    /// The gears and the span of their list (or first input).
    pub list: Option<(GearList, Span)>,
    /// `pad = batch | spatial` and its span.
    pub pad: Option<(String, Span)>,
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
    pub gears: Option<GearsArg>,
}

impl OptArg {
    fn new(key: Ident) -> OptArg {
        OptArg {
            key,
            value: None,
            shapes: Vec::new(),
            values: Vec::new(),
            gears: None,
        }
    }
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
    let dims = content.parse_terminated(
        |d: ParseStream| {
            if d.peek(Token![-]) {
                d.parse::<Token![-]>()?;
                let one: LitInt = d.parse()?;
                if one.base10_digits() != "1" {
                    return Err(syn::Error::new(
                        one.span(),
                        "a dim is a non-negative integer, or -1 for one the gears set",
                    ));
                }
                return Ok(None);
            }
            Ok(Some(d.parse::<LitInt>()?.base10_parse::<usize>()?))
        },
        Token![,],
    )?;
    Ok(ShapeArg {
        name,
        span,
        dims: dims.into_iter().collect(),
    })
}

/// `[1, 4, 8]`: positive integers.
fn positive_list(input: ParseStream) -> syn::Result<Vec<usize>> {
    let content;
    syn::bracketed!(content in input);
    let items = content.parse_terminated(LitInt::parse, Token![,])?;
    items
        .iter()
        .map(|d| match d.base10_parse::<usize>()? {
            0 => Err(syn::Error::new(d.span(), "gear dims are positive integers")),
            v => Ok(v),
        })
        .collect()
}

/// `[[48, 320], [48, 960]]`.
fn nested_lists(input: ParseStream) -> syn::Result<Vec<Vec<usize>>> {
    let content;
    syn::bracketed!(content in input);
    let lists = content.parse_terminated(positive_list, Token![,])?;
    Ok(lists.into_iter().collect())
}

/// The inside of `gears(…)`.
fn parse_gears(input: ParseStream) -> syn::Result<GearsArg> {
    let mut g = GearsArg {
        list: None,
        pad: None,
    };
    while !input.is_empty() {
        let (key, span, quoted) = if input.peek(LitStr) {
            let s: LitStr = input.parse()?;
            (s.value(), s.span(), true)
        } else {
            let i = input.call(Ident::parse_any)?;
            (i.to_string(), i.span(), false)
        };
        input.parse::<Token![=]>()?;
        if !quoted && key == "pad" {
            if g.pad.is_some() {
                return Err(syn::Error::new(span, "`pad` is given twice"));
            }
            let v = if input.peek(LitStr) {
                let s: LitStr = input.parse()?;
                (s.value(), s.span())
            } else {
                let i: Ident = input.parse()?;
                (i.to_string(), i.span())
            };
            g.pad = Some(v);
        } else {
            let list_span = input.span();
            let new = match key.as_str() {
                "batch" if !quoted => GearList::Batch(positive_list(input)?),
                "image_size" if !quoted => {
                    let hws = nested_lists(input)?;
                    let hws = hws
                        .iter()
                        .map(|hw| match hw[..] {
                            [h, w] => Ok([h, w]),
                            _ => Err(syn::Error::new(list_span, "each image size is [H, W]")),
                        })
                        .collect::<syn::Result<Vec<_>>>()?;
                    GearList::ImageSize(hws)
                }
                _ => GearList::Dims(vec![(key.clone(), span, nested_lists(input)?)]),
            };
            match (&mut g.list, new) {
                (None, new) => g.list = Some((new, span)),
                (Some((GearList::Dims(have), _)), GearList::Dims(mut more)) => {
                    if have.iter().any(|(n, ..)| *n == key) {
                        return Err(syn::Error::new(
                            span,
                            format!("input `{key}` is given gears twice"),
                        ));
                    }
                    have.append(&mut more);
                }
                (Some((old, _)), new) => {
                    return Err(syn::Error::new(
                        span,
                        format!(
                            "`gears` takes one kind of gears, but {} follows {}: give \
                             `batch = [B, …]`, `image_size = [[H, W], …]` or input dims \
                             (`x = [[D, …], …]`), not several",
                            new.kind(),
                            old.kind()
                        ),
                    ));
                }
            }
        }
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(g)
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
                    shapes: shapes.into_iter().collect(),
                    ..OptArg::new(key)
                });
                continue;
            }
            if name == "input_value" {
                let content;
                syn::parenthesized!(content in input);
                let values = content.parse_terminated(parse_value, Token![,])?;
                options.push(OptArg {
                    values: values.into_iter().collect(),
                    ..OptArg::new(key)
                });
                continue;
            }
            if name == "gears" {
                let content;
                syn::parenthesized!(content in input);
                let gears = parse_gears(&content)?;
                options.push(OptArg {
                    gears: Some(gears),
                    ..OptArg::new(key)
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
                value: Some(value),
                ..OptArg::new(key)
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
