//! Names from outside framelab (a stage, a variant named after its file) in the Markdown
//! of every command that writes Markdown: kept from turning into markup (issue 28 point 3).
//! `profile`'s Markdown is held by its unit tests (`profile::render`): it needs perf.

use crate::common;

use std::path::Path;

use common::{framelab, stderr, stdout};

/// A stage name Markdown would take for markup: a cell's end, emphasis, a code span.
const MARKUP: &str = "st|a*ge_`x`";

/// The same name as Markdown must show it, every markup character escaped.
const MARKUP_ESCAPED: &str = r"st\|a\*ge\_\`x\`";

/// A trace of 20 frames whose first stage is named [`MARKUP`], imported into `file`.
fn import_markup_stage(dir: &Path, file: &str) {
    let events: Vec<String> = (1..=20)
        .flat_map(|frame| {
            let t = frame * 100;
            [
                format!(
                    r#"{{"ph":"X","name":"{MARKUP} #{frame}","pid":1,"tid":2,"ts":{t},"dur":30}}"#
                ),
                format!(
                    r#"{{"ph":"X","name":"b #{frame}","pid":1,"tid":3,"ts":{},"dur":40}}"#,
                    t + 30
                ),
            ]
        })
        .collect();
    let trace = dir.join(format!("{file}.json"));
    std::fs::write(&trace, format!("[{}]", events.join(",\n"))).unwrap();
    let out = framelab()
        .arg("import")
        .arg(&trace)
        .args(["--frame-regex", r"#(\d+)", "-o"])
        .arg(dir.join(file))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn names_are_markdown_escaped_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    // The variants are named after their files: names too.
    let (a, b) = ("v_1*.framelab", "v_2*.framelab");
    import_markup_stage(dir.path(), a);
    import_markup_stage(dir.path(), b);
    let stage_p50 = format!("{MARKUP}.p50");
    let in_dir = |args: &[&str]| {
        let out = framelab()
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    for args in [
        &["report", a, "--format", "markdown"][..],
        &["hist", a, "--format", "markdown"],
        &["whatif", a, "--depth", "2", "--format", "markdown"],
        &[
            "compare", a, b, "--show", &stage_p50, "--format", "markdown",
        ],
    ] {
        let md = in_dir(args);
        assert!(md.contains(MARKUP_ESCAPED), "{args:?}: {md}");
        assert!(!md.contains(MARKUP), "{args:?}: {md}");
    }
    // The compare title, headings and table headers: the variants escaped.
    let md = in_dir(&[
        "compare", a, b, "--show", &stage_p50, "--format", "markdown",
    ]);
    assert!(md.contains(r"baseline v\_1\*"), "{md}");
    assert!(md.contains(r"#### v\_2\* vs v\_1\*"), "{md}");
    assert!(md.contains(r"| v\_1\* | v\_2\* |"), "{md}");
    assert!(md.contains(r"worst frame total, shown, never used for a verdict: v\_1\* "));
    // Wherever Markdown reads them (not in code spans): the title, headings, tables, the
    // worst frames' line and the notes.
    let read = (md.lines()).filter(|l| !l.starts_with("- ") || !l.contains('`'));
    let read: Vec<&str> = read.collect();
    assert!(!read.iter().any(|l| l.contains("v_1*")), "{md}");
}
