//! A small JSON path: `$`, then `.key`, `["key"]` or `[index]` steps (`$.runs[0].p99`).
//! Enough to point at one number in a result file; no wildcards or filters.

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

/// What a path points at: a number or a string is kept, anything else only said.
#[derive(Clone, Debug, PartialEq)]
pub enum Leaf {
    Number(f64),
    Text(String),
    /// Its kind ("an object") and, for a scalar, its text.
    Other {
        kind: &'static str,
        shown: String,
    },
}

/// The value at `steps` in the JSON read from `reader`, or why there is none (what is
/// there instead, in words). Read as a stream: everything off the path is skipped, so
/// memory stays small whatever the file's size (a whole document held as values takes
/// some 17 times its text). The outer error is the file's JSON being broken.
pub fn find_in(
    reader: impl std::io::Read,
    path: &str,
    steps: &[Step],
) -> Result<Result<Leaf, String>, serde_json::Error> {
    use serde::de::DeserializeSeed;
    let mut json = serde_json::Deserializer::from_reader(std::io::BufReader::new(reader));
    let found = Walk {
        steps,
        path,
        walked: "$".to_owned(),
    }
    .deserialize(&mut json)?;
    json.end()?;
    Ok(found)
}

/// The rest of a path to walk, and the part walked (for messages).
struct Walk<'a> {
    steps: &'a [Step],
    path: &'a str,
    walked: String,
}

impl Walk<'_> {
    fn next(&self) -> Walk<'_> {
        let mut walked = self.walked.clone();
        match &self.steps[0] {
            Step::Key(k) => walked.push_str(&format!(".{k}")),
            Step::Index(i) => walked.push_str(&format!("[{i}]")),
        }
        Walk {
            steps: &self.steps[1..],
            path: self.path,
            walked,
        }
    }

    /// A value of `kind` where the path goes on: why there is nothing at the path.
    fn not_a_container(&self, kind: &str) -> String {
        format!(
            "has no {}: {} is {kind}, not {}",
            self.path,
            self.walked,
            match self.steps[0] {
                Step::Key(_) => "an object",
                Step::Index(_) => "an array",
            }
        )
    }

    /// A scalar: the leaf, or a dead end when the path goes on.
    fn scalar(self, kind: &'static str, leaf: impl FnOnce() -> Leaf) -> Result<Leaf, String> {
        if self.steps.is_empty() {
            Ok(leaf())
        } else {
            Err(self.not_a_container(kind))
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Walk<'_> {
    type Value = Result<Leaf, String>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Walk<'_> {
    type Value = Result<Leaf, String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(self.scalar("a boolean", || Leaf::Other {
            kind: "a boolean",
            shown: v.to_string(),
        }))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(self.scalar("null", || Leaf::Other {
            kind: "null",
            shown: "null".into(),
        }))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(self.scalar("a number", || Leaf::Number(v as f64)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(self.scalar("a number", || Leaf::Number(v as f64)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(self.scalar("a number", || Leaf::Number(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.scalar("a string", || Leaf::Text(v.to_owned())))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::IgnoredAny;
        let Some(Step::Key(key)) = self.steps.first() else {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(self.scalar("an object", || Leaf::Other {
                kind: "an object",
                shown: "{…}".into(),
            }));
        };
        let (mut found, mut others) = (None, Vec::new());
        while let Some(k) = map.next_key::<String>()? {
            if found.is_none() && k == *key {
                found = Some(map.next_value_seed(self.next())?);
            } else {
                // A dozen names say what the object holds; more only say there are more.
                if others.len() <= 12 {
                    others.push(k);
                }
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found.unwrap_or_else(|| {
            if others.len() > 12 {
                others[12] = "…".into();
            }
            Err(format!(
                "has no {}: {} has no key '{key}' (it has {})",
                self.path,
                self.walked,
                if others.is_empty() {
                    "none".to_owned()
                } else {
                    others.join(", ")
                }
            ))
        }))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        use serde::de::IgnoredAny;
        let Some(&Step::Index(wanted)) = self.steps.first() else {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(self.scalar("an array", || Leaf::Other {
                kind: "an array",
                shown: "[…]".into(),
            }));
        };
        let (mut found, mut items) = (None, 0usize);
        loop {
            let more = if items == wanted {
                seq.next_element_seed(self.next())?
                    .map(|leaf| found = Some(leaf))
                    .is_some()
            } else {
                seq.next_element::<IgnoredAny>()?.is_some()
            };
            if !more {
                break;
            }
            items += 1;
        }
        Ok(found.unwrap_or_else(|| {
            Err(format!(
                "has no {}: {} has {items} item{} (indexes start at 0)",
                self.path,
                self.walked,
                if items == 1 { "" } else { "s" }
            ))
        }))
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
        let doc = r#"{"a": {"b": [1, 2]}, "c": "x"}"#;
        let at = |p: &str| find_in(doc.as_bytes(), p, &parse(p).unwrap()).unwrap();
        assert_eq!(at("$.a.b[1]").unwrap(), Leaf::Number(2.0));
        assert_eq!(at("$.c").unwrap(), Leaf::Text("x".into()));
        assert!(matches!(
            at("$.a").unwrap(),
            Leaf::Other {
                kind: "an object",
                ..
            }
        ));
        assert!(find_in(&b"{\"a\": 1} x"[..], "$.a", &parse("$.a").unwrap()).is_err());
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
