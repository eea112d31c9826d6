//! Rust names from ONNX names: snake case for fields and modules, upper camel case for
//! types, keywords avoided, collisions resolved by a numeric suffix.

use std::collections::HashSet;

/// Rust keywords (strict and reserved, all editions) and names that cannot be raw idents.
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof",
    "unsafe", "unsized", "use", "virtual", "where", "while", "yield", "union", "Self",
];

/// Splits `name` into lowercase words at non-alphanumerics and camel-case boundaries
/// (`conv1/Relu:0` → `conv1`, `relu`, `0`; `HTTPServer` → `http`, `server`).
fn words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_ascii_uppercase() && !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase() || (prev.is_ascii_uppercase() && next_lower) {
                words.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// `snake_case` identifier for `name` (`"Input:0"` → `input_0`, `"type"` → `type_`,
/// `"1x"` → `t_1x`, `""` → `tensor`).
pub fn snake_case(name: &str) -> String {
    let mut s = words(name).join("_");
    if s.is_empty() {
        s = "tensor".into();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "t_");
    }
    if KEYWORDS.contains(&s.as_str()) {
        s.push('_');
    }
    s
}

/// `UpperCamelCase` identifier for `name` (`"resnet50"` → `Resnet50`, `"mobilenet-v2"` →
/// `MobilenetV2`).
pub fn camel_case(name: &str) -> String {
    let mut s: String = words(name)
        .iter()
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    if s.is_empty() {
        s = "Model".into();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, 'M');
    }
    if KEYWORDS.contains(&s.as_str()) {
        s.push('_');
    }
    s
}

/// Snake-case names for `names`, unique among themselves and distinct from `reserved`:
/// the second `input_0` becomes `input_0_2`, and so on.
pub fn unique_snake(names: &[&str], reserved: &[&str]) -> Vec<String> {
    let mut taken: HashSet<String> = reserved.iter().map(|s| s.to_string()).collect();
    names
        .iter()
        .map(|n| {
            let base = snake_case(n);
            let mut candidate = base.clone();
            let mut k = 2;
            while taken.contains(&candidate) {
                candidate = format!("{base}_{k}");
                k += 1;
            }
            taken.insert(candidate.clone());
            candidate
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake() {
        assert_eq!(snake_case("x"), "x");
        assert_eq!(snake_case("Input3"), "input3");
        assert_eq!(snake_case("data_0"), "data_0");
        assert_eq!(snake_case("conv1/Relu:0"), "conv1_relu_0");
        assert_eq!(snake_case("gpu_0/softmax_1"), "gpu_0_softmax_1");
        assert_eq!(snake_case("HTTPServer"), "http_server");
        assert_eq!(snake_case("outputLogits"), "output_logits");
        assert_eq!(snake_case("type"), "type_");
        assert_eq!(snake_case("self"), "self_");
        assert_eq!(snake_case("0"), "t_0");
        assert_eq!(snake_case(":::"), "tensor");
        assert_eq!(snake_case("ünï"), "n");
    }

    #[test]
    fn camel() {
        assert_eq!(camel_case("resnet50"), "Resnet50");
        assert_eq!(camel_case("mobilenet-v2"), "MobilenetV2");
        assert_eq!(camel_case("digits"), "Digits");
        assert_eq!(camel_case("bvlc_alexnet"), "BvlcAlexnet");
        assert_eq!(camel_case("Digits"), "Digits");
        assert_eq!(camel_case("3d"), "M3d");
        assert_eq!(camel_case("-"), "Model");
    }

    #[test]
    fn collisions() {
        let got = unique_snake(&["a:0", "a_0", "A_0", "b"], &["b"]);
        assert_eq!(got, ["a_0", "a_0_2", "a_0_3", "b_2"]);
    }
}
