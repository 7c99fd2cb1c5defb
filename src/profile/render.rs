//! `framelab profile` output: text, Markdown and JSON of the summary; folded stacks (for
//! flame graph tools), a flame graph SVG (`inferno`, the Rust port of FlameGraph) and
//! speedscope's JSON file format, which https://www.speedscope.app opens as it is.

use std::collections::HashMap;

use serde_json::json;

use super::model::Profile;
use super::summary::{share_ci95_pct, FunctionRow, FunctionTable, Summary};
use crate::display;
use crate::render::document::{plain, write, Block, Document, Span};
use crate::render::format::PROFILE;
use crate::render::table::{Align, Layout, MarkdownCells, Table};
use crate::render::{Format, Value};

/// The title and the lines under it: samples, spread, filters, notes.
fn header(s: &Summary) -> Vec<Block> {
    let kernel = if s.kernel_stacks {
        "user + kernel stacks"
    } else {
        "user stacks only"
    };
    let about = format!(
        " · {} at {} Hz · {} · {kernel}",
        s.event, s.frequency_hz, s.unwinding
    );
    let mut lines = vec![
        format!(
            "samples {} taken · {} lost ({:.2}%) · {} unknown leaves ({:.2}%) · {} truncated · {} throttled",
            s.taken, s.lost, s.lost_pct, s.unknown_leaves, s.unknown_pct, s.truncated, s.throttled
        ),
        "spread  ±N points after a table's samples: how far sampling alone moves its \
         shares (95%, at a 50% share)"
            .to_owned(),
    ];
    if !s.filters.is_empty() {
        lines.push(format!(
            "filters {} · {} kept",
            s.filters.join(" "),
            crate::units::plural(s.selected, "sample", "samples")
        ));
    }
    for note in &s.notes {
        lines.push(format!("note    {}", display::text(note)));
    }
    vec![
        Block::Heading(vec![
            Span::plain("profile · "),
            Span::name(&s.run),
            Span::plain(about),
        ]),
        Block::Bullets(lines.into_iter().map(plain).collect()),
    ]
}

fn top(table: &FunctionTable, by_self: bool, n: usize) -> Vec<&FunctionRow> {
    let mut rows: Vec<&FunctionRow> = table.functions.iter().collect();
    if by_self {
        rows.retain(|r| r.self_samples > 0);
        rows.sort_by(|a, b| {
            b.self_samples
                .cmp(&a.self_samples)
                .then_with(|| a.function.cmp(&b.function))
        });
    }
    rows.truncate(n);
    rows
}

/// The most characters of a function and its module shown.
const FUNCTION_CHARS: usize = 100;

/// One table of functions under its title, in the profile's own columns: the shares first,
/// then `function [module]` (a name, cut at 100 characters, escaped whole in Markdown).
fn section(title: &str, table: &FunctionTable, by_self: bool, n: usize) -> Block {
    let heading = format!(
        "{title} · {} ({:.1}%) · shares ±{:.1} points",
        crate::units::plural(table.samples, "sample", "samples"),
        table.share_pct,
        share_ci95_pct(table.samples)
    );
    let mut shown = Table::new(&["self %", "incl %", "function [module]"])
        .with_names(&[], &[2])
        .with_layout(Layout {
            min_widths: vec![7, 8],
            words: vec![2],
            numbers_first: true,
            cut: FUNCTION_CHARS,
            markdown: MarkdownCells::AsGiven,
            align: vec![Align::Right, Align::Right, Align::Plain],
            ..Layout::default()
        });
    for r in top(table, by_self, n) {
        shown.push(vec![
            Value::fixed(r.self_pct, 2),
            Value::fixed(r.inclusive_pct, 2),
            Value::Text(format!("{} [{}]", r.function, r.module)),
        ]);
    }
    Block::Titled {
        title: vec![Span::name(heading)],
        table: shown,
    }
}

/// The summary as one document for text and Markdown: the overall tables, then each
/// stage, the late frames and the worst frames, `n` functions each; its JSON form is the
/// summary under its schema.
pub fn summary_document(s: &Summary, n: usize) -> Document {
    let mut blocks = header(s);
    let document = |blocks| Document {
        blocks,
        json: summary_json(s),
    };
    if s.taken == 0 {
        blocks.push(Block::Note(
            "  no sample was taken: the processes of the run used (almost) no CPU while they were sampled"
                .into(),
        ));
        return document(blocks);
    }
    if s.selected == 0 {
        blocks.push(Block::Note("  no sample matches the filters".into()));
        return document(blocks);
    }
    blocks.push(section("top functions by self", &s.overall, true, n));
    blocks.push(section("top functions by inclusive", &s.overall, false, n));
    for stage in &s.stages {
        blocks.push(section(&format!("stage {}", stage.name), stage, true, n));
    }
    if let Some(late) = &s.late_frames {
        if late.samples > 0 {
            blocks.push(section("late frames (over budget)", late, true, n));
        }
    }
    for frame in &s.worst_frames {
        blocks.push(section(
            &format!("worst {}", frame.name),
            frame,
            true,
            n.min(5),
        ));
    }
    document(blocks)
}

/// The summary in `format` (text, Markdown or JSON).
pub fn summary(s: &Summary, n: usize, format: Format) -> anyhow::Result<String> {
    write(&summary_document(s, n), format, &PROFILE)
}

fn summary_json(s: &Summary) -> String {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    v["schema"] = json!("framelab.profile/1");
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// Folded-stack lines of the selected samples (`stage;root;...;leaf count`), sorted.
/// Frame names lose `;` (the separator) and line breaks.
pub fn folded(profile: &Profile, selected: &[usize], stage_of: &dyn Fn(usize) -> String) -> String {
    let mut counts: HashMap<(String, Option<u32>), u64> = HashMap::new();
    for &i in selected {
        *counts
            .entry((stage_of(i), profile.samples[i].stack))
            .or_default() += 1;
    }
    let clean = |s: &str| s.replace([';', '\n', '\r'], " ");
    let mut lines: Vec<String> = counts
        .into_iter()
        .map(|((stage, leaf), count)| {
            let mut frames: Vec<String> = profile
                .stack_frames(leaf)
                .map(|f| clean(&profile.frames[f as usize].function))
                .collect();
            frames.push(clean(&stage));
            frames.reverse();
            format!("{} {count}", frames.join(";"))
        })
        .collect();
    lines.sort();
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// A flame graph of folded lines.
pub fn svg(folded: &str, title: &str) -> anyhow::Result<Vec<u8>> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_owned();
    options.count_name = "samples".to_owned();
    let mut out = Vec::new();
    if folded.trim().is_empty() {
        anyhow::bail!("no sample to draw: the filters kept none");
    }
    inferno::flamegraph::from_lines(&mut options, folded.lines(), &mut out)?;
    Ok(out)
}

/// speedscope's format: frames shared, one sampled profile per thread, stage names as the
/// outermost frame of each sample.
pub fn speedscope(
    profile: &Profile,
    selected: &[usize],
    stage_of: &dyn Fn(usize) -> String,
    name: &str,
) -> String {
    let mut frames: Vec<serde_json::Value> = profile
        .frames
        .iter()
        .map(|f| json!({"name": f.function, "file": f.module}))
        .collect();
    let mut stage_frames: HashMap<String, usize> = HashMap::new();
    let mut threads: Vec<(u32, u32)> = Vec::new();
    let mut per_thread: HashMap<(u32, u32), Vec<Vec<usize>>> = HashMap::new();
    for &i in selected {
        let s = &profile.samples[i];
        let stage = stage_of(i);
        let next = frames.len();
        let stage_frame = *stage_frames.entry(stage.clone()).or_insert_with(|| {
            frames.push(json!({"name": stage, "file": "[stage]"}));
            next
        });
        let mut stack: Vec<usize> = profile.stack_frames(s.stack).map(|f| f as usize).collect();
        stack.push(stage_frame);
        stack.reverse();
        per_thread
            .entry((s.pid, s.tid))
            .or_insert_with(|| {
                threads.push((s.pid, s.tid));
                Vec::new()
            })
            .push(stack);
    }
    let period_ns = 1e9 / profile.frequency_hz.max(1) as f64;
    let profiles: Vec<serde_json::Value> = threads
        .iter()
        .map(|key| {
            let samples = &per_thread[key];
            let weights = vec![period_ns.round() as i64; samples.len()];
            let total: i64 = weights.iter().sum();
            json!({
                "type": "sampled",
                "name": format!("pid {} tid {}", key.0, key.1),
                "unit": "nanoseconds",
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            })
        })
        .collect();
    let doc = json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "name": name,
        "exporter": format!("framelab {}", env!("CARGO_PKG_VERSION")),
        "activeProfileIndex": 0,
        "shared": {"frames": frames},
        "profiles": profiles,
    });
    serde_json::to_string(&doc).unwrap_or_default() + "\n"
}

/// The summary's text and Markdown of a hand-built summary against files under
/// `tests/snapshots/`; regenerate with `UPDATE_SNAPSHOTS=1 cargo test --lib profile::render`
/// and review the diff.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::check;

    fn row(function: &str, self_pct: f64, inclusive_pct: f64) -> FunctionRow {
        FunctionRow {
            function: function.into(),
            module: "demo_bin".into(),
            self_samples: (self_pct * 2.0) as u64,
            inclusive_samples: (inclusive_pct * 2.0) as u64,
            self_pct,
            inclusive_pct,
        }
    }

    fn table(name: &str, samples: u64, share_pct: f64) -> FunctionTable {
        FunctionTable {
            name: name.into(),
            samples,
            share_pct,
            functions: vec![
                row("main", 0.0, 100.0),
                row("encode_frame", 70.0, 70.0),
                row("convert<u8>", 30.0, 30.0),
            ],
        }
    }

    /// 200 samples of a run with a budget: two stages, the late frames, one worst frame,
    /// a filter and a note; names that Markdown would take for markup.
    fn summary() -> Summary {
        Summary {
            run: "demo_run".into(),
            event: "cpu-clock".into(),
            frequency_hz: 999,
            unwinding: "frame pointers".into(),
            kernel_stacks: false,
            taken: 200,
            lost: 2,
            lost_pct: 0.99,
            unknown_leaves: 1,
            unknown_pct: 0.5,
            truncated: 0,
            throttled: 0,
            notes: vec!["perf_event_paranoid is 2: kernel stacks left out".into()],
            selected: 200,
            filters: vec!["--process demo".into()],
            overall: table("all", 200, 100.0),
            stages: vec![table("encode", 140, 70.0), table("(no stage)", 60, 30.0)],
            late_frames: Some(table("late frames", 20, 10.0)),
            worst_frames: vec![table("frame 7 (total 15000 µs)", 4, 2.0)],
        }
    }

    #[test]
    fn summary_text() {
        check(
            "profile_summary.txt",
            &summary_text_of(&summary(), Format::Text),
        );
    }

    #[test]
    fn summary_markdown() {
        check(
            "profile_summary.md",
            &summary_text_of(&summary(), Format::Markdown),
        );
    }

    #[test]
    fn a_summary_without_samples_says_so_in_both() {
        let mut s = summary();
        s.taken = 0;
        let text = summary_text_of(&s, Format::Text);
        assert!(text.ends_with("\n\n  no sample was taken: the processes of the run used (almost) no CPU while they were sampled\n"), "{text}");
        let md = summary_text_of(&s, Format::Markdown);
        assert!(
            md.starts_with("### profile · demo\\_run · cpu-clock at 999 Hz"),
            "{md}"
        );
        assert!(md.contains("\n\n- samples 0 taken"), "{md}");
    }

    #[test]
    fn a_stage_named_in_markup_is_escaped_in_markdown() {
        let mut s = summary();
        s.stages[0].name = "st|a*ge_`x`".into();
        let md = summary_text_of(&s, Format::Markdown);
        assert!(md.contains(r"#### stage st\|a\*ge\_\`x\` · "), "{md}");
        assert!(!md.contains("st|a*ge_`x`"), "{md}");
        let text = summary_text_of(&s, Format::Text);
        assert!(text.contains("  stage st|a*ge_`x` · "), "{text}");
    }

    /// One document for text and Markdown: the same figures in both.
    #[test]
    fn text_and_markdown_show_the_same_figures() {
        let s = summary();
        let (text, md) = (
            summary_text_of(&s, Format::Text),
            summary_text_of(&s, Format::Markdown),
        );
        assert_eq!(
            crate::render::numbers_in(&text),
            crate::render::numbers_in(&md),
            "{text}\n{md}"
        );
    }

    fn summary_text_of(s: &Summary, format: Format) -> String {
        super::summary(s, 2, format).unwrap()
    }
}
