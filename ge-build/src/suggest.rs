//! "Did you mean …": the closest known name to a misspelt one, for option and list errors.

/// Levenshtein distance between `a` and `b` (by chars). O(|a|·|b|) time, O(|b|) space.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The known name closest to `name` (case-insensitively), if one is close enough to be a
/// plausible misspelling (within a third of the name's length, at least 2 edits), else the
/// shortest known name containing it (`fp16` → `force_fp16`). O(known · |name| · |known|).
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let limit = (name.chars().count() / 3).max(2);
    let scored: Vec<(usize, &str, String)> = known
        .into_iter()
        .map(|k| {
            let kl = k.to_lowercase();
            (distance(&lower, &kl), k, kl)
        })
        .collect();
    let near = scored
        .iter()
        .filter(|(d, _, _)| *d <= limit)
        .min_by_key(|(d, _, _)| *d);
    let containing = || {
        scored
            .iter()
            .filter(|(_, _, kl)| !lower.is_empty() && kl.contains(&lower))
            .min_by_key(|(_, k, _)| k.len())
    };
    near.or_else(containing).map(|(_, k, _)| *k)
}

/// `"; did you mean 'X'?"` for the closest known name, or nothing.
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, known).map_or_else(String::new, |k| format!("; did you mean '{k}'?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("conv", "conv"), 0);
    }

    #[test]
    fn closest_names() {
        let known = ["force_fp16", "force_fp32", "allow_mix_precision"];
        assert_eq!(closest("force_fp61", known), Some("force_fp16"));
        assert_eq!(
            closest("alow_mix_precison", known),
            Some("allow_mix_precision")
        );
        assert_eq!(closest("softmax", known), None);
        assert_eq!(closest("fp16", known), Some("force_fp16"));
        assert_eq!(closest("Softmx", ["Softmax", "Relu"]), Some("Softmax"));
        assert_eq!(did_you_mean("zzz", known), "");
    }
}
