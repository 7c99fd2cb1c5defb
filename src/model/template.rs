//! Templates with `{KEY}` placeholders: a bench's commands, `--prepare` and a `--metric`'s
//! JSON file name take each `--param`'s value through them (docs/bench.md).

use std::collections::BTreeMap;

use anyhow::{bail, Result};

/// The `{KEY}` names a text refers to; `{{` and `}}` are literal braces.
pub fn placeholders(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let _ = expand_with(text, |key| {
        found.push(key.to_owned());
        Some(String::new())
    });
    found
}

/// Replaces each `{KEY}` with its value from `values`; `{{` → `{`, `}}` → `}`.
pub fn expand(text: &str, values: &BTreeMap<String, String>) -> Result<String> {
    expand_with(text, |key| values.get(key).cloned())
}

fn expand_with(text: &str, mut value: impl FnMut(&str) -> Option<String>) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['{', '}']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        if let Some(after) = tail.strip_prefix('}') {
            out.push('}');
            rest = after;
            continue;
        }
        let close = tail.find('}');
        let key = close.map(|c| &tail[1..c]);
        match key {
            Some(key)
                if !key.is_empty()
                    && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                match value(key) {
                    Some(v) => out.push_str(&v),
                    None => bail!("{{{key}}} has no value"),
                }
                rest = &tail[key.len() + 2..];
            }
            // Not a placeholder (`{ x }`, `awk '{print}'` has one though): keep the brace.
            _ => {
                out.push('{');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_expand_and_braces_escape() {
        let c = BTreeMap::from([("res".to_owned(), "720p".to_owned())]);
        assert_eq!(expand("--size={res}", &c).unwrap(), "--size=720p");
        assert_eq!(expand("{{res}}", &c).unwrap(), "{res}");
        assert_eq!(expand("awk '{ print }'", &c).unwrap(), "awk '{ print }'");
        assert!(expand("{codec}", &c).is_err());
        assert_eq!(placeholders("{a}-{b}{{c}}"), ["a", "b"]);
    }
}
