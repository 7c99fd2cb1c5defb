//! The HTML report: one self-contained file with plots of a run (`framelab report --format
//! html`, `run --html`), of a comparison (`compare --format html`) or of history's trends
//! (`history show --html`), each from its document. docs/html.md says
//! what it shows and why it is built this way.

pub mod decimate;
mod page;
pub mod run_data;

use std::path::Path;

pub use page::{escape_html, json_for_script};

/// The HTML report of run `head` with its spans from `source`, and its analysis: the
/// same reads give both (`source` is `Sync`: a file written thread by thread has its
/// stretches read on threads of their own, as for the text report).
pub fn run_html(
    head: &crate::model::Run,
    source: &(dyn crate::model::SpanSource + Sync),
) -> anyhow::Result<(String, crate::analyze::Analysis)> {
    let (data, analysis) = run_data::RunData::analyze(head, source)?;
    let html = render_document(&data.document(&analysis), run_data::SCHEMA, "run")?;
    Ok((html, analysis))
}

/// The page of `document` (its words, tables and plots through `render::html_writer`),
/// of `schema` and drawn as a page of `kind` (`run`, `compare`, `history`), its frame plots' levels
/// of detail apart.
pub fn render_document(
    document: &crate::render::document::Document,
    schema: &'static str,
    kind: &'static str,
) -> anyhow::Result<String> {
    let data = crate::render::html_writer::page(document, schema, kind);
    let detail = (crate::render::html_writer::detail(document).as_ref())
        .map(json_for_script)
        .transpose()?;
    Ok(page::page(
        &data.text.title,
        &json_for_script(&data)?,
        detail.as_deref(),
    ))
}

/// Writes a whole report or page to `given` (through `crate::destination`: never over
/// `input`, the file read, and whole or not at all).
pub fn write(given: &Path, text: &str, input: Option<&Path>) -> anyhow::Result<()> {
    let target = crate::destination::Target::resolve(given)?;
    if let Some(input) = input {
        target.refuse_overwriting(given, input)?;
    }
    crate::destination::write_whole(&target, given, |out| Ok(out.write_all(text.as_bytes())?))
}

/// Opens `path` in the desktop's browser (`xdg-open`), or says why it cannot.
pub fn open(path: &Path) -> Result<(), String> {
    let desktop = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    if !desktop {
        return Err(format!(
            "no desktop here (neither DISPLAY nor WAYLAND_DISPLAY is set); open {} in a browser",
            path.display()
        ));
    }
    let spawned = std::process::Command::new("xdg-open")
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned.and_then(|mut child| child.wait()) {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!(
            "xdg-open {} failed ({status}); open it in a browser",
            path.display()
        )),
        Err(e) => Err(format!(
            "cannot run xdg-open ({e}); open {} in a browser",
            path.display()
        )),
    }
}

/// `v` to `decimals` places: the page needs no more, and the file stays small.
pub(crate) fn round(v: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    let r = (v * scale).round() / scale;
    if r.is_finite() {
        r
    } else {
        v
    }
}

/// The percentiles distribution curves are drawn at: every 1% and finer in the tail, and
/// both ends (0 is the minimum, 100 the maximum).
pub(crate) fn percentile_grid() -> Vec<f64> {
    let mut p: Vec<f64> = (0..=99).map(f64::from).collect();
    p.extend([99.2, 99.4, 99.5, 99.6, 99.8, 99.9, 99.95, 99.99, 100.0]);
    p
}

#[cfg(test)]
mod tests {
    use crate::analyze::compact::analyze_from;
    use crate::analyze::fixtures::{crashed_run, degenerate_runs, reference_run};

    /// The page's run is analysed from the columns it read: the same analysis, number for
    /// number, as the text report's (crashes, open frames, negative spans, empty runs).
    #[test]
    fn the_page_analyses_the_run_as_the_report_does() {
        let mut runs = vec![reference_run(), crashed_run()];
        runs.extend(degenerate_runs());
        for run in runs {
            let (_, analysis) = super::run_html(&run, &run).unwrap();
            let direct = analyze_from(&run, &run).unwrap();
            assert_eq!(
                serde_json::to_string(&analysis).unwrap(),
                serde_json::to_string(&direct).unwrap(),
                "{}",
                run.meta.name
            );
        }
    }
}
