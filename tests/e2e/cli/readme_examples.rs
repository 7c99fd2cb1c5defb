//! The README's comparison example, run as a new user would: its commands as written, in a
//! temporary directory outside the repository, `framelab` being the binary cargo built. What
//! compare prints must have the shape the README shows (the same header lines, table
//! columns, metrics and verdict words); the numbers are one machine's, and the README says
//! which machine and when. Timing decides nothing here: the runs are shortened (the
//! README's `--warmup 1s --duration 4s` become 300 ms and 1 s) and no number is compared.

use crate::common;

use std::path::Path;

use common::{framelab, stderr, stdout};

const README: &str = include_str!("../../../README.md");

/// The README's `sh` block holding `needle`: its commands, `\` continuations joined.
fn commands_of_block(needle: &str) -> Vec<String> {
    let block = blocks()
        .into_iter()
        .find(|(lang, text)| lang == "sh" && text.contains(needle))
        .unwrap_or_else(|| panic!("no sh block with {needle} in README.md"))
        .1;
    block
        .replace("\\\n", " ")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// The first plain block (output) after the `sh` block holding `needle`.
fn output_after(needle: &str) -> String {
    let all = blocks();
    let at = (all.iter())
        .position(|(lang, text)| lang == "sh" && text.contains(needle))
        .unwrap();
    all[at + 1..]
        .iter()
        .find(|(lang, _)| lang.is_empty())
        .map(|(_, text)| text.clone())
        .expect("an output block after the commands")
}

/// Every fenced block of the README: (language, text).
fn blocks() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in README.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => open = Some((lang.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => out.push(open.take().unwrap()),
            (Some((_, text)), None) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// Runs one README command line in `dir`: `framelab` is the built binary, in the variants'
/// commands too; the bench's warmup and duration are shortened.
fn run_line(line: &str, dir: &Path) -> std::process::Output {
    let words = shlex::split(line).unwrap_or_else(|| panic!("cannot split {line}"));
    assert_eq!(words[0], "framelab", "{line}");
    let binary = env!("CARGO_BIN_EXE_framelab");
    let mut args: Vec<String> = Vec::new();
    let mut it = words[1..].iter();
    while let Some(w) = it.next() {
        match w.as_str() {
            "--warmup" => {
                it.next();
                args.extend(["--warmup".into(), "300ms".into()]);
            }
            "--duration" => {
                it.next();
                args.extend(["--duration".into(), "1s".into()]);
            }
            _ => args.push(w.clone()),
        }
    }
    // `--variant d1='framelab demo-pipeline …'` arrives unquoted: NAME=framelab …
    let args: Vec<String> = args
        .into_iter()
        .map(|a| match a.split_once("=framelab ") {
            Some((name, rest)) => format!("{name}={binary} {rest}"),
            None => a,
        })
        .collect();
    framelab().args(&args).current_dir(dir).output().unwrap()
}

/// A table row's cells (two or more spaces apart).
fn cells(line: &str) -> Vec<String> {
    regex::Regex::new(r"\s{2,}")
        .unwrap()
        .split(line.trim())
        .map(str::to_owned)
        .collect()
}

/// A line with every number (sign, decimals, %) as `#`.
fn shape(line: &str) -> String {
    let number = regex::Regex::new(r"[+−±-]?\d+(\.\d+)?%?").unwrap();
    number.replace_all(line.trim_end(), "#").into_owned()
}

#[test]
fn the_readme_comparison_example_prints_what_the_readme_shows() {
    let needle = "framelab bench -n 7";
    let lines = commands_of_block(needle);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains("-n 7"), "7 runs a side: {}", lines[0]);
    let dir = tempfile::tempdir().unwrap();
    let bench = run_line(&lines[0], dir.path());
    assert_eq!(bench.status.code(), Some(0), "{}", stderr(&bench));
    let out = run_line(&lines[1], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let binary = env!("CARGO_BIN_EXE_framelab");
    let actual = stdout(&out).replace(binary, "framelab");
    let shown = output_after(needle);
    let (shown, actual): (Vec<&str>, Vec<&str>) =
        (shown.lines().collect(), actual.lines().collect());

    // The header: sources, runs, the primary metric, the method, the commands.
    for i in 0..5 {
        assert_eq!(shape(shown[i]), shape(actual[i]), "line {i}:\n{actual:#?}");
    }
    assert!(
        shown[1].contains("primary metric: total p50"),
        "{}",
        shown[1]
    );
    // The comparison's table: the same columns, the same metrics in the same order.
    let table = |lines: &[&str]| -> Vec<Vec<String>> {
        let at = lines
            .iter()
            .position(|l| *l == "d2 vs d1")
            .expect("d2 vs d1");
        let header = cells(lines[at + 1]);
        lines[at + 1..]
            .iter()
            .map(|l| cells(l))
            .take_while(|row| row.len() == header.len())
            .collect()
    };
    let (shown_table, actual_table) = (table(&shown), table(&actual));
    assert_eq!(shown_table[0], actual_table[0], "the header row");
    assert_eq!(shown_table.len(), actual_table.len(), "{actual:#?}");
    let verdicts = ["improved", "regressed", "equivalent", "inconclusive"];
    for (s, a) in shown_table.iter().zip(&actual_table).skip(1) {
        assert_eq!(s[..2], a[..2], "metric and unit");
        assert_eq!(s.len(), a.len(), "{s:?} vs {a:?}");
        assert!(verdicts.contains(&s[s.len() - 1].as_str()), "{s:?}");
        assert!(verdicts.contains(&a[a.len() - 1].as_str()), "{a:?}");
    }
}
