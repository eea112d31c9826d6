//! Gears (atc's `--dynamic_batch_size` / `--dynamic_image_size` / `--dynamic_dims`): the
//! options, their parsing, and their resolution against a model's inputs into one full set
//! of input shapes per gear. The compiler then runs the whole pipeline once per gear
//! ([`crate::compile_bytes`]) and emits one blob ([`crate::om::emit_gears`]).

use std::collections::{BTreeMap, BTreeSet};

use ge_runtime::format::{GEAR_PAD_ANY, GEAR_PAD_BATCH, MAX_GEARS};

use crate::error::{CompileError, Result};
use crate::onnx::proto::GraphProto;
use crate::options::CompileOptions;

/// The gears asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum GearSpec {
    /// One static shape (no gears).
    #[default]
    None,
    /// `--dynamic-batch 1,2,4,8`: dim 0 of every input whose dim 0 is symbolic (or `-1`).
    Batch(Vec<usize>),
    /// `--dynamic-image-size "H,W;H,W"`: the spatial dims of every rank-4 input whose H and W
    /// (NCHW dims 2, 3, else NHWC dims 1, 2) are symbolic (or `-1`).
    ImageSize(Vec<[usize; 2]>),
    /// `--dynamic-dims "x:D,D;x:D,D"`: per gear and named input, one value per symbolic dim
    /// (or the full shape); an input named k times has k gears, and every named input the
    /// same number.
    Dims(Vec<BTreeMap<String, Vec<usize>>>),
}

/// Which dims `Session::run` may zero-pad up to the chosen gear's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GearPad {
    /// Only dim 0 of `--dynamic-batch` gears (rows of zeros the outputs' cut drops).
    #[default]
    Batch,
    /// Any gear dim, zeros at its end (`--gear-pad spatial`): ops over a padded axis
    /// (Softmax, pooling, recurrences) then see the zeros, which the user accepts.
    Spatial,
}

impl std::str::FromStr for GearPad {
    type Err = CompileError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "batch" => Ok(GearPad::Batch),
            "spatial" => Ok(GearPad::Spatial),
            _ => Err(CompileError::Option(format!(
                "--gear-pad '{s}' must be batch or spatial"
            ))),
        }
    }
}

fn opt_err(flag: &str, spec: &str, why: &str) -> CompileError {
    CompileError::Option(format!("{flag} '{spec}': {why}"))
}

fn numbers(flag: &str, spec: &str, list: &str) -> Result<Vec<usize>> {
    list.split(',')
        .map(|d| d.trim().parse::<usize>().ok().filter(|&d| d > 0))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| opt_err(flag, spec, "values must be positive integers"))
}

impl GearSpec {
    /// Parses `--dynamic-batch 1,2,4,8`.
    pub fn parse_batch(spec: &str) -> Result<GearSpec> {
        Ok(GearSpec::Batch(numbers("--dynamic-batch", spec, spec)?))
    }

    /// Parses `--dynamic-image-size "H,W;H,W"`.
    pub fn parse_image_size(spec: &str) -> Result<GearSpec> {
        let flag = "--dynamic-image-size";
        spec.split(';')
            .map(|g| match numbers(flag, spec, g)?[..] {
                [h, w] => Ok([h, w]),
                _ => Err(opt_err(flag, spec, "each gear is H,W")),
            })
            .collect::<Result<Vec<_>>>()
            .map(GearSpec::ImageSize)
    }

    /// Parses `--dynamic-dims "NAME:D1,D2;NAME:D1,D2"`: gear k takes the k-th entry of each
    /// input named.
    pub fn parse_dims(spec: &str) -> Result<GearSpec> {
        let flag = "--dynamic-dims";
        let mut per_input: BTreeMap<String, Vec<Vec<usize>>> = BTreeMap::new();
        for item in spec.split(';') {
            let (name, dims) = item
                .rsplit_once(':')
                .ok_or_else(|| opt_err(flag, spec, "each gear is NAME:D1,D2,..."))?;
            per_input
                .entry(name.trim().to_string())
                .or_default()
                .push(numbers(flag, spec, dims)?);
        }
        GearSpec::dims(per_input).map_err(|why| opt_err(flag, spec, &why))
    }

    /// Dims gears from each input's list of gears (gear k takes the k-th entry of each);
    /// the reason when the lists' lengths differ.
    pub fn dims(
        per_input: BTreeMap<String, Vec<Vec<usize>>>,
    ) -> std::result::Result<GearSpec, String> {
        let count = per_input.values().map(Vec::len).max().unwrap_or(0);
        if per_input.values().any(|v| v.len() != count) {
            return Err("every input named must have the same number of gears".into());
        }
        Ok(GearSpec::Dims(
            (0..count)
                .map(|k| {
                    per_input
                        .iter()
                        .map(|(n, v)| (n.clone(), v[k].clone()))
                        .collect()
                })
                .collect(),
        ))
    }

    /// Number of gears (0 for [`GearSpec::None`]).
    pub fn len(&self) -> usize {
        match self {
            GearSpec::None => 0,
            GearSpec::Batch(v) => v.len(),
            GearSpec::ImageSize(v) => v.len(),
            GearSpec::Dims(v) => v.len(),
        }
    }

    /// Whether no gears are asked for.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The flag name, for messages.
    fn flag(&self) -> &'static str {
        match self {
            GearSpec::None => "gears",
            GearSpec::Batch(_) => "--dynamic-batch",
            GearSpec::ImageSize(_) => "--dynamic-image-size",
            GearSpec::Dims(_) => "--dynamic-dims",
        }
    }
}

/// Sets `slot` to `spec`, refusing a second kind of gears (they are mutually exclusive).
pub fn set_gears(slot: &mut GearSpec, spec: GearSpec) -> Result<()> {
    if !slot.is_empty() && !spec.is_empty() {
        return Err(CompileError::Option(format!(
            "{} and {} are mutually exclusive: give one kind of gears",
            slot.flag(),
            spec.flag()
        )));
    }
    if !spec.is_empty() {
        *slot = spec;
    }
    Ok(())
}

/// The blob's `gear_flags` for these options.
pub fn gear_flags(opts: &CompileOptions) -> u32 {
    let batch = match opts.gears {
        GearSpec::Batch(_) => GEAR_PAD_BATCH,
        _ => 0,
    };
    let any = match opts.gear_pad {
        GearPad::Spatial => GEAR_PAD_ANY,
        GearPad::Batch => 0,
    };
    batch | any
}

/// Resolved gears: each gear's full input shapes (with the fixed `--input-shape`s), smallest
/// first, and the (input, dim) pairs gears set against the model file's fixed value.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub shapes: Vec<BTreeMap<String, Vec<usize>>>,
    pub overrides: BTreeSet<(String, usize)>,
}

/// An input's dims, `None` where a gear may set them.
type Template = Vec<Option<usize>>;

/// Resolves `opts.gears` against the graph's inputs. O(gears × inputs × rank).
pub fn resolve(gp: &GraphProto, opts: &CompileOptions) -> Result<Resolved> {
    let spec = &opts.gears;
    let flag = spec.flag();
    let n = spec.len();
    if n == 0 || n > MAX_GEARS {
        return Err(CompileError::Option(format!(
            "{flag} gives {n} gears; give 1 to {MAX_GEARS}"
        )));
    }
    let inits: BTreeSet<&str> = gp.initializer.iter().map(|t| t.name()).collect();
    // Each runtime input's dims: `None` where a gear may set them.
    let mut templates: Vec<(String, Template, Template)> = Vec::new();
    for vi in &gp.input {
        let name = vi.name();
        if inits.contains(name) || opts.input_values.contains_key(name) {
            continue;
        }
        let declared = crate::onnx::declared_dims(vi).unwrap_or_default();
        let t = match (opts.gear_inputs.get(name), opts.input_shapes.get(name)) {
            (Some(g), _) => {
                if g.len() != declared.len() && !declared.is_empty() {
                    return Err(CompileError::Input {
                        input: name.into(),
                        reason: format!(
                            "--input-shape gives rank {} but the model declares rank {}",
                            g.len(),
                            declared.len()
                        ),
                    });
                }
                g.clone()
            }
            (None, Some(fixed)) => fixed.iter().map(|&d| Some(d)).collect(),
            (None, None) => declared.clone(),
        };
        templates.push((name.to_string(), t, declared));
    }
    let mut shapes: Vec<BTreeMap<String, Vec<usize>>> = vec![opts.input_shapes.clone(); n];
    let mut set = |gear: usize, name: &str, t: &[Option<usize>], dims: &[(usize, usize)]| {
        let mut full = t.to_vec();
        for &(d, v) in dims {
            full[d] = Some(v);
        }
        let full = full
            .iter()
            .enumerate()
            .map(|(d, v)| {
                v.ok_or_else(|| CompileError::Input {
                    input: name.into(),
                    reason: format!(
                        "dim {d} is symbolic and {flag} does not set it; fix it with \
                         --input-shape {name}:D1,D2,... giving -1 for the dims the gears set"
                    ),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        shapes[gear].insert(name.to_string(), full);
        Ok::<(), CompileError>(())
    };
    let listing = || {
        templates
            .iter()
            .map(|(name, t, _)| {
                let dims: Vec<String> = t
                    .iter()
                    .map(|d| d.map_or("?".into(), |v| v.to_string()))
                    .collect();
                format!("{name} [{}]", dims.join(","))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut targets = 0;
    match spec {
        GearSpec::None => {}
        GearSpec::Batch(bs) => {
            for (name, t, _) in &templates {
                if t.first() == Some(&None) {
                    targets += 1;
                    for (k, &b) in bs.iter().enumerate() {
                        set(k, name, t, &[(0, b)])?;
                    }
                }
            }
        }
        GearSpec::ImageSize(hws) => {
            for (name, t, _) in &templates {
                let Some(axes) = image_axes(name, t, hws, flag)? else {
                    continue;
                };
                targets += 1;
                for (k, &[h, w]) in hws.iter().enumerate() {
                    set(k, name, t, &[(axes.0, h), (axes.1, w)])?;
                }
            }
        }
        GearSpec::Dims(gears) => {
            for (k, gear) in gears.iter().enumerate() {
                for (name, values) in gear {
                    let (_, t, _) =
                        templates.iter().find(|(n, ..)| n == name).ok_or_else(|| {
                            CompileError::Option(format!(
                                "{flag}: '{name}' is not an input of the model (inputs: {})",
                                listing()
                            ))
                        })?;
                    let free: Vec<usize> = (0..t.len()).filter(|&d| t[d].is_none()).collect();
                    let dims: Vec<(usize, usize)> = if values.len() == free.len() {
                        free.iter().copied().zip(values.iter().copied()).collect()
                    } else if values.len() == t.len() {
                        for (d, (&v, fixed)) in values.iter().zip(t).enumerate() {
                            if let Some(f) = fixed
                                && *f != v
                            {
                                return Err(CompileError::Option(format!(
                                    "{flag}: gear {k} sets dim {d} of '{name}' to {v}, but \
                                     it is fixed to {f}; give -1 for it in --input-shape"
                                )));
                            }
                        }
                        values.iter().copied().enumerate().collect()
                    } else {
                        return Err(CompileError::Option(format!(
                            "{flag}: gear {k} gives {} values for '{name}', which has {} \
                             symbolic dims (rank {}): give one value per symbolic dim or the \
                             full shape",
                            values.len(),
                            free.len(),
                            t.len()
                        )));
                    };
                    set(k, name, t, &dims)?;
                }
            }
            targets = 1;
        }
    }
    if targets == 0 {
        return Err(CompileError::Option(format!(
            "{flag}: no input has the dims it sets symbolic (inputs: {}); the model file or \
             --input-shape fixes them: give -1 for them with --input-shape NAME:-1,...",
            listing()
        )));
    }
    let mut order: Vec<usize> = (0..n).collect();
    let size = |m: &BTreeMap<String, Vec<usize>>| -> usize {
        m.values().map(|s| s.iter().product::<usize>()).sum()
    };
    order.sort_by_key(|&k| (size(&shapes[k]), k));
    let shapes: Vec<_> = order.into_iter().map(|k| shapes[k].clone()).collect();
    let mut seen = BTreeSet::new();
    if let Some(dup) = shapes.iter().find(|s| !seen.insert(*s)) {
        return Err(CompileError::Option(format!(
            "{flag}: two gears give the same shapes ({dup:?})"
        )));
    }
    let overrides = templates
        .iter()
        .flat_map(|(name, t, declared)| {
            (0..t.len())
                .filter(|&d| t[d].is_none() && declared.get(d).is_some_and(Option::is_some))
                .map(|d| (name.clone(), d))
        })
        .collect();
    Ok(Resolved { shapes, overrides })
}

/// Which axes of a rank-4 input `t` the image-size gears `hws` set: (H, W) = (2, 3) for
/// NCHW, (1, 2) for NHWC (channels last, its C fixed). An axis the model (or
/// `--input-shape`) fixes still qualifies when every gear gives it that same value — an OCR
/// recognizer's `[N, 3, 48, W]` under `48,320;48,960` — as long as one of the two is free.
/// `None` for an input the gears do not address; an error when the input has a free H or W
/// for the gears but fixes the other to a value a gear contradicts. O(gears).
fn image_axes(
    name: &str,
    t: &[Option<usize>],
    hws: &[[usize; 2]],
    flag: &str,
) -> Result<Option<(usize, usize)>> {
    if t.len() != 4 {
        return Ok(None);
    }
    let layouts = [((2, 3), true), ((1, 2), t[3].is_some())];
    // The first layout whose axes are free or agree with every gear.
    let mut conflict = None;
    for ((h, w), channels_fit) in layouts {
        if !channels_fit || (t[h].is_some() && t[w].is_some()) {
            continue;
        }
        let clash = [(h, 0), (w, 1)].into_iter().find_map(|(axis, i)| {
            let fixed = t[axis]?;
            let (k, gear) = hws.iter().enumerate().find(|(_, g)| g[i] != fixed)?;
            Some((axis, ["height", "width"][i], fixed, k, gear[i]))
        });
        match clash {
            None => return Ok(Some((h, w))),
            Some(c) => {
                conflict.get_or_insert(c);
            }
        }
    }
    match conflict {
        None => Ok(None),
        Some((axis, what, fixed, k, value)) => Err(CompileError::Option(format!(
            "{flag}: gear {k} sets the {what} (dim {axis}) of '{name}' to {value}, but \
             '{name}' fixes it to {fixed}; give gears whose {what} is {fixed}, or -1 for dim \
             {axis} with --input-shape {name}:D1,D2,..."
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses() {
        assert_eq!(
            GearSpec::parse_batch("1, 2,4").unwrap(),
            GearSpec::Batch(vec![1, 2, 4])
        );
        assert!(GearSpec::parse_batch("1,0").is_err());
        assert_eq!(
            GearSpec::parse_image_size("48,320;48,960").unwrap(),
            GearSpec::ImageSize(vec![[48, 320], [48, 960]])
        );
        assert!(GearSpec::parse_image_size("48,320,1").is_err());
        let d = GearSpec::parse_dims("x:1,32;x:1,128;y:4;y:8").unwrap();
        let GearSpec::Dims(g) = &d else { panic!() };
        assert_eq!(g.len(), 2);
        assert_eq!(g[1]["x"], vec![1, 128]);
        assert_eq!(g[1]["y"], vec![8]);
        assert!(GearSpec::parse_dims("x:1;x:2;y:3").is_err());
        let mut slot = GearSpec::parse_batch("1,2").unwrap();
        let e = set_gears(&mut slot, d).unwrap_err().to_string();
        assert!(e.contains("mutually exclusive"), "{e}");
    }

    #[test]
    fn image_gears_take_fixed_dims_that_every_gear_agrees_with() {
        let f = "--dynamic-image-size";
        let hws = [[48, 320], [48, 960]];
        let axes = |t: &[Option<usize>]| image_axes("x", t, &hws, f);
        // Free H and W, NCHW and NHWC.
        assert_eq!(axes(&[Some(1), Some(3), None, None]).unwrap(), Some((2, 3)));
        assert_eq!(axes(&[Some(1), None, None, Some(3)]).unwrap(), Some((1, 2)));
        // H fixed to the gears' 48: NCHW and NHWC.
        assert_eq!(
            axes(&[None, Some(3), Some(48), None]).unwrap(),
            Some((2, 3))
        );
        assert_eq!(
            axes(&[Some(1), Some(48), None, Some(3)]).unwrap(),
            Some((1, 2))
        );
        // Fully fixed, or not an image: not addressed.
        assert_eq!(
            axes(&[Some(1), Some(3), Some(48), Some(320)]).unwrap(),
            None
        );
        assert_eq!(axes(&[Some(1), None, None]).unwrap(), None);
        // H fixed to another value than a gear's: refused, naming the gear and the dim.
        let e = image_axes("x", &[None, Some(3), Some(32), None], &hws, f)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("gear 0 sets the height (dim 2) of 'x' to 48"),
            "{e}"
        );
        assert!(e.contains("fixes it to 32"), "{e}");
        let mixed = [[48, 320], [64, 320]];
        let e = image_axes("x", &[Some(1), Some(3), None, Some(320)], &mixed, f);
        assert_eq!(e.unwrap(), Some((2, 3)), "W fixed to every gear's 320");
        let e = image_axes("x", &[Some(1), Some(3), Some(48), None], &mixed, f)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("gear 1 sets the height (dim 2) of 'x' to 64"),
            "{e}"
        );
    }
}
