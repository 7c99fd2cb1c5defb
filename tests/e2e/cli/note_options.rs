//! Every option a message of framelab names is an option of the command that prints it.
//!
//! A note that says "Pass --frames N" where `import` has no `--frames` sends a newcomer
//! into a usage error. This test reads every string literal of the sources under src/
//! (test modules left out), finds each `--option` in it, and checks it against the real
//! `framelab … --help`: of the command the message itself names (`framelab bench
//! --resume`, `framelab history add … --history`), else of the commands that print that
//! source's messages (the table below). A new source file must be placed in the table, so
//! a new message is checked from its first day.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{framelab, stdout};
use regex::Regex;

/// Who prints a source's messages.
#[derive(Clone, Copy)]
enum Printed {
    /// Every one of these commands, whatever options it was given: a run's report (its
    /// facts and notes) is printed by `run`, `report`, `import` and `demo` alike, so an
    /// option it names must be one each of them takes, unless the text names the command.
    ByEvery(&'static [&'static str]),
    /// The one of these commands that was given the option the message is about (an
    /// option's own error, a session's): the option must be one of theirs.
    ByOneOf(&'static [&'static str]),
}
use Printed::*;

/// Commands whose output is a run's report (its facts and notes).
const REPORTERS: &[&str] = &["run", "report", "import", "demo"];
/// Commands that record a session (the collector, telemetry, services).
const RECORDERS: &[&str] = &["run", "bench", "demo"];

/// Which commands print the messages of each source, by path prefix (the longest wins).
const PRINTED_BY: &[(&str, Printed)] = &[
    ("src/analyze/", ByEvery(REPORTERS)),
    ("src/analyze/fixtures.rs", ByOneOf(RECORDERS)),
    ("src/analyze/pair.rs", ByOneOf(&["import", "hist"])),
    ("src/bench/", ByOneOf(&["bench"])),
    ("src/cli/", ByOneOf(&["run", "bench", "demo", "hist"])),
    ("src/cmd/bench.rs", ByOneOf(&["bench"])),
    ("src/cmd/compare.rs", ByOneOf(&["compare"])),
    ("src/cmd/demo.rs", ByOneOf(&["demo"])),
    ("src/cmd/export.rs", ByOneOf(&["export"])),
    (
        "src/cmd/format.rs",
        ByOneOf(&[
            "run", "report", "compare", "timers", "whatif", "export", "profile",
        ]),
    ),
    ("src/cmd/hist.rs", ByOneOf(&["hist"])),
    (
        "src/cmd/history.rs",
        ByOneOf(&["history add", "history export"]),
    ),
    ("src/cmd/import.rs", ByOneOf(&["import"])),
    (
        "src/cmd/options.rs",
        ByOneOf(&["run", "bench", "demo", "hist"]),
    ),
    ("src/cmd/profile.rs", ByOneOf(&["profile"])),
    ("src/cmd/probes.rs", ByOneOf(&["run", "bench", "probes"])),
    ("src/cmd/report.rs", ByOneOf(&["report"])),
    ("src/cmd/run.rs", ByOneOf(&["run"])),
    ("src/cmd/sources.rs", ByOneOf(&["sources"])),
    ("src/cmd/timers.rs", ByOneOf(&["timers"])),
    ("src/cmd/whatif.rs", ByOneOf(&["whatif"])),
    ("src/compare/", ByOneOf(&["compare"])),
    ("src/demo/", ByOneOf(&["demo"])),
    ("src/export/", ByOneOf(&["export"])),
    ("src/hist/", ByOneOf(&["hist"])),
    (
        "src/history/",
        ByOneOf(&["history show", "history export", "history check"]),
    ),
    ("src/history/add.rs", ByOneOf(&["history add"])),
    (
        "src/history/commands.rs",
        ByOneOf(&["history add", "history show", "run", "bench"]),
    ),
    ("src/import/", ByEvery(&["import"])),
    ("src/model/window.rs", ByOneOf(&["run", "bench"])),
    ("src/output/", ByOneOf(&["run", "bench"])),
    ("src/probes/", ByOneOf(&["run", "bench", "probes"])),
    ("src/profile/", ByOneOf(&["profile"])),
    (
        "src/render/",
        ByOneOf(&[
            "run", "report", "compare", "timers", "whatif", "export", "profile",
        ]),
    ),
    ("src/report/", ByEvery(REPORTERS)),
    ("src/sample/", ByOneOf(&["run", "demo", "sources"])),
    ("src/services/", ByOneOf(&["run", "bench"])),
    ("src/session/", ByOneOf(RECORDERS)),
    ("src/stats/", ByOneOf(&["compare"])),
    ("src/tags.rs", ByOneOf(&["run", "bench", "import"])),
    ("src/timers/", ByEvery(&["timers"])),
    ("src/whatif/", ByOneOf(&["whatif"])),
];

/// Options a report or comparison names as the way its run was recorded (or is to be
/// recorded again): they are the recording command's, and checked against it. Each is one
/// message (a fragment of it) and one option: a decision made here, so a new mention of an
/// option another command owns fails until it is made, or until the text names the command.
const RECORDED_WITH: &[(&str, &str, &str, &[&str])] = &[
    (
        "src/analyze/notes.rs",
        "rerun with --session-user",
        "--session-user",
        &["run"],
    ),
    (
        "src/analyze/notes.rs",
        "rerun with --session-user",
        "--share-session",
        &["run"],
    ),
    (
        "src/analyze/notes.rs",
        "use smaller rings (--ring-records",
        "--ring-records",
        &["run"],
    ),
    (
        "src/analyze/notes.rs",
        "Use a shorter --warmup.",
        "--warmup",
        RECORDERS,
    ),
    (
        "src/analyze/notes.rs",
        "before the --duration of",
        "--duration",
        RECORDERS,
    ),
    (
        "src/analyze/notes.rs",
        "give a shorter --warmup or",
        "--warmup",
        RECORDERS,
    ),
    (
        "src/analyze/notes.rs",
        "give a shorter --warmup or",
        "--warmup-frames",
        RECORDERS,
    ),
    (
        "src/analyze/notes.rs",
        "(no --duration, no --warmup)",
        "--duration",
        RECORDERS,
    ),
    (
        "src/analyze/notes.rs",
        "(no --duration, no --warmup)",
        "--warmup",
        RECORDERS,
    ),
    (
        "src/analyze/summary.rs",
        "at the end of --duration",
        "--duration",
        RECORDERS,
    ),
    (
        "src/report/facts.rs",
        "given by --frames over",
        "--frames",
        &["run", "bench"],
    ),
    (
        "src/report/facts.rs",
        "fps from --frames:",
        "--frames",
        &["run", "bench"],
    ),
    (
        "src/compare/load.rs",
        "(--warmup-runs)",
        "--warmup-runs",
        &["bench"],
    ),
    (
        "src/compare/metrics.rs",
        "when it was recorded (--metric",
        "--metric",
        &["run", "bench"],
    ),
    (
        "src/compare/mod.rs",
        "prints itself (--metric)",
        "--metric",
        &["run", "bench"],
    ),
    (
        "src/profile/summary.rs",
        "record it with --fps or --budget",
        "--fps",
        &["run", "bench"],
    ),
    (
        "src/profile/summary.rs",
        "record it with --fps or --budget",
        "--budget",
        &["run", "bench"],
    ),
];

/// Options named in text that are not framelab's: another program's arguments, or an
/// example command's own. Each with the reason it is not checked.
const NOT_FRAMELABS: &[(&str, &str, &str)] = &[
    ("src/bench/fingerprint.rs", "--query-gpu", "nvidia-smi's"),
    ("src/bench/fingerprint.rs", "--format", "nvidia-smi's"),
    ("src/history/add.rs", "--abbrev-ref", "git's"),
    ("src/history/add.rs", "--porcelain", "git's"),
    ("src/history/add.rs", "--untracked-files", "git's"),
    ("src/analyze/notes.rs", "--shm-size", "docker run's"),
    ("src/services/spec.rs", "--port", "the example server's"),
    ("src/bench/spec.rs", "--fast", "the example variant's"),
    ("src/session/rungroup/mod.rs", "--user", "systemd-run's"),
    ("src/session/rungroup/mod.rs", "--scope", "systemd-run's"),
];

/// Names of framelab's commands, as a message writes them after `framelab `.
const COMMANDS: &[&str] = &[
    "run", "report", "bench", "compare", "demo", "timers", "import", "export", "history", "hist",
    "whatif", "sources", "profile",
];

#[derive(Debug)]
struct Literal {
    file: String,
    line: usize,
    text: String,
}

/// The string literals of Rust source `src` (normal, raw and byte strings), comments and
/// char literals skipped, `\` line continuations joined as the compiler joins them.
fn literals(src: &str) -> Vec<(usize, String)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let newlines: Vec<usize> = src.match_indices('\n').map(|(at, _)| at).collect();
    let line_of = |at: usize| newlines.partition_point(|&n| n < at) + 1;
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(raw) = raw_string_at(src, i) {
            let (start, end, after) = raw;
            out.push((line_of(i), src[start..end].to_owned()));
            i = after;
        } else if b[i] == b'\'' {
            // A char literal ('"', '\'', 'x'), or a lifetime's quote alone.
            let close = match rest.as_bytes().get(1) {
                Some(b'\\') => rest[2..].find('\'').map(|e| e + 3),
                Some(_) => rest
                    .char_indices()
                    .nth(2)
                    .filter(|(_, c)| *c == '\'')
                    .map(|(at, _)| at + 1),
                None => None,
            };
            i += close.unwrap_or(1);
        } else if b[i] == b'"' {
            let mut text = String::new();
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                if b[j] == b'\\' {
                    if b[j + 1] == b'\n' {
                        j += 2;
                        while j < b.len() && b[j].is_ascii_whitespace() {
                            j += 1;
                        }
                        continue;
                    }
                    text.push_str(&src[j..j + 2]);
                    j += 2;
                    continue;
                }
                let c = src[j..].chars().next().unwrap();
                text.push(c);
                j += c.len_utf8();
            }
            out.push((line_of(i), text));
            i = j + 1;
        } else {
            i += src[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// `r"…"`, `r#"…"#`, `br"…"` at `i` (not inside an identifier): (text start, text end, after).
fn raw_string_at(src: &str, i: usize) -> Option<(usize, usize, usize)> {
    let b = src.as_bytes();
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = src[j..].bytes().take_while(|&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let close = format!("\"{}", "#".repeat(hashes));
    let end = j + 1 + src[j + 1..].find(&close)?;
    Some((j + 1, end, end + close.len()))
}

/// The Rust sources under `dir`, without test modules (`tests.rs`, and everything from a
/// trailing `#[cfg(test)] mod tests`).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && path
                .file_name()
                .is_some_and(|n| n != "tests.rs" && n != "test_support.rs")
        {
            out.push(path);
        }
    }
}

fn all_literals() -> Vec<Literal> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let src = std::fs::read_to_string(&path).unwrap();
        let src = match src.find("#[cfg(test)]\nmod tests") {
            Some(at) => &src[..at],
            None => &src[..],
        };
        let file = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        for (line, text) in literals(src) {
            out.push(Literal {
                file: file.clone(),
                line,
                text,
            });
        }
    }
    out
}

/// The long options `framelab COMMAND --help` lists (visible ones: a hidden alias is not
/// something to suggest).
fn options_of(command: &str, cache: &mut BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    if let Some(known) = cache.get(command) {
        return known.clone();
    }
    let out = framelab()
        .args(command.split(' '))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "framelab {command} --help");
    let option = Regex::new(r"^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)").unwrap();
    let known: BTreeSet<String> = stdout(&out)
        .lines()
        .filter_map(|l| option.captures(l).map(|c| c[1].to_owned()))
        .collect();
    assert!(
        !known.is_empty(),
        "framelab {command} --help lists no option"
    );
    cache.insert(command.to_owned(), known.clone());
    known
}

fn printed_by(file: &str) -> Option<Printed> {
    PRINTED_BY
        .iter()
        .filter(|(prefix, _)| file.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, printed)| *printed)
}

/// Quoted example commands inside a message (`fast='./app --fast'`, `--metric 'NAME:…'`)
/// hold other programs' options or patterns: left out.
fn without_quoted_examples(text: &str) -> String {
    static QUOTED: OnceLock<Regex> = OnceLock::new();
    QUOTED
        .get_or_init(|| Regex::new(r"(^|[= ])'[^']*'").unwrap())
        .replace_all(text, "$1")
        .into_owned()
}

/// Each option of one message, with the command(s) the message names it for, if it does.
fn named_options(text: &str) -> Vec<(String, Option<Vec<String>>)> {
    static MENTION: OnceLock<Regex> = OnceLock::new();
    static FLAG: OnceLock<Regex> = OnceLock::new();
    let text = without_quoted_examples(text);
    let mention = MENTION.get_or_init(|| {
        Regex::new(&format!(
            r"framelab ((?:{0})(?:/(?:{0}))*)\b(?: (add|show|check|export)\b)?",
            COMMANDS.join("|")
        ))
        .unwrap()
    });
    let flag = FLAG.get_or_init(|| Regex::new(r"(?:^|[^\w-])(--[a-z][a-z0-9-]*[a-z0-9])").unwrap());
    // A command named in a message applies up to the end of its clause: `(framelab
    // run/bench --metric …), and pick … with --show` names --show for the printing command.
    let mentions: Vec<(std::ops::Range<usize>, Vec<String>)> = mention
        .captures_iter(&text)
        .map(|c| {
            let sub = c.get(2).map(|s| s.as_str());
            let commands = c[1]
                .split('/')
                .map(|cmd| match (cmd, sub) {
                    ("history", Some(sub)) => format!("history {sub}"),
                    (cmd, _) => cmd.to_owned(),
                })
                .collect();
            let start = c.get(0).unwrap().start();
            let end = text[start..]
                .find([')', ';'])
                .map_or(text.len(), |e| start + e);
            (start..end, commands)
        })
        .collect();
    flag.captures_iter(&text)
        // A message that begins with an option is about the option given, which the command
        // took (it may be a hidden one kept to refuse it with a reason).
        .filter(|c| c.get(1).unwrap().start() > 0)
        .map(|c| {
            let m = c.get(1).unwrap();
            let named = mentions
                .iter()
                .rev()
                .find(|(scope, _)| scope.contains(&m.start()))
                .map(|(_, commands)| commands.clone());
            (m.as_str().to_owned(), named)
        })
        .collect()
}

#[test]
fn the_scanner_finds_options_and_who_prints_them() {
    let lits = literals(
        "let a = \"Pass --frames N\"; // \"--not-this\"\n let c = '\"'; let d = r#\"x --raw \"q\"\"#;\n\
         let e = \"framelab run/bench --metric NAME; drop \\\n   --top\";",
    );
    let texts: Vec<&str> = lits.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        texts,
        [
            "Pass --frames N",
            "x --raw \"q\"",
            "framelab run/bench --metric NAME; drop --top"
        ]
    );
    let run_bench = Some(vec!["run".to_string(), "bench".to_string()]);
    assert_eq!(
        named_options(texts[2]),
        [
            ("--metric".to_string(), run_bench),
            ("--top".to_string(), None)
        ]
    );
    assert_eq!(
        named_options("Pass --frames N"),
        [("--frames".to_string(), None)]
    );
    assert_eq!(
        named_options("--metric X: (framelab run --metric M), and pick with --show N"),
        [
            ("--metric".to_string(), Some(vec!["run".to_string()])),
            ("--show".to_string(), None)
        ]
    );
    assert_eq!(
        named_options("add it later with framelab history add FILE --history S"),
        [(
            "--history".to_string(),
            Some(vec!["history add".to_string()])
        )]
    );
    assert_eq!(
        named_options("give --variant fast='./app --fast' -- CMD"),
        [("--variant".to_string(), None)]
    );
    // Of the commands printing a report, import has no --frames: the old note fails.
    let mut cache = BTreeMap::new();
    assert!(!options_of("import", &mut cache).contains("--frames"));
    assert!(options_of("run", &mut cache).contains("--frames"));
}

#[test]
fn every_option_a_message_names_is_an_option_of_the_command_printing_it() {
    let mut cache = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut unplaced = BTreeSet::new();
    let mut checked = 0;
    for lit in all_literals() {
        for (option, named) in named_options(&lit.text) {
            if NOT_FRAMELABS
                .iter()
                .any(|(file, o, _)| *file == lit.file && *o == option)
            {
                continue;
            }
            let owned = |commands: &[&str]| commands.iter().map(|c| c.to_string()).collect();
            let recorded = RECORDED_WITH
                .iter()
                .find(|(file, fragment, o, _)| {
                    *file == lit.file && *o == option && lit.text.contains(fragment)
                })
                .map(|(_, _, _, commands)| (false, owned(commands)));
            // (whether every command must take it, the commands)
            let (every, commands): (bool, Vec<String>) = match (named, recorded) {
                (Some(named), _) => (true, named),
                (None, Some(recorded)) => recorded,
                (None, None) => match printed_by(&lit.file) {
                    Some(ByEvery(commands)) => (true, owned(commands)),
                    Some(ByOneOf(commands)) => (false, owned(commands)),
                    None => {
                        unplaced.insert(lit.file.clone());
                        continue;
                    }
                },
            };
            checked += 1;
            let missing: Vec<&str> = commands
                .iter()
                .filter(|c| !options_of(c, &mut cache).contains(&option))
                .map(String::as_str)
                .collect();
            let ok = match every {
                true => missing.is_empty(),
                false => missing.len() < commands.len(),
            };
            let who = match every {
                true => missing.join(", "),
                false => commands.join(" or "),
            };
            if !ok {
                wrong.push(format!(
                    "{}:{}: {option} is not an option of `framelab {who}`: {:?}",
                    lit.file, lit.line, lit.text
                ));
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "sources whose messages name options, missing from PRINTED_BY: {unplaced:?}"
    );
    // The sources hold a few hundred: a scanner that found none would pass anything.
    assert!(checked > 150, "only {checked} options found in messages");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
