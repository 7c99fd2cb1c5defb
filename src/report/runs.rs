//! `framelab report FILE` on a file of several runs (an experiment, a history): one line per
//! run instead of silently picking one, and how to see a run in full or compare them.

use std::path::Path;

use serde::Serialize;

use crate::analyze::Analysis;
use crate::experiment::Experiment;
use crate::render::columns::Column;
use crate::render::document::{plain, pretty_json, write_in, Block, Document, Line, Span};
use crate::render::format::RUN_REPORT;
use crate::render::human::shell_words;
use crate::render::{Format, Value};

/// Bump when a key is renamed, removed or changes meaning; adding keys keeps the version.
pub const SCHEMA: &str = "framelab.runs/1";

/// One run of the file, reduced to the figures that tell runs apart.
#[derive(Clone, Debug, Serialize)]
pub struct RunLine {
    pub run_id: i64,
    pub name: String,
    pub started_at: String,
    /// The experiment's variant and parameter values, when the run belongs to one.
    pub variant: Option<String>,
    pub params: Vec<(String, String)>,
    /// `ok`, `failed`, `interrupted`, `warmup` (experiment status), else how the run ended.
    pub status: String,
    pub frames: u64,
    pub observed_fps: Option<f64>,
    pub total_p50_ns: Option<f64>,
    pub total_p99_ns: Option<f64>,
    pub cpu_per_frame_ns: Option<f64>,
}

impl RunLine {
    pub fn new(analysis: &Analysis, experiment: Option<&Experiment>) -> RunLine {
        let place = experiment.and_then(|e| e.runs.iter().find(|r| r.run_id == analysis.run_id));
        let status = match place {
            Some(p) => p.status.name().to_owned(),
            None => crate::store::end_reason_name(analysis.end_reason).to_owned(),
        };
        RunLine {
            run_id: analysis.run_id,
            name: analysis.name.clone(),
            started_at: analysis.started_at.clone(),
            variant: place.map(|p| p.variant.clone()),
            params: place
                .map(|p| p.params.clone().into_iter().collect())
                .unwrap_or_default(),
            status,
            frames: analysis.frames,
            observed_fps: analysis.observed_fps,
            total_p50_ns: analysis.total.as_ref().map(|d| d.p50_ns),
            total_p99_ns: analysis.total.as_ref().map(|d| d.p99_ns),
            cpu_per_frame_ns: analysis.cpu.as_ref().and_then(|c| c.cpu_per_frame_ns),
        }
    }
}

#[derive(Serialize)]
struct RunList<'a> {
    schema: &'static str,
    file: String,
    runs: &'a [RunLine],
}

/// The list in `format`; `file` is how the user named the file (for the commands it
/// suggests), `None` for runs not kept (`-o /dev/null`): no command can read them again.
pub fn render(
    file: Option<&Path>,
    lines: &[RunLine],
    format: Format,
    color: bool,
) -> anyhow::Result<String> {
    let name = file.map_or_else(|| "/dev/null".to_owned(), |f| f.display().to_string());
    let document = Document {
        blocks: blocks(file, lines),
        json: match RUN_REPORT.check(format)? {
            Format::Json => pretty_json(&RunList {
                schema: SCHEMA,
                file: name,
                runs: lines,
            }),
            _ => String::new(),
        },
    };
    write_in(&document, format, &RUN_REPORT, color)
}

/// The list as one document for text and Markdown: the title, a table of the runs with
/// its unit (µs), and the commands that show more.
fn blocks(file: Option<&Path>, lines: &[RunLine]) -> Vec<Block> {
    let with_variants = lines.iter().any(|l| l.variant.is_some());
    let with_params = lines.iter().any(|l| !l.params.is_empty());
    let mut headers = vec!["run"];
    if with_variants {
        headers.push("variant");
        if with_params {
            headers.push("params");
        }
    } else {
        headers.push("name");
    }
    headers.extend([
        "status",
        "frames",
        "fps",
        "total p50",
        "total p99",
        "CPU/frame",
    ]);
    let rows: Vec<Vec<Value>> = (lines.iter())
        .map(|l| cells(l, with_variants, with_params))
        .collect();
    let title = match file {
        Some(f) => format!(
            "framelab · {} · {} runs",
            crate::display::name(&f.display().to_string()),
            lines.len()
        ),
        None => format!("framelab · {} runs (-o /dev/null: not kept)", lines.len()),
    };
    let columns: Vec<Column> = headers.iter().map(|h| Column::new(*h, 0)).collect();
    vec![
        Block::Title(title),
        Block::Columns {
            table: crate::render::columns::table(&columns, rows, Some("µs")),
            // Right under the title in text.
            set_off: false,
        },
        Block::Remark(hint(file, lines, with_variants)),
    ]
}

/// The commands that show more: one run in full, and the verdicts where `compare` has
/// something to compare; for runs not kept, how to keep them.
fn hint(file: Option<&Path>, lines: &[RunLine], with_variants: bool) -> Line {
    let Some(file) = file else {
        return plain("keep the runs with -o FILE to see one in full");
    };
    let shown = shell_words(&[file.display().to_string()]);
    let first = lines.first().map_or(1, |l| l.run_id);
    let mut hint = vec![
        Span::plain("one run in full: "),
        Span::code(format!("framelab report {shown} --run-id {first}")),
    ];
    // Verdicts need two variants (or parameter values) of two runs or more each: a file of
    // runs without variants (`run -o` again and again) is not offered, as compare would
    // refuse it.
    let mut groups: Vec<(_, usize)> = Vec::new();
    for key in lines.iter().map(|l| (&l.variant, &l.params)) {
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, runs)) => *runs += 1,
            None => groups.push((key, 1)),
        }
    }
    let comparable = groups.iter().filter(|(_, runs)| *runs >= 2).count();
    if with_variants && comparable >= 2 {
        hint.push(Span::plain(" · verdicts: "));
        hint.push(Span::code(format!("framelab compare {shown}")));
    }
    hint
}

fn cells(l: &RunLine, with_variants: bool, with_params: bool) -> Vec<Value> {
    let dash = "–";
    let mut row = vec![Value::Count(l.run_id)];
    if with_variants {
        row.push(Value::or(l.variant.clone().map(Value::Text), dash));
    }
    if with_variants && with_params {
        let params: Vec<String> = l.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        row.push(match params.is_empty() {
            true => Value::Missing(dash),
            false => Value::Text(params.join(" ")),
        });
    }
    if !with_variants {
        row.push(Value::Text(l.name.clone()));
    }
    row.push(Value::Text(l.status.clone()));
    row.push(Value::Count(l.frames as i64));
    row.push(Value::or(l.observed_fps.map(|f| Value::fixed(f, 2)), dash));
    row.push(Value::or(l.total_p50_ns.map(Value::Micros), dash));
    row.push(Value::or(l.total_p99_ns.map(Value::Micros), dash));
    row.push(Value::or(l.cpu_per_frame_ns.map(Value::Micros), dash));
    row
}

/// The listing of hand-made runs against `tests/snapshots/report_runs*`. After an intended
/// change: `UPDATE_SNAPSHOTS=1 cargo test --lib report::runs`, then review the diff.
#[cfg(test)]
mod snapshots {
    use super::*;
    use crate::snapshot::check;

    fn line(run_id: i64, variant: Option<&str>, params: &[(&str, &str)]) -> RunLine {
        RunLine {
            run_id,
            name: "enc_a".into(),
            started_at: "2026-01-02T03:04:05Z".into(),
            variant: variant.map(str::to_owned),
            params: (params.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            status: "ok".into(),
            frames: 120 + run_id as u64,
            observed_fps: Some(59.94 + run_id as f64),
            total_p50_ns: Some(8_250_000.0 + run_id as f64 * 1000.0),
            total_p99_ns: (run_id != 2).then_some(16_500_000.0),
            cpu_per_frame_ns: Some(1_234_567.0),
        }
    }

    /// An experiment of two variants at a parameter's value, two runs each, and a run of
    /// one without it.
    fn experiment() -> Vec<RunLine> {
        vec![
            line(1, Some("a"), &[("n", "1")]),
            line(2, Some("b"), &[("n", "1")]),
            line(3, Some("a"), &[("n", "1")]),
            line(4, Some("b"), &[("n", "1")]),
            line(7, Some("b"), &[]),
        ]
    }

    fn plain_runs() -> Vec<RunLine> {
        vec![line(5, None, &[]), line(6, None, &[])]
    }

    fn both(file: Option<&Path>, lines: &[RunLine]) -> (String, String) {
        (
            render(file, lines, Format::Text, false).unwrap(),
            render(file, lines, Format::Markdown, false).unwrap(),
        )
    }

    #[test]
    fn an_experiment_in_text_and_markdown() {
        let (text, md) = both(Some(Path::new("ab_x.framelab")), &experiment());
        check("report_runs.txt", &text);
        check("report_runs.md", &md);
    }

    /// One document for text and Markdown: the pasted list shows every figure of the
    /// terminal's, and no other.
    #[test]
    fn text_and_markdown_show_the_same_figures() {
        let file = Path::new("runs_2.framelab");
        for (file, lines) in [
            (Some(file), experiment()),
            (Some(file), plain_runs()),
            (None, experiment()),
        ] {
            let (text, md) = both(file, &lines);
            assert_eq!(
                crate::render::numbers_in(&text),
                crate::render::numbers_in(&md),
                "{text}\n{md}"
            );
        }
    }

    #[test]
    fn runs_not_kept_in_text_and_markdown() {
        let (text, md) = both(None, &plain_runs());
        check("report_runs_unkept.txt", &text);
        check("report_runs_unkept.md", &md);
    }
}
