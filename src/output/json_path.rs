//! A small JSON path: `$`, then `.key`, `["key"]` or `[index]` steps (`$.runs[0].p99`).
//! Enough to point at one number in a result file; no wildcards or filters.

use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// Parses `$.a.b[0]["c d"]`.
pub fn parse(path: &str) -> Result<Vec<Step>, String> {
    let Some(mut rest) = path.strip_prefix('$') else {
        return Err(format!(
            "the path '{path}' must start with $, e.g. $.throughput or $.runs[0].p99"
        ));
    };
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let key = &after[..end];
            if key.is_empty() {
                return Err(format!(
                    "the path '{path}' has an empty key (after a '.'); write $.a.b"
                ));
            }
            steps.push(Step::Key(key.to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let Some(close) = after.find(']') else {
                return Err(format!("the path '{path}' has a '[' without ']'"));
            };
            let inside = after[..close].trim();
            let quoted = inside
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .or_else(|| inside.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')));
            match (quoted, inside.parse::<usize>()) {
                (Some(key), _) => steps.push(Step::Key(key.to_owned())),
                (None, Ok(index)) => steps.push(Step::Index(index)),
                _ => {
                    return Err(format!(
                        "the path '{path}' has [{inside}]: an index is a number from 0 ([0]), a \
                         key is quoted ([\"a key\"])"
                    ))
                }
            }
            rest = &after[close + 1..];
        } else {
            return Err(format!(
                "the path '{path}' goes on with '{rest}': steps are .key, [\"key\"] or [index]"
            ));
        }
    }
    Ok(steps)
}

/// The value at `steps`, or why there is none (what is there instead, in words).
pub fn find<'a>(document: &'a Value, path: &str, steps: &[Step]) -> Result<&'a Value, String> {
    let mut here = document;
    let mut walked = String::from("$");
    for step in steps {
        let next = match (step, here) {
            (Step::Key(key), Value::Object(map)) => map.get(key).ok_or_else(|| {
                let mut keys: Vec<&str> = map.keys().map(String::as_str).take(12).collect();
                if map.len() > keys.len() {
                    keys.push("…");
                }
                format!(
                    "has no {path}: {walked} has no key '{key}' (it has {})",
                    if keys.is_empty() {
                        "none".to_owned()
                    } else {
                        keys.join(", ")
                    }
                )
            })?,
            (Step::Index(i), Value::Array(items)) => items.get(*i).ok_or_else(|| {
                format!(
                    "has no {path}: {walked} has {} item{} (indexes start at 0)",
                    items.len(),
                    if items.len() == 1 { "" } else { "s" }
                )
            })?,
            (step, other) => {
                return Err(format!(
                    "has no {path}: {walked} is {}, not {}",
                    kind(other),
                    match step {
                        Step::Key(_) => "an object",
                        Step::Index(_) => "an array",
                    }
                ))
            }
        };
        match step {
            Step::Key(k) => walked.push_str(&format!(".{k}")),
            Step::Index(i) => walked.push_str(&format!("[{i}]")),
        }
        here = next;
    }
    Ok(here)
}

/// "a string", "an object", ... for messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_of_a_path() {
        assert_eq!(
            parse(r#"$.runs[2]["p 99"].v"#).unwrap(),
            [
                Step::Key("runs".into()),
                Step::Index(2),
                Step::Key("p 99".into()),
                Step::Key("v".into())
            ]
        );
        assert_eq!(parse("$").unwrap(), []);
        assert!(parse("runs").unwrap_err().contains("must start with $"));
        assert!(parse("$..a").unwrap_err().contains("empty key"));
        assert!(parse("$.a[x]").unwrap_err().contains("index is a number"));
        assert!(parse("$.a[0").unwrap_err().contains("without ']'"));
    }

    #[test]
    fn absent_values_say_what_is_there() {
        let doc: Value = serde_json::from_str(r#"{"a": {"b": [1, 2]}, "c": "x"}"#).unwrap();
        let at = |p: &str| find(&doc, p, &parse(p).unwrap());
        assert_eq!(at("$.a.b[1]").unwrap(), &Value::from(2));
        assert_eq!(
            at("$.a.x").unwrap_err(),
            "has no $.a.x: $.a has no key 'x' (it has b)"
        );
        assert_eq!(
            at("$.a.b[5]").unwrap_err(),
            "has no $.a.b[5]: $.a.b has 2 items (indexes start at 0)"
        );
        assert_eq!(
            at("$.c.d").unwrap_err(),
            "has no $.c.d: $.c is a string, not an object"
        );
    }
}
