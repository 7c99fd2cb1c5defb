//! `--tag KEY=VALUE` (run, bench, import): a piece of the run's configuration kept with
//! it (schema 8's `run_tags`), shown in the report's header and carried into history.

use anyhow::Result;

use crate::display;
use crate::model::Tag;

/// The tags given, checked: each `KEY=VALUE`, a key of letters, digits, `_`, `-` or `.`,
/// no key twice. A value is kept as given; outputs escape what a terminal would act on.
pub fn parse_tags(texts: &[String]) -> Result<Vec<Tag>> {
    let mut tags: Vec<Tag> = Vec::new();
    for text in texts {
        let Some((key, value)) = text.split_once('=') else {
            crate::bail_usage!(
                "--tag {}: give it as KEY=VALUE, e.g. --tag build=release",
                display::text(text)
            );
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            crate::bail_usage!(
                "--tag {}: the key before '=' must be letters, digits, '_', '-' or '.'",
                display::text(text)
            );
        }
        if let Some(first) = tags.iter().find(|t| t.key == key) {
            crate::bail_usage!(
                "--tag {key} is given twice ({key}={} and {key}={}): give each key once",
                display::name(&first.value),
                display::name(value)
            );
        }
        tags.push(Tag {
            key: key.to_owned(),
            value: value.to_owned(),
        });
    }
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(texts: &[&str]) -> Result<Vec<Tag>> {
        parse_tags(&texts.iter().map(|t| t.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn tags_parse_in_order_and_bad_ones_say_why() {
        let tags = parse(&["build=release", "cc=gcc 14", "note="]).unwrap();
        let pairs: Vec<(&str, &str)> = (tags.iter())
            .map(|t| (t.key.as_str(), t.value.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [("build", "release"), ("cc", "gcc 14"), ("note", "")]
        );
        let err = |texts: &[&str]| parse(texts).unwrap_err().to_string();
        assert!(err(&["release"]).contains("give it as KEY=VALUE"));
        assert!(err(&["=x"]).contains("the key before '='"));
        assert_eq!(
            err(&["build=a", "build=b\x1b[2J"]),
            "--tag build is given twice (build=a and build=b\\x1b[2J): give each key once"
        );
    }
}
