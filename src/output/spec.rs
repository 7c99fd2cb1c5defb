//! The one syntax of `--metric`:
//!
//! ```text
//! NAME[UNIT]:WORD:WORD=REGEX              a number the command prints
//! NAME[UNIT]:WORD=json:FILE:$.path[0].x   a number in a JSON file it writes
//! ```
//!
//! `[UNIT]` is optional (`req_s[req/s]`); the words, in any order, are `higher` or `lower`
//! (which way is better), `stdout` or `stderr` (default: both), `first` or `last` (which
//! match; default last). Everything after the first `=` is the regex (or the JSON source),
//! so a regex may hold `=` and `:` freely. The last word may be `after`: then the text up to
//! the next `=` is a regex too, and only lines after the first line matching it count
//! (`req_s:higher:after=warmup done=Requests per second:\s+([\d.]+)`). Every error says what was wrong and shows the
//! definition the user wrote with the fix applied where one is obvious.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::Direction;

/// Names a metric from output may not take: the built-in metrics of a comparison (and
/// names kept for the per-role metrics to come), so `--show NAME` is never ambiguous.
pub const RESERVED_NAMES: &[&str] = &[
    "fps",
    "late",
    "cpu_per_frame",
    "cpu_per_unit",
    "load",
    "cores",
    "peak_rss",
    "wall",
    "cpu",
    "total",
    "interval",
    "energy_per_frame",
];

/// The example every error ends with.
pub const EXAMPLE: &str = r"--metric 'req_s:higher=Requests per second:\s+([\d.]+)'";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
    /// Lines of both streams; the first or last match in the order they were read.
    #[default]
    Both,
}

impl Stream {
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
            Stream::Both => "stdout or stderr",
        }
    }

    pub fn reads_stdout(self) -> bool {
        self != Stream::Stderr
    }

    pub fn reads_stderr(self) -> bool {
        self != Stream::Stdout
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pick {
    First,
    /// The last match: a summary printed at the end wins over progress lines before it.
    #[default]
    Last,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum MetricSource {
    /// The first capture group of the first or last line of `stream` matching `regex`.
    Output {
        stream: Stream,
        pick: Pick,
        regex: String,
        /// `after=REGEX`: only lines after the first line of the stream matching it count
        /// (a load generator's warmup phase left out).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
    },
    /// The number at `path` (`$.a.b[0]`) in the JSON file `file`, read after the command
    /// ended; `{KEY}` in `file` takes a bench parameter's value.
    Json { file: String, path: String },
}

/// One `--metric` definition, checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricSpec {
    pub name: String,
    /// `[UNIT]` as given, or empty.
    pub unit: String,
    /// `higher` or `lower`; `None` when not said (a run may leave it; bench may not).
    pub direction: Option<Direction>,
    pub source: MetricSource,
    /// The definition as given, for reports and error messages.
    pub text: String,
}

fn fail(text: &str, why: impl std::fmt::Display) -> String {
    format!("--metric {text}: {why}")
}

/// `NAME` alone, with `[UNIT]` split off: `req_s[req/s]` → (`req_s`, `req/s`).
fn name_and_unit<'a>(text: &str, head: &'a str) -> Result<(&'a str, &'a str), String> {
    let Some(open) = head.find('[') else {
        if head.contains(']') {
            return Err(fail(
                text,
                "a ']' without '[': write the unit as NAME[UNIT], e.g. req_s[req/s]",
            ));
        }
        return Ok((head, ""));
    };
    let Some(unit) = head[open + 1..].strip_suffix(']') else {
        return Err(fail(
            text,
            "the unit must close right after the name: NAME[UNIT], e.g. req_s[req/s]:higher=...",
        ));
    };
    if unit.contains(['[', ']']) {
        return Err(fail(text, "the unit may not hold '[' or ']'"));
    }
    Ok((&head[..open], unit.trim()))
}

fn check_name(text: &str, name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if name.is_empty() {
        return Err(fail(
            text,
            format!("the name before '=' is empty; e.g. {EXAMPLE}"),
        ));
    }
    if !valid || name.len() > 64 {
        return Err(fail(
            text,
            format!(
                "the name '{name}' must be letters, digits and _ (not starting with a digit, at most \
                 64): it is how --show and the tables name it, e.g. req_s"
            ),
        ));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err(fail(
            text,
            format!(
                "'{name}' is a built-in metric's name; call yours something else, e.g. \
                 {name}_printed"
            ),
        ));
    }
    Ok(())
}

impl MetricSpec {
    /// Parses and checks one definition: the name, the words, a regex that compiles and
    /// has a capture group, or a JSON source with a file and a `$` path.
    pub fn parse(text: &str) -> Result<MetricSpec, String> {
        let Some((head, body)) = text.split_once('=') else {
            return Err(fail(
                text,
                format!(
                    "no '=': a metric is NAME:higher=REGEX (or :lower), the regex's first group \
                     being the number, e.g. {EXAMPLE}; to choose which metrics a comparison \
                     shows, use --show {text}"
                ),
            ));
        };
        let mut words: Vec<&str> = head.split(':').collect();
        let (name, unit) = name_and_unit(text, words.remove(0).trim())?;
        check_name(text, name)?;
        // `after` ends the words: its regex runs to the next '='.
        let (after, body) = match words.last().map(|w| w.trim()) {
            Some("after") => {
                words.pop();
                let Some((after, rest)) = body.split_once('=') else {
                    return Err(fail(
                        text,
                        "after= needs two regexes: NAME:WORDS:after=WARMUP END=REGEX, e.g. \
                         req_s:higher:after=warmup done=Requests per second:\\s+([\\d.]+)",
                    ));
                };
                if after.is_empty() {
                    return Err(fail(text, "the regex after 'after=' is empty"));
                }
                regex::bytes::Regex::new(after).map_err(|_| {
                    fail(
                        text,
                        format!(
                            "the after= regex /{after}/ does not compile (it may not hold '=')"
                        ),
                    )
                })?;
                (Some(after.to_owned()), rest)
            }
            _ => (None, body),
        };
        let (mut direction, mut stream, mut pick) = (None, None, None);
        for word in words {
            let word = word.trim();
            let slot_taken = match word {
                "higher" | "lower" => direction
                    .replace(if word == "higher" {
                        Direction::HigherIsBetter
                    } else {
                        Direction::LowerIsBetter
                    })
                    .is_some(),
                "stdout" | "stderr" | "both" => stream
                    .replace(match word {
                        "stdout" => Stream::Stdout,
                        "stderr" => Stream::Stderr,
                        _ => Stream::Both,
                    })
                    .is_some(),
                "first" | "last" => pick
                    .replace(if word == "first" {
                        Pick::First
                    } else {
                        Pick::Last
                    })
                    .is_some(),
                "" => return Err(fail(text, "an empty word between ':' (two ':' in a row?)")),
                "after" => {
                    return Err(fail(
                        text,
                        "after must be the last word: NAME:higher:after=WARMUP END=REGEX",
                    ))
                }
                other => {
                    return Err(fail(
                        text,
                        format!(
                            "unknown word '{other}' before '=': the words are higher or lower, \
                             stdout, stderr or both, first or last (the unit goes in brackets: \
                             {name}[{other}])"
                        ),
                    ))
                }
            };
            if slot_taken {
                return Err(fail(
                    text,
                    format!("'{word}' contradicts or repeats another word before '='"),
                ));
            }
        }
        let source = match body.strip_prefix("json:") {
            Some(json) => {
                if stream.is_some() || pick.is_some() || after.is_some() {
                    return Err(fail(
                        text,
                        "stdout, stderr, both, first, last and after apply to a regex, not to a \
                         JSON file",
                    ));
                }
                let Some(at) = json.rfind(":$") else {
                    return Err(fail(
                        text,
                        "give the value's path after the file: json:FILE:$.path.to.value \
                         (e.g. json:result.json:$.throughput or $.runs[0].p99)",
                    ));
                };
                let (file, path) = (&json[..at], &json[at + 1..]);
                if file.is_empty() {
                    return Err(fail(
                        text,
                        "the JSON file's name is empty: json:FILE:$.path",
                    ));
                }
                super::json_path::parse(path).map_err(|e| fail(text, e))?;
                MetricSource::Json {
                    file: file.to_owned(),
                    path: path.to_owned(),
                }
            }
            None => {
                compile(body).map_err(|e| fail(text, e))?;
                MetricSource::Output {
                    stream: stream.unwrap_or_default(),
                    pick: pick.unwrap_or_default(),
                    regex: body.to_owned(),
                    after,
                }
            }
        };
        Ok(MetricSpec {
            name: name.to_owned(),
            unit: unit.to_owned(),
            direction,
            source,
            text: text.to_owned(),
        })
    }

    /// The regex, compiled (it compiled when parsed); `None` for a JSON metric.
    pub fn regex(&self) -> Option<regex::bytes::Regex> {
        match &self.source {
            MetricSource::Output { regex, .. } => compile(regex).ok(),
            MetricSource::Json { .. } => None,
        }
    }

    /// The `after=` regex, compiled; `None` without one.
    pub fn after(&self) -> Option<regex::bytes::Regex> {
        match &self.source {
            MetricSource::Output {
                after: Some(after), ..
            } => regex::bytes::Regex::new(after).ok(),
            _ => None,
        }
    }

    /// The streams this metric reads: (stdout, stderr).
    pub fn streams(&self) -> (bool, bool) {
        match &self.source {
            MetricSource::Output { stream, .. } => (stream.reads_stdout(), stream.reads_stderr()),
            MetricSource::Json { .. } => (false, false),
        }
    }

    /// The same definition with `{KEY}` in a JSON file's name replaced (a bench
    /// parameter); regexes are left alone (`{2,3}` is a repetition there).
    pub fn expanded(&self, values: &BTreeMap<String, String>) -> anyhow::Result<MetricSpec> {
        let mut spec = self.clone();
        if let MetricSource::Json { file, .. } = &mut spec.source {
            *file = crate::model::template::expand(file, values)
                .map_err(|e| anyhow::anyhow!("--metric {}: {e}", self.text))?;
        }
        Ok(spec)
    }

    /// `{KEY}` names a JSON file's name refers to.
    pub fn placeholders(&self) -> Vec<String> {
        match &self.source {
            MetricSource::Json { file, .. } => crate::model::template::placeholders(file),
            MetricSource::Output { .. } => Vec::new(),
        }
    }

    /// `higher` / `lower` / empty, as the run file stores it.
    pub fn direction_name(&self) -> &'static str {
        direction_name(self.direction)
    }
}

pub fn direction_name(direction: Option<Direction>) -> &'static str {
    match direction {
        Some(Direction::HigherIsBetter) => "higher",
        Some(Direction::LowerIsBetter) => "lower",
        _ => "",
    }
}

pub fn direction_from_name(name: &str) -> Option<Direction> {
    match name {
        "higher" => Some(Direction::HigherIsBetter),
        "lower" => Some(Direction::LowerIsBetter),
        _ => None,
    }
}

/// Compiles a metric's regex: it must compile and have a group for the number.
fn compile(regex: &str) -> Result<regex::bytes::Regex, String> {
    if regex.is_empty() {
        return Err(format!(
            "the regex after '=' is empty; its first group is the number, e.g. {EXAMPLE}"
        ));
    }
    let compiled = regex::bytes::Regex::new(regex).map_err(|e| {
        // The regex crate explains over several lines; its last line says what is wrong.
        let text = e.to_string();
        let why = text
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("error:"))
            .unwrap_or(text.lines().last().unwrap_or("invalid"))
            .trim()
            .to_owned();
        format!("the regex does not compile ({why}); quote it in single quotes so the shell leaves it alone")
    })?;
    if compiled.captures_len() < 2 {
        return Err(format!(
            "the regex has no capture group: put ( ) around the number, e.g. {}",
            suggest_group(regex)
        ));
    }
    Ok(compiled)
}

/// The regex with a group around a trailing number pattern, or with a number group added.
fn suggest_group(regex: &str) -> String {
    for tail in [r"[\d.]+", r"\d+", r"[0-9.]+", r"[0-9]+"] {
        if let Some(head) = regex.strip_suffix(tail) {
            return format!("'{head}({tail})'");
        }
    }
    format!(r"'{regex}\s*([\d.]+)'")
}

/// Parses every `--metric` (in order), refusing two with one name.
pub fn parse_metrics(texts: &[String]) -> anyhow::Result<Vec<MetricSpec>> {
    let mut specs: Vec<MetricSpec> = Vec::new();
    for text in texts {
        let spec = MetricSpec::parse(text).map_err(crate::usage::UsageError)?;
        if specs.iter().any(|s| s.name == spec.name) {
            crate::bail_usage!(
                "--metric {text}: the name '{}' is defined twice; give each --metric its own name",
                spec.name
            );
        }
        specs.push(spec);
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        MetricSpec::parse(text).unwrap_err()
    }

    #[test]
    fn the_short_form_reads_the_last_match_of_both_streams() {
        let m = MetricSpec::parse(r"req_s=Requests per second:\s+([\d.]+)").unwrap();
        assert_eq!(m.name, "req_s");
        assert_eq!(m.unit, "");
        assert_eq!(m.direction, None);
        assert_eq!(
            m.source,
            MetricSource::Output {
                stream: Stream::Both,
                pick: Pick::Last,
                regex: r"Requests per second:\s+([\d.]+)".into(),
                after: None,
            }
        );
    }

    #[test]
    fn after_takes_the_text_to_the_next_equals_sign() {
        let m = MetricSpec::parse(
            r"req_s:higher:first:after=warmup done=Requests per second:\s+([\d.]+)",
        )
        .unwrap();
        assert_eq!(
            m.source,
            MetricSource::Output {
                stream: Stream::Both,
                pick: Pick::First,
                regex: r"Requests per second:\s+([\d.]+)".into(),
                after: Some("warmup done".into()),
            }
        );
        for bad in [
            r"x:after=no second regex",
            r"x:after==v(\d+)",
            r"x:after:higher=a=v(\d+)",
            r"x:after=a(=v(\d+)",
            r"x:after=a=json:f.json:$.v",
        ] {
            assert!(MetricSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn words_in_any_order_and_a_unit_in_brackets() {
        let m = MetricSpec::parse(r"fps_enc[fps]:stderr:first:higher=fps=\s*([\d.]+)").unwrap();
        assert_eq!((m.name.as_str(), m.unit.as_str()), ("fps_enc", "fps"));
        assert_eq!(m.direction, Some(Direction::HigherIsBetter));
        assert_eq!(
            m.source,
            MetricSource::Output {
                stream: Stream::Stderr,
                pick: Pick::First,
                // Everything after the first '=' is the regex, '=' included.
                regex: r"fps=\s*([\d.]+)".into(),
                after: None,
            }
        );
        assert_eq!(m.streams(), (false, true));
    }

    #[test]
    fn a_json_source_splits_at_the_path() {
        let m = MetricSpec::parse("p99[ms]:lower=json:out/run:1.json:$.latency.p99").unwrap();
        assert_eq!(
            m.source,
            MetricSource::Json {
                file: "out/run:1.json".into(),
                path: "$.latency.p99".into()
            }
        );
        assert_eq!(m.direction, Some(Direction::LowerIsBetter));
        assert!(err("x=json:result.json").contains("json:FILE:$.path"));
        assert!(err("x:stdout=json:r.json:$.a").contains("not to a JSON file"));
        assert!(err("x=json:r.json:$.a[").contains("--metric x=json:r.json:$.a["));
    }

    #[test]
    fn bad_definitions_say_what_to_write() {
        assert!(err("req_s").contains("no '='"));
        assert!(err("fps").contains("--show fps"));
        assert!(err(r"=([\d]+)").contains("name before '=' is empty"));
        assert!(err(r"2x=([\d]+)").contains("letters, digits"));
        assert!(err(r"req.s=([\d]+)").contains("letters, digits"));
        assert!(err(r"fps=fps=([\d.]+)").contains("built-in metric"));
        assert!(err(r"cpu:lower=cpu ([\d.]+)").contains("built-in"));
        assert!(err(r"x:hihger=([\d]+)").contains("unknown word 'hihger'"));
        assert!(err(r"x:higher:lower=([\d]+)").contains("contradicts"));
        assert!(err(r"x[req/s=([\d]+)").contains("NAME[UNIT]"));
        assert!(err("x=").contains("regex after '=' is empty"));
    }

    #[test]
    fn a_regex_must_compile_and_have_a_group() {
        let bad = err(r"x=rate ([\d.]+");
        assert!(bad.contains("does not compile (unclosed group)"), "{bad}");
        assert!(!bad.contains('\n'));
        let none = err(r"x=Requests per second:\s+[\d.]+");
        assert!(none.contains("no capture group"), "{none}");
        assert!(
            none.contains(r"'Requests per second:\s+([\d.]+)'"),
            "{none}"
        );
        assert!(err(r"x=done").contains(r"'done\s*([\d.]+)'"));
    }

    #[test]
    fn names_are_unique() {
        let texts = [r"a=x(\d)".to_owned(), r"a=y(\d)".to_owned()];
        let e = parse_metrics(&texts).unwrap_err().to_string();
        assert!(e.contains("defined twice"), "{e}");
    }

    #[test]
    fn json_files_expand_parameters_and_regexes_do_not() {
        let m = MetricSpec::parse("t:higher=json:out-{res}.json:$.fps").unwrap();
        assert_eq!(m.placeholders(), ["res"]);
        let values = BTreeMap::from([("res".to_owned(), "720p".to_owned())]);
        match m.expanded(&values).unwrap().source {
            MetricSource::Json { file, .. } => assert_eq!(file, "out-720p.json"),
            other => panic!("{other:?}"),
        }
        let r = MetricSpec::parse(r"t:higher=(\d{2,3})").unwrap();
        assert!(r.placeholders().is_empty());
        assert_eq!(r.expanded(&values).unwrap(), r);
    }
}
