//! From what the scanners saw (or the JSON file) to a metric's value, or to a one-line
//! reason quoting what was expected. Never a silent zero.

use std::path::Path;
use std::time::SystemTime;

use super::json_path;
use super::scan::{Hit, Seen};
use super::spec::{MetricSource, MetricSpec, Pick};
use super::{MetricValue, COMMAND_ROLE};

fn value_of(spec: &MetricSpec, result: Result<f64, String>) -> MetricValue {
    let (value, failure) = match result {
        Ok(v) => (Some(v), None),
        Err(why) => (None, Some(format!("{}: {why}", spec.name))),
    };
    MetricValue {
        name: spec.name.clone(),
        role: COMMAND_ROLE.to_owned(),
        value,
        unit: spec.unit.clone(),
        direction: spec.direction,
        definition: spec.text.clone(),
        failure,
    }
}

/// A number as a program prints it: `1234`, `-0.5`, `1.2e3`; no thousands separators,
/// nothing infinite.
fn number(text: &str) -> Option<f64> {
    let v: f64 = text.trim().parse().ok()?;
    v.is_finite().then_some(v)
}

/// A line as a message quotes it: lossy UTF-8, control characters escaped, at most 100
/// characters.
fn quote(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out: String = text
        .chars()
        .take(100)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().count() > 100 {
        out.push('…');
    }
    format!("\"{out}\"")
}

/// The value of a regex metric from what the stdout and stderr scanners saw of it
/// (`None` for a stream that was not scanned); `lines` read in all, for the message.
pub fn evaluate_output(
    spec: &MetricSpec,
    stdout: Option<&Seen>,
    stderr: Option<&Seen>,
    lines: u64,
) -> MetricValue {
    let MetricSource::Output {
        stream,
        pick,
        regex,
        after,
    } = &spec.source
    else {
        return value_of(spec, Err("not a regex metric".into()));
    };
    let after_seen = [stdout, stderr].into_iter().flatten().any(|s| s.after_seen);
    if let Some(after) = after.as_ref().filter(|_| !after_seen) {
        return value_of(
            spec,
            Err(format!(
                "no line of {} matched the after= regex /{after}/ ({lines} line{} read): no \
                 line after it to read",
                stream.name(),
                if lines == 1 { "" } else { "s" }
            )),
        );
    }
    let hits = [stdout, stderr]
        .into_iter()
        .flatten()
        .filter_map(|seen| match pick {
            Pick::First => seen.first.as_ref(),
            Pick::Last => seen.last.as_ref(),
        });
    let hit: Option<&Hit> = match pick {
        Pick::First => hits.min_by_key(|h| h.order),
        Pick::Last => hits.max_by_key(|h| h.order),
    };
    let Some(hit) = hit else {
        return value_of(
            spec,
            Err(format!(
                "no line of {} matched /{regex}/ ({lines} line{} read)",
                stream.name(),
                if lines == 1 { "" } else { "s" }
            )),
        );
    };
    let Some(compiled) = spec.regex() else {
        return value_of(spec, Err(format!("/{regex}/ does not compile")));
    };
    let captures = match pick {
        Pick::First => compiled.captures(&hit.line),
        Pick::Last => compiled.captures_iter(&hit.line).last(),
    };
    let Some(group) = captures.and_then(|c| c.get(1)) else {
        return value_of(
            spec,
            Err(format!(
                "/{regex}/ matched {} but its first group captured nothing",
                quote(&hit.line)
            )),
        );
    };
    let text = String::from_utf8_lossy(group.as_bytes());
    let result = number(&text).ok_or_else(|| {
        format!(
            "/{regex}/ captured {} in {}, which is not a number; make the group hold only the \
             digits, e.g. ([\\d.]+)",
            quote(group.as_bytes()),
            quote(&hit.line)
        )
    });
    value_of(spec, result)
}

/// What a JSON metric's file was before the command started: a file left from before
/// must not be read as this run's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileBefore(Option<(SystemTime, u64, u64)>);

impl FileBefore {
    pub fn of(path: &Path) -> FileBefore {
        FileBefore(stamp(path))
    }
}

/// (modified, length, inode) of a file, if it exists.
fn stamp(path: &Path) -> Option<(SystemTime, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len(), meta.ino()))
}

/// The value of a JSON metric, read after the command ended. `before` is the file as it
/// was just before the launch at `started`.
pub fn evaluate_json(spec: &MetricSpec, before: &FileBefore, started: SystemTime) -> MetricValue {
    let MetricSource::Json { file, path } = &spec.source else {
        return value_of(spec, Err("not a JSON metric".into()));
    };
    value_of(spec, json_value(file, path, before, started))
}

fn json_value(
    file: &str,
    path: &str,
    before: &FileBefore,
    started: SystemTime,
) -> Result<f64, String> {
    let at = Path::new(file);
    let Some(now) = stamp(at) else {
        return Err(format!(
            "{file} was not written (no such file after the command ended)"
        ));
    };
    let rewritten = before.0.is_none_or(|b| b != now) || now.0 >= started;
    if !rewritten {
        return Err(format!(
            "{file} was not written during this run (it is unchanged since before the command \
             started): the command did not write its result there"
        ));
    }
    let steps = json_path::parse(path)?;
    let reader = std::fs::File::open(at).map_err(|e| format!("{file} cannot be read: {e}"))?;
    let found = json_path::find_in(reader, path, &steps).map_err(|e| {
        if e.is_io() {
            format!("{file} cannot be read: {e}")
        } else {
            format!("{file} is not JSON ({e}); the command may have been stopped while writing it")
        }
    })?;
    match found.map_err(|e| format!("{file} {e}"))? {
        json_path::Leaf::Number(v) if v.is_finite() => Ok(v),
        json_path::Leaf::Text(text) => number(&text).ok_or_else(|| {
            format!(
                "{file} has a string at {path}, not a number: {}",
                truncate(&serde_json::Value::String(text).to_string())
            )
        }),
        json_path::Leaf::Number(v) => Err(format!(
            "{file} has a number at {path} that is not finite: {v}"
        )),
        json_path::Leaf::Other { kind, shown } => Err(format!(
            "{file} has {kind} at {path}, not a number: {}",
            truncate(&shown)
        )),
    }
}

fn truncate(text: &str) -> String {
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(80).collect::<String>())
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::scan::Scanner;
    use super::*;

    fn spec(text: &str) -> MetricSpec {
        MetricSpec::parse(text).unwrap()
    }

    fn scan(spec: &MetricSpec, out: &[u8], err: &[u8]) -> MetricValue {
        let metrics = [spec.clone()];
        let mut o = Scanner::new(&metrics, true);
        let mut e = Scanner::new(&metrics, false);
        o.feed(out, 1);
        e.feed(err, 2);
        o.finish(3);
        e.finish(3);
        evaluate_output(spec, Some(&o.seen[0]), Some(&e.seen[0]), o.lines + e.lines)
    }

    #[test]
    fn after_leaves_out_the_lines_up_to_the_warmups_end() {
        let out = b"Requests per second: 10\nwarmup done\nRequests per second: 20\n\
                    Requests per second: 30\n";
        let value = |def: &str| scan(&spec(def), out, b"").value;
        let rule = r"Requests per second: (\d+)";
        assert_eq!(value(&format!("r:first={rule}")), Some(10.0));
        assert_eq!(
            value(&format!("r:first:after=warmup done={rule}")),
            Some(20.0)
        );
        assert_eq!(value(&format!("r:after=warmup done={rule}")), Some(30.0));
        // Fed in pieces, the warmup's end in the middle of a chunk.
        let m = spec(&format!("r:first:after=warmup done={rule}"));
        let metrics = [m.clone()];
        let mut o = Scanner::new(&metrics, true);
        for piece in out.chunks(7) {
            o.feed(piece, 1);
        }
        o.finish(2);
        assert_eq!(
            evaluate_output(&m, Some(&o.seen[0]), None, o.lines).value,
            Some(20.0)
        );
        // Never matched: no value, and why; never a zero.
        let none = scan(&spec(&format!("r:after=never={rule}")), out, b"");
        assert_eq!(none.value, None);
        assert_eq!(
            none.failure.unwrap(),
            "r: no line of stdout or stderr matched the after= regex /never/ (4 lines read): \
             no line after it to read"
        );
    }

    #[test]
    fn the_last_match_of_the_last_matching_line() {
        let m = spec(r"req_s[req/s]:higher=Requests per second:\s+([\d.]+)");
        let ab = b"Complete requests:      1000\nRequests per second:    1234.56 [#/sec] (mean)\n";
        let v = scan(&m, ab, b"");
        assert_eq!(v.value, Some(1234.56));
        assert_eq!(v.unit, "req/s");
        assert_eq!(v.failure, None);
        // Two numbers on a line: the last match's group.
        let v = scan(&spec(r"x=v(\d)"), b"v1 v2\n", b"");
        assert_eq!(v.value, Some(2.0));
        // First: the first line's first match.
        let v = scan(&spec(r"x:first=v(\d)"), b"v1 v2\nv3\n", b"");
        assert_eq!(v.value, Some(1.0));
        // Both streams: the one read later wins.
        let v = scan(&spec(r"x=v(\d)"), b"v1\n", b"v7\n");
        assert_eq!(v.value, Some(7.0));
    }

    #[test]
    fn failures_quote_what_was_expected() {
        let m = spec(r"req_s:higher=Requests per second:\s+([\d.]+)");
        let none = scan(&m, b"nothing here\n", b"");
        assert_eq!(none.value, None);
        assert_eq!(
            none.failure.unwrap(),
            r"req_s: no line of stdout or stderr matched /Requests per second:\s+([\d.]+)/ (1 line read)"
        );
        let word = scan(&spec(r"x=rate: (\S+)"), b"rate: fast\n", b"");
        let why = word.failure.unwrap();
        assert!(
            why.contains(r#"captured "fast" in "rate: fast", which is not a number"#),
            "{why}"
        );
        let optional = scan(&spec(r"x=rate(:\d+)?"), b"rate\n", b"");
        assert!(optional.failure.unwrap().contains("captured nothing"));
        assert!(scan(&spec(r"x=v(\S+)"), b"vinf\n", b"").value.is_none());
    }

    #[test]
    fn json_values_from_a_file_written_by_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("result.json");
        let name = file.display().to_string();
        let m = spec(&format!("tput:higher=json:{name}:$.runs[1].tput"));
        let started = SystemTime::now();
        let before = FileBefore::of(&file);
        let missing = evaluate_json(&m, &before, started);
        assert!(missing.failure.unwrap().contains("was not written"));
        std::fs::write(&file, r#"{"runs": [{"tput": 1}, {"tput": 812.5}]}"#).unwrap();
        assert_eq!(evaluate_json(&m, &before, started).value, Some(812.5));
        // The same file, untouched, for the next run: stale.
        let later = SystemTime::now() + std::time::Duration::from_secs(5);
        let stale = evaluate_json(&m, &FileBefore::of(&file), later);
        assert!(stale
            .failure
            .unwrap()
            .contains("not written during this run"));
        let absent = spec(&format!("t:higher=json:{name}:$.runs[1].p99"));
        let why = evaluate_json(&absent, &before, started).failure.unwrap();
        assert!(
            why.contains("has no $.runs[1].p99: $.runs[1] has no key 'p99' (it has tput)"),
            "{why}"
        );
        let object = spec(&format!("t:higher=json:{name}:$.runs[0]"));
        let why = evaluate_json(&object, &before, started).failure.unwrap();
        assert!(
            why.contains("an object at $.runs[0], not a number"),
            "{why}"
        );
        std::fs::write(&file, "{\"runs\": [").unwrap();
        let why = evaluate_json(&m, &before, started).failure.unwrap();
        assert!(why.contains("is not JSON"), "{why}");
    }
}
