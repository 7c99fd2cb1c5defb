//! Reports: text for terminals, Markdown for pull requests, JSON with every number.

pub(crate) mod facts;
pub mod html;
mod json;
mod pipeline;
pub mod runs;
mod sources;
pub mod stored;
pub(crate) mod telemetry;
pub(crate) mod text;

pub use json::SCHEMA as JSON_SCHEMA;
pub use sources::render as sources;

use crate::analyze::Analysis;
use crate::render::document::{write_in, Document};
use crate::render::format::RUN_REPORT;
use crate::render::Format;

/// Renders `analysis` (text, Markdown or JSON); `color` only applies to text.
pub fn render(analysis: &Analysis, format: Format, color: bool) -> anyhow::Result<String> {
    render_in(analysis, format, color, false)
}

/// [`render`] with every FPS low in the text and Markdown reports (`--verbose`); JSON always
/// has every number.
pub fn render_verbose(analysis: &Analysis, format: Format, color: bool) -> anyhow::Result<String> {
    render_in(analysis, format, color, true)
}

fn render_in(
    analysis: &Analysis,
    format: Format,
    color: bool,
    verbose: bool,
) -> anyhow::Result<String> {
    let format = RUN_REPORT.check(format)?;
    write_in(
        &document(analysis, format, verbose),
        format,
        &RUN_REPORT,
        color,
    )
}

/// The report as a document for `format`: one for text, Markdown and the HTML page (each
/// writer lays the same blocks out its way: the page shows each table under its title,
/// through `render::html_writer`); the JSON form (every number) is written only when JSON
/// is asked for.
pub fn document(analysis: &Analysis, format: Format, verbose: bool) -> Document {
    match format {
        Format::Json => Document {
            blocks: Vec::new(),
            json: json::render(analysis),
        },
        _ => Document {
            blocks: text::blocks(analysis, verbose),
            json: String::new(),
        },
    }
}

/// Whole reports of hand-built runs against files under `tests/snapshots/`.
/// After an intended change, regenerate with `UPDATE_SNAPSHOTS=1 cargo test --lib report`
/// and review the diff.
#[cfg(test)]
mod snapshots {
    use super::*;
    use crate::analyze::analyze;
    use crate::analyze::fixtures::{
        crashed_run, degenerate_runs, metrics_run, reference_run, uninstrumented_run,
    };
    use crate::render::numbers_in;
    use crate::snapshot::check;

    #[test]
    fn reference_text() {
        check(
            "report_reference.txt",
            &render(&analyze(&reference_run()), Format::Text, false).unwrap(),
        );
    }

    #[test]
    fn reference_text_in_colour() {
        check(
            "report_reference_color.txt",
            &render(&analyze(&reference_run()), Format::Text, true).unwrap(),
        );
    }

    #[test]
    fn reference_markdown() {
        check(
            "report_reference.md",
            &render(&analyze(&reference_run()), Format::Markdown, false).unwrap(),
        );
    }

    #[test]
    fn reference_json() {
        check(
            "report_reference.json",
            &render(&analyze(&reference_run()), Format::Json, false).unwrap(),
        );
    }

    #[test]
    fn crashed_text() {
        check(
            "report_crashed.txt",
            &render(&analyze(&crashed_run()), Format::Text, false).unwrap(),
        );
    }

    #[test]
    fn crashed_markdown() {
        check(
            "report_crashed.md",
            &render(&analyze(&crashed_run()), Format::Markdown, false).unwrap(),
        );
    }

    #[test]
    fn uninstrumented_text() {
        check(
            "report_uninstrumented.txt",
            &render(&analyze(&uninstrumented_run()), Format::Text, false).unwrap(),
        );
    }

    #[test]
    fn uninstrumented_json() {
        check(
            "report_uninstrumented.json",
            &render(&analyze(&uninstrumented_run()), Format::Json, false).unwrap(),
        );
    }

    #[test]
    fn metrics_from_output_in_every_format() {
        let a = analyze(&metrics_run());
        check(
            "report_metrics.txt",
            &render(&a, Format::Text, false).unwrap(),
        );
        check(
            "report_metrics.md",
            &render(&a, Format::Markdown, false).unwrap(),
        );
        let json = render(&a, Format::Json, false).unwrap();
        check("report_metrics.json", &json);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["metrics"][0]["value"], 312.5);
        assert_eq!(v["metrics"][1]["value"], serde_json::Value::Null);
        assert!(v["metrics"][1]["failure"]
            .as_str()
            .unwrap()
            .contains("no line"));
        // Sizes only: the bytes stay in the run file.
        assert_eq!(v["outputs"][1]["dropped"], 2 << 20);
        assert!(v["outputs"][1].get("content").is_none());
    }

    #[test]
    fn degenerate_runs_render_in_every_format() {
        for run in degenerate_runs() {
            let a = analyze(&run);
            for format in [Format::Text, Format::Markdown, Format::Json] {
                let out = render(&a, format, false).unwrap();
                assert!(
                    out.starts_with("framelab") || out.starts_with("###") || out.starts_with('{')
                );
                assert!(!out.contains("NaN") && !out.contains("inf"), "{out}");
            }
            let json: serde_json::Value =
                serde_json::from_str(&render(&a, Format::Json, false).unwrap()).unwrap();
            assert_eq!(json["schema"], JSON_SCHEMA);
        }
    }

    /// One document for text and Markdown: a reader of the pasted report finds every figure
    /// of the terminal's, and no other (the fps line, not a table of ten lows, in both).
    #[test]
    fn text_and_markdown_show_the_same_figures() {
        let runs = [
            reference_run(),
            crashed_run(),
            metrics_run(),
            crate::analyze::telemetry::fixture::telemetry_run(),
        ];
        for run in runs {
            let a = analyze(&run);
            for verbose in [false, true] {
                let text = render_in(&a, Format::Text, false, verbose).unwrap();
                let md = render_in(&a, Format::Markdown, false, verbose).unwrap();
                assert_eq!(numbers_in(&text), numbers_in(&md), "{text}\n{md}");
            }
        }
    }

    #[test]
    fn plain_text_has_no_escape_codes_and_colour_has_them() {
        let a = analyze(&reference_run());
        assert!(!render(&a, Format::Text, false).unwrap().contains('\x1b'));
        assert!(render(&a, Format::Text, true).unwrap().contains("\x1b[1m"));
        assert!(!render(&a, Format::Markdown, true).unwrap().contains('\x1b'));
    }

    #[test]
    fn json_is_versioned_and_round_trips() {
        let a = analyze(&reference_run());
        let json = render(&a, Format::Json, false).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["schema"], JSON_SCHEMA);
        assert_eq!(v["frames"], 8);
        assert_eq!(v["late"]["late_pct"], 25.0);
        assert_eq!(v["stages"][1]["dist"]["max_ns"], 15e6);
        let back: crate::analyze::Analysis = serde_json::from_str(&json).unwrap();
        assert_eq!(back.worst_frames, a.worst_frames);
        assert_eq!(back.fps, a.fps);
    }
}
